//===- tests/unit/topology/ScenarioCliTest.cpp - Command-line scenarios ---===//
//
// --fail/--scale/--set parsing with exact messages, applying op lists (each
// op, composition, selectors that match nothing, a cut), sweep expansion.
//
//===----------------------------------------------------------------------===//

#include "compiler/topology/ScenarioCli.h"
#include "compiler/topology/TopologyParser.h"

#include "gtest/gtest.h"

using namespace topocc;
using namespace topocc::topo;

namespace {

const char *kStar = R"(schema: topocc/v1
name: star
nodes:
  - name: a
    gpus: [ g0, g1, g2 ]
    switches: [ { name: sw, kind: nvswitch }, { name: sw2, kind: nvswitch } ]
    links:
      - { from: g0, to: sw, type: nvlink, bandwidth: 10 GB/s, latency: 1 us }
      - { from: g1, to: sw, type: nvlink, bandwidth: 10 GB/s, latency: 1 us }
      - { from: g2, to: sw, type: nvlink, bandwidth: 10 GB/s, latency: 1 us }
      - { from: g0, to: sw2, type: nvlink, bandwidth: 10 GB/s, latency: 1 us }
      - { from: g1, to: sw2, type: nvlink, bandwidth: 10 GB/s, latency: 1 us }
scenarios:
  half: [ { scale: { links: "a/g*--a/sw", bandwidth: 0.5x } } ]
  sweep2: [ { fail: "a/sw2" }, { sweep: { links: "a/g0--a/sw", bandwidth: [5 GB/s, 20 GB/s] } }, { sweep: { links: "a/g1--a/sw", bandwidth: [1 GB/s, 2 GB/s] } } ]
)";

Topology star() {
  auto t = parseTopology(kStar, "star.yaml");
  if (!t) {
    ADD_FAILURE() << llvm::toString(t.takeError());
    return Topology();
  }
  return std::move(*t);
}

/// The message of a user error, without "error: " and the final newline.
std::string plain(std::string s) {
  if (llvm::StringRef(s).startswith("error: "))
    s = s.substr(7);
  while (!s.empty() && s.back() == '\n')
    s.pop_back();
  return s;
}

std::string errorOf(llvm::Error e) { return plain(llvm::toString(std::move(e))); }

template <typename T> std::string errorOf(llvm::Expected<T> e) {
  if (e)
    return "(no error)";
  return plain(llvm::toString(e.takeError()));
}

/// The link between devices named `a` and `b`.
const Link *linkBetween(const Topology &t, llvm::StringRef a,
                        llvm::StringRef b) {
  for (const Link &l : t.links())
    if (t.device(l.from).name == a && t.device(l.to).name == b)
      return &l;
  return nullptr;
}

TEST(ScenarioCliTest, ParsesOptions) {
  auto f = parseFailOption("a/g1");
  ASSERT_TRUE(bool(f));
  EXPECT_EQ(f->kind, ScenarioOp::Fail);
  EXPECT_EQ(f->selector, "a/g1");
  auto s = parseScaleOption("a/g*--a/sw=2x");
  ASSERT_TRUE(bool(s));
  EXPECT_EQ(s->kind, ScenarioOp::Scale);
  EXPECT_EQ(s->selector, "a/g*--a/sw");
  EXPECT_EQ(s->bandwidth->value, 2);
  auto bw = parseSetOption("a/g0->a/sw = 200Gb/s");
  ASSERT_TRUE(bool(bw));
  EXPECT_EQ(bw->selector, "a/g0->a/sw");
  EXPECT_EQ(bw->bandwidth->value, 25e9);
  EXPECT_FALSE(bw->latency);
  auto lat = parseSetOption("a/g0--a/sw=+0.5us");
  ASSERT_TRUE(bool(lat));
  EXPECT_FALSE(lat->bandwidth);
  EXPECT_TRUE(lat->latency->hasSign);
  EXPECT_DOUBLE_EQ(lat->latency->value, 0.5e-6);
  EXPECT_EQ(describeScenarioOps({*f, *s, *bw, *lat}),
            "fail a/g1; scale a/g*--a/sw bandwidth 2x; set a/g0->a/sw "
            "bandwidth 200 Gb/s; set a/g0--a/sw latency +0.5 us");
}

TEST(ScenarioCliTest, OptionErrors) {
  EXPECT_EQ(errorOf(parseFailOption("a/g0->a/sw")),
            "--fail: 'fail' takes a device or an undirected link 'A--B'; a "
            "link cannot fail in one direction only: 'a/g0->a/sw'");
  EXPECT_EQ(errorOf(parseFailOption(" ")), "--fail: empty selector");
  EXPECT_EQ(errorOf(parseScaleOption("a/g0--a/sw")),
            "--scale 'a/g0--a/sw': expected SELECTOR=VALUE, e.g. "
            "'node0/gpu*--node0/nvs*=2x'");
  EXPECT_EQ(errorOf(parseScaleOption("a/g0=2x")),
            "--scale: links selector 'a/g0' must name links: 'A--B' (either "
            "direction) or 'A->B' (one direction)");
  EXPECT_EQ(errorOf(parseScaleOption("a/g0--a/sw=0x")),
            "--scale 'a/g0--a/sw=0x': the bandwidth factor must be positive, "
            "got '0x'");
  EXPECT_EQ(errorOf(parseSetOption("a/g0--a/sw=200")),
            "--set 'a/g0--a/sw=200': bandwidth '200' has no unit; expected a "
            "bandwidth such as '25 GB/s' or '200 Gb/s'");
  EXPECT_EQ(errorOf(parseSetOption("a/g0--a/sw=0GB/s")),
            "--set 'a/g0--a/sw=0GB/s': bandwidth must be positive");
  EXPECT_EQ(errorOf(parseScenarioOptions({"a/g0"}, {"x"}, {})),
            "--scale 'x': expected SELECTOR=VALUE, e.g. "
            "'node0/gpu*--node0/nvs*=2x'");
}

TEST(ScenarioCliTest, AppliesEachOpAndComposes) {
  Topology t = star();
  auto ops = parseScenarioOptions({"a/g2"}, {"a/g0--a/sw=2x"},
                                  {"a/g1->a/sw=5GB/s", "a/g1--a/sw=3us"});
  ASSERT_TRUE(bool(ops)) << llvm::toString(ops.takeError());
  ASSERT_FALSE(bool(applyScenarioOps(t, "cli", *ops)));
  EXPECT_EQ(t.numRanks(), 2);
  EXPECT_EQ(t.findDevice("a/g2"), -1);
  const Link *g0 = linkBetween(t, "a/g0", "a/sw");
  ASSERT_TRUE(g0);
  EXPECT_EQ(g0->bandwidth[0], 20e9);
  EXPECT_EQ(g0->bandwidth[1], 20e9);
  const Link *g1 = linkBetween(t, "a/g1", "a/sw");
  ASSERT_TRUE(g1);
  EXPECT_EQ(g1->bandwidth[0], 5e9); // g1 -> sw only
  EXPECT_EQ(g1->bandwidth[1], 10e9);
  EXPECT_DOUBLE_EQ(g1->latency, 3e-6);
  ASSERT_EQ(t.appliedScenarios().size(), 1u);
  EXPECT_EQ(t.appliedScenarios()[0], "cli");
  // The file's scenarios are untouched.
  EXPECT_EQ(t.scenarios().size(), 2u);
  // A named scenario's ops compose with command-line ones.
  Topology u = star();
  auto more = parseScenarioOptions({}, {"a/g0--a/sw=2x"}, {});
  ASSERT_TRUE(bool(more));
  auto half = expandScenario(u, "half");
  ASSERT_TRUE(bool(half));
  std::vector<ScenarioOp> all = (*half)[0].ops;
  all.insert(all.end(), more->begin(), more->end());
  ASSERT_FALSE(bool(applyScenarioOps(u, "both", all)));
  EXPECT_EQ(linkBetween(u, "a/g0", "a/sw")->bandwidth[0], 10e9);
  EXPECT_EQ(linkBetween(u, "a/g1", "a/sw")->bandwidth[0], 5e9);
}

TEST(ScenarioCliTest, ErrorsLeaveTheTopologyUnchanged) {
  Topology t = star();
  auto none = parseScenarioOptions({}, {"a/zz--a/sw=2x"}, {});
  ASSERT_TRUE(bool(none));
  EXPECT_EQ(errorOf(applyScenarioOps(t, "cli", *none)),
            "selector 'a/zz--a/sw' matches no link");
  auto noDev = parseScenarioOptions({"a/gpu9"}, {}, {});
  ASSERT_TRUE(bool(noDev));
  EXPECT_EQ(errorOf(applyScenarioOps(t, "cli", *noDev)),
            "selector 'a/gpu9' matches no device");
  // Failing the only switch of g2 cuts it off.
  auto cut = parseScenarioOptions({"a/sw"}, {}, {});
  ASSERT_TRUE(bool(cut));
  std::string msg = errorOf(applyScenarioOps(t, "cli", *cut));
  EXPECT_NE(msg.find("after 'fail: a/sw' in scenario 'cli', "), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("a/g2"), std::string::npos) << msg;
  EXPECT_EQ(t.numRanks(), 3);
  EXPECT_TRUE(t.appliedScenarios().empty());
  EXPECT_EQ(linkBetween(t, "a/g0", "a/sw")->bandwidth[0], 10e9);
}

TEST(ScenarioCliTest, ExpandsSweeps) {
  Topology t = star();
  auto plain = expandScenario(t, "half");
  ASSERT_TRUE(bool(plain));
  ASSERT_EQ(plain->size(), 1u);
  EXPECT_EQ((*plain)[0].name, "half");
  auto sw = expandScenario(t, "sweep2");
  ASSERT_TRUE(bool(sw)) << llvm::toString(sw.takeError());
  ASSERT_EQ(sw->size(), 4u);
  EXPECT_EQ((*sw)[0].name, "sweep2[a/g0--a/sw=5 GB/s, a/g1--a/sw=1 GB/s]");
  EXPECT_EQ((*sw)[3].name, "sweep2[a/g0--a/sw=20 GB/s, a/g1--a/sw=2 GB/s]");
  EXPECT_EQ(describeScenarioOps((*sw)[1].ops),
            "fail a/sw2; set a/g0--a/sw bandwidth 5 GB/s; set a/g1--a/sw "
            "bandwidth 2 GB/s");
  for (const ExpandedScenario &e : *sw) {
    Topology u = t;
    ASSERT_FALSE(bool(applyScenarioOps(u, e.name, e.ops))) << e.name;
    EXPECT_EQ(u.findDevice("a/sw2"), -1);
  }
  Topology u = t;
  ASSERT_FALSE(bool(applyScenarioOps(u, (*sw)[2].name, (*sw)[2].ops)));
  EXPECT_EQ(linkBetween(u, "a/g0", "a/sw")->bandwidth[0], 20e9);
  EXPECT_EQ(linkBetween(u, "a/g1", "a/sw")->bandwidth[1], 1e9);
  EXPECT_EQ(errorOf(expandScenario(t, "halff")),
            "unknown scenario 'halff'; did you mean 'half'?; known "
            "scenarios: half, sweep2");
}

} // namespace
