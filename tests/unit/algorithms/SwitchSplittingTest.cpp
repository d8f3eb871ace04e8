//===- tests/unit/algorithms/SwitchSplittingTest.cpp - Switch removal -----===//
//
// Switch removal by directed edge splitting (docs/Algorithms-trees.md, "Switch
// removal"): every switch isolated, invariant I (flow(s, v) >= N k) kept, the
// edge map conserves units, the spread policy turns one NVSwitch into a
// complete digraph, and random meshes with switches split under both policies.
//
//===----------------------------------------------------------------------===//

#include "compiler/algorithms/SwitchSplitting.h"
#include "tests/support/BoundGraphs.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <map>
#include <random>

using namespace topocc;
using namespace topocc::analysis;
using namespace topocc::algorithms;
using namespace topocc::testgraphs;

namespace {

SwitchSplitResult splitOk(const BoundGraph &g, bool reversed, int64_t k,
                          llvm::ArrayRef<int64_t> units, SplitPolicy p) {
  auto r = splitSwitches(g, reversed, units, k, p);
  if (!r) {
    ADD_FAILURE() << llvm::toString(r.takeError());
    return SwitchSplitResult();
  }
  return std::move(*r);
}

/// Every arc joins two GPUs, I holds, and each arc's units are its direct
/// capacity plus what splits added.
void expectValid(const BoundGraph &g, const SwitchSplitResult &r) {
  std::set<int> gpus(g.compute.begin(), g.compute.end());
  for (const SwitchSplitResult::Arc &a : r.arcs) {
    EXPECT_TRUE(gpus.count(a.from) && gpus.count(a.to));
    int64_t sum = 0;
    auto d = r.direct.find({a.from, a.to});
    if (d != r.direct.end())
      sum += d->second;
    auto v = r.viaSwitch.find({a.from, a.to});
    if (v != r.viaSwitch.end())
      for (const SplitContribution &c : v->second)
        sum += c.amount;
    EXPECT_EQ(sum, a.cap) << a.from << " -> " << a.to;
  }
  EXPECT_GE(minRootFlow(r),
            static_cast<int64_t>(g.compute.size()) * r.k);
}

} // namespace

// One NVSwitch, k = 1, 7 units per arc: the spread policy yields the complete
// digraph with one unit per arc (star trees become possible).
TEST(SwitchSplittingTest, OneDgxSpreadIsCompleteDigraph) {
  BoundGraph g = forestCollDgx(1);
  auto d = dinkelbachBound(g, false);
  ASSERT_TRUE(static_cast<bool>(d)) << llvm::toString(d.takeError());
  ASSERT_EQ(d->k, 1);
  SwitchSplitResult r =
      splitOk(g, false, d->k, unitsOf(g, *d), SplitPolicy::Spread);
  ASSERT_EQ(r.arcs.size(), 56u);
  for (const SwitchSplitResult::Arc &a : r.arcs)
    EXPECT_EQ(a.cap, 1) << a.from << " -> " << a.to;
  expectValid(g, r);
  EXPECT_EQ(minRootFlow(r), 8);
  // Each GPU sent 7 units into the NVSwitch, all onward, none looped.
  for (int v : g.compute)
    EXPECT_EQ(r.inAtProcessing.at({v, 8}), 7);
  EXPECT_TRUE(r.loopDiscarded.empty());
}

// The proposal policy splits the NVSwitch at once (kept after one check of
// I: 8 max-flows, plus 8 on entry and 8 + 8 at the end) into the same
// complete digraph.
TEST(SwitchSplittingTest, OneDgxProposalIsKept) {
  BoundGraph g = forestCollDgx(1);
  auto d = dinkelbachBound(g, false);
  ASSERT_TRUE(static_cast<bool>(d));
  SwitchSplitResult r =
      splitOk(g, false, d->k, unitsOf(g, *d), SplitPolicy::Proposal);
  EXPECT_EQ(r.proposalsKept, 1);
  EXPECT_EQ(r.proposalsRejected, 0);
  ASSERT_EQ(r.arcs.size(), 56u);
  for (const SwitchSplitResult::Arc &a : r.arcs)
    EXPECT_EQ(a.cap, 1);
  expectValid(g, r);
}

TEST(SwitchSplittingTest, OneDgxGreedyKeepsInvariant) {
  BoundGraph g = forestCollDgx(1);
  auto d = dinkelbachBound(g, false);
  ASSERT_TRUE(static_cast<bool>(d));
  SwitchSplitResult r =
      splitOk(g, false, d->k, unitsOf(g, *d), SplitPolicy::Greedy);
  expectValid(g, r);
  int64_t total = 0;
  for (const SwitchSplitResult::Arc &a : r.arcs)
    total += a.cap;
  EXPECT_EQ(total, 56); // 8 GPUs x 7 units, none discarded
  EXPECT_LT(r.arcs.size(), 56u); // greedy: fewer, fatter arcs
}

// 2 x DGX-A100 at the optimum (k = 13, 180 units per NVSwitch arc, 15 per
// NIC/IB arc): NICs, NVSwitches and IB switches all split off. (Greedy keeps
// the sanitized test fast: about 4x fewer max-flows than spread.)
TEST(SwitchSplittingTest, TwoDgxAtOptimum) {
  BoundGraph g = forestCollDgx(2);
  auto d = dinkelbachBound(g, false);
  ASSERT_TRUE(static_cast<bool>(d));
  ASSERT_EQ(d->k, 13);
  SwitchSplitResult r =
      splitOk(g, false, d->k, unitsOf(g, *d), SplitPolicy::Greedy);
  expectValid(g, r);
  EXPECT_EQ(minRootFlow(r), 16 * 13);
  // Inter-box units: every GPU's 15 NIC units leave the box.
  int64_t cross = 0;
  for (const SwitchSplitResult::Arc &a : r.arcs)
    if ((a.from < 17) != (a.to < 17))
      cross += a.cap;
  EXPECT_GT(cross, 0);
  EXPECT_LE(cross, 16 * 15);
}

// 8 x DGX-A100 (64 GPUs, 74 switches and NICs) at k = 1: the proposal
// policy splits everything in one bulk batch, checked once (64 max-flows on
// entry, 64 for the batch, none at the end). The IB switches never pair two
// GPUs of one box (each box's cut is tight: 56 units in, 56 needed), and
// every GPU spreads its 7 IB units over 7 other boxes, one each.
TEST(SwitchSplittingTest, EightDgxBulkProposal) {
  const int boxes = 8, per = 17;
  BoundGraph g = forestCollDgx(boxes);
  auto d = dinkelbachBound(g, false);
  ASSERT_TRUE(static_cast<bool>(d));
  ASSERT_EQ(d->k, 1);
  SwitchSplitResult r =
      splitOk(g, false, d->k, unitsOf(g, *d), SplitPolicy::Proposal);
  EXPECT_EQ(r.proposalsKept, boxes * 9 + 2);
  EXPECT_EQ(r.proposalsRejected, 0);
  EXPECT_EQ(r.maxFlows, 2 * 8 * boxes);
  expectValid(g, r);
  const int ib0 = per * boxes, ib1 = ib0 + 1;
  std::map<int, std::set<int>> boxesReached;
  int64_t viaIb = 0;
  for (auto &[key, list] : r.viaSwitch)
    for (const SplitContribution &c : list)
      if (c.via == ib0 || c.via == ib1) {
        if (g.compute.end() ==
                std::find(g.compute.begin(), g.compute.end(), key.first) ||
            g.compute.end() ==
                std::find(g.compute.begin(), g.compute.end(), key.second))
          continue; // an ib0 <-> ib1 leg, expanded again at ib1
        EXPECT_NE(key.first / per, key.second / per)
            << key.first << " -> " << key.second << " via " << c.via;
        EXPECT_EQ(c.amount, 1);
        boxesReached[key.first].insert(key.second / per);
        viaIb += c.amount;
      }
  EXPECT_EQ(viaIb, 64 * 7);
  for (auto &[gpu, reached] : boxesReached)
    EXPECT_EQ(reached.size(), 7u) << gpu;
}

// A switch with two neighbours and equal capacities through it (a NIC, a
// PCIe hop) splits exactly, without a max-flow: every path through it has
// one way on. GPU 0 -- a -- b -- GPU 1: only the entry check (2 flows).
TEST(SwitchSplittingTest, PathSwitchesSplitWithoutMaxFlows) {
  BoundGraph g;
  g.numVertices = 4;
  g.compute = {0, 1};
  addLink(g, 0, 2, 3);
  addLink(g, 2, 3, 3);
  addLink(g, 3, 1, 3);
  auto d = dinkelbachBound(g, false);
  ASSERT_TRUE(static_cast<bool>(d));
  SwitchSplitResult r =
      splitOk(g, false, d->k, unitsOf(g, *d), SplitPolicy::Proposal);
  EXPECT_EQ(r.maxFlows, 2);
  EXPECT_EQ(r.proposalsKept, 2);
  ASSERT_EQ(r.arcs.size(), 2u);
  EXPECT_EQ(r.arcs[0].from, 0);
  EXPECT_EQ(r.arcs[0].to, 1);
  expectValid(g, r);
}

// Switches whose in- and out-capacity differ cannot be isolated.
TEST(SwitchSplittingTest, UnbalancedSwitchIsReported) {
  BoundGraph g;
  g.numVertices = 3;
  g.compute = {0, 1};
  g.arcs = {{0, 2, 2, -1, 0}, {2, 0, 1, -1, 1},
            {1, 2, 2, -1, 0}, {2, 1, 1, -1, 1}};
  std::vector<int64_t> units = {2, 1, 2, 1};
  auto r = splitSwitches(g, false, units, 1, SplitPolicy::Spread);
  ASSERT_FALSE(static_cast<bool>(r));
  EXPECT_EQ(llvm::toString(r.takeError()),
            "switch splitting: vertex 2 could not be isolated (2 units in "
            "and 0 out remain; its in- and out-capacity must be equal)");
}

TEST(SwitchSplittingTest, TooFewUnitsIsAUserError) {
  BoundGraph g = forestCollDgx(1);
  std::vector<int64_t> units(g.arcs.size(), 6); // 7 needed for k = 1
  auto r = splitSwitches(g, false, units, 1, SplitPolicy::Spread);
  ASSERT_FALSE(static_cast<bool>(r));
  EXPECT_EQ(llvm::toString(r.takeError()),
            "error: switch splitting: the tree units do not admit 1 trees per "
            "root (a GPU's max-flow is 1 short)\n");
}

// Property: random meshes with switches and symmetric integer bandwidths;
// at the optimum (k, c(e) of the bound) both policies isolate every switch
// and keep I, on G and on the reversed graph.
TEST(SwitchSplittingTest, RandomMeshesWithSwitches) {
  std::mt19937 rng(4242);
  int done = 0;
  for (int iter = 0; iter < 25; ++iter) {
    int n = std::uniform_int_distribution<int>(2, 7)(rng);
    int sw = std::uniform_int_distribution<int>(1, 4)(rng);
    RandomMeshOptions o;
    o.gpus = n;
    o.switches = sw;
    o.maxBw = 6;
    BoundGraph g = randomMesh(rng, o);
    for (bool rev : {false, true}) {
      auto d = dinkelbachBound(g, rev);
      ASSERT_TRUE(static_cast<bool>(d)) << llvm::toString(d.takeError());
      if (d->k > 40)
        continue; // keep the test fast
      for (SplitPolicy p : {SplitPolicy::Greedy, SplitPolicy::Spread,
                            SplitPolicy::Proposal}) {
        SCOPED_TRACE(testing::Message() << "iteration " << iter << " rev "
                                        << rev << " policy " << int(p));
        SwitchSplitResult r = splitOk(g, rev, d->k, unitsOf(g, *d), p);
        expectValid(g, r);
        ++done;
      }
    }
  }
  EXPECT_GT(done, 90);
}
