//===- tests/unit/algorithms/RouteGraphTest.cpp - Trees on routes ---------===//
//
// The rank rate graph of RouteGraph.h: its rates fit every link when each
// pair's data takes its route (through NCCL's NICs across nodes); on one
// node its bound is the realizable bound (mi250's xGMI and PCIe mesh,
// dgx-a100's NVSwitch), and across nodes never above it; trees packed on it
// load the links exactly as the packing says (routedTime equals the forest's
// own time).
//
//===----------------------------------------------------------------------===//

#include "compiler/algorithms/RouteGraph.h"
#include "compiler/algorithms/ForestColl.h"
#include "compiler/analysis/NetRoutes.h"
#include "compiler/analysis/RealizableGraph.h"

#include "tests/support/Topologies.h"

#include "gtest/gtest.h"

#include <optional>
#include <vector>

using namespace topocc;
using namespace topocc::algorithms;
using namespace topocc::analysis;

namespace {

/// Every link's load when each arc's rate takes its ranks' route in the
/// runtime model (NCCL's NICs across nodes), over its effective capacity;
/// the largest such ratio.
double worstLinkLoad(const BoundGraph &g, LinkModel &m) {
  std::optional<NcclNetRoutes> net;
  if (m.topology().numNodes() > 1)
    net.emplace(m.topology());
  std::vector<double> load(m.numResources(), 0.0);
  for (const BoundGraph::Arc &a : g.arcs) {
    const double rate = static_cast<double>(a.cap) * g.quantumBytesPerSec;
    const PathFlow f = runtimeRankFlow(m, net ? &*net : nullptr, a.from, a.to);
    for (auto [res, share] : f.res)
      load[res] += rate * share;
  }
  double worst = 0;
  for (int res = 0; res < m.numResources(); ++res)
    if (load[res] > 0) {
      EXPECT_GT(m.capacity(res), 0) << m.resourceName(res);
      worst = std::max(worst, load[res] / m.capacity(res));
    }
  return worst;
}

/// Seconds per GB of a rank's shard: lambda* of the graph's bound.
double lambdaOf(const BoundGraph &g, bool reversed) {
  auto b = dinkelbachBound(g, reversed);
  EXPECT_TRUE(static_cast<bool>(b)) << llvm::toString(b.takeError());
  return b ? b->lambda.value() : 0;
}

struct Case {
  const char *file;
  bool reachesRealizable; ///< measured: equal bounds
};

class RouteGraphLibrary : public ::testing::TestWithParam<Case> {};

TEST_P(RouteGraphLibrary, RatesFitTheLinksAndReachTheRealizableBound) {
  topo::Topology t = topocc::testing::libraryTopology(GetParam().file);
  LinkModel m(t);
  RouteGraphOptions o;
  o.allGather = o.reduceScatter = true;
  auto rg = buildRouteGraph(t, m, o);
  ASSERT_TRUE(static_cast<bool>(rg)) << llvm::toString(rg.takeError());
  EXPECT_EQ(rg->graph.compute.size(), static_cast<size_t>(t.numRanks()));
  EXPECT_LE(worstLinkLoad(rg->graph, m), 1 + 1e-9);

  auto realizable = computeRealizableBound(t);
  ASSERT_TRUE(static_cast<bool>(realizable))
      << llvm::toString(realizable.takeError());
  for (bool reversed : {false, true}) {
    const double ours = lambdaOf(rg->graph, reversed);
    const double best = reversed ? realizable->reduceScatter.lambda.value()
                                 : realizable->allgather.lambda.value();
    // The LP's rate is the graph's, up to the rounding to quanta (at
    // most one quantum, 2^-19 of the largest rate, per arc of a cut).
    EXPECT_NEAR(1 / ours, rg->lpRate / 1e9, 1e-4 * rg->lpRate / 1e9);
    // Messages on fixed routes never beat the realizable bound. On one
    // node (a route per pair fixed by its link types) they reach it, and
    // on mi250x2 too; on dgx-a100x2 they reach 264.0 of its 265.6 GB/s
    // busbw, where the realizable graph joins hops of different routes.
    EXPECT_GE(ours, best * (1 - 1e-6)) << (reversed ? "RS" : "AG");
    if (GetParam().reachesRealizable) {
      EXPECT_NEAR(ours, best, 1e-4 * best) << (reversed ? "RS" : "AG");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Library, RouteGraphLibrary,
                         ::testing::Values(Case{"mi250.yaml", true},
                                           Case{"dgx-a100.yaml", true},
                                           Case{"a100-pcie-8gpu.yaml", true},
                                           Case{"dgx-a100x2.yaml", false},
                                           Case{"mi250x2.yaml", true}),
                         [](const auto &info) {
                           std::string name = info.param.file;
                           name = name.substr(0, name.find('.'));
                           for (char &c : name)
                             if (c == '-')
                               c = '_';
                           return name;
                         });

TEST(RouteGraphTest, TreesOnItRunAsPacked) {
  topo::Topology t = topocc::testing::libraryTopology("mi250.yaml");
  LinkModel m(t);
  auto rg = buildRouteGraph(t, m);
  ASSERT_TRUE(static_cast<bool>(rg)) << llvm::toString(rg.takeError());
  EXPECT_TRUE(rg->symmetric);
  ForestOptions fo;
  fo.treesPerRoot = 2;
  auto f = buildForest(rg->graph, fo);
  ASSERT_TRUE(static_cast<bool>(f)) << llvm::toString(f.takeError());
  auto routed = routedTime(*f, m, CapacityKind::Effective, nullptr);
  ASSERT_TRUE(static_cast<bool>(routed)) << llvm::toString(routed.takeError());
  // The forest's time per byte of M: U / (k N) seconds per GB.
  const double packed = f->u.value() / f->k / t.numRanks() * 1e-9;
  EXPECT_LE(routed->secondsPerByte, packed * (1 + 1e-6));
  // The physical packing's trees send some arcs' data over PCIe paths
  // that their ranks' messages do not take: on the routes they are slower
  // than their own packing says.
  auto phys = buildBoundGraph(t, CapacityKind::Effective);
  ASSERT_TRUE(static_cast<bool>(phys));
  auto pf = buildForest(*phys, fo);
  ASSERT_TRUE(static_cast<bool>(pf)) << llvm::toString(pf.takeError());
  auto physRouted = routedTime(*pf, m, CapacityKind::Effective, nullptr);
  ASSERT_TRUE(static_cast<bool>(physRouted));
  EXPECT_GT(physRouted->secondsPerByte,
            pf->u.value() / pf->k / t.numRanks() * 1e-9 * 1.05);
}

TEST(RouteGraphTest, AcrossNodesTreesRunAsPackedOnNcclsNics) {
  topo::Topology t = topocc::testing::libraryTopology("dgx-a100x2.yaml");
  LinkModel m(t);
  NcclNetRoutes net(t);
  auto rg = buildRouteGraph(t, m);
  ASSERT_TRUE(static_cast<bool>(rg)) << llvm::toString(rg.takeError());
  ForestOptions fo;
  fo.treesPerRoot = 1;
  auto f = buildForest(rg->graph, fo);
  ASSERT_TRUE(static_cast<bool>(f)) << llvm::toString(f.takeError());
  const double packed = f->u.value() / f->k / t.numRanks() * 1e-9;
  auto onNics = routedTime(*f, m, CapacityKind::Effective, &net);
  ASSERT_TRUE(static_cast<bool>(onNics));
  EXPECT_LE(onNics->secondsPerByte, packed * (1 + 1e-6));
  // Without NCCL's NICs a pair's data spreads evenly over the NICs of its
  // widest route (both NICs behind the GPU's PCIe switch; LinkModel splits
  // at every branch in proportion to capacity). Every GPU pair of a PCIe
  // switch then loads its two NICs as NCCL's NIC per GPU does: the same
  // time.
  auto spread = routedTime(*f, m, CapacityKind::Effective, nullptr);
  ASSERT_TRUE(static_cast<bool>(spread));
  EXPECT_NEAR(spread->secondsPerByte, onNics->secondsPerByte,
              1e-9 * onNics->secondsPerByte);
}

TEST(RouteGraphTest, AsymmetricLinksGetARatePerDirection) {
  // Every GPU sends 50 GB/s into the switch and receives 25: (b, a)'s route
  // is not the mirror of (a, b)'s at equal capacities, so each direction
  // has its own rate. All-gather reaches the realizable bound (3 shards
  // into 25 GB/s). Reduce-scatter's cut bound (3 partials out of 50 GB/s,
  // 3/50 s/GB) is not reachable by messages: every byte sent is received,
  // so the 4 x 3 partials that leave the GPUs also enter them, over 4 x 25
  // GB/s: 3/25 s/GB, which is the route graph's bound.
  topo::Topology t = topocc::testing::parseTopologyOk(R"(schema: topocc/v1
name: asymmetric4
nodes:
  - name: a
    gpus: [ "gpu{g:0-3}" ]
    switches: [ { name: sw, kind: nvswitch } ]
    links:
      - { from: "gpu{g:0-3}", to: sw, type: nvlink, bandwidth: { fwd: 50 GB/s, rev: 25 GB/s } }
)");
  LinkModel m(t);
  RouteGraphOptions o;
  o.allGather = o.reduceScatter = true;
  auto rg = buildRouteGraph(t, m, o);
  ASSERT_TRUE(static_cast<bool>(rg)) << llvm::toString(rg.takeError());
  EXPECT_FALSE(rg->symmetric);
  EXPECT_EQ(rg->pairs, 12);
  EXPECT_LE(worstLinkLoad(rg->graph, m), 1 + 1e-9);
  auto realizable = computeRealizableBound(t);
  ASSERT_TRUE(static_cast<bool>(realizable));
  EXPECT_NEAR(lambdaOf(rg->graph, false), realizable->allgather.lambda.value(),
              1e-4 * realizable->allgather.lambda.value());
  EXPECT_NEAR(realizable->reduceScatter.lambda.value(), 3.0 / 50, 1e-12);
  EXPECT_NEAR(lambdaOf(rg->graph, true), 3.0 / 25, 1e-4 * 3.0 / 25);
}

} // namespace
