//===- compiler/algorithms/RingSearch.h - Bandwidth-aware ring orders -*- C++ -*-===//
//
// Chooses ring orders (one per channel, each a cycle over all ranks with
// routed hops) and the share of data on each, minimising the cost model's
// time (compiler/analysis/CostModel.h). Stage: algorithm synthesis, before
// lowering. Exact branch and bound for small groups, greedy + 2-opt/Or-opt
// beyond; multi-node rings are node-major with rail-aligned NIC hops.
// Deterministic: the same topology and options give the same rings.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_ALGORITHMS_RINGSEARCH_H
#define TOPOCC_COMPILER_ALGORITHMS_RINGSEARCH_H

#include "compiler/analysis/CostModel.h"
#include "compiler/topology/Topology.h"
#include "ir/Schedule.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace topocc::algorithms {

struct RingSearchOptions {
  ir::Collective collective = ir::Collective::AllReduce;
  double bytes = 1024.0 * 1024 * 1024; ///< S, nccl-tests convention
  int channels = 0;     ///< rings wanted; 0 chooses the count (auto)
  int maxChannels = 16; ///< limit for auto
  int exactLimit = 10;  ///< exact search for groups of at most this many ranks
  /// Node budget of one exact search; beyond it the best ring found so far
  /// is kept and the result says `exact = false`.
  uint64_t maxNodes = 50'000'000;
  /// The rings are for an NCCL_GRAPH_FILE: every node runs the same local
  /// order (the file holds one graph for all nodes, so no rings that
  /// alternate direction per node), and with auto channels a single-node
  /// set's quantised shares become channels (a ring of u units is u
  /// channels, at most 16 in all), as NCCL splits the data evenly.
  bool sameLocalOrder = false;
  /// Largest power-of-two total of units a flat ring set's shares are
  /// quantised to (RingPacking.h): the steps the lowered rings may take.
  int maxUnits = 64;
};

struct RingSearchResult {
  std::vector<analysis::RingChannel> rings; ///< shares sum to 1
  analysis::CostReport cost;                ///< estimateRings of `rings`
  /// "exact", "heuristic", "node-major exact", "node-major heuristic"
  /// or "rank order" (fallback when nothing better was found).
  std::string method;
  bool exact = false;     ///< the first ring is provably optimal
  /// Where the rings of a flat multi-ring set come from: empty for the
  /// greedy residual packing, else "ring packing LP" (RingPacking.h), with
  /// ", optimal" when column generation proved the set's rate optimal.
  std::string packing;
  /// The ring packing LP of a flat multi-ring search (all 0 when it did not
  /// run): its optimum and upper bound (bytes/s per hop, the fluid busbw of
  /// every ring set), its set's rate in `lpUnits` units, and whether
  /// column generation proved the optimum.
  double lpRate = 0, lpUpperBound = 0, lpUnitsRate = 0;
  int lpUnits = 0;
  bool lpOptimal = false;
  uint64_t evaluated = 0; ///< search nodes and ring evaluations
};

/// REQUIRES: `m` was built on `t`. User error when some ring hop has no
/// route or the options are out of range.
llvm::Expected<RingSearchResult> searchRings(const topo::Topology &t,
                                             analysis::LinkModel &m,
                                             const RingSearchOptions &opts);

/// The best single cycle over `ranks` alone (e.g. one node's GPUs) with free
/// routing, in ranks; exact up to opts.exactLimit ranks, heuristic beyond.
/// User error when fewer than 2 ranks or no cycle routes.
llvm::Expected<analysis::RingChannel>
searchGroupRing(const topo::Topology &t, analysis::LinkModel &m,
                const std::vector<int> &ranks, const RingSearchOptions &opts);

/// Repeats rings until there are `want` (nothing when there are as many
/// already). Quantised rings (units set on every ring, at least `want` in
/// all): each extra channel goes to the ring with the most units per
/// channel and a ring's units split as evenly as integers allow, so the
/// shares stay exact and the longest channel gets shorter. Otherwise copies
/// go round robin, each copy taking an equal part of its ring's share, and
/// the units are cleared.
void padRings(std::vector<analysis::RingChannel> &rings, int want);

/// The ring 0, 1, ..., n-1 with free routing and share 1.
analysis::RingChannel rankOrderRing(const topo::Topology &t);

} // namespace topocc::algorithms

#endif // TOPOCC_COMPILER_ALGORITHMS_RINGSEARCH_H
