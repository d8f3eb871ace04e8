//===- compiler/algorithms/NodeTrees.cpp - Trees joined across nodes ------===//
//
// The joined trees and the one-switch-level test of NodeTrees.h.
//
//===----------------------------------------------------------------------===//

#include "compiler/algorithms/NodeTrees.h"

#include <cassert>

namespace topocc::algorithms {

std::vector<int> joinedParents(llvm::ArrayRef<int> localParent, int localRoot,
                               int rootNode,
                               const std::vector<std::vector<int>> &nodes,
                               int numRanks, int fanout) {
  assert(fanout >= 1 && "a tree over the nodes needs a fan-out");
  const int N = static_cast<int>(nodes.size());
  std::vector<int> parent(numRanks, -1);
  for (int c = 0; c < N; ++c)
    for (size_t x = 0; x < localParent.size(); ++x) {
      const int rank = nodes[c][x];
      if (localParent[x] >= 0) {
        parent[rank] = nodes[c][localParent[x]];
      } else if (c != rootNode) {
        // Node c is heap position j counted from the root's node.
        const int j = (c - rootNode + N) % N;
        const int up = ((j - 1) / fanout + rootNode) % N;
        parent[rank] = nodes[up][localRoot];
      }
    }
  return parent;
}

bool oneSwitchLevel(analysis::LinkModel &m, llvm::ArrayRef<int> ranks) {
  for (int a : ranks)
    for (int b : ranks)
      if (a != b) {
        const analysis::PathFlow &f = m.rankFlow(a, b);
        if (!f.found || f.hops != 2)
          return false;
      }
  return true;
}

} // namespace topocc::algorithms
