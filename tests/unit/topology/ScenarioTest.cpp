//===- tests/unit/topology/ScenarioTest.cpp - What-if patches -------------===//

#include "TopologyTestUtil.h"

#include "compiler/topology/Scenario.h"

using namespace topocc::topo;
using namespace topocc::topo::test;

namespace {
const char *kRail = R"(schema: topocc/v1
link_classes:
  nv:  { type: nvlink, bandwidth: 25 GB/s, latency: 0.7 us }
  pci: { type: pcie, bandwidth: 32 GB/s, latency: 1 us }
  ndr: { type: ib, bandwidth: 400 Gb/s, latency: 1.5 us }
node_templates:
  box:
    gpus: [ "gpu{g:0-1}" ]
    nics: [ "mlx5_{g:0-1}" ]
    switches: [ { name: nvs, kind: nvswitch }, { name: "plx{g:0-1}", kind: pcie-switch }, { name: cpu, kind: cpu-socket } ]
    links:
      - { from: "gpu{g:0-1}", to: nvs, class: nv, count: 4 }
      - { from: "gpu{g:0-1}", to: "plx{g}", class: pci }
      - { from: "mlx5_{g:0-1}", to: "plx{g}", class: pci }
      - { from: "plx{g:0-1}", to: cpu, class: pci }
nodes:
  - { name: "dgx[00-01]", template: box }
fabric:
  switches: [ { name: "leaf{r:0-1}", kind: ib-switch }, { name: spine, kind: ib-switch } ]
  links:
    - { from: "dgx{n:00-01}/mlx5_{r:0-1}", to: "leaf{r}", class: ndr }
    - { from: "leaf{r:0-1}", to: spine, class: ndr, count: 2 }
scenarios:
  nvlink-half: [ { scale: { links: "*/gpu*--nvs*", bandwidth: 0.5x, latency: 2x } } ]
  nic-fail:    [ { fail: "dgx01/mlx5_1" } ]
  uplink:      [ { set: { links: "dgx00/mlx5_0--leaf0", bandwidth: 200 Gb/s, latency: +0.5 us } } ]
  one-way:     [ { set: { links: "dgx00/mlx5_0->leaf0", bandwidth: 100 Gb/s } } ]
  minus:       [ { set: { links: "dgx00/mlx5_0--leaf0", bandwidth: -100 Gb/s } } ]
  too-much:    [ { set: { links: "dgx00/mlx5_0--leaf0", bandwidth: -400 Gb/s } } ]
  both:        { extends: [nvlink-half, nic-fail] }
  nested:      { extends: both, ops: [ { fail: spine } ] }
  cut:         [ { fail: "leaf*" } ]
  nothing:     [ { fail: "dgx07/*" } ]
  no-link:     [ { scale: { links: "nvs--leaf*", bandwidth: 2x } } ]
  sweep:       [ { sweep: { links: "*/mlx5_*--leaf*", bandwidth: [100 Gb/s, 200 Gb/s] } } ]
)";

int linkBetween(const Topology &t, llvm::StringRef a, llvm::StringRef b) {
  int da = t.findDevice(a), db = t.findDevice(b);
  for (size_t i = 0; i < t.links().size(); ++i) {
    const Link &l = t.link(i);
    if ((l.from == da && l.to == db) || (l.from == db && l.to == da))
      return static_cast<int>(i);
  }
  return -1;
}
} // namespace

TEST(ScenarioTest, ScaleMultipliesMatchingLinks) {
  Topology t = parseOk(kRail);
  ASSERT_FALSE(static_cast<bool>(applyScenario(t, "nvlink-half")));
  const Link &l = t.link(linkBetween(t, "dgx01/gpu1", "dgx01/nvs"));
  EXPECT_DOUBLE_EQ(l.bandwidth[0], 12.5e9);
  EXPECT_DOUBLE_EQ(l.bandwidth[1], 12.5e9);
  EXPECT_DOUBLE_EQ(l.latency, 1.4e-6);
  EXPECT_EQ(l.bandwidthText(0), "12.5 GB/s");
  const Link &p = t.link(linkBetween(t, "dgx01/gpu1", "dgx01/plx1"));
  EXPECT_DOUBLE_EQ(p.bandwidth[0], 32e9);
  EXPECT_EQ(t.appliedScenarios(), std::vector<std::string>{"nvlink-half"});
}

TEST(ScenarioTest, FailRemovesDeviceAndItsLinks) {
  Topology t = parseOk(kRail);
  size_t devs = t.devices().size(), links = t.links().size();
  ASSERT_FALSE(static_cast<bool>(applyScenario(t, "nic-fail")));
  EXPECT_EQ(t.devices().size(), devs - 1);
  EXPECT_EQ(t.links().size(), links - 2);
  EXPECT_EQ(t.findDevice("dgx01/mlx5_1"), -1);
  EXPECT_EQ(t.numRanks(), 4);
  // dgx01/gpu1 is reached over the other rail and the spine.
  EXPECT_TRUE(t.route(0, 3).found());
}

TEST(ScenarioTest, SetAssignsAndShifts) {
  Topology t = parseOk(kRail);
  ASSERT_FALSE(static_cast<bool>(applyScenario(t, "uplink")));
  const Link &l = t.link(linkBetween(t, "dgx00/mlx5_0", "leaf0"));
  EXPECT_DOUBLE_EQ(l.bandwidth[0], 25e9);
  EXPECT_EQ(l.bandwidthText(1), "200 Gb/s");
  EXPECT_DOUBLE_EQ(l.latency, 2e-6);

  Topology d = parseOk(kRail);
  ASSERT_FALSE(static_cast<bool>(applyScenario(d, "one-way")));
  const Link &w = d.link(linkBetween(d, "dgx00/mlx5_0", "leaf0"));
  EXPECT_DOUBLE_EQ(w.bandwidth[0], 12.5e9);
  EXPECT_DOUBLE_EQ(w.bandwidth[1], 50e9);

  Topology m = parseOk(kRail);
  ASSERT_FALSE(static_cast<bool>(applyScenario(m, "minus")));
  EXPECT_DOUBLE_EQ(m.link(linkBetween(m, "dgx00/mlx5_0", "leaf0")).bandwidth[0],
                   37.5e9);
}

TEST(ScenarioTest, SetCannotMakeBandwidthNonPositive) {
  Topology t = parseOk(kRail);
  EXPECT_EQ(errText(applyScenario(t, "too-much")),
            "t.yaml:29:68: error: bandwidth of link dgx00/mlx5_0--leaf0 "
            "would become 0 Gb/s; it must stay positive (use 'fail' to "
            "remove it)\n"
            "  too-much:    [ { set: { links: \"dgx00/mlx5_0--leaf0\", "
            "bandwidth: -400 Gb/s } } ]\n"
            "                                                             "
            "      ^\n");
  // Unchanged on error.
  EXPECT_DOUBLE_EQ(t.link(linkBetween(t, "dgx00/mlx5_0", "leaf0")).bandwidth[0],
                   50e9);
}

TEST(ScenarioTest, ExtendsComposes) {
  Topology t = parseOk(kRail);
  ASSERT_FALSE(static_cast<bool>(applyScenario(t, "both")));
  EXPECT_EQ(t.findDevice("dgx01/mlx5_1"), -1);
  EXPECT_DOUBLE_EQ(
      t.link(linkBetween(t, "dgx00/gpu0", "dgx00/nvs")).bandwidth[0], 12.5e9);
  Topology n = parseOk(kRail);
  // nested = both, then the spine fails: rail changes go over the CPU.
  ASSERT_FALSE(static_cast<bool>(applyScenario(n, "nested")));
  EXPECT_EQ(n.findDevice("spine"), -1);
  EXPECT_EQ(n.findDevice("dgx01/mlx5_1"), -1);
  EXPECT_EQ(n.appliedScenarios(), std::vector<std::string>{"nested"});
}

TEST(ScenarioTest, DisconnectionReportsTheCut) {
  Topology t = parseOk(kRail);
  EXPECT_EQ(errText(applyScenario(t, "cut")),
            "t.yaml:32:27: error: after 'fail: leaf*' in scenario 'cut', the "
            "4 GPUs form 2 disconnected components (no links join them, even "
            "through other GPUs): component 1 (2 GPUs): dgx00/gpu0, "
            "dgx00/gpu1; component 2 (2 GPUs): dgx01/gpu0, dgx01/gpu1\n"
            "  cut:         [ { fail: \"leaf*\" } ]\n"
            "                          ^\n");
}

TEST(ScenarioTest, SelectorMatchingNothingIsAnError) {
  Topology t = parseOk(kRail);
  EXPECT_EQ(errText(applyScenario(t, "nothing")),
            "t.yaml:33:27: error: selector 'dgx07/*' matches no device\n"
            "  nothing:     [ { fail: \"dgx07/*\" } ]\n"
            "                          ^\n");
  EXPECT_EQ(errText(applyScenario(t, "no-link")),
            "t.yaml:34:37: error: selector 'nvs--leaf*' matches no link\n"
            "  no-link:     [ { scale: { links: \"nvs--leaf*\", bandwidth: 2x "
            "} } ]\n"
            "                                    ^\n");
}

TEST(ScenarioTest, SweepIsNotYetApplied) {
  Topology t = parseOk(kRail);
  const ScenarioDef *s = t.findScenario("sweep");
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(s->ops.size(), 1u);
  EXPECT_EQ(s->ops[0].sweepValues.size(), 2u);
  std::string err = errText(applyScenario(t, "sweep"));
  EXPECT_NE(err.find("error: scenario 'sweep': applying a 'sweep' is not yet "
                     "supported"),
            std::string::npos)
      << err;
}

TEST(ScenarioTest, UnknownScenarioListsKnownOnes) {
  Topology t = parseOk(kRail);
  EXPECT_EQ(errText(applyScenario(t, "nvlink-hlf")),
            "error: unknown scenario 'nvlink-hlf'; did you mean "
            "'nvlink-half'?; known scenarios: nvlink-half, nic-fail, uplink, "
            "one-way, minus, too-much, both, nested, cut, nothing, no-link, "
            "sweep\n");
}

TEST(ScenarioTest, ParseTimeScenarioErrors) {
  std::string base = R"(schema: topocc/v1
nodes:
  - name: a
    gpus: [ g0, g1 ]
    links: [ { from: g0, to: g1, type: nvlink, bandwidth: 25 GB/s } ]
scenarios:
)";
  EXPECT_EQ(parseError(base + "  x: [ { fail: \"a/g0->a/g1\" } ]\n"),
            "t.yaml:7:17: error: 'fail' takes a device or an undirected link "
            "'A--B'; a link cannot fail in one direction only: 'a/g0->a/g1'\n"
            "  x: [ { fail: \"a/g0->a/g1\" } ]\n"
            "                ^\n");
  EXPECT_EQ(parseError(base + "  x: [ { scale: { links: a/g0, bandwidth: 2x } } ]\n"),
            "t.yaml:7:26: error: links selector 'a/g0' must name links: "
            "'A--B' (either direction) or 'A->B' (one direction)\n"
            "  x: [ { scale: { links: a/g0, bandwidth: 2x } } ]\n"
            "                         ^\n");
  EXPECT_EQ(parseError(base + "  x: { extends: [y] }\n  y: { extends: [x] }\n"),
            "t.yaml:8:18: error: scenario 'x' extends itself: x -> y -> x\n"
            "  y: { extends: [x] }\n"
            "                 ^\n");
  EXPECT_EQ(parseError(base + "  x: { extends: [nope] }\n"),
            "t.yaml:7:18: error: unknown scenario 'nope' in 'extends'\n"
            "  x: { extends: [nope] }\n"
            "                 ^\n");
  EXPECT_EQ(parseError(base + "  x: [ { scale: { links: a/g0--a/g1, bandwidth: 2 } } ]\n"),
            "t.yaml:7:49: error: bandwidth factor '2' has no unit; expected a "
            "factor such as '2x' or '0.5x'\n"
            "  x: [ { scale: { links: a/g0--a/g1, bandwidth: 2 } } ]\n"
            "                                                ^\n");
}

TEST(ScenarioTest, GlobsStayWithinAPathSegment) {
  EXPECT_TRUE(globMatch("dgx*/gpu?", "dgx01/gpu3"));
  EXPECT_FALSE(globMatch("*", "dgx01/gpu3"));
  EXPECT_TRUE(globMatch("*/*", "dgx01/gpu3"));
  EXPECT_FALSE(globMatch("dgx*", "dgx01/gpu3"));
  EXPECT_TRUE(globMatch("leaf*", "leaf12"));
  Device d;
  d.name = "dgx00/nvs0";
  d.localName = "nvs0";
  d.node = "dgx00";
  EXPECT_TRUE(selectorMatchesDevice("nvs*", d));
  EXPECT_TRUE(selectorMatchesDevice("dgx00/nvs0", d));
  EXPECT_FALSE(selectorMatchesDevice("dgx01/*", d));
}
