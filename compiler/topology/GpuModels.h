//===- compiler/topology/GpuModels.h - What topocc knows of each GPU -*- C++ -*-===//
//
// The one table of GPU models: for each model a topology's `model` string
// may name, its vendor, its SM count (NVIDIA streaming multiprocessors; AMD
// compute units of the die one rank drives, one GCD of an MI250) and its
// device-memory bandwidth. Every consumer reads it from here: the compute
// model (compiler/analysis/ComputeModel.h) for memory bandwidths, `topocc
// compile` and `topocc verify` for the threadblocks an MSCCL XML file may
// launch per rank, the MSCCL runtime default for the vendor. docs/MscclXml.md
// ("GPU models") lists every row with its source.
// Stage: topology. Never prints; deterministic.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_TOPOLOGY_GPUMODELS_H
#define TOPOCC_COMPILER_TOPOLOGY_GPUMODELS_H

#include "compiler/topology/Topology.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>

namespace topocc::topo {

enum class GpuVendor : uint8_t { Nvidia, Amd };

/// "nvidia" or "amd".
llvm::StringRef gpuVendorName(GpuVendor v);

struct GpuModel {
  /// Matched against the lower-case model string: the model contains the
  /// key and the character after it is not a digit ("a10" does not match
  /// "a100-sxm4"). Rows are ordered most specific key first.
  llvm::StringRef key;
  llvm::StringRef description; ///< "NVIDIA H100 SXM5"
  GpuVendor vendor = GpuVendor::Nvidia;
  /// SMs (NVIDIA) or CUs (AMD) of the device one rank drives.
  int32_t smCount = 0;
  /// Device-memory bandwidth of that device, bytes/s.
  double memoryBandwidth = 0;
};

/// Every row, most specific key first.
llvm::ArrayRef<GpuModel> gpuModels();

/// The first row whose key matches `model` (see GpuModel::key), or null for
/// an unknown or empty model.
const GpuModel *findGpuModel(llvm::StringRef model);

/// The SM count a schedule for `t` may launch threadblocks on: the smallest
/// SM (CU) count over the GPU models of its ranks. A user error naming the
/// model and the rank's device when a rank's GPU has no model or one that
/// is not in the table, saying to pass --sm-count.
llvm::Expected<int32_t> targetSmCount(const Topology &t);

/// The vendor of the ranks' GPUs when every rank's model is known and they
/// agree; none otherwise.
std::optional<GpuVendor> targetGpuVendor(const Topology &t);

} // namespace topocc::topo

#endif // TOPOCC_COMPILER_TOPOLOGY_GPUMODELS_H
