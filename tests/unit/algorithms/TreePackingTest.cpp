//===- tests/unit/algorithms/TreePackingTest.cpp - Spanning out-trees -----===//
//
// Tree packing with multiplicities (docs/Algorithms-trees.md, "Tree packing"):
// k trees per root, each spanning, physical congestion <= U after mapping back
// through switches, shallow trees on one NVSwitch, and random meshes with
// switches.
//
//===----------------------------------------------------------------------===//

#include "compiler/algorithms/ForestColl.h"
#include "compiler/algorithms/TreePacking.h"
#include "tests/support/BoundGraphs.h"

#include "gtest/gtest.h"

#include <map>
#include <random>
#include <set>

using namespace topocc;
using namespace topocc::analysis;
using namespace topocc::algorithms;
using namespace topocc::testgraphs;

namespace {


struct Packed {
  DirectionalBound bound;
  SwitchSplitResult split;
  TreePackingResult trees;
};

Packed packOk(const BoundGraph &g, bool reversed,
              SplitPolicy policy = SplitPolicy::Spread) {
  Packed p;
  auto d = dinkelbachBound(g, reversed);
  if (!d) {
    ADD_FAILURE() << llvm::toString(d.takeError());
    return p;
  }
  p.bound = *d;
  std::vector<int64_t> units;
  for (const BoundGraph::Arc &a : g.arcs)
    units.push_back(d->arcUnits(a.cap));
  auto s = splitSwitches(g, reversed, units, d->k, policy);
  if (!s) {
    ADD_FAILURE() << llvm::toString(s.takeError());
    return p;
  }
  p.split = std::move(*s);
  auto t = packTrees(p.split, g, reversed, units);
  if (!t) {
    ADD_FAILURE() << llvm::toString(t.takeError());
    return p;
  }
  p.trees = std::move(*t);
  return p;
}

/// Independent re-check: k units per root, every tree an arborescence
/// rooted at its root, physical multiplicities adding up per tree.
void expectForest(const TreePackingResult &r) {
  std::vector<int64_t> perRoot(r.numRanks, 0);
  for (const PackedTree &t : r.trees) {
    perRoot[t.root] += t.mult;
    EXPECT_EQ(t.parent[t.root], -1);
    for (int v = 0; v < r.numRanks; ++v) {
      int hops = 0, x = v;
      while (x != t.root && hops <= r.numRanks) {
        x = t.parent[x];
        ASSERT_GE(x, 0) << "rank " << v << " is not in the tree";
        ++hops;
      }
      EXPECT_LE(hops, t.height);
    }
  }
  for (int64_t c : perRoot)
    EXPECT_EQ(c, r.k);
  std::vector<int64_t> phys(r.trees.size(), 0);
  for (const PhysicalTree &p : r.physical) {
    phys[p.tree] += p.mult;
    EXPECT_EQ(p.paths.size(), static_cast<size_t>(r.numRanks - 1));
    // No recovered path visits a device twice (nested splits can produce
    // u -> w -> s -> w -> t; map-back cuts such loops out).
    for (const std::vector<int> &path : p.paths) {
      std::set<int> seen(path.begin(), path.end());
      EXPECT_EQ(seen.size(), path.size()) << "a path revisits a device";
    }
  }
  for (size_t i = 0; i < r.trees.size(); ++i)
    EXPECT_EQ(phys[i], r.trees[i].mult);
  EXPECT_LE(r.congestion, 1.0);
  EXPECT_GT(r.congestion, 0.0);
}

} // namespace

// One NVSwitch, k = 1: spread splitting gives the complete digraph and the
// packing star trees (height 1), every path GPU -> NVSwitch -> GPU.
TEST(TreePackingTest, OneDgxStars) {
  Packed p = packOk(oneDgx(), false);
  expectForest(p.trees);
  EXPECT_EQ(p.trees.trees.size(), 8u);
  EXPECT_EQ(p.trees.maxHeight, 1);
  EXPECT_DOUBLE_EQ(p.trees.meanHeight, 1.0);
  EXPECT_DOUBLE_EQ(p.trees.congestion, 1.0);
  for (const PhysicalTree &t : p.trees.physical)
    for (const std::vector<int> &path : t.paths)
      EXPECT_EQ(path.size(), 3u) << "expected GPU -> nvs -> GPU";
}

// DGX-1 hybrid cube-mesh at the optimum: k = 6 per root, no switches.
TEST(TreePackingTest, Dgx1AtOptimum) {
  BoundGraph g;
  g.numVertices = 8;
  for (int i = 0; i < 8; ++i) {
    g.compute.push_back(i);
    for (int j = 0; j < 8; ++j)
      if (kDgx1[i][j])
        g.arcs.push_back({i, j, 25 * kDgx1[i][j], -1, 0});
  }
  Packed p = packOk(g, false);
  EXPECT_EQ(p.trees.k, 6);
  expectForest(p.trees);
  EXPECT_DOUBLE_EQ(p.trees.congestion, 1.0); // the bound is tight
  EXPECT_LE(p.trees.maxHeight, 7);
}

// Reduce-scatter packs the reversed graph.
TEST(TreePackingTest, ReversedGraph) {
  Packed p = packOk(oneDgx(), true);
  expectForest(p.trees);
  EXPECT_EQ(p.trees.maxHeight, 1);
}

// Property: random meshes with switches and symmetric bandwidths, both
// orientations and both splitting policies: a valid forest, congestion <= U.
TEST(TreePackingTest, RandomMeshesWithSwitches) {
  std::mt19937 rng(777);
  int done = 0;
  for (int iter = 0; iter < 20; ++iter) {
    int n = std::uniform_int_distribution<int>(2, 7)(rng);
    int sw = std::uniform_int_distribution<int>(0, 3)(rng);
    RandomMeshOptions o;
    o.gpus = n;
    o.switches = sw;
    BoundGraph g = randomMesh(rng, o);
    for (bool rev : {false, true})
      for (SplitPolicy pol : {SplitPolicy::Greedy, SplitPolicy::Spread,
                              SplitPolicy::Proposal}) {
        auto d = dinkelbachBound(g, rev);
        ASSERT_TRUE(static_cast<bool>(d));
        if (d->k > 24)
          continue; // keep the sanitized test fast
        SCOPED_TRACE(testing::Message() << "iteration " << iter << " rev "
                                        << rev << " policy " << int(pol));
        Packed p = packOk(g, rev, pol);
        expectForest(p.trees);
        ++done;
      }
  }
  EXPECT_GT(done, 60);
}

// Two switches in series (GPUs 0, 1 on switch 4; GPUs 2, 3 on switch 5; a
// 4 -- 5 link), the shape where nested splits can pair 0 -> 5 and 5 -> 1
// (both through 4) into 0 -> 4 -> 5 -> 4 -> 1: every path between GPUs of
// one switch must be the direct GPU -> switch -> GPU, under every policy and
// orientation (expectForest also checks that no path revisits a device).
// The library's a100-pcie-8gpu.yaml did produce such loops before map-back
// cut them (tests/lit/trees/loop-free-paths.test).
TEST(TreePackingTest, SwitchesInSeriesHaveLoopFreePaths) {
  BoundGraph g;
  g.numVertices = 6;
  for (int i = 0; i < 4; ++i)
    g.compute.push_back(i);
  addLink(g, 0, 4, 2);
  addLink(g, 1, 4, 2);
  addLink(g, 2, 5, 2);
  addLink(g, 3, 5, 2);
  addLink(g, 4, 5, 2);
  int local = 0;
  for (bool rev : {false, true})
    for (SplitPolicy pol :
         {SplitPolicy::Greedy, SplitPolicy::Spread, SplitPolicy::Proposal}) {
      SCOPED_TRACE(testing::Message() << "rev " << rev << " policy "
                                      << int(pol));
      Packed p = packOk(g, rev, pol);
      expectForest(p.trees);
      for (const PhysicalTree &t : p.trees.physical)
        for (size_t a = 0; a < t.paths.size(); ++a) {
          const PackedTree &tree = p.trees.trees[t.tree];
          auto [from, to] = tree.arcs[a];
          bool sameSwitch = (from < 2) == (to < 2);
          // Within one switch's GPUs the loop-free path has 3 vertices.
          if (sameSwitch) {
            EXPECT_EQ(t.paths[a].size(), 3u);
            ++local;
          }
        }
    }
  EXPECT_GT(local, 0);
}

namespace {

Forest forestOk(const BoundGraph &g, const PackOptions &pack,
                int64_t treesPerRoot = 0) {
  ForestOptions o;
  o.pack = pack;
  o.treesPerRoot = treesPerRoot;
  auto f = buildForest(g, o);
  if (!f) {
    ADD_FAILURE() << llvm::toString(f.takeError());
    return Forest{};
  }
  return std::move(*f);
}

/// Every arc (x, y, c) of the split GPU graph has its image shifted by d
/// ranks with the same capacity.
void expectShiftSymmetric(const SwitchSplitResult &s, int d) {
  std::map<std::pair<int, int>, int64_t> cap;
  std::vector<int> rankOf(s.numVertices, -1);
  for (size_t r = 0; r < s.compute.size(); ++r)
    rankOf[s.compute[r]] = static_cast<int>(r);
  for (const SwitchSplitResult::Arc &a : s.arcs)
    cap[{rankOf[a.from], rankOf[a.to]}] = a.cap;
  const int n = static_cast<int>(s.compute.size());
  for (auto &[key, c] : cap) {
    auto it = cap.find({(key.first + d) % n, (key.second + d) % n});
    ASSERT_NE(it, cap.end()) << key.first << " -> " << key.second;
    EXPECT_EQ(it->second, c) << key.first << " -> " << key.second;
  }
}

} // namespace

// Four named DGX boxes: the IB switches split into a box-shift symmetric
// plan, so the packing probes one box's 8 trees and copies them to the
// other boxes, here without a single max-flow; the exact symmetric oracle
// and the generic packing give valid forests with the same k and height
// bound too.
TEST(TreePackingTest, SymmetricClusterProbesOneBox) {
  BoundGraph g = forestCollDgxNamed(4);
  Forest f = forestOk(g, {});
  expectShiftSymmetric(f.split, 8);
  EXPECT_EQ(f.trees.symmetryOrder, 4);
  EXPECT_TRUE(f.trees.oracleFree);
  EXPECT_FALSE(f.trees.symmetryFallback);
  EXPECT_EQ(f.trees.maxFlows, 0);
  EXPECT_EQ(f.trees.trees.size(), 32u);
  expectForest(f.trees);
  // Tree of root r + 8 is tree r shifted by one box.
  for (const PackedTree &t : f.trees.trees)
    if (t.root < 24) {
      const PackedTree &img = f.trees.trees[t.root + 8];
      ASSERT_EQ(img.root, t.root + 8);
      for (size_t a = 0; a < t.arcs.size(); ++a)
        EXPECT_EQ(img.arcs[a], std::make_pair((t.arcs[a].first + 8) % 32,
                                              (t.arcs[a].second + 8) % 32));
    }

  PackOptions exact;
  exact.tryOracleFree = false;
  Forest e = forestOk(g, exact);
  EXPECT_EQ(e.trees.symmetryOrder, 4);
  EXPECT_FALSE(e.trees.oracleFree);
  EXPECT_GT(e.trees.maxFlows, 0);
  expectForest(e.trees);

  PackOptions generic;
  generic.useSymmetry = false;
  Forest n = forestOk(g, generic);
  EXPECT_EQ(n.trees.symmetryOrder, 1);
  EXPECT_GT(n.trees.maxFlows, e.trees.maxFlows);
  expectForest(n.trees);
  EXPECT_EQ(n.k, f.k);
}

// Without device names there is no box shift for the splitting to keep,
// the split graph is not shift-symmetric, and the packing is generic.
TEST(TreePackingTest, UnnamedClusterPacksGenerically) {
  Forest f = forestOk(forestCollDgx(4), {});
  EXPECT_EQ(f.trees.symmetryOrder, 1);
  EXPECT_GT(f.trees.maxFlows, 0);
  expectForest(f.trees);
}

// Random clusters of identical boxes (2-4 boxes of 2-4 GPUs, rails on 1-2
// fabric switches), at the optimal k and at k = 1: every mode packs a valid
// forest; the symmetric packing is taken on most of them.
TEST(TreePackingTest, RandomBoxClusters) {
  std::mt19937 rng(20261130);
  int symmetric = 0, total = 0;
  for (int iter = 0; iter < 10; ++iter) {
    int boxes = std::uniform_int_distribution<int>(2, 4)(rng);
    int gpus = std::uniform_int_distribution<int>(2, 4)(rng);
    int fabric = std::uniform_int_distribution<int>(1, 2)(rng);
    BoundGraph g = randomBoxCluster(rng, boxes, gpus, fabric);
    for (int64_t k : {int64_t(0), int64_t(1)}) {
      SCOPED_TRACE(::testing::Message() << "iteration " << iter << ", "
                                        << boxes << " boxes of " << gpus
                                        << " GPUs, k " << k);
      Forest f = forestOk(g, {}, k);
      expectForest(f.trees);
      ++total;
      if (f.trees.symmetryOrder > 1) {
        ++symmetric;
        EXPECT_EQ(boxes % f.trees.symmetryOrder, 0);
        expectShiftSymmetric(f.split, boxes * gpus / f.trees.symmetryOrder);
      }
      PackOptions generic;
      generic.useSymmetry = false;
      Forest n = forestOk(g, generic, k);
      expectForest(n.trees);
      EXPECT_EQ(n.k, f.k);
    }
  }
  EXPECT_GT(symmetric, total / 2);
}

// The box-cut pre-check in the generic packing (blocks = the nodes, from
// the device names; a fat tree of 2 pods x 2 nodes x 4 GPUs, whose boxes'
// cuts are tight): it answers probes the oracle would reject, so the trees
// are the same and max-flows are spared.
TEST(TreePackingTest, BoxCutsSpareGenericMaxFlows) {
  BoundGraph g = fatTreeCluster(2, 2, 4, 2);
  PackOptions byNode;
  byNode.useSymmetry = false; // blocks filled from the names
  Forest a = forestOk(g, byNode);
  PackOptions oneBlock = byNode;
  oneBlock.blocks.assign(g.compute.size(), 0); // no arc leaves the block
  Forest b = forestOk(g, oneBlock);
  expectForest(a.trees);
  EXPECT_GT(a.trees.cutRejects, 0);
  EXPECT_EQ(b.trees.cutRejects, 0);
  EXPECT_LT(a.trees.maxFlows, b.trees.maxFlows);
  ASSERT_EQ(a.trees.trees.size(), b.trees.trees.size());
  for (size_t i = 0; i < a.trees.trees.size(); ++i)
    EXPECT_EQ(a.trees.trees[i].arcs, b.trees.trees[i].arcs) << "tree " << i;
}

// A fat tree whose leaves belong to pods (fatTreeCluster: "pod1-node0/gpu0",
// "pod1-leaf0", "spine0"): the nodes are not alike (pod 0's last node and
// pod 1's first hang off different leaves), so the box shift takes the pods
// as boxes, leaves included. Switches of pods 1.. take pod 0's plans
// shifted, the spines a symmetric plan that also pairs spine-to-spine
// units; the split stays symmetric and the packing probes one pod's trees.
TEST(TreePackingTest, FatTreePodsAreBoxes) {
  const int pods = 4, nodes = 2, gpus = 2;
  BoundGraph g = fatTreeCluster(pods, nodes, gpus, 2);
  Forest f = forestOk(g, {});
  EXPECT_GT(f.split.symmetricPlans, 0);
  EXPECT_GT(f.split.mirroredPlans, 0);
  expectShiftSymmetric(f.split, nodes * gpus);
  EXPECT_EQ(f.trees.symmetryOrder, pods);
  EXPECT_FALSE(f.trees.symmetryFallback);
  expectForest(f.trees);

  PackOptions generic;
  generic.useSymmetry = false;
  Forest n = forestOk(g, generic);
  expectForest(n.trees);
  EXPECT_EQ(n.k, f.k);
  EXPECT_LT(f.trees.maxFlows, n.trees.maxFlows);
}
