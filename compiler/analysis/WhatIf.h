//===- compiler/analysis/WhatIf.h - What-if tables over sizes and scenarios -*- C++ -*-===//
//
// The engine behind `topocc whatif`: a registry of algorithms (each builds an
// evaluator once per topology, then answers per message size), the sweep over
// sizes with a winner per size, and the nccl-tests-style outputs (table, CSV,
// JSON) for the base topology, each scenario and the difference. Schedules
// are timed with the simulator (Simulator.h); `nccl-model` (NcclModel.h) and
// the `bound` reference column (Bound.h) are registered here; algorithms
// that need the compiler (rings) are registered by the caller, so new ones
// (trees, cerar, hier-cerar, auto) are one WhatIfRegistry::add each. Stage:
// analysis.
// Never prints to a terminal (writes to the stream it is given);
// deterministic.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_ANALYSIS_WHATIF_H
#define TOPOCC_COMPILER_ANALYSIS_WHATIF_H

#include "compiler/analysis/CostModel.h"
#include "compiler/analysis/Simulator.h"
#include "compiler/topology/Topology.h"
#include "ir/Schedule.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace topocc::analysis {

struct WhatIfSettings {
  ir::Collective collective = ir::Collective::AllReduce;
  int chunks = 1; ///< pipelining chunks per rank of lowered schedules
  SimMode mode = SimMode::Runtime;
  std::optional<double> reduceBandwidth; ///< nullopt: per GPU model
  /// When > 0, simulated algorithms run this many times per size and report
  /// the median wall time of one simulation (benchmarks).
  int timingRuns = 0;
  /// Relative error the coded columns may use (cerar, hier-cerar,
  /// auto); 0: exact only.
  double tolerance = 0;
  /// Simulate one rank per orbit of a symmetry (SimOptions::fold).
  bool fold = true;
};

/// One algorithm at one size. Not applicable: `detail` says why.
struct WhatIfEstimate {
  bool applicable = false;
  double time = 0, algbw = 0, busbw = 0;
  std::string detail; ///< e.g. NCCL's protocol, or why it does not apply
  /// Simulated algorithms with timingRuns > 0: median seconds of one
  /// simulation and its event count; 0 otherwise.
  double simSeconds = 0;
  size_t simEvents = 0;
};

/// Everything an algorithm may look at when it is set up for a topology.
struct WhatIfContext {
  const topo::Topology &topology;
  LinkModel &links;
  const WhatIfSettings &settings;
  double largestBytes = 0; ///< the largest size of the sweep
};

/// Where the simulated time of one schedule goes, beside the cost model's
/// estimate of the same schedule (`whatif --explain`).
struct WhatIfBreakdown {
  double simTime = 0;
  /// The simulator's critical path: local work (reductions, lincombs) on
  /// it, and the rest (messages on the wire, queued behind other messages,
  /// latency).
  double pathCompute = 0, pathNetwork = 0;
  size_t pathOps = 0, pathMessages = 0;
  /// The resource busy longest and for how long; its bytes.
  std::string busiestLink;
  double busiestBusy = 0, busiestBytes = 0;
  /// The largest sum of local work of one rank (ComputeModel.h).
  double rankCompute = 0;
  /// estimateSchedule on the same schedule (GPU models' memory bandwidth,
  /// free routing).
  CostReport model;
};

/// Answers per size for one (algorithm, topology).
class WhatIfEvaluator {
public:
  virtual ~WhatIfEvaluator();
  virtual llvm::Expected<WhatIfEstimate> estimate(double bytes) = 0;
  /// One run with every transfer recorded (at most `maxTransfers` kept,
  /// SimOptions::maxTransfers), for traces; nullopt for algorithms that are
  /// not simulated.
  virtual llvm::Expected<std::optional<SimResult>>
  traceRun(double bytes, size_t maxTransfers) {
    return std::nullopt;
  }
  /// The breakdown at `bytes`; nullopt for algorithms that are not
  /// simulated.
  virtual llvm::Expected<std::optional<WhatIfBreakdown>>
  breakdown(double bytes) {
    return std::nullopt;
  }
};

using WhatIfFactory =
    std::function<llvm::Expected<std::unique_ptr<WhatIfEvaluator>>(
        const WhatIfContext &)>;
using WhatIfScheduleBuilder =
    std::function<llvm::Expected<ir::Schedule>(const WhatIfContext &)>;

/// A schedule and the fixed NIC routes of some of its rank pairs.
struct RoutedSchedule {
  ir::Schedule schedule;
  std::vector<SimRouteHint> routeHints;
};
using WhatIfRoutedBuilder =
    std::function<llvm::Expected<RoutedSchedule>(const WhatIfContext &)>;

struct WhatIfAlgorithm {
  std::string name;
  std::string description;
  /// False for reference columns (the bound): shown, never the winner.
  bool competes = true;
  WhatIfFactory make;
};

/// An algorithm whose schedule `build` makes once per topology and the
/// simulator times at each size.
WhatIfAlgorithm simulatedAlgorithm(std::string name, std::string description,
                                   WhatIfScheduleBuilder build);
/// The same with route hints (SimOptions::routeHints), e.g. a ring search's
/// NIC choice on multi-node topologies.
WhatIfAlgorithm routedSimulatedAlgorithm(std::string name,
                                         std::string description,
                                         WhatIfRoutedBuilder build);

class WhatIfRegistry {
public:
  /// REQUIRES: no algorithm named `a.name` yet.
  void add(WhatIfAlgorithm a);
  const WhatIfAlgorithm *find(llvm::StringRef name) const;
  llvm::ArrayRef<WhatIfAlgorithm> all() const { return algos; }
  /// The named algorithms in the given order; an unknown or repeated name is
  /// a user error listing the known ones.
  llvm::Expected<std::vector<const WhatIfAlgorithm *>>
  select(llvm::ArrayRef<std::string> names) const;

private:
  std::vector<WhatIfAlgorithm> algos;
};

/// Registers `nccl-model` (NCCL 2.30's estimate, the better of its ring and
/// tree) and `bound` (the exact cut bound; reference column).
void addAnalysisAlgorithms(WhatIfRegistry &r);

/// The --sizes option: support/ByteSize's parseByteSizeRanges(text,
/// "--sizes"), e.g. "64M", "1K:8G", "1K:8G:4" or a comma list of those.
llvm::Expected<std::vector<double>> parseSizes(llvm::StringRef text);

struct WhatIfRow {
  double bytes = 0;
  std::vector<WhatIfEstimate> cells; ///< one per algorithm
  int winner = -1; ///< index of the fastest competing algorithm, -1 if none
};

/// One topology (the base or one scenario) over every size.
struct WhatIfTable {
  std::string scenario; ///< "base", a scenario name, or "cli"
  std::string detail;   ///< the ops applied, "" for the base
  int ranks = 0, nodes = 0;
  std::vector<WhatIfRow> rows;
};

struct WhatIfReport {
  std::string topology;
  WhatIfSettings settings;
  std::vector<std::string> algorithms;
  std::vector<bool> competes;
  std::vector<WhatIfTable> tables; ///< the first is the base
};

/// Evaluates every algorithm at every size on `t`. A user error from an
/// algorithm's setup (e.g. no route) fails the table. Progress: one task
/// per scenario, counting the (algorithm, size) cells.
llvm::Expected<WhatIfTable>
runWhatIf(const topo::Topology &t,
          llvm::ArrayRef<const WhatIfAlgorithm *> algos,
          llvm::ArrayRef<double> sizes, const WhatIfSettings &settings,
          llvm::StringRef scenario, llvm::StringRef detail);

/// nccl-tests-style tables, each scenario followed by its difference from
/// the base (time ratio per algorithm, winner change).
void printWhatIfTable(llvm::raw_ostream &os, const WhatIfReport &r);
/// One row per (scenario, size); columns
/// scenario,size,count,<alg>_time_us,<alg>_algbw_GBps,<alg>_busbw_GBps...,
/// winner,winner_time_vs_base.
void printWhatIfCsv(llvm::raw_ostream &os, const WhatIfReport &r);
void printWhatIfJson(llvm::raw_ostream &os, const WhatIfReport &r);

/// `--explain`: one block of comment lines per (algorithm, breakdown), times
/// in microseconds.
void printWhatIfBreakdowns(
    llvm::raw_ostream &os, double bytes,
    llvm::ArrayRef<std::pair<std::string, WhatIfBreakdown>> rows);

} // namespace topocc::analysis

#endif // TOPOCC_COMPILER_ANALYSIS_WHATIF_H
