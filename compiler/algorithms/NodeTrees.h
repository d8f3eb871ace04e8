//===- compiler/algorithms/NodeTrees.h - Trees joined across nodes -*- C++
//-*-===//
//
// Hierarchical spanning trees (--tree-graph hier, docs/Algorithms-trees.md,
// "Hierarchical trees"): the trees of one node, on local GPU indices,
// joined across identical nodes. A tree of local root l rooted at rank
// (b, l) reaches the copies (c, l) of l in the other nodes along a tree of
// fan-out kNodeFanout over the nodes (a heap of the nodes in the order b,
// b + 1, ..., so every node is a leaf in most trees), one message per arc
// over the nodes' NICs; inside every node the same local tree spreads the
// data from that node's copy of l. A node whose GPU pairs all route
// through one switch level (NVSwitch, one PCIe switch) gets a star per
// root: every GPU's own port carries what the all-gather's cut needs,
// and the tree is one hop deep.
// Stage: algorithm. Never prints; deterministic.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_ALGORITHMS_NODETREES_H
#define TOPOCC_COMPILER_ALGORITHMS_NODETREES_H

#include "compiler/analysis/CostModel.h"

#include "llvm/ADT/ArrayRef.h"

#include <vector>

namespace topocc::algorithms {

/// Children per parent of the tree over the nodes: a binary heap. On
/// every multi-node library topology it was at least as fast as a star
/// (every other node fed by the root's node) and a chain, within 3%.
constexpr int kNodeFanout = 2;

/// Parent per rank (-1 at the root) of the joined tree of a local tree
/// `localParent` (per local index, -1 at its root `localRoot`) rooted at
/// rank nodes[rootNode][localRoot]. `nodes` holds each node's ranks by
/// local index; every node has localParent.size() of them.
std::vector<int> joinedParents(llvm::ArrayRef<int> localParent, int localRoot,
                               int rootNode,
                               const std::vector<std::vector<int>> &nodes,
                               int numRanks, int fanout = kNodeFanout);

/// Whether every pair of `ranks` routes through exactly one device between
/// them (a switch: GPUs never forward), so a star per root loads each
/// GPU's port as the all-gather's cut does.
bool oneSwitchLevel(analysis::LinkModel &m, llvm::ArrayRef<int> ranks);

} // namespace topocc::algorithms

#endif // TOPOCC_COMPILER_ALGORITHMS_NODETREES_H
