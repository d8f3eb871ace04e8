//===- tests/unit/algorithms/ShareRoundingTest.cpp - Power-of-two shares --===//
//
// algorithms::roundTreeShares (docs/Algorithms-trees.md, "Power-of-two
// shares"): on the reference fixtures at their optimum k and at fixed k,
// the units per root are a power of two, every tree keeps at least one unit,
// each root's units sum to K, the loss is at most the tolerance and matches
// an independent computation of the busiest arc's load on the packing's
// physical paths; K is the smallest power of two that meets the tolerance.
//
//===----------------------------------------------------------------------===//

#include "compiler/algorithms/ForestColl.h"
#include "tests/support/BoundGraphs.h"

#include "llvm/Support/MathExtras.h"

#include "gtest/gtest.h"

#include <map>

using namespace topocc;
using namespace topocc::analysis;
using namespace topocc::algorithms;
using namespace topocc::testgraphs;

namespace {

/// The busiest (from, to) pair's load per capacity with tree i carrying
/// mult[i] / K of its root's data over its physical paths.
double busiest(const Forest &f, const BoundGraph &g,
               const std::vector<int64_t> &mult, int64_t K) {
  std::map<std::pair<int, int>, double> cap, load;
  for (const BoundGraph::Arc &a : g.arcs)
    cap[{a.from, a.to}] += static_cast<double>(a.cap);
  for (const PhysicalTree &pt : f.trees.physical)
    for (const std::vector<int> &path : pt.paths)
      for (size_t j = 0; j + 1 < path.size(); ++j) {
        auto arc = f.reversed ? std::make_pair(path[j + 1], path[j])
                              : std::make_pair(path[j], path[j + 1]);
        load[arc] += static_cast<double>(mult[pt.tree]) / K;
      }
  double worst = 0;
  for (auto &[arc, l] : load)
    if (cap[arc] > 0)
      worst = std::max(worst, l / cap[arc]);
  return worst;
}

void checkRounding(const char *name, const BoundGraph &g, int64_t k,
                   bool reversed) {
  SCOPED_TRACE(testing::Message() << name << " k " << k
                                  << (reversed ? " reversed" : ""));
  ForestOptions o;
  o.treesPerRoot = k;
  o.reversed = reversed;
  auto f = buildForest(g, o);
  ASSERT_TRUE(static_cast<bool>(f)) << llvm::toString(f.takeError());
  const int n = static_cast<int>(g.compute.size());
  ShareRoundingOptions ro;
  ro.maxUnitsPerRoot = 32767 / n;
  RoundedShares r = roundTreeShares(*f, g, ro);
  ASSERT_TRUE(r.rounded);
  EXPECT_TRUE(llvm::isPowerOf2_64(r.unitsPerRoot)) << r.unitsPerRoot;
  ASSERT_EQ(r.mult.size(), f->trees.trees.size());
  std::map<int, int64_t> perRoot;
  for (size_t i = 0; i < r.mult.size(); ++i) {
    EXPECT_GE(r.mult[i], 1) << "tree " << i;
    perRoot[f->trees.trees[i].root] += r.mult[i];
  }
  EXPECT_EQ(static_cast<int>(perRoot.size()), n);
  for (auto &[root, units] : perRoot)
    EXPECT_EQ(units, r.unitsPerRoot) << "root " << root;
  EXPECT_LE(r.loss, kShareRoundingTolerance);
  std::vector<int64_t> exact;
  for (const PackedTree &t : f->trees.trees)
    exact.push_back(t.mult);
  const double t0 = busiest(*f, g, exact, f->k);
  const double t1 = busiest(*f, g, r.mult, r.unitsPerRoot);
  EXPECT_NEAR(r.loss, std::max(0.0, t1 / t0 - 1), 1e-9);
  // The smallest power of two: half of K misses the tolerance (or cannot
  // give every tree a unit).
  if (r.unitsPerRoot > 1) {
    ShareRoundingOptions half = ro;
    half.maxUnitsPerRoot = r.unitsPerRoot / 2;
    RoundedShares smaller = roundTreeShares(*f, g, half);
    if (smaller.rounded) {
      EXPECT_GT(smaller.loss, kShareRoundingTolerance);
    }
  }
}

} // namespace

TEST(ShareRoundingTest, ReferenceFixtures) {
  checkRounding("1 x DGX-A100", forestCollDgx(1), 0, false);
  checkRounding("2 x DGX-A100", forestCollDgx(2), 0, false);
  checkRounding("2 x DGX-A100", forestCollDgx(2), 13, false);
  checkRounding("1 x MI250", forestCollMi250(1), 0, false);
  checkRounding("1 x MI250", forestCollMi250(1), 0, true);
  checkRounding("2 x MI250", forestCollMi250(2), 0, false);
  checkRounding("DGX-1", meshGraph(kDgx1, 25), 0, false);
  checkRounding("DGX-1", meshGraph(kDgx1, 25), 3, false);
}

// k = 1: one tree per root, one unit; nothing to round and no loss.
TEST(ShareRoundingTest, OneTreePerRootIsExact) {
  ForestOptions o;
  o.treesPerRoot = 1;
  auto f = buildForest(meshGraph(kDgx1, 25), o);
  ASSERT_TRUE(static_cast<bool>(f));
  ShareRoundingOptions ro;
  ro.maxUnitsPerRoot = 4096;
  RoundedShares r = roundTreeShares(*f, meshGraph(kDgx1, 25), ro);
  EXPECT_TRUE(r.rounded);
  EXPECT_EQ(r.unitsPerRoot, 1);
  EXPECT_EQ(r.loss, 0);
  for (int64_t m : r.mult)
    EXPECT_EQ(m, 1);
}

// Tolerance 0 asks for the exact throughput: with the shares' k a power of
// two that is reached at K <= k.
TEST(ShareRoundingTest, ZeroToleranceKeepsThroughput) {
  const BoundGraph g = forestCollMi250(1);
  ForestOptions o;
  o.treesPerRoot = 2;
  auto f = buildForest(g, o);
  ASSERT_TRUE(static_cast<bool>(f));
  ShareRoundingOptions ro;
  ro.maxUnitsPerRoot = 1024;
  ro.tolerance = 0;
  RoundedShares r = roundTreeShares(*f, g, ro);
  EXPECT_TRUE(r.rounded);
  EXPECT_LE(r.unitsPerRoot, 2);
  EXPECT_EQ(r.loss, 0);
}

// No power of two fits: the forest's own shares, not rounded. 2 x DGX-A100
// at k = 13 has up to 11 trees per root, so K <= 8 gives no tree-per-unit
// rounding.
TEST(ShareRoundingTest, NoRoomKeepsTheForestShares) {
  const BoundGraph g = forestCollDgx(2);
  ForestOptions o;
  o.treesPerRoot = 13;
  auto f = buildForest(g, o);
  ASSERT_TRUE(static_cast<bool>(f));
  size_t most = 0;
  std::map<int, size_t> perRoot;
  for (const PackedTree &t : f->trees.trees)
    most = std::max(most, ++perRoot[t.root]);
  ASSERT_GT(most, 8u);
  ShareRoundingOptions ro;
  ro.maxUnitsPerRoot = 8;
  RoundedShares r = roundTreeShares(*f, g, ro);
  EXPECT_FALSE(r.rounded);
  EXPECT_EQ(r.unitsPerRoot, f->k);
  for (size_t i = 0; i < r.mult.size(); ++i)
    EXPECT_EQ(r.mult[i], f->trees.trees[i].mult);
}

// A K that would cut a tree's units into more steps than its exact share
// (unitsPerStep) is skipped: with 16 units per step, K = 64 would give a
// tree of 4 of k = 13 units 20 units (2 steps instead of 1), so the least
// loss among the allowed K (tolerance -1: never met) is at most 32.
TEST(ShareRoundingTest, StepsDoNotGrow) {
  const BoundGraph g = forestCollDgx(2);
  ForestOptions o;
  o.treesPerRoot = 13;
  auto f = buildForest(g, o);
  ASSERT_TRUE(static_cast<bool>(f));
  ShareRoundingOptions ro;
  ro.maxUnitsPerRoot = 2048;
  ro.unitsPerStep = 16;
  ro.tolerance = -1;
  RoundedShares r = roundTreeShares(*f, g, ro);
  ASSERT_TRUE(r.rounded);
  EXPECT_LE(r.unitsPerRoot, 32);
  for (size_t i = 0; i < r.mult.size(); ++i)
    EXPECT_LE((r.mult[i] + 15) / 16, (f->trees.trees[i].mult + 15) / 16);
  // Without the step limit the least loss is at a larger K.
  ro.unitsPerStep = 0;
  EXPECT_GT(roundTreeShares(*f, g, ro).unitsPerRoot, 32);
}
