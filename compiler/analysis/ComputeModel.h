//===- compiler/analysis/ComputeModel.h - Local work of schedule ops -*- C++
//-*-===//
//
// The one compute model of topocc (docs/WhatIf.md, "Models"): a local op
// costs its device-memory traffic divided by the GPU's memory bandwidth.
// Traffic per byte of the op's result: a reduction (rrs, rrc, rrcs, reduce)
// reads two operands and writes one, 3 bytes; a lincomb of t terms reads t
// and writes one, t + 1 bytes; sends, receives and copies move data the
// links already account for, 0. The simulator (Simulator.h), the cost model
// (estimateSchedule in CostModel.h) and CERAR's policy (B_mem of
// compiler/algorithms/CerarPolicy) all take their numbers from here.
// Stage: analysis. Never prints; deterministic.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_ANALYSIS_COMPUTEMODEL_H
#define TOPOCC_COMPILER_ANALYSIS_COMPUTEMODEL_H

#include "compiler/analysis/Simulator.h"
#include "compiler/topology/Topology.h"
#include "ir/Schedule.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <vector>

namespace topocc::analysis {

/// Device memory bandwidth of a GPU model, bytes/s, from the table of
/// compiler/topology/GpuModels.h (e.g. a100 2039, h100 3350, mi250 1638 per
/// GCD GB/s). 0 for an unknown model (its local work is free).
double memoryBandwidth(llvm::StringRef gpuModel);

/// memoryBandwidth of the GPU of every rank of `t`, by rank.
std::vector<double> rankMemoryBandwidths(const topo::Topology &t);

/// The smallest non-zero memory bandwidth over the ranks of `t`; 0 when no
/// rank's GPU model is known.
double slowestMemoryBandwidth(const topo::Topology &t);

/// Bytes of device memory `op` reads and writes when one chunk is `unit`
/// bytes (see the file comment; 0 for ops without local work).
double memoryTraffic(const ir::Op &op, double unit);

/// Seconds of local work of `op`: memoryTraffic / memBandwidth; 0 when
/// memBandwidth <= 0.
double computeTime(const ir::Op &op, double unit, double memBandwidth);

/// Per-rank memory bandwidths used to time a schedule on `t`: `override`
/// for every rank when given (0 makes local work free), else
/// rankMemoryBandwidths(t).
std::vector<double> memoryBandwidthsFor(const topo::Topology &t,
                                        std::optional<double> override);

/// Simulated completion time, seconds, of `s` on `t` for a collective of
/// `bytes` (nccl-tests S): analysis::simulate in `mode` (default the runtime
/// model, Prediction.h) with
/// the GPU models' memory bandwidths. Prices link contention (shared PCIe
/// switches, host bridges) that estimateSchedule's max-over-links term
/// averages away; for ranking candidate schedules. User errors as simulate.
llvm::Expected<double>
simulateTime(const topo::Topology &t, const ir::Schedule &s, double bytes,
             SimMode mode = SimMode::Runtime,
             std::optional<double> reduceBandwidth = std::nullopt);

/// simulateTime's whole simulation: its time, bandwidths, links and
/// critical path.
llvm::Expected<SimResult>
simulateRun(const topo::Topology &t, const ir::Schedule &s, double bytes,
            SimMode mode = SimMode::Runtime,
            std::optional<double> reduceBandwidth = std::nullopt);

} // namespace topocc::analysis

#endif // TOPOCC_COMPILER_ANALYSIS_COMPUTEMODEL_H
