//===- compiler/algorithms/RouteGraph.h - Trees on routes -*- C++ -*-===//
//
// The rank graph that spanning trees are packed on when every tree arc's
// data must take the route the runtime gives its two ranks
// (docs/Algorithms-trees.md, "Trees on the runtime's routes"). A tree arc
// from rank a to rank b is one message, and the runtime sends it on the
// route the runtime model gives the pair: within a node
// analysis::LinkModel::rankFlow(a, b), NVLink or xGMI for a pair joined by
// such a link, never the PCIe path beside it; across nodes through the
// NICs NCCL's net transport gives both ends (NetRoutes.h). So instead of
// packing on the physical graph (whose switch paths a message may not
// take), the trees are packed on a graph whose vertices are the ranks and
// whose arc a -> b has a rate c(a, b) such that every link carries what
// its routes put on it:
//
//   sum over pairs (a, b) of share(a, b, r) c(a, b) <= capacity(r)
//
// for every link direction r (effective capacities, as the runtime model
// and the realizable bound use). Among those rate matrices the one with
// the largest cut bound is found by a linear program with lazily added
// cuts: maximise x subject to the link rows and, for every rank set S
// found so far, |S| x <= the rate leaving S (all-gather) or entering S
// (reduce-scatter). Each round solves the LP, computes the exact bound of
// the rounded rates (analysis::dinkelbachBound), and adds its argmax cut
// unless that cut already holds; the bound of the result is then the
// LP's x up to the rounding. Where every route has a mirror route of the
// same shares over the reverse directions of equal capacities, one rate
// per unordered pair serves both orientations (so an all-reduce can use
// one forest for both phases).
//
// Stage: algorithm, on a validated topology. Never prints; deterministic.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_ALGORITHMS_ROUTEGRAPH_H
#define TOPOCC_COMPILER_ALGORITHMS_ROUTEGRAPH_H

#include "compiler/analysis/Bound.h"
#include "compiler/analysis/CostModel.h"
#include "compiler/topology/Topology.h"

#include "llvm/Support/Error.h"

#include <utility>
#include <vector>

namespace topocc::algorithms {

struct RouteGraphOptions {
  bool allGather = true;      ///< cuts for out-trees (data leaves S)
  bool reduceScatter = false; ///< cuts for in-trees (data enters S)
  /// Rounds of the cut loop; the LP's value when it runs out is still an
  /// upper bound, and the graph's own bound is what the trees reach.
  int maxRounds = 300;
  /// Across nodes, a pair's route goes through the NICs NCCL's net
  /// transport gives both ends (analysis::NcclNetRoutes), as the runtime
  /// model sends it; off: LinkModel's free routing over every NIC (the
  /// store-and-forward and cut-through modes).
  bool ncclNetRule = true;
  /// The ranks the graph spans (vertex i is ranks[i]), e.g. one node's
  /// GPUs; empty: every rank. Only their pairs' routes are loaded.
  std::vector<int> ranks;
  /// Other traffic that grows with the rate x: (resource, bytes/s it puts
  /// on the resource per byte/s of x). The link rows charge it beside the
  /// pairs' rates (the messages that join one node's trees across nodes,
  /// which the trees' rate drives).
  std::vector<std::pair<int, double>> loadPerRate;
};

struct RouteGraph {
  /// Ranks only (vertex r = rank r, or RouteGraphOptions::ranks[r], named
  /// as the rank), one arc per pair
  /// with a positive rate, capacities in quanta of quantumBytesPerSec.
  analysis::BoundGraph graph;
  double lpRate = 0;      ///< the LP's x: bytes/s per rank's shard
  bool symmetric = false; ///< one rate per unordered pair
  int rounds = 0, cuts = 0;
  int pairs = 0; ///< routed rank pairs (LP columns)
};

/// The rate graph above for `t`. User errors: fewer than 2 ranks, a rank
/// pair without a route, a graph whose rates leave some rank unreachable
/// (the LP found no positive rate).
llvm::Expected<RouteGraph> buildRouteGraph(const topo::Topology &t,
                                           analysis::LinkModel &m,
                                           const RouteGraphOptions &o = {});

} // namespace topocc::algorithms

#endif // TOPOCC_COMPILER_ALGORITHMS_ROUTEGRAPH_H
