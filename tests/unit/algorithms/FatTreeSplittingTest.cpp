//===- tests/unit/algorithms/FatTreeSplittingTest.cpp - Two-level fabrics -===//
//
// Switch splitting on a two-level fat tree (pods of boxes, a leaf per pod
// and rail parity, spines; fatTreeCluster in tests/support/BoundGraphs.h):
// every box's cut is tight, so a proposal that sends a leaf's units back to
// a leaf through a box's PCIe switch (or a box's units back into the box
// through a leaf) breaks invariant I. The proposal policy must learn those
// cuts from the failed check and keep every batch without the exact
// per-pair loop, the split must stay valid (minRootFlow >= N k), and the
// trees must pack at the optimum.
//
//===----------------------------------------------------------------------===//

#include "compiler/algorithms/SwitchSplitting.h"
#include "compiler/algorithms/TreePacking.h"
#include "tests/support/BoundGraphs.h"

#include "gtest/gtest.h"

#include <set>

using namespace topocc;
using namespace topocc::analysis;
using namespace topocc::algorithms;
using namespace topocc::testgraphs;

namespace {

struct Case {
  int pods, nodes, gpus, spines;
  /// The first bulk proposal fails, cuts are learned, and no switch
  /// takes the exact loop. (2 x 2 x 2: the first proposal is kept already;
  /// 2 x 2 x 4: one switch is still rejected, see Algorithms-trees.md.)
  bool learnsAll;
};

class FatTreeSplittingTest : public ::testing::TestWithParam<Case> {};

TEST_P(FatTreeSplittingTest, ProposalsLearnTightBoxCuts) {
  const Case c = GetParam();
  BoundGraph g = fatTreeCluster(c.pods, c.nodes, c.gpus, c.spines);
  const int n = static_cast<int>(g.compute.size());
  ASSERT_EQ(n, c.pods * c.nodes * c.gpus);
  for (bool reversed : {false, true}) {
    auto d = dinkelbachBound(g, reversed);
    ASSERT_TRUE(static_cast<bool>(d)) << llvm::toString(d.takeError());
    std::vector<int64_t> units = unitsOf(g, *d);
    auto r = splitSwitches(g, reversed, units, d->k, SplitPolicy::Proposal);
    ASSERT_TRUE(static_cast<bool>(r)) << llvm::toString(r.takeError());
    // A box's NICs bind, so the first bulk proposal short-circuits box
    // cuts; the learned cuts let the retried batches through.
    if (c.learnsAll) {
      EXPECT_GE(r->cutsLearned, 1);
      EXPECT_EQ(r->proposalsRejected, 0);
      EXPECT_TRUE(r->rejected.empty());
      // Only proposal checks ran (N max-flows each), no per-pair gadgets.
      EXPECT_EQ(r->maxFlows % n, 0);
    }
    // A switch of pod 1.. takes its pod-0 twin's split, shifted (the pods
    // are the boxes of the box shift), also when the twin needed the exact
    // loop: only pod 0's switches (and fixed spines) are ever rejected.
    for (int w : r->rejected)
      EXPECT_FALSE(llvm::StringRef(g.names[w]).startswith("pod1"))
          << g.names[w] << " was split by the exact loop";
    std::set<int> gpus(g.compute.begin(), g.compute.end());
    for (const SwitchSplitResult::Arc &a : r->arcs)
      EXPECT_TRUE(gpus.count(a.from) && gpus.count(a.to));
    EXPECT_GE(minRootFlow(*r), static_cast<int64_t>(n) * r->k);
    auto p = packTrees(*r, g, reversed, units);
    ASSERT_TRUE(static_cast<bool>(p)) << llvm::toString(p.takeError());
    int64_t perRoot = 0;
    for (const PackedTree &t : p->trees)
      perRoot += t.root == 0 ? t.mult : 0;
    EXPECT_EQ(perRoot, r->k);
    EXPECT_LE(p->congestion, 1.0);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, FatTreeSplittingTest,
                         ::testing::Values(Case{2, 2, 2, 2, false},
                                           Case{2, 2, 4, 2, false},
                                           Case{3, 2, 2, 2, true}));

// The learned cuts only steer proposals: the exact per-pair loop (Spread)
// splits the same graph to a valid result too, with many more max-flows.
TEST(FatTreeSplittingTest, ProposalNeedsFewerMaxFlowsThanExactLoop) {
  BoundGraph g = fatTreeCluster(2, 2, 2, 2);
  auto d = dinkelbachBound(g, false);
  ASSERT_TRUE(static_cast<bool>(d)) << llvm::toString(d.takeError());
  std::vector<int64_t> units = unitsOf(g, *d);
  auto prop = splitSwitches(g, false, units, d->k, SplitPolicy::Proposal);
  auto exact = splitSwitches(g, false, units, d->k, SplitPolicy::Spread);
  ASSERT_TRUE(static_cast<bool>(prop)) << llvm::toString(prop.takeError());
  ASSERT_TRUE(static_cast<bool>(exact)) << llvm::toString(exact.takeError());
  const int64_t nk = static_cast<int64_t>(g.compute.size()) * d->k;
  EXPECT_GE(minRootFlow(*exact), nk);
  EXPECT_GE(minRootFlow(*prop), nk);
  EXPECT_LT(prop->maxFlows * 10, exact->maxFlows);
}

} // namespace
