//===- compiler/analysis/Prediction.h - The prediction of a schedule -*- C++ -*-===//
//
// The one number topocc promises for a schedule: its simulated time in the
// runtime model (Simulator.h, SimMode::Runtime) at one message size, beside
// the realizable bound of the same call (RealizableGraph.h: the paths the
// runtime gives each message, at the effective link rates the model uses)
// and the physical cut bound on the same rates (Bound.h, every path).
// `compile` prints it for the file it wrote (MSCCL XML is imported back
// first, so the number is the file's), `verify --topology`
// prints the same number for the same file, and --algorithm auto chooses by
// it. Stage: analysis, on any verified schedule. Never prints.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_ANALYSIS_PREDICTION_H
#define TOPOCC_COMPILER_ANALYSIS_PREDICTION_H

#include "compiler/analysis/Bound.h"
#include "compiler/analysis/Simulator.h"
#include "compiler/topology/Topology.h"
#include "ir/Schedule.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <optional>
#include <string>

namespace topocc::analysis {

/// The bounds a prediction is measured against, computed once per topology
/// and mode.
struct TopologyBounds {
  /// RealizableGraph.h on the routes of the mode (NCCL's NIC rule in the
  /// runtime model).
  std::optional<BoundResult> realizable;
  /// Bound.h on effective rates, every path.
  std::optional<BoundResult> physical;
  /// Why a bound is missing (the first error).
  std::string error;
};
TopologyBounds computeTopologyBounds(const topo::Topology &t, SimMode mode);

struct Prediction {
  double bytes = 0;
  SimMode mode = SimMode::Runtime;
  SimResult sim;
  /// The realizable bound of the same collective and size; nullopt with
  /// boundError set when it could not be computed.
  std::optional<BoundNumbers> bound;
  /// The physical cut bound of the same call on effective rates.
  std::optional<BoundNumbers> physical;
  std::string boundError;
  /// The schedule is coded (lincomb ops): it approximates the collective
  /// with less traffic, so it may beat the exact collective's bound.
  bool coded = false;
  /// An all-reduce: its bound is the reduce-scatter's plus the
  /// all-gather's (ForestColl's), which a schedule that overlaps the two
  /// on opposite directions of the bottleneck links can beat.
  bool allReduce = false;
  /// bound->time / sim.time, 0 without a bound.
  double fractionOfBound() const {
    return bound && sim.time > 0 ? bound->time / sim.time : 0;
  }
};

/// Simulates `s` on `t` at `bytes` in `mode` and puts the bounds beside it
/// (a bound that fails is reported in boundError, not as an error).
/// `bounds`, when given, are computeTopologyBounds(t, mode) computed once
/// by the caller. User errors as simulate().
llvm::Expected<Prediction>
predictSchedule(const topo::Topology &t, const ir::Schedule &s, double bytes,
                SimMode mode = SimMode::Runtime,
                const TopologyBounds *bounds = nullptr);

/// predictSchedule's prediction from `sim`, a simulation of `s` on `t` in
/// `mode` that the caller already ran (--algorithm auto's of its winner).
Prediction predictionOf(const topo::Topology &t, const ir::Schedule &s,
                        SimResult sim, SimMode mode,
                        const TopologyBounds *bounds = nullptr);

/// "3.204 ms, algbw 335.50 GB/s, busbw 293.56 GB/s, 92.1% of the
/// realizable bound (busbw 318.70 GB/s; physical bound busbw 332.00
/// GB/s)".
std::string predictionText(const Prediction &p);

/// The prediction as JSON, the shape `verify --format json` and `compile
/// --format json` share: mode, time_s, algbw_GBps, busbw_GBps and, with a
/// bound, bound ("realizable"), bound_time_s, bound_busbw_GBps,
/// percent_of_bound, physical_bound_busbw_GBps; without one bound_error.
/// A coded schedule adds coded: true.
llvm::json::Object predictionJson(const Prediction &p);

} // namespace topocc::analysis

#endif // TOPOCC_COMPILER_ANALYSIS_PREDICTION_H
