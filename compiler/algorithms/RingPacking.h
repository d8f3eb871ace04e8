//===- compiler/algorithms/RingPacking.h - Ring sets by column generation -*- C++ -*-===//
//
// The throughput-optimal set of rings over a group of ranks: the linear
// program
//   maximise sum_c x_c  subject to  sum_c x_c load_c(r) <= cap(r) for every
//   resource r,  x >= 0,
// over every Hamiltonian cycle c of the group (x_c: the bytes per second
// each hop of ring c moves; load_c(r): the fraction of one hop's bytes that
// crosses resource r, summed over the ring's hops, on the cost model's
// routes, compiler/analysis/CostModel.h). Its optimum is the ring bandwidth
// (busbw) the rings can reach together; the shares x_c / sum x make every
// ring finish at the same time. Solved by column generation: the duals of
// the restricted LP price every hop, and the cheapest Hamiltonian cycle
// under those prices (an asymmetric travelling-salesman problem: Held-Karp
// up to `exactPricingLimit` ranks, 2-opt and Or-opt local search beyond)
// enters when it improves the LP. Stage: algorithm synthesis (the ring
// search, compiler/algorithms/RingSearch.h). Deterministic; never prints.
//
// Where a greedy ring after ring (each on what the earlier ones left) gets
// stuck, this finds sets such as the three edge-disjoint Hamiltonian cycles
// of a direct-connect mesh used in both directions.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_ALGORITHMS_RINGPACKING_H
#define TOPOCC_COMPILER_ALGORITHMS_RINGPACKING_H

#include "compiler/analysis/CostModel.h"

#include <cstdint>
#include <vector>

namespace topocc::algorithms {

struct RingPackingOptions {
  int maxRings = 16;          ///< distinct rings kept
  int exactPricingLimit = 16; ///< Held-Karp pricing up to this many ranks
  int maxIterations = 200;    ///< column generation rounds
  /// The shares are quantised to units of a power-of-two total U (a ring's
  /// share is units / U, as the lowering's chunk counts must be): the
  /// smallest U up to maxUnits whose rate is within `tolerance` of the LP's,
  /// else the best U tried.
  int maxUnits = 64;
  double tolerance = 0.01;
};

struct RingPacking {
  /// Rings in ranks, free routing, quantised shares (units set, summing
  /// to `units`), most units first; empty when no Hamiltonian cycle of the
  /// group routes.
  std::vector<analysis::RingChannel> rings;
  int units = 0; ///< U, a power of two
  /// Sum of the kept rings' rates with the quantised shares, bytes/s per
  /// hop (the fluid busbw).
  double rate = 0;
  /// The LP's optimum over its columns (no ring count limit, exact shares).
  double lpRate = 0;
  /// An upper bound on every ring set's rate (the LP value over the
  /// cheapest cycle's price); equals lpRate when column generation proved
  /// optimality, 0 when pricing was heuristic.
  double upperBound = 0;
  bool optimal = false; ///< exact pricing found no improving cycle
  int iterations = 0;
  uint64_t evaluated = 0; ///< pricing work (states or tour evaluations)
};

/// Rings over `ranks` (at least 2). Column generation starts from the
/// cycle of fewest hops, so its result depends only on the LP (the group's
/// routes and capacities); it is cached per process, keyed by that LP.
/// Thread-safe.
RingPacking packRings(analysis::LinkModel &m, const std::vector<int> &ranks,
                      const RingPackingOptions &opts = {});

/// Quantises the shares of any ring set as packRings does (the rings'
/// routes and NIC hops as given), keeping every ring with at least one unit
/// (so U is at least the ring count rounded up to a power of two, even
/// above opts.maxUnits): sets each ring's units and share = units / U and
/// returns U (0 for an empty set).
int quantiseRingShares(analysis::LinkModel &m,
                       std::vector<analysis::RingChannel> &rings,
                       const RingPackingOptions &opts = {});

} // namespace topocc::algorithms

#endif // TOPOCC_COMPILER_ALGORITHMS_RINGPACKING_H
