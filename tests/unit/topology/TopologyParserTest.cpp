//===- tests/unit/topology/TopologyParserTest.cpp - Reading topologies ----===//

#include "TopologyTestUtil.h"

#include "llvm/ADT/StringExtras.h"

using namespace topocc::topo;
using namespace topocc::topo::test;

namespace {
const char *kTwoNodes = R"(schema: topocc/v1
name: tiny
link_classes:
  nv: { type: nvlink, bandwidth: 25 GB/s, latency: 0.7 us, efficiency: 0.8 }
  ib: { type: ib, bandwidth: 200 Gb/s, latency: 1.5 us }
node_templates:
  box:
    gpus: [ { name: "gpu{g:0-3}", model: a100 } ]
    nics: [ "nic{g:0-1}" ]
    switches: [ { name: nvs, kind: nvswitch } ]
    links:
      - { from: "gpu{g:0-3}", to: nvs, class: nv, count: 4 }
      - { from: "nic{n:0-1}", to: nvs, class: nv }
nodes:
  - { name: "n[0-1]", template: box }
fabric:
  switches: [ { name: "leaf{l:0-1}", kind: ib-switch } ]
  links: [ { from: "n{n:0-1}/nic{r:0-1}", to: "leaf{r}", class: ib } ]
)";
} // namespace

TEST(TopologyParserTest, ExpandsTemplatesNodesAndFabric) {
  Topology t = parseOk(kTwoNodes);
  EXPECT_EQ(t.name(), "tiny");
  EXPECT_EQ(t.numRanks(), 8);
  EXPECT_EQ(t.numNodes(), 2);
  EXPECT_EQ(t.gpusPerNode(), 4);
  EXPECT_EQ(t.rankName(0), "n0/gpu0");
  EXPECT_EQ(t.rankName(5), "n1/gpu1");
  EXPECT_EQ(t.nodeOfRank(5), 1);
  // 2 x (4 GPUs + 2 NICs + 1 switch) + 2 leaves.
  EXPECT_EQ(t.devices().size(), 16u);
  // 2 x (4 + 2) + 4 fabric links.
  EXPECT_EQ(t.links().size(), 16u);
  int nvs = t.findDevice("n1/nvs");
  ASSERT_GE(nvs, 0);
  EXPECT_EQ(t.device(nvs).switchKind, SwitchKind::NvSwitch);
  EXPECT_EQ(t.device(nvs).localName, "nvs");
  EXPECT_EQ(t.device(nvs).node, "n1");
  const Link &l = t.link(0);
  EXPECT_EQ(t.device(l.from).name, "n0/gpu0");
  EXPECT_EQ(l.className, "nv");
  EXPECT_EQ(l.count, 4);
  EXPECT_DOUBLE_EQ(l.capacity(0), 100e9);
  EXPECT_DOUBLE_EQ(l.effectiveCapacity(1), 80e9);
  EXPECT_EQ(l.bandwidthText(0), "25 GB/s");
  EXPECT_EQ(l.latencyText(), "0.7 us");
  EXPECT_DOUBLE_EQ(l.latency, 0.7e-6);
  const Link &ib = t.links().back();
  EXPECT_EQ(t.device(ib.from).name, "n1/nic1");
  EXPECT_EQ(t.device(ib.to).name, "leaf1");
  EXPECT_EQ(ib.type, LinkType::Ib);
  EXPECT_EQ(ib.bandwidthText(0), "200 Gb/s");
  EXPECT_DOUBLE_EQ(ib.bandwidth[0], 25e9);
  EXPECT_EQ(ib.loc.line, 18u);
}

TEST(TopologyParserTest, InlineLinkAttributesAsymmetricAndHalfDuplex) {
  Topology t = parseOk(R"(schema: topocc/v1
nodes:
  - name: a
    gpus: [ g0, g1 ]
    switches: [ { name: s, kind: pcie-switch } ]
    links:
      - { from: g0, to: s, type: pcie, bandwidth: { fwd: 400 Gb/s, rev: 200 Gb/s }, latency: 1 us }
      - { from: g1, to: s, type: custom, bandwidth: 10 GB/s, duplex: half }
)");
  ASSERT_EQ(t.links().size(), 2u);
  EXPECT_DOUBLE_EQ(t.link(0).bandwidth[0], 50e9);
  EXPECT_DOUBLE_EQ(t.link(0).bandwidth[1], 25e9);
  EXPECT_FALSE(t.link(0).symmetric());
  EXPECT_EQ(t.link(1).duplex, Duplex::Half);
  EXPECT_DOUBLE_EQ(t.link(1).latency, 0); // omitted latency is zero
  EXPECT_EQ(t.link(1).type, LinkType::Custom);
}

TEST(TopologyParserTest, InlineOverridesClass) {
  Topology t = parseOk(R"(schema: topocc/v1
link_classes:
  c: { type: pcie, bandwidth: 32 GB/s, latency: 1 us }
nodes:
  - name: a
    gpus: [ g0, g1 ]
    links: [ { from: g0, to: g1, class: c, bandwidth: 16 GB/s, efficiency: 0.5 } ]
)");
  EXPECT_DOUBLE_EQ(t.link(0).bandwidth[0], 16e9);
  EXPECT_DOUBLE_EQ(t.link(0).latency, 1e-6);
  EXPECT_TRUE(t.link(0).hasEfficiency);
  EXPECT_DOUBLE_EQ(t.link(0).effectiveCapacity(0), 8e9);
}

TEST(TopologyParserTest, RankList) {
  std::string text = std::string(kTwoNodes) +
                     "ranks: { list: [n1/gpu0, n1/gpu1, n1/gpu2, n1/gpu3, "
                     "n0/gpu0, n0/gpu1, n0/gpu2, n0/gpu3] }\n";
  Topology t = parseOk(text);
  EXPECT_TRUE(t.explicitRankList());
  EXPECT_EQ(t.rankName(0), "n1/gpu0");
  EXPECT_EQ(t.rankName(4), "n0/gpu0");
  EXPECT_EQ(t.rankOf("n0/gpu0"), 4);
}

TEST(TopologyParserTest, RankListMustBeAPermutation) {
  std::string base = kTwoNodes;
  EXPECT_EQ(parseError(base + "ranks: { list: [n1/gpu0, n1/gpu0, n0/nvs, x] }\n"),
            "t.yaml:19:26: error: ranks.list is not a permutation of the "
            "GPUs: 'n1/gpu0' appears twice (also rank 0)\n"
            "ranks: { list: [n1/gpu0, n1/gpu0, n0/nvs, x] }\n"
            "                         ^\n"
            "t.yaml:19:35: error: ranks.list is not a permutation of the "
            "GPUs: 'n0/nvs' is a switch, not a GPU\n"
            "ranks: { list: [n1/gpu0, n1/gpu0, n0/nvs, x] }\n"
            "                                  ^\n"
            "t.yaml:19:43: error: ranks.list is not a permutation of the "
            "GPUs: 'x' is not a device\n"
            "ranks: { list: [n1/gpu0, n1/gpu0, n0/nvs, x] }\n"
            "                                          ^\n");
  EXPECT_EQ(parseError(base + "ranks: { list: [n1/gpu0] }\n"),
            "t.yaml:19:16: error: ranks.list is not a permutation of the "
            "GPUs: 7 GPUs are missing: n0/gpu0, n0/gpu1, n0/gpu2, n0/gpu3, "
            "n1/gpu1, n1/gpu2, n1/gpu3\n"
            "ranks: { list: [n1/gpu0] }\n"
            "               ^\n");
}

TEST(TopologyParserTest, UnitErrorPointsAtTheValue) {
  EXPECT_EQ(parseError(R"(schema: topocc/v1
nodes:
  - name: a
    gpus: [ g0, g1 ]
    links:
      - { from: "g0", to: "g1", type: nvlink, bandwidth: 25 GBps }
)"),
            "t.yaml:6:58: error: unknown unit 'GBps' in bandwidth; did you "
            "mean 'GB/s' (bytes) or 'Gb/s' (bits)?\n"
            "      - { from: \"g0\", to: \"g1\", type: nvlink, bandwidth: 25 "
            "GBps }\n"
            "                                                         ^\n");
}

TEST(TopologyParserTest, CollectsEveryProblem) {
  std::string err = parseError(R"(schema: topocc/v1
link_classes:
  a: { type: nvlnk, bandwidth: 25 GB/s }
  b: { type: pcie, bandwith: 25 GB/s }
  c: { type: pcie, bandwidth: 0 GB/s, latency: -1 us }
)");
  EXPECT_NE(err.find("t.yaml:3:14: error: unknown link type 'nvlnk'; did you "
                     "mean 'nvlink'?"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("t.yaml:4:20: error: unknown key 'bandwith' in link "
                     "class 'b'; did you mean 'bandwidth'?"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("error: bandwidth must be positive, got '0 GB/s'"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("error: latency must not be negative, got '-1 us'"),
            std::string::npos)
      << err;
}

TEST(TopologyParserTest, SchemaChecks) {
  EXPECT_EQ(parseError("name: x\n"),
            "t.yaml:1:1: error: missing 'schema' key; expected 'schema: "
            "topocc/v1' at the top of the file\n"
            "name: x\n"
            "^\n");
  EXPECT_EQ(parseError("schema: topocc/v2\n"),
            "t.yaml:1:9: error: unknown schema 'topocc/v2'; expected "
            "'topocc/v1'\n"
            "schema: topocc/v2\n"
            "        ^\n");
  EXPECT_EQ(parseError("- a\n"),
            "t.yaml:1:1: error: expected a mapping at the top of the topology "
            "file (starting with 'schema: topocc/v1'), got a sequence\n"
            "- a\n"
            "^\n");
  EXPECT_NE(parseError("schema: [\n").find("YAML syntax error"),
            std::string::npos);
}

TEST(TopologyParserTest, MergeKeysAreRejected) {
  std::string err = parseError(R"(schema: topocc/v1
link_classes:
  base: &b { type: nvlink, bandwidth: 25 GB/s }
  nv: { <<: *b, latency: 1 us }
)");
  EXPECT_NE(err.find("t.yaml:4:9: error: YAML merge keys ('<<') are not "
                     "supported; use 'template:' instead"),
            std::string::npos)
      << err;
}

TEST(TopologyParserTest, AnchorsAndAliasesWork) {
  Topology t = parseOk(R"(schema: topocc/v1
nodes:
  - name: x0
    gpus: &two [ g0, g1 ]
    links: [ { from: g0, to: g1, type: nvlink, bandwidth: 25 GB/s } ]
  - name: x1
    gpus: *two
    links: [ { from: g0, to: g1, type: nvlink, bandwidth: 25 GB/s } ]
  - name: c
    switches: [ { name: s, kind: eth-switch } ]
fabric:
  links: [ { from: "x{n:0-1}/g{g:0-1}", to: "c/s", type: ethernet, bandwidth: 100 Gb/s } ]
)");
  EXPECT_EQ(t.numRanks(), 4);
}

TEST(TopologyParserTest, SizeLimitIsCheckedBeforeExpansion) {
  std::string err = parseError(R"(schema: topocc/v1
node_templates:
  t:
    gpus: [ "g{g:0-999}" ]
nodes:
  - { name: "n{n:0-999999}", template: t }
)");
  EXPECT_EQ(err,
            "t.yaml:6:5: error: topology would expand to 1000000000 devices, "
            "more than the limit of 1000000; refused before expansion\n"
            "  - { name: \"n{n:0-999999}\", template: t }\n"
            "    ^\n");
  std::string links = parseError(R"(schema: topocc/v1
fabric:
  gpus: [ "g{g:0-1999}" ]
  links: [ { from: "g{a:0-1999}", to: "g{b:0-1999}", type: custom, bandwidth: 1 GB/s } ]
)");
  EXPECT_NE(links.find("error: topology would expand to 4000000 links, more "
                       "than the limit of 1000000; refused before expansion"),
            std::string::npos)
      << links;
}

TEST(TopologyParserTest, MissingFileIsAUserError) {
  auto t = loadTopologyFile("/nonexistent/topo.yaml");
  ASSERT_FALSE(static_cast<bool>(t));
  std::string err = llvm::toString(t.takeError());
  EXPECT_NE(err.find("cannot read topology file '/nonexistent/topo.yaml'"),
            std::string::npos)
      << err;
}

TEST(TopologyParserTest, ConnectivityNamesTheGpusCutOff) {
  EXPECT_EQ(parseError(R"(schema: topocc/v1
nodes:
  - name: a
    gpus: [ "g{g:0-3}" ]
    switches: [ { name: s, kind: nvswitch } ]
    links: [ { from: "g{g:0-1}", to: s, type: nvlink, bandwidth: 25 GB/s } ]
)"),
            "t.yaml:4:13: error: the 4 GPUs form 3 disconnected components "
            "(no links join them, even through other GPUs): component 1 (2 "
            "GPUs): a/g0, a/g1; component 2 (1 GPU): a/g2; component 3 (1 "
            "GPU): a/g3\n"
            "    gpus: [ \"g{g:0-3}\" ]\n"
            "            ^\n");
}

TEST(TopologyParserTest, GpusRelayWhereNoRouteExists) {
  // A chain g0 - g1 - g2 is connected: g0 reaches g2 only through g1, which
  // relays (receives and sends). Valid; the pair counts as unrouted.
  Topology t = parseOk(R"(schema: topocc/v1
nodes:
  - name: a
    gpus: [ "g{g:0-2}" ]
    links: [ { from: "g{g:0-1}", to: "g{g+1}", type: nvlink, bandwidth: 25 GB/s } ]
)");
  RouteCoverage cov = routeCoverage(t);
  EXPECT_EQ(cov.pairs, 6u);
  EXPECT_EQ(cov.unrouted, 2u); // g0 -> g2 and g2 -> g0
  ASSERT_GE(cov.exampleFrom, 0);
  EXPECT_EQ(t.device(cov.exampleFrom).name, "a/g0");
  ASSERT_EQ(cov.exampleMissing.size(), 1u);
  EXPECT_EQ(t.device(cov.exampleMissing[0]).name, "a/g2");
  EXPECT_FALSE(t.route(0, 2).found());
  EXPECT_TRUE(t.route(0, 1).found());
}

TEST(TopologyParserTest, DeterministicAcrossRuns) {
  Topology a = parseOk(kTwoNodes), b = parseOk(kTwoNodes);
  ASSERT_EQ(a.devices().size(), b.devices().size());
  for (size_t i = 0; i < a.devices().size(); ++i)
    EXPECT_EQ(a.device(i).name, b.device(i).name);
}

TEST(TopologyParserLimitsTest, LowerLimitsRefuseBeforeExpansion) {
  const char *text = "schema: topocc/v1\n"
                     "name: big\n"
                     "nodes:\n"
                     "  - name: \"n{i:0-99}\"\n"
                     "    gpus: [ { name: \"gpu{g:0-7}\" } ]\n";
  topocc::topo::ParseLimits limits;
  limits.maxDevices = 500;
  auto t = topocc::topo::parseTopology(text, "big.yaml", limits);
  ASSERT_FALSE(bool(t));
  std::string msg = llvm::toString(t.takeError());
  EXPECT_NE(msg.find("would expand to 800 devices, more than the limit of 500"),
            std::string::npos)
      << msg;
}
