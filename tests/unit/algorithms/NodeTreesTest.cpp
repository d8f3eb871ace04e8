//===- tests/unit/algorithms/NodeTreesTest.cpp - Trees joined across nodes ===//
//
// NodeTrees.h: a local tree joined across identical nodes spans every rank
// once, enters each node only at the copy of its root, crosses between
// nodes only between copies of that root (the GPUs one NIC route joins),
// and is a heap of fan-out kNodeFanout over the nodes; the one-switch-level
// test tells NVSwitch boxes from GPU meshes and PCIe trees. The node route
// graph charges the messages that join the nodes.
//
//===----------------------------------------------------------------------===//

#include "compiler/algorithms/NodeTrees.h"
#include "compiler/algorithms/RouteGraph.h"
#include "compiler/analysis/NetRoutes.h"
#include "compiler/lowerings/Lowering.h"

#include "tests/support/Topologies.h"

#include "gtest/gtest.h"

#include <vector>

using namespace topocc;
using namespace topocc::algorithms;

namespace {

TEST(NodeTreesTest, JoinedTreesSpanEveryRankThroughTheRootsCopies) {
  for (int numNodes : {1, 2, 3, 4, 7, 16})
    for (int G : {1, 3, 8}) {
      // Node c holds ranks c*G .. c*G + G - 1, listed in reverse so that
      // local index and rank differ.
      std::vector<std::vector<int>> nodes(numNodes);
      for (int c = 0; c < numNodes; ++c)
        for (int x = G - 1; x >= 0; --x)
          nodes[c].push_back(c * G + x);
      const int n = numNodes * G;
      // A local chain 0 <- 1 <- ... rooted at local 0, and a star at the
      // last GPU.
      std::vector<int> chain(G), star(G, G - 1);
      for (int x = 0; x < G; ++x)
        chain[x] = x - 1;
      star[G - 1] = -1;
      for (const auto &[local, root] :
           {std::pair(chain, 0), std::pair(star, G - 1)})
        for (int b = 0; b < numNodes; ++b) {
          SCOPED_TRACE(::testing::Message()
                       << numNodes << " nodes of " << G << ", root node " << b);
          std::vector<int> parent =
              joinedParents(local, root, b, nodes, n, kNodeFanout);
          ASSERT_EQ(parent.size(), size_t(n));
          const int top = nodes[b][root];
          EXPECT_EQ(parent[top], -1);
          int interNode = 0, maxNodeDepth = 0;
          for (int c = 0; c < numNodes; ++c)
            for (int x = 0; x < G; ++x) {
              const int r = nodes[c][x];
              if (r == top)
                continue;
              ASSERT_GE(parent[r], 0) << "rank " << r;
              const int pc = parent[r] / G;
              if (pc != c) {
                // Only the root's copies cross, to the heap parent node.
                ++interNode;
                EXPECT_EQ(x, root);
                EXPECT_EQ(parent[r], nodes[pc][root]);
                const int j = (c - b + numNodes) % numNodes;
                EXPECT_EQ((pc - b + numNodes) % numNodes,
                          (j - 1) / kNodeFanout);
              } else {
                EXPECT_EQ(parent[r], nodes[c][local[x]]);
              }
              // Every rank reaches the root, crossing at most log2 nodes.
              int hops = 0, crossings = 0;
              for (int v = r; v != top; v = parent[v], ++hops) {
                ASSERT_LT(hops, n) << "cycle through rank " << r;
                crossings += parent[v] / G != v / G;
              }
              maxNodeDepth = std::max(maxNodeDepth, crossings);
            }
          EXPECT_EQ(interNode, numNodes - 1);
          int depth = 0;
          for (int m = 1; m < numNodes; m = m * kNodeFanout + 1)
            ++depth;
          EXPECT_EQ(maxNodeDepth, depth);
        }
    }
}

TEST(NodeTreesTest, OneSwitchLevelTellsSwitchBoxesFromMeshes) {
  for (const auto &[file, expected] :
       {std::pair("dgx-a100.yaml", true), std::pair("dgx-h100.yaml", true),
        std::pair("mi250.yaml", false),
        std::pair("a100-pcie-8gpu.yaml", false)}) {
    topo::Topology t = topocc::testing::libraryTopology(file);
    analysis::LinkModel m(t);
    std::vector<int> ranks;
    for (int r = 0; r < t.numRanks(); ++r)
      ranks.push_back(r);
    EXPECT_EQ(oneSwitchLevel(m, ranks), expected) << file;
  }
}

TEST(NodeTreesTest, NodeRouteGraphChargesTheJoiningMessages) {
  // mi250x2: one node's GCDs, with and without the NIC traffic that joins
  // the two nodes (each GCD sends its trees' units to its peer and
  // receives the peer's, at half the node trees' rate x). Two GCDs share
  // a 24 GB/s NIC, so x is at most 24 GB/s with it; the node's links alone
  // allow more.
  topo::Topology t = topocc::testing::libraryTopology("mi250x2.yaml");
  analysis::LinkModel m(t);
  std::vector<std::vector<ir::RankId>> nodes = lowerings::nodeRanks(t);
  ASSERT_EQ(nodes.size(), 2u);
  RouteGraphOptions o;
  o.ranks.assign(nodes[0].begin(), nodes[0].end());
  auto alone = buildRouteGraph(t, m, o);
  ASSERT_TRUE(static_cast<bool>(alone)) << llvm::toString(alone.takeError());
  EXPECT_EQ(alone->graph.compute.size(), nodes[0].size());
  analysis::NcclNetRoutes net(t);
  for (size_t l = 0; l < nodes[0].size(); ++l)
    for (auto [a, b] : {std::pair(nodes[0][l], nodes[1][l]),
                        std::pair(nodes[1][l], nodes[0][l])})
      for (auto [res, share] : analysis::runtimeRankFlow(m, &net, a, b).res)
        o.loadPerRate.emplace_back(res, share / 2);
  auto joined = buildRouteGraph(t, m, o);
  ASSERT_TRUE(static_cast<bool>(joined)) << llvm::toString(joined.takeError());
  EXPECT_LE(joined->lpRate, 24e9 * (1 + 1e-6));
  EXPECT_GT(joined->lpRate, 0.9 * 24e9);
  EXPECT_GT(alone->lpRate, joined->lpRate * 1.02);
}

} // namespace
