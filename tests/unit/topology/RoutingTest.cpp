//===- tests/unit/topology/RoutingTest.cpp - Routes between ranks ---------===//

#include "TopologyTestUtil.h"

using namespace topocc::topo;
using namespace topocc::topo::test;

namespace {
std::string path(const Topology &t, const Route &r) {
  if (!r.found())
    return "(no route)";
  std::string s;
  for (const Hop &h : r.hops) {
    if (s.empty())
      s = t.device(h.fromDevice).name;
    s += " > " + t.device(h.toDevice).name;
  }
  return s;
}
} // namespace

TEST(RoutingTest, WidestPathBeatsShorterNarrowPath) {
  // Direct g0-g1 is 10 GB/s; via switch s it is 50 GB/s over two hops.
  Topology t = parseOk(R"(schema: topocc/v1
nodes:
  - name: a
    gpus: [ g0, g1 ]
    switches: [ { name: s, kind: nvswitch } ]
    links:
      - { from: g0, to: g1, type: pcie, bandwidth: 10 GB/s, latency: 1 us }
      - { from: "g{g:0-1}", to: s, type: nvlink, bandwidth: 50 GB/s, latency: 2 us }
)");
  Route r = t.route(0, 1);
  EXPECT_EQ(path(t, r), "a/g0 > a/s > a/g1");
  EXPECT_DOUBLE_EQ(r.bottleneck, 50e9);
  EXPECT_DOUBLE_EQ(r.latency, 4e-6);
  EXPECT_EQ(r.hops[0].dir, 0);
  EXPECT_EQ(r.hops[1].dir, 1); // g1 -- s traversed from s to g1
}

TEST(RoutingTest, FewestHopsAmongEquallyWide) {
  Topology t = parseOk(R"(schema: topocc/v1
nodes:
  - name: a
    gpus: [ g0, g1 ]
    switches: [ { name: "s{s:0-2}", kind: pcie-switch } ]
    links:
      - { from: g0, to: s0, type: pcie, bandwidth: 32 GB/s }
      - { from: s0, to: s1, type: pcie, bandwidth: 32 GB/s }
      - { from: s1, to: g1, type: pcie, bandwidth: 32 GB/s }
      - { from: g0, to: s2, type: pcie, bandwidth: 32 GB/s }
      - { from: s2, to: g1, type: pcie, bandwidth: 32 GB/s }
)");
  EXPECT_EQ(path(t, t.route(0, 1)), "a/g0 > a/s2 > a/g1");
  EXPECT_EQ(path(t, t.route(1, 0)), "a/g1 > a/s2 > a/g0");
}

TEST(RoutingTest, BundlesAndEfficiencyCount) {
  Topology t = parseOk(R"(schema: topocc/v1
nodes:
  - name: a
    gpus: [ g0, g1 ]
    switches: [ { name: "s{s:0-1}", kind: nvswitch } ]
    links:
      - { from: "g{g:0-1}", to: s0, type: nvlink, bandwidth: 25 GB/s, count: 4 }
      - { from: "g{g:0-1}", to: s1, type: nvlink, bandwidth: 25 GB/s, count: 5, efficiency: 0.5 }
)");
  Route r = t.route(0, 1);
  EXPECT_EQ(path(t, r), "a/g0 > a/s0 > a/g1");
  EXPECT_DOUBLE_EQ(r.bottleneck, 100e9);
  EXPECT_DOUBLE_EQ(r.rawBottleneck, 100e9);
}

TEST(RoutingTest, AsymmetricLinksUseTheirDirection) {
  Topology t = parseOk(R"(schema: topocc/v1
nodes:
  - name: a
    gpus: [ g0, g1 ]
    switches: [ { name: s, kind: eth-switch } ]
    links:
      - { from: g0, to: s, type: ethernet, bandwidth: { fwd: 400 Gb/s, rev: 100 Gb/s } }
      - { from: g1, to: s, type: ethernet, bandwidth: 400 Gb/s }
)");
  EXPECT_DOUBLE_EQ(t.route(0, 1).bottleneck, 50e9);
  EXPECT_DOUBLE_EQ(t.route(1, 0).bottleneck, 12.5e9);
}

TEST(RoutingTest, TraversesNicsAndSwitchesAcrossNodes) {
  Topology t = parseOk(R"(schema: topocc/v1
node_templates:
  box:
    gpus: [ "gpu{g:0-1}" ]
    nics: [ "nic{g:0-1}" ]
    switches: [ { name: "plx{g:0-1}", kind: pcie-switch } ]
    links:
      - { from: "gpu{g:0-1}", to: "plx{g}", type: pcie, bandwidth: 32 GB/s }
      - { from: "nic{g:0-1}", to: "plx{g}", type: pcie, bandwidth: 32 GB/s }
      - { from: gpu0, to: gpu1, type: nvlink, bandwidth: 100 GB/s }
nodes:
  - { name: "n[0-1]", template: box }
fabric:
  switches: [ { name: "leaf{r:0-1}", kind: ib-switch }, { name: spine, kind: ib-switch } ]
  links:
    - { from: "n{n:0-1}/nic{r:0-1}", to: "leaf{r}", type: ib, bandwidth: 200 Gb/s }
    - { from: "leaf{r:0-1}", to: spine, type: ib, bandwidth: 400 Gb/s }
)");
  EXPECT_EQ(path(t, t.route(0, 2)),
            "n0/gpu0 > n0/plx0 > n0/nic0 > leaf0 > n1/nic0 > n1/plx0 > "
            "n1/gpu0");
  // Rail change through the spine, never through the NVLink peer GPU.
  EXPECT_EQ(path(t, t.route(0, 3)),
            "n0/gpu0 > n0/plx0 > n0/nic0 > leaf0 > spine > leaf1 > n1/nic1 > "
            "n1/plx1 > n1/gpu1");
  EXPECT_DOUBLE_EQ(t.route(0, 3).bottleneck, 25e9);
  EXPECT_EQ(path(t, t.route(0, 1)), "n0/gpu0 > n0/gpu1");
  auto r = t.findRoute(0, 3);
  ASSERT_TRUE(static_cast<bool>(r));
  EXPECT_EQ(r->hops.size(), 8u);
}

TEST(RoutingTest, NoGpuForwarding) {
  // Parsing refuses a chain; a scenario-free Topology can still be built by
  // failing nothing, so check routeDevices directly on a valid topology
  // after removing the switch by hand.
  Topology t = parseOk(R"(schema: topocc/v1
nodes:
  - name: a
    gpus: [ "g{g:0-2}" ]
    switches: [ { name: s, kind: nvswitch } ]
    links:
      - { from: "g{g:0-2}", to: s, type: nvlink, bandwidth: 25 GB/s }
      - { from: g0, to: g1, type: nvlink, bandwidth: 100 GB/s }
      - { from: g1, to: g2, type: nvlink, bandwidth: 100 GB/s }
)");
  // Wider through g1, but GPUs do not forward: the switch path wins.
  EXPECT_EQ(path(t, t.route(0, 2)), "a/g0 > a/s > a/g2");
  std::vector<bool> dropDev(t.devices().size(), false);
  dropDev[t.findDevice("a/s")] = true;
  t.removeDevicesAndLinks(dropDev, std::vector<bool>(t.links().size(), false));
  EXPECT_EQ(path(t, t.route(0, 2)), "(no route)");
  EXPECT_EQ(path(t, t.route(0, 1)), "a/g0 > a/g1");
  auto r = t.findRoute(0, 2);
  ASSERT_FALSE(static_cast<bool>(r));
  EXPECT_EQ(llvm::toString(r.takeError()),
            "error: no route from a/g0 to a/g2 (only switches and NICs "
            "forward traffic)\n");
}

TEST(RoutingTest, SelfRouteIsEmpty) {
  Topology t = parseOk(R"(schema: topocc/v1
nodes:
  - name: a
    gpus: [ g0, g1 ]
    links: [ { from: g0, to: g1, type: nvlink, bandwidth: 25 GB/s } ]
)");
  Route r = t.route(1, 1);
  EXPECT_TRUE(r.found());
  EXPECT_TRUE(r.hops.empty());
  EXPECT_FALSE(t.route(0, 7).found());
}

TEST(RoutingTest, RoutesFromMatchesPairwiseRoutes) {
  Topology t = parseOk(R"(schema: topocc/v1
nodes:
  - name: a
    gpus: [ "g{g:0-3}" ]
    switches: [ { name: "s{s:0-1}", kind: nvswitch } ]
    links:
      - { from: "g{g:0-3}", to: s0, type: nvlink, bandwidth: 25 GB/s }
      - { from: "g{g:0-1}", to: s1, type: nvlink, bandwidth: 50 GB/s }
)");
  for (int a = 0; a < t.numRanks(); ++a) {
    std::vector<Route> all = t.routesFrom(a);
    for (int b = 0; b < t.numRanks(); ++b) {
      Route one = t.route(a, b);
      EXPECT_EQ(path(t, all[b]), path(t, one));
      EXPECT_DOUBLE_EQ(all[b].bottleneck, one.bottleneck);
    }
  }
  EXPECT_EQ(path(t, t.route(0, 1)), "a/g0 > a/s1 > a/g1");
}
