//===- compiler/passes/LowerDbTree.h - Double binary tree -------*- C++ -*-===//
//
// Lowers an all-reduce to NCCL's tree algorithm: the data is split between
// two spanning trees; in each, every unit is reduced up the tree to its
// root and broadcast back down, units one after another, so a tree of
// depth d finishes in about (units + 2d) hops instead of a ring's 2(N-1)
// steps. Stage: produces Lowered.
//
// The trees: inside a node the GPUs form a chain (the node's `localOrder`,
// rotated per channel); the chain's head joins a balanced binary tree over
// the nodes. Tree 1 runs every chain backwards and numbers the nodes one
// place on, so most nodes that are leaves of tree 0 are interior in tree 1
// and the two trees' heads are different GPUs (different NICs). Each
// (channel, tree) has two channels of its own, one for the reduction
// going up and one for the broadcast coming down, so the two run at once
// in different threadblocks, as NCCL splits a tree's warps.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_PASSES_LOWERDBTREE_H
#define TOPOCC_COMPILER_PASSES_LOWERDBTREE_H

#include "ir/Schedule.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace topocc::passes {

struct DbTreeOptions {
  int32_t numRanks = 0;
  /// The ranks of each node by local index; every node has the same count
  /// and every rank appears once. One node is allowed (its chain alone).
  std::vector<std::vector<ir::RankId>> nodes;
  /// The chain inside a node as local indices (a permutation of 0..G-1),
  /// the same on every node; empty means 0, 1, ..., G-1.
  std::vector<int32_t> localOrder;
  /// Tree pairs; pair c rotates the chains by c * G / channels places so
  /// the pairs' heads (where a node meets the network) are different GPUs.
  int32_t channels = 1;
  int32_t chunks = 1; ///< units per tree, pipelined one after another
  bool inplace = false;
  std::string name; ///< schedule name; a default is derived when empty
};

/// The units per tree that keep a deep tree's pipeline full within a
/// target's steps per threadblock: a unit costs each threadblock one step
/// (fuse makes every child's receive and reduction one rrc), so 64 where
/// 64 steps fit, else the largest power of two that fits. What
/// `compile --algorithm dbtree` uses without --chunks, and auto's first
/// dbtree candidate (docs/Algorithms.md, section 8).
int32_t dbTreeDefaultUnits(int32_t maxStepsPerThreadblock);

/// One tree over the ranks: per rank its parent (kNone at the root) and its
/// children, the chain's next GPU first, then the child nodes' heads.
struct RankTree {
  ir::RankId root = ir::kNone;
  std::vector<ir::RankId> parent;
  std::vector<std::vector<ir::RankId>> children;
};

/// The two trees of tree pair `channel` (tree 0 and tree 1, as described
/// above). REQUIRES: options that lowerDbTree accepts.
std::vector<RankTree> dbTreePair(const DbTreeOptions &o, int32_t channel);

/// Data layout: 2 * channels * chunks units; unit (2c + t) * chunks + j is
/// unit j of tree t of pair c. Channels 4c + 2t (up) and 4c + 2t + 1
/// (down) carry that tree. User error listing every problem for bad
/// options (nodes of different sizes, a rank missing or repeated, a local
/// order that is not a permutation, counts out of range).
llvm::Expected<ir::Schedule> lowerDbTree(const DbTreeOptions &o);

} // namespace topocc::passes

#endif // TOPOCC_COMPILER_PASSES_LOWERDBTREE_H
