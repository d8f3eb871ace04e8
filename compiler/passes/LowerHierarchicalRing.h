//===- compiler/passes/LowerHierarchicalRing.h - Two-level ring -*- C++ -*-===//
//
// Lowers a hierarchical ring all-reduce for multi-node topologies to unfused
// primitive ops: (1) a ring reduce-scatter inside every node leaves local GPU
// l with the node's partial sum of shard l, (2) a ring all-reduce of shard l
// over the GPUs with local index l of every node (rail l), (3) a ring
// all-gather inside every node. Stage: produces Lowered. Each (rank,
// channel) is one dependency chain through the three phases.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_PASSES_LOWERHIERARCHICALRING_H
#define TOPOCC_COMPILER_PASSES_LOWERHIERARCHICALRING_H

#include "ir/Schedule.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace topocc::passes {

struct HierRingOptions {
  ir::Collective collective = ir::Collective::AllReduce; ///< allreduce only
  int32_t numRanks = 0;
  /// The ranks of each node by local index; every node has the same count G
  /// and every rank appears once. Local index l of all nodes is rail l.
  std::vector<std::vector<ir::RankId>> nodes;
  /// Intra-node ring as local indices (a permutation of 0..G-1), the same on
  /// every node; empty means 0, 1, ..., G-1.
  std::vector<int32_t> localOrder;
  int32_t channels = 1; ///< independent copies, each 1/channels of the data
  int32_t chunks = 1;   ///< chunks per shard block (pipelining)
  bool inplace = false;
  std::string name; ///< schedule name; a default is derived when empty
};

/// Data layout per channel c (G local GPUs, N nodes, K chunks; U = G*N*K):
/// unit c*U + l*N*K + j*N + b is block b (node ring position) of sub-chunk
/// j of shard l. nchunksperloop = channels * U.
/// User error listing every problem for bad options (not allreduce, fewer
/// than 2 nodes, unequal nodes, a rank missing or repeated, bad local order,
/// counts out of range).
llvm::Expected<ir::Schedule> lowerHierarchicalRing(const HierRingOptions &o);

} // namespace topocc::passes

#endif // TOPOCC_COMPILER_PASSES_LOWERHIERARCHICALRING_H
