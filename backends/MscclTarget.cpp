//===- backends/MscclTarget.cpp - Which runtime an MSCCL file is for ------===//

#include "backends/MscclTarget.h"

#include "compiler/topology/GpuModels.h"

#include "llvm/Support/FormatVariadic.h"

namespace topocc::backends {

ir::MscclRuntime defaultMscclRuntime(const topo::Topology &t) {
  std::optional<topo::GpuVendor> v = topo::targetGpuVendor(t);
  return v && *v == topo::GpuVendor::Amd ? ir::MscclRuntime::Rccl
                                         : ir::MscclRuntime::MscclExecutor;
}

llvm::Expected<ir::TargetLimits>
mscclTargetFor(const topo::Topology *t, const MscclTargetOptions &opts) {
  int32_t sms = ir::kDefaultSmCount;
  if (opts.smCount) {
    sms = *opts.smCount;
  } else if (t) {
    auto fromModel = topo::targetSmCount(*t);
    if (!fromModel)
      return fromModel.takeError();
    sms = *fromModel;
  }
  ir::MscclRuntime runtime = opts.runtime ? *opts.runtime
                             : t          ? defaultMscclRuntime(*t)
                                          : ir::MscclRuntime::MscclExecutor;
  return ir::TargetLimits::forFormat(ir::OutputFormat::MscclXml, sms,
                                     opts.maxSteps, runtime);
}

std::string describeMscclTarget(const ir::TargetLimits &t) {
  std::string out = ir::mscclRuntimeName(t.runtime).str();
  if (t.smCount > 0)
    out += llvm::formatv(", {0} SMs", t.smCount).str();
  else
    out += ", no SM limit";
  if (t.threadblocksLimitedByRuntime())
    out += llvm::formatv(", {0} threadblocks per rank at most",
                         t.maxThreadblocksPerRank)
               .str();
  return out;
}

} // namespace topocc::backends
