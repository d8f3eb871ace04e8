//===- compiler/analysis/Prediction.h - The prediction of a schedule -*- C++ -*-===//
//
// The one number topocc promises for a schedule: its simulated time in the
// runtime model (Simulator.h, SimMode::Runtime) at one message size, beside
// the cut bound of the same call on the topology's effective link rates
// (Bound.h). `compile` prints it for the file it wrote (MSCCL XML is
// imported back first, so the number is the file's), `verify --topology`
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

#include <optional>
#include <string>

namespace topocc::analysis {

struct Prediction {
  double bytes = 0;
  SimMode mode = SimMode::Runtime;
  SimResult sim;
  /// The cut bound of the same collective and size on effective rates;
  /// nullopt with boundError set when it could not be computed.
  std::optional<BoundNumbers> bound;
  std::string boundError;
  /// The schedule is coded (lincomb ops): it approximates the collective
  /// with less traffic, so it may beat the exact collective's bound.
  bool coded = false;
  /// bound->time / sim.time, 0 without a bound.
  double fractionOfBound() const {
    return bound && sim.time > 0 ? bound->time / sim.time : 0;
  }
};

/// Simulates `s` on `t` at `bytes` in `mode` and computes the cut bound
/// beside it (a bound that fails is reported in boundError, not as an
/// error). `bound`, when given, is the topology's bound computed once by
/// the caller. User errors as simulate().
llvm::Expected<Prediction>
predictSchedule(const topo::Topology &t, const ir::Schedule &s, double bytes,
                SimMode mode = SimMode::Runtime,
                const BoundResult *bound = nullptr);

/// "3.204 ms, algbw 335.50 GB/s, busbw 293.56 GB/s, 92.1% of the cut
/// bound (busbw 318.70 GB/s)".
std::string predictionText(const Prediction &p);

} // namespace topocc::analysis

#endif // TOPOCC_COMPILER_ANALYSIS_PREDICTION_H
