//===- tests/unit/algorithms/ForestCollTest.cpp - Fixed k, the pipeline ---===//
//
// The fixed-k table of docs/Algorithms-trees.md, "Reference fixtures" (U_k
// for k = 1, 2, 3 on every fixture, exact) and the whole pipeline (bound,
// units, splitting, packing, map-back) at fixed k.
//
//===----------------------------------------------------------------------===//

#include "compiler/algorithms/ForestColl.h"
#include "tests/support/BoundGraphs.h"

#include "gtest/gtest.h"

using namespace topocc;
using namespace topocc::analysis;
using namespace topocc::algorithms;
using namespace topocc::testgraphs;

namespace {

/// DGX-1 (NDv2), docs/Algorithms-trees.md, "Reference fixtures".
BoundGraph dgx1() { return meshGraph(kDgx1, 25); }

} // namespace

// The fixed-k table ("Reference fixtures"): U_k in s/GB for k = 1, 2, 3.
TEST(ForestCollTest, FixedKTable) {
  struct Row {
    const char *name;
    BoundGraph g;
    Fraction u[3];
  };
  Row rows[] = {
      {"1 x DGX-A100", forestCollDgx(1), {{7, 300}, {7, 150}, {7, 100}}},
      {"2 x DGX-A100", forestCollDgx(2), {{7, 150}, {7, 75}, {7, 50}}},
      {"4 x DGX-A100", forestCollDgx(4), {{3, 25}, {6, 25}, {9, 25}}},
      {"1 x MI250", forestCollMi250(1), {{3, 50}, {1, 10}, {7, 50}}},
      {"2 x MI250", forestCollMi250(2), {{1, 10}, {3, 16}, {7, 25}}},
      {"DGX-1", dgx1(), {{3, 50}, {1, 10}, {4, 25}}},
  };
  for (Row &r : rows)
    for (int k = 1; k <= 3; ++k) {
      SCOPED_TRACE(testing::Message() << r.name << " k " << k);
      auto fk = fixedKUnits(r.g, false, k);
      ASSERT_TRUE(static_cast<bool>(fk)) << llvm::toString(fk.takeError());
      EXPECT_EQ(fk->u, r.u[k - 1]) << fk->u.str();
    }
}

// DGX-1: algbw_k = N k / U_k is not monotone in k (133.33, 160, 150 GB/s).
TEST(ForestCollTest, FixedKAlgbwNotMonotone) {
  BoundGraph g = dgx1();
  double bw[3];
  for (int k = 1; k <= 3; ++k) {
    auto fk = fixedKUnits(g, false, k);
    ASSERT_TRUE(static_cast<bool>(fk));
    bw[k - 1] = 8.0 * k / fk->u.value();
  }
  EXPECT_NEAR(bw[0], 133.333, 1e-3);
  EXPECT_NEAR(bw[1], 160.0, 1e-9);
  EXPECT_NEAR(bw[2], 150.0, 1e-9);
}

// The whole pipeline at fixed k: 1 x DGX-A100 with k = 2 (two trees per
// root), and 1 x MI250 at the optimum (k = 3).
TEST(ForestCollTest, PipelineFixedAndOptimal) {
  {
    ForestOptions o;
    o.treesPerRoot = 2;
    auto f = buildForest(forestCollDgx(1), o);
    ASSERT_TRUE(static_cast<bool>(f)) << llvm::toString(f.takeError());
    EXPECT_EQ(f->k, 2);
    EXPECT_EQ(f->u, Fraction::make(7, 150));
    EXPECT_NEAR(f->algbw(8) / 1e9, 2400.0 / 7, 1e-6);
    EXPECT_LE(f->trees.congestion, 1.0);
    EXPECT_EQ(f->trees.maxHeight, 1);
  }
  {
    ForestOptions o;
    auto f = buildForest(forestCollMi250(1), o);
    ASSERT_TRUE(static_cast<bool>(f)) << llvm::toString(f.takeError());
    EXPECT_EQ(f->k, 3);
    EXPECT_EQ(f->u, Fraction::make(7, 50));
    EXPECT_NEAR(f->algbw(16) / 1e9, 342.857, 1e-3);
    int64_t total = 0;
    for (const PackedTree &t : f->trees.trees)
      total += t.mult;
    EXPECT_EQ(total, 16 * 3);
    EXPECT_DOUBLE_EQ(f->trees.congestion, 1.0);
  }
}

TEST(ForestCollTest, FixedKRange) {
  auto fk = fixedKUnits(dgx1(), false, 0);
  ASSERT_FALSE(static_cast<bool>(fk));
  EXPECT_EQ(llvm::toString(fk.takeError()),
            "error: invalid trees per root 0 (expected 1 to 1000)\n");
}
