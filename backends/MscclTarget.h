//===- backends/MscclTarget.h - Which runtime an MSCCL file is for -*- C++ -*-===//
//
// The target of an MSCCL XML file, chosen from the topology: threadblocks
// per rank from the SM (CU) count of the ranks' GPU models
// (compiler/topology/GpuModels.h) unless --sm-count gives it, and the MSCCL
// runtime from the GPU vendor (AMD: RCCL's built-in MSCCL; otherwise
// msccl-executor-nccl) unless --msccl-runtime gives it; the limits are the
// smaller of the GPU's and the runtime's (ir/Target.h).
// Stage: back end. Never prints; deterministic.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_BACKENDS_MSCCLTARGET_H
#define TOPOCC_BACKENDS_MSCCLTARGET_H

#include "compiler/topology/Topology.h"
#include "ir/Target.h"

#include "llvm/Support/Error.h"

#include <optional>
#include <string>

namespace topocc::backends {

/// What the command line says about the target; unset fields come from the
/// topology.
struct MscclTargetOptions {
  std::optional<int32_t> smCount;          ///< --sm-count (0: no limit)
  std::optional<ir::MscclRuntime> runtime; ///< --msccl-runtime
  int32_t maxSteps = ir::kMscclMaxSteps;   ///< --max-steps
};

/// rccl when every rank's GPU is an AMD model, msccl-executor otherwise.
ir::MscclRuntime defaultMscclRuntime(const topo::Topology &t);

/// TargetLimits::forFormat(MscclXml, ...) for a file run on `t` (null: no
/// topology, as for --run-pass: ir::kDefaultSmCount SMs and
/// msccl-executor unless given). User error when `t`'s GPU model is unknown
/// and no SM count is given (topo::targetSmCount).
llvm::Expected<ir::TargetLimits>
mscclTargetFor(const topo::Topology *t, const MscclTargetOptions &opts);

/// "msccl-executor, 80 SMs" or "rccl, 104 SMs, 64 threadblocks per rank at
/// most" (the runtime's limit when it is below the SM count); "no SM limit"
/// for smCount 0.
std::string describeMscclTarget(const ir::TargetLimits &t);

} // namespace topocc::backends

#endif // TOPOCC_BACKENDS_MSCCLTARGET_H
