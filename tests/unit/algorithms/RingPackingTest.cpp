//===- tests/unit/algorithms/RingPackingTest.cpp - Ring packing LP tests --===//
//
// The packing simplex against textbook LPs (optimum, duals, columns added
// after a solve, degenerate ties, unboundedness); column generation against
// the LP over every Hamiltonian cycle on random small topologies (the same
// optimum, proved optimal); the library's NDv2 (NVLink cycles plus a PCIe
// ring: 126.4 GB/s, and 121.9 GB/s in 64 units); quantised shares that are
// exact fractions of a power of two and respect every capacity.
//
//===----------------------------------------------------------------------===//

#include "compiler/algorithms/LinearProgram.h"
#include "compiler/algorithms/RingPacking.h"
#include "compiler/analysis/CostModel.h"

#include "tests/support/Topologies.h"

#include "gtest/gtest.h"

#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <random>

using namespace topocc;
using namespace topocc::algorithms;
using namespace topocc::analysis;

namespace {

TEST(PackingSimplexTest, TextbookOptimumAndDuals) {
  // max 3x + 5y  s.t.  x <= 4,  2y <= 12,  3x + 2y <= 18.
  PackingLp lp;
  lp.rows = 3;
  lp.cols = 2;
  lp.a = {1, 0, 0, 2, 3, 2};
  lp.b = {4, 12, 18};
  lp.c = {3, 5};
  LpSolution s = solvePackingLp(lp);
  ASSERT_TRUE(s.optimal);
  EXPECT_NEAR(s.objective, 36, 1e-9);
  EXPECT_NEAR(s.x[0], 2, 1e-9);
  EXPECT_NEAR(s.x[1], 6, 1e-9);
  EXPECT_NEAR(s.y[0], 0, 1e-6);
  EXPECT_NEAR(s.y[1], 1.5, 1e-6);
  EXPECT_NEAR(s.y[2], 1, 1e-6);
  // Strong duality on the caller's b.
  EXPECT_NEAR(s.y[0] * 4 + s.y[1] * 12 + s.y[2] * 18, 36, 1e-6);
}

TEST(PackingSimplexTest, ColumnsAddedAfterASolveReachTheSameOptimum) {
  PackingSimplex lp({4, 12, 18});
  lp.addColumn({{0, 1}, {2, 3}}, 3);
  ASSERT_TRUE(lp.solve());
  EXPECT_NEAR(lp.objective(), 12, 1e-9); // x = 4 alone
  lp.addColumn({{1, 2}, {2, 2}}, 5);
  ASSERT_TRUE(lp.solve());
  EXPECT_NEAR(lp.objective(), 36, 1e-9);
  std::vector<double> x = lp.primal();
  EXPECT_NEAR(x[0], 2, 1e-9);
  EXPECT_NEAR(x[1], 6, 1e-9);
}

TEST(PackingSimplexTest, DegenerateTiesTerminate) {
  // Twenty identical rows and forty identical columns: every vertex is
  // degenerate; the optimum is 1.
  PackingSimplex lp(std::vector<double>(20, 1.0));
  for (int j = 0; j < 40; ++j) {
    std::vector<std::pair<int, double>> e;
    for (int i = 0; i < 20; ++i)
      e.emplace_back(i, 1.0);
    lp.addColumn(e, 1.0);
  }
  ASSERT_TRUE(lp.solve(10000));
  EXPECT_NEAR(lp.objective(), 1, 1e-9);
}

TEST(PackingSimplexTest, RowsNoColumnUsesCanBeLeftOut) {
  // Columns over rows 1, 3 and 4 of six (rows 0, 2, 5 unused); rows 1 and
  // 3 are alike, so the ratio test ties and the bounds' perturbation picks
  // the row that leaves. Without the unused rows, each kept row keyed by
  // its place, the LP pivots exactly as the full one (the ring packing
  // leaves a fabric's unused links out so); renumbered, it may not.
  const std::vector<int> used = {1, 3, 4};
  const std::vector<std::vector<double>> cols = {
      {1, 1, 2}, {1, 1, 1}, {2, 2, 1}, {1, 1, 3}};
  PackingSimplex full(std::vector<double>(6, 1.0));
  PackingSimplex kept(std::vector<double>(3, 1.0), used);
  PackingSimplex renumbered(std::vector<double>(3, 1.0));
  for (const std::vector<double> &c : cols) {
    std::vector<std::pair<int, double>> wide, compact;
    for (int i = 0; i < 3; ++i) {
      wide.emplace_back(used[i], c[i]);
      compact.emplace_back(i, c[i]);
    }
    full.addColumn(wide, 1.0);
    kept.addColumn(compact, 1.0);
    renumbered.addColumn(compact, 1.0);
  }
  ASSERT_TRUE(full.solve());
  ASSERT_TRUE(kept.solve());
  ASSERT_TRUE(renumbered.solve());
  EXPECT_EQ(kept.pivots(), full.pivots());
  EXPECT_EQ(kept.primal(), full.primal());
  EXPECT_EQ(kept.objective(), full.objective());
  const std::vector<double> y = full.duals();
  EXPECT_EQ(y[0] + y[2] + y[5], 0.0);
  EXPECT_EQ(kept.duals(), (std::vector<double>{y[1], y[3], y[4]}));
  // The same optimum renumbered, but the tie went to the other row.
  EXPECT_NEAR(renumbered.objective(), full.objective(), 1e-9);
  EXPECT_NE(renumbered.duals(), kept.duals());
}

TEST(PackingSimplexTest, UnboundedColumnIsReported) {
  PackingLp lp;
  lp.rows = 1;
  lp.cols = 2;
  lp.a = {1, 0};
  lp.b = {1};
  lp.c = {1, 1};
  LpSolution s = solvePackingLp(lp);
  EXPECT_FALSE(s.optimal);
  EXPECT_TRUE(s.unbounded);
}

/// n GPUs with random NVLinks (1 to 3 ports of random speed) over a PCIe
/// switch joined to a second switch (so PCIe routes cross shared links).
std::string randomMesh(int n, std::mt19937 &rng) {
  const char *bw[] = {"10 GB/s", "20 GB/s", "25 GB/s", "50 GB/s"};
  auto pick = [&](int k) { return static_cast<int>(rng() % k); };
  std::string s = "schema: topocc/v1\nnodes:\n  - name: a\n    gpus: [";
  for (int i = 0; i < n; ++i)
    s += (i ? ", g" : "g") + std::to_string(i);
  s += "]\n    switches: [ { name: p0, kind: pcie-switch }, { name: p1, "
       "kind: pcie-switch } ]\n    links:\n";
  auto link = [&](const std::string &a, const std::string &b,
                  const char *type, const char *rate, int count) {
    s += "      - { from: " + a + ", to: " + b + ", type: " + type +
         ", bandwidth: " + rate + ", latency: 1 us, count: " +
         std::to_string(count) + " }\n";
  };
  link("p0", "p1", "pcie", "8 GB/s", 1);
  for (int i = 0; i < n; ++i)
    link("g" + std::to_string(i), i % 2 ? "p1" : "p0", "pcie", "6 GB/s", 1);
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j)
      if (pick(2) == 0)
        link("g" + std::to_string(i), "g" + std::to_string(j), "nvlink",
             bw[pick(4)], 1 + pick(3));
  return s;
}

/// Load (fraction of one hop's bytes, summed over hops) per resource of
/// the cycle `order`.
std::map<int, double> cycleLoad(LinkModel &m, const std::vector<int> &order) {
  std::map<int, double> load;
  RingChannel rc;
  rc.order = order;
  for (size_t i = 0; i < order.size(); ++i)
    for (auto [r, x] : hopFlow(rc, i, m).res)
      load[r] += x;
  return load;
}

/// The LP over every directed Hamiltonian cycle (rank 0 first), bytes/s.
double bruteForceRate(LinkModel &m, int n) {
  std::vector<int> rest(n - 1);
  std::iota(rest.begin(), rest.end(), 1);
  std::vector<std::map<int, double>> cols;
  std::map<int, int> rowOf;
  do {
    std::vector<int> order{0};
    order.insert(order.end(), rest.begin(), rest.end());
    std::map<int, double> load = cycleLoad(m, order);
    for (auto &[r, x] : load)
      rowOf.emplace(r, 0);
    cols.push_back(std::move(load));
  } while (std::next_permutation(rest.begin(), rest.end()));
  int rows = 0;
  std::vector<int> resOf;
  for (auto &[r, i] : rowOf) {
    i = rows++;
    resOf.push_back(r);
  }
  PackingLp lp;
  lp.rows = rows;
  lp.cols = static_cast<int>(cols.size());
  lp.a.assign(static_cast<size_t>(rows) * lp.cols, 0.0);
  lp.b.assign(rows, 1.0);
  lp.c.assign(lp.cols, 1.0);
  for (int j = 0; j < lp.cols; ++j)
    for (auto [r, x] : cols[j])
      lp.at(rowOf[r], j) = x / (m.capacity(r) / 1e9);
  LpSolution s = solvePackingLp(lp);
  EXPECT_TRUE(s.optimal);
  return s.objective * 1e9;
}

/// Every resource's load at the rings' rate stays within its capacity,
/// and the shares are the units over a power-of-two total.
void checkRings(LinkModel &m, const RingPacking &p, int n) {
  ASSERT_FALSE(p.rings.empty());
  EXPECT_TRUE(llvm::isPowerOf2_32(static_cast<uint32_t>(p.units)))
      << p.units;
  int units = 0;
  double shares = 0;
  std::map<int, double> load;
  for (const RingChannel &rc : p.rings) {
    std::vector<int> sorted = rc.order;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int> ident(n);
    std::iota(ident.begin(), ident.end(), 0);
    EXPECT_EQ(sorted, ident);
    EXPECT_GT(rc.units, 0);
    EXPECT_DOUBLE_EQ(rc.share, static_cast<double>(rc.units) / p.units);
    units += rc.units;
    shares += rc.share;
    for (auto [r, x] : cycleLoad(m, rc.order))
      load[r] += rc.share * x;
  }
  EXPECT_EQ(units, p.units);
  EXPECT_NEAR(shares, 1, 1e-12);
  for (auto [r, x] : load)
    EXPECT_LE(x * p.rate, m.capacity(r) * (1 + 1e-9)) << m.resourceName(r);
  EXPECT_LE(p.rate, p.lpRate * (1 + 1e-9));
}

TEST(RingPackingTest, ColumnGenerationMatchesTheFullLpOnRandomMeshes) {
  std::mt19937 rng(20261205);
  for (int trial = 0; trial < 12; ++trial) {
    int n = 4 + trial % 3; // 4 to 6 GPUs: up to 120 cycles
    std::string text = randomMesh(n, rng);
    topo::Topology t = topocc::testing::parseTopologyOk(text);
    SCOPED_TRACE(text);
    LinkModel m(t);
    std::vector<int> ranks(n);
    std::iota(ranks.begin(), ranks.end(), 0);
    RingPacking p = packRings(m, ranks);
    ASSERT_FALSE(p.rings.empty());
    EXPECT_TRUE(p.optimal);
    double full = bruteForceRate(m, n);
    EXPECT_NEAR(p.lpRate, full, 1e-6 * full);
    EXPECT_NEAR(p.upperBound, full, 1e-6 * full);
    checkRings(m, p, n);
    // Heuristic pricing never claims optimality and stays feasible.
    RingPackingOptions heuristic;
    heuristic.exactPricingLimit = 0;
    RingPacking h = packRings(m, ranks, heuristic);
    EXPECT_FALSE(h.optimal);
    EXPECT_LE(h.lpRate, full * (1 + 1e-6));
    checkRings(m, h, n);
  }
}

TEST(RingPackingTest, Ndv2NvlinkCyclesAndAPcieRing) {
  // Three NVLink Hamiltonian cycles used both ways (6 x 20 GB/s) plus a
  // ring over the PCIe pairs, whose two GPUs per switch share its 12.8 GB/s
  // uplink: 126.4 GB/s, proved optimal. In 64 units the NVLink rings take
  // 21, 20, 10 and 10 and the PCIe ring 3: 64 / max(21/40, 10/20, 3/6.4 ..)
  // GB/s = 121.9 GB/s.
  topo::Topology t = topocc::testing::libraryTopology("ndv2.yaml");
  LinkModel m(t);
  std::vector<int> ranks(8);
  std::iota(ranks.begin(), ranks.end(), 0);
  RingPackingOptions o;
  o.maxRings = 16;
  o.maxUnits = 64;
  RingPacking p = packRings(m, ranks, o);
  EXPECT_TRUE(p.optimal);
  EXPECT_NEAR(p.lpRate, 126.4e9, 1e5);
  EXPECT_NEAR(p.upperBound, 126.4e9, 1e5);
  EXPECT_EQ(p.units, 64);
  EXPECT_NEAR(p.rate, 64 / 0.525 * 1e9, 1e5);
  EXPECT_EQ(p.rings.size(), 5u);
  checkRings(m, p, 8);
  // Fewer units cost rate: 32 units give 116.4 GB/s (11, 11, 5, 5).
  o.maxUnits = 32;
  RingPacking q = packRings(m, ranks, o);
  EXPECT_EQ(q.units, 32);
  EXPECT_NEAR(q.rate, 32 / 0.275 * 1e9, 1e5);
  checkRings(m, q, 8);
}

TEST(RingPackingTest, QuantisedSharesOfAnyRingSet) {
  topo::Topology t = topocc::testing::libraryTopology("ndv2.yaml");
  LinkModel m(t);
  // The exact NVLink shares 1/3, 1/3, 1/6, 1/6 of the double- and single-
  // link cycles: no power of two holds them; 32 units give 11, 11, 5, 5.
  std::vector<RingChannel> rings(4);
  rings[0].order = {0, 3, 2, 1, 5, 6, 7, 4};
  rings[1].order = {0, 4, 7, 6, 5, 1, 2, 3};
  rings[2].order = {0, 1, 3, 7, 5, 4, 6, 2};
  rings[3].order = {0, 2, 6, 4, 5, 7, 3, 1};
  for (int i = 0; i < 4; ++i)
    rings[i].share = i < 2 ? 1.0 / 3 : 1.0 / 6;
  RingPackingOptions o;
  o.maxUnits = 32;
  EXPECT_EQ(quantiseRingShares(m, rings, o), 32);
  ASSERT_EQ(rings.size(), 4u);
  std::vector<int> units;
  for (const RingChannel &rc : rings)
    units.push_back(rc.units);
  EXPECT_EQ(units, (std::vector<int>{11, 11, 5, 5}));
  EXPECT_DOUBLE_EQ(rings[0].share, 11.0 / 32);
}

} // namespace
