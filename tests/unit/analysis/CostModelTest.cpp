//===- tests/unit/analysis/CostModelTest.cpp - Cost model tests -----------===//
//
// Hand-computed cases: equal-link rings, a ring crossing a slow socket link
// twice, parallel ports, half duplex, efficiency, multipath over switches,
// pipelining, and the schedule path against the closed form.
//
//===----------------------------------------------------------------------===//

#include "compiler/analysis/CostModel.h"
#include "compiler/passes/LowerRing.h"
#include "compiler/topology/TopologyParser.h"
#include "tests/support/Topologies.h"
#include "tests/unit/topology/TopologyTestUtil.h"

#include "gtest/gtest.h"

#include <cmath>
#include <map>
#include <numeric>

using namespace topocc;
using namespace topocc::analysis;
using topocc::topo::test::parseOk;

namespace {

/// n GPUs in a cycle g0-g1-...-g(n-1)-g0 of equal links.
std::string ringTopo(int n, const char *bw, const char *lat,
                     const char *extra = "") {
  std::string s = "schema: topocc/v1\nnodes:\n  - name: a\n    gpus: [";
  for (int i = 0; i < n; ++i)
    s += (i ? ", g" : "g") + std::to_string(i);
  // A slow hub keeps every pair connected (GPUs do not forward); the ring
  // neighbours use their direct links.
  s += "]\n    switches: [ { name: hub, kind: pcie-switch } ]\n    links:\n";
  for (int i = 0; i < n; ++i)
    s += "      - { from: g" + std::to_string(i) +
         ", to: hub, type: pcie, bandwidth: 1 GB/s, latency: 5 us }\n";
  for (int i = 0; i < n; ++i)
    s += "      - { from: g" + std::to_string(i) + ", to: g" +
         std::to_string((i + 1) % n) + ", type: nvlink, bandwidth: " + bw +
         ", latency: " + lat + extra + " }\n";
  return s;
}

RingChannel ring(std::vector<int> order) {
  RingChannel rc;
  rc.order = std::move(order);
  return rc;
}

double rel(double a, double b) { return std::fabs(a - b) / std::fabs(b); }

TEST(CostModelTest, EqualLinkRingMatchesFormula) {
  for (int n : {3, 4, 8}) {
    topo::Topology t = parseOk(ringTopo(n, "10 GB/s", "2 us"));
    LinkModel m(t);
    std::vector<int> order(n);
    for (int i = 0; i < n; ++i)
      order[i] = i;
    double S = 64.0 * 1024 * 1024, a = 2e-6, B = 10e9;
    auto r = estimateRings({ring(order)}, ir::Collective::AllReduce, S, m);
    ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
    double expect = 2 * (n - 1) * (a + S / (n * B));
    EXPECT_LT(rel(r->time, expect), 1e-12) << n;
    EXPECT_LT(rel(r->busbw, S / expect * 2 * (n - 1) / n), 1e-12);
    auto ag = estimateRings({ring(order)}, ir::Collective::AllGather, S, m);
    ASSERT_TRUE(bool(ag));
    EXPECT_LT(rel(ag->time, (n - 1) * (a + S / (n * B))), 1e-12);
    EXPECT_LT(rel(ag->busbw, S / ag->time * (n - 1) / n), 1e-12);
  }
}

TEST(CostModelTest, ScheduleOfLoweredRingMatchesClosedForm) {
  for (auto c : {ir::Collective::AllReduce, ir::Collective::AllGather,
                 ir::Collective::ReduceScatter}) {
    int n = 5;
    topo::Topology t = parseOk(ringTopo(n, "10 GB/s", "2 us"));
    LinkModel m(t);
    passes::RingOptions o;
    o.collective = c;
    o.numRanks = n;
    auto s = passes::lowerRing(o);
    ASSERT_TRUE(bool(s)) << llvm::toString(s.takeError());
    double S = 1 << 20;
    auto a = estimateSchedule(*s, m, S);
    ASSERT_TRUE(bool(a)) << llvm::toString(a.takeError());
    auto b = estimateRings({ring({0, 1, 2, 3, 4})}, c, S, m);
    ASSERT_TRUE(bool(b));
    EXPECT_LT(rel(a->bandwidthTime, b->bandwidthTime), 1e-12);
    EXPECT_LT(rel(a->latencyTime, b->latencyTime), 1e-12)
        << a->latencyTime << " vs " << b->latencyTime;
    double expect = ir::Collective::AllReduce == c
                        ? 2 * (n - 1) * (2e-6 + S / (n * 10e9))
                        : (n - 1) * (2e-6 + S / (n * 10e9));
    EXPECT_LT(rel(a->time, expect), 1e-12);
  }
}

// Two sockets, two GPUs each on the socket's root complex, a slow socket
// link. Ring 0,2,1,3 crosses cpu0 -> cpu1 twice (0->2 and 1->3).
const char *kTwoSockets = R"(schema: topocc/v1
nodes:
  - name: s
    gpus: [ g0, g1, g2, g3 ]
    switches: [ { name: cpu0, kind: cpu-socket }, { name: cpu1, kind: cpu-socket } ]
    links:
      - { from: g0, to: cpu0, type: pcie, bandwidth: 32 GB/s, latency: 1 us }
      - { from: g1, to: cpu0, type: pcie, bandwidth: 32 GB/s, latency: 1 us }
      - { from: g2, to: cpu1, type: pcie, bandwidth: 32 GB/s, latency: 1 us }
      - { from: g3, to: cpu1, type: pcie, bandwidth: 32 GB/s, latency: 1 us }
      - { from: cpu0, to: cpu1, type: custom, bandwidth: 8 GB/s, latency: 1 us }
)";

TEST(CostModelTest, SlowSocketLinkCrossedTwiceIsTheBottleneck) {
  topo::Topology t = parseOk(kTwoSockets);
  LinkModel m(t);
  double S = 1 << 30;
  int n = 4, steps = 6;
  auto twice = estimateRings({ring({0, 2, 1, 3})}, ir::Collective::AllReduce,
                             S, m);
  ASSERT_TRUE(bool(twice));
  EXPECT_EQ(twice->bottleneckName, "s/cpu0 -> s/cpu1");
  EXPECT_DOUBLE_EQ(twice->bottleneckBytes, 2.0 * steps * S / n);
  EXPECT_LT(rel(twice->bandwidthTime, 2.0 * steps * S / n / 8e9), 1e-12);
  auto once = estimateRings({ring({0, 1, 2, 3})}, ir::Collective::AllReduce,
                            S, m);
  ASSERT_TRUE(bool(once));
  EXPECT_LT(rel(once->bandwidthTime, 1.0 * steps * S / n / 8e9), 1e-12);
  EXPECT_LT(once->time, twice->time);
  RingBottleneck bn = ringBottleneck(ring({0, 2, 1, 3}), m);
  EXPECT_EQ(m.resourceName(bn.resource), "s/cpu0 -> s/cpu1");
  EXPECT_DOUBLE_EQ(bn.bandwidth, 4e9);
}

TEST(CostModelTest, ParallelPortsAddCapacity) {
  topo::Topology t = parseOk(R"(schema: topocc/v1
nodes:
  - name: a
    gpus: [ g0, g1 ]
    links:
      - { from: g0, to: g1, type: nvlink, bandwidth: 10 GB/s, count: 3 }
)");
  LinkModel m(t);
  double S = 3e9;
  auto r = estimateRings({ring({0, 1})}, ir::Collective::AllReduce, S, m);
  ASSERT_TRUE(bool(r));
  // 2 steps of S/2 on each direction at 30 GB/s; zero latency.
  EXPECT_LT(rel(r->time, 2 * (S / 2) / 30e9), 1e-12);
  EXPECT_DOUBLE_EQ(r->bottleneckCapacity, 30e9);
}

TEST(CostModelTest, HalfDuplexSharesOneCapacity) {
  topo::Topology t = parseOk(R"(schema: topocc/v1
nodes:
  - name: a
    gpus: [ g0, g1 ]
    links:
      - { from: g0, to: g1, type: custom, bandwidth: 10 GB/s, duplex: half }
)");
  LinkModel m(t);
  double S = 1e9;
  auto r = estimateRings({ring({0, 1})}, ir::Collective::AllGather, S, m);
  ASSERT_TRUE(bool(r));
  // Both directions carry S/2: together S on one 10 GB/s capacity.
  EXPECT_LT(rel(r->bandwidthTime, S / 10e9), 1e-12);
  EXPECT_EQ(r->bottleneckName, "a/g0 <-> a/g1 (half duplex)");
}

TEST(CostModelTest, EfficiencyScalesCapacityAndRawIsReported) {
  topo::Topology t = parseOk(R"(schema: topocc/v1
nodes:
  - name: a
    gpus: [ g0, g1 ]
    links:
      - { from: g0, to: g1, type: pcie, bandwidth: 10 GB/s, efficiency: 0.5 }
)");
  LinkModel m(t);
  auto r = estimateRings({ring({0, 1})}, ir::Collective::AllGather, 1e9, m);
  ASSERT_TRUE(bool(r));
  EXPECT_LT(rel(r->bandwidthTime, 0.5e9 / 5e9), 1e-12);
  EXPECT_LT(rel(r->rawBandwidthTime, 0.5e9 / 10e9), 1e-12);
  EXPECT_DOUBLE_EQ(r->bottleneckRawCapacity, 10e9);
}

TEST(CostModelTest, SwitchPlanesSplitAsMaxFlow) {
  // Like NVSwitch planes: 5 + 4 ports to two switches.
  topo::Topology t = parseOk(R"(schema: topocc/v1
nodes:
  - name: a
    gpus: [ g0, g1, g2 ]
    switches: [ { name: s0, kind: nvswitch }, { name: s1, kind: nvswitch } ]
    links:
      - { from: g0, to: s0, type: nvlink, bandwidth: 10 GB/s, count: 5 }
      - { from: g1, to: s0, type: nvlink, bandwidth: 10 GB/s, count: 5 }
      - { from: g2, to: s0, type: nvlink, bandwidth: 10 GB/s, count: 5 }
      - { from: g0, to: s1, type: nvlink, bandwidth: 10 GB/s, count: 4 }
      - { from: g1, to: s1, type: nvlink, bandwidth: 10 GB/s, count: 4 }
      - { from: g2, to: s1, type: nvlink, bandwidth: 10 GB/s, count: 4 }
)");
  LinkModel m(t);
  const PathFlow &f = m.rankFlow(0, 1);
  ASSERT_TRUE(f.found);
  EXPECT_DOUBLE_EQ(f.bandwidth, 90e9);
  EXPECT_EQ(f.hops, 2);
  ASSERT_EQ(f.res.size(), 4u);
  double total = 0;
  for (auto [r, x] : f.res)
    total += x;
  EXPECT_NEAR(total, 2.0, 1e-12); // two hops, each fully covered
  RingBottleneck bn = ringBottleneck(ring({0, 1, 2}), m);
  EXPECT_NEAR(bn.bandwidth, 90e9, 1e-3);
}

/// Two single-GPU nodes a and b, each NIC on its own leaf (l0, l1) at
/// `port`, and `spines` (YAML link lines between the leaves and the
/// spines s0, s1, ...).
std::string twoLeaves(const char *port, int numSpines, const char *spines) {
  std::string s = R"(schema: topocc/v1
nodes:
  - name: a
    gpus: [ g ]
    nics: [ n ]
    links: [ { from: g, to: n, type: pcie, bandwidth: 100 GB/s } ]
  - name: b
    gpus: [ g ]
    nics: [ n ]
    links: [ { from: g, to: n, type: pcie, bandwidth: 100 GB/s } ]
fabric:
  switches:
    - { name: l0, kind: ib-switch }
    - { name: l1, kind: ib-switch }
)";
  for (int i = 0; i < numSpines; ++i)
    s += "    - { name: s" + std::to_string(i) + ", kind: ib-switch }\n";
  s += "  links:\n";
  s += std::string("    - { from: a/n, to: l0, type: ib, bandwidth: ") + port +
       " }\n";
  s += std::string("    - { from: b/n, to: l1, type: ib, bandwidth: ") + port +
       " }\n";
  return s + spines;
}

TEST(CostModelTest, SpinesShareAFlowEvenly) {
  // Two leaves, each on three spines; a GPU's NIC port is the bottleneck,
  // so one spine would carry the whole max flow. The bytes spread over
  // the spines in proportion to their links' capacity, as ECMP and
  // adaptive routing spread them: 1 : 1 : 2.
  topo::Topology t = parseOk(twoLeaves("10 GB/s", 3, R"(
    - { from: l0, to: s0, type: ib, bandwidth: 10 GB/s }
    - { from: l0, to: s1, type: ib, bandwidth: 10 GB/s }
    - { from: l0, to: s2, type: ib, bandwidth: 10 GB/s, count: 2 }
    - { from: l1, to: s0, type: ib, bandwidth: 10 GB/s }
    - { from: l1, to: s1, type: ib, bandwidth: 10 GB/s }
    - { from: l1, to: s2, type: ib, bandwidth: 10 GB/s, count: 2 }
)"));
  LinkModel m(t);
  const PathFlow &f = m.rankFlow(0, 1);
  ASSERT_TRUE(f.found);
  EXPECT_DOUBLE_EQ(f.bandwidth, 10e9);
  std::map<std::string, double> share;
  for (auto [r, x] : f.res)
    share[m.resourceName(r)] = x;
  EXPECT_NEAR(share["l0 -> s0"], 0.25, 1e-12);
  EXPECT_NEAR(share["l0 -> s1"], 0.25, 1e-12);
  EXPECT_NEAR(share["l0 -> s2"], 0.5, 1e-12);
  EXPECT_NEAR(share["s2 -> l1"], 0.5, 1e-12);
  EXPECT_NEAR(share["a/n -> l0"], 1.0, 1e-12);
}

TEST(CostModelTest, UnevenBranchesKeepTheMaxFlow) {
  // The leaf's way up is 10 GB/s through s0 and 10 through s1, but s1's
  // way down is 2 GB/s: an even split would overload it, so the bytes take
  // the max flow's paths (within every link's capacity).
  topo::Topology t = parseOk(twoLeaves("12 GB/s", 2, R"(
    - { from: l0, to: s0, type: ib, bandwidth: 10 GB/s }
    - { from: l0, to: s1, type: ib, bandwidth: 10 GB/s }
    - { from: s0, to: l1, type: ib, bandwidth: 10 GB/s }
    - { from: s1, to: l1, type: ib, bandwidth: 2 GB/s }
)"));
  LinkModel m(t);
  const PathFlow &f = m.rankFlow(0, 1);
  ASSERT_TRUE(f.found);
  EXPECT_DOUBLE_EQ(f.bandwidth, 12e9);
  for (auto [r, x] : f.res)
    EXPECT_LE(x * f.bandwidth, m.capacity(r) * (1 + 1e-9)) << m.resourceName(r);
}

TEST(CostModelTest, PipelinedTimeChoosesBestChunkCount) {
  double t1 = pipelinedTime(1e6, 1, 1e-6, 1e9);
  EXPECT_DOUBLE_EQ(t1, 1e-6 + 1e-3);
  int k = 0;
  // h = 3, alpha = 1 us, m/B = 1 ms: k* = sqrt(2 * 1e-3 / 1e-6) ~ 44.7.
  double t3 = pipelinedTime(1e6, 3, 3e-6, 1e9, &k);
  EXPECT_TRUE(k == 44 || k == 45) << k;
  auto f = [](double kk) { return (3 + kk - 1) * (1e-6 + 1e-3 / kk); };
  EXPECT_DOUBLE_EQ(t3, std::min(f(44), f(45)));
  EXPECT_LT(t3, f(1));
  EXPECT_LT(t3, f(100));
}

TEST(CostModelTest, ScheduleRanksMustMatch) {
  topo::Topology t = parseOk(ringTopo(3, "10 GB/s", "1 us"));
  LinkModel m(t);
  passes::RingOptions o;
  o.numRanks = 4;
  auto s = passes::lowerRing(o);
  ASSERT_TRUE(bool(s));
  auto r = estimateSchedule(*s, m, 1e6);
  ASSERT_FALSE(bool(r));
  EXPECT_EQ(llvm::toString(r.takeError()),
            "error: schedule has 4 ranks but topology '' has 3\n");
}

TEST(CostModelTest, BusFactors) {
  EXPECT_DOUBLE_EQ(busFactor(ir::Collective::AllReduce, 8), 14.0 / 8);
  EXPECT_DOUBLE_EQ(busFactor(ir::Collective::AllGather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(busFactor(ir::Collective::ReduceScatter, 4), 3.0 / 4);
  EXPECT_EQ(ringSteps(ir::Collective::AllReduce, 8), 14);
  EXPECT_EQ(ringSteps(ir::Collective::AllGather, 8), 7);
  EXPECT_DOUBLE_EQ(windowLatency({1, 2, 3}, 2), 5);
  EXPECT_DOUBLE_EQ(windowLatency({1, 2, 3}, 4), 9);
}

} // namespace

// LinkModel keeps a few route trees and searches per source; a flow must not
// depend on what the caches hold. Every GPU and NIC pair of a two-box
// topology (more sources than the caches keep), asked in a scrambled order
// of one model, against a fresh model per pair; and the route trees against
// Topology::routeDevices.
// NIC pairs behind the same two switches share the inner max flow
// (LinkModel's InnerKey): on a fat tree with parallel leaf-spine links, the
// flows of a model that routed every NIC pair first (in a scrambled order)
// equal those of a fresh model per pair.
TEST(LinkModel, SharedInnerFlowsEqualFreshOnes) {
  topo::Topology t = topocc::testing::libraryTopology("fattree-multipod.yaml");
  std::vector<int> nics;
  for (size_t d = 0; d < t.devices().size(); ++d)
    if (t.device(static_cast<int>(d)).kind == topo::DeviceKind::Nic)
      nics.push_back(static_cast<int>(d));
  ASSERT_EQ(nics.size(), 128u);
  std::vector<std::pair<int, int>> pairs;
  for (int a : nics)
    for (int b : nics)
      if (a != b)
        pairs.push_back({a, b});
  size_t stride = 7919;
  while (std::gcd(stride, pairs.size()) != 1)
    ++stride;
  LinkModel shared(t);
  std::vector<PathFlow> got(pairs.size());
  for (size_t i = 0, k = 0; i < pairs.size();
       ++i, k = (k + stride) % pairs.size())
    got[k] = shared.deviceFlow(pairs[k].first, pairs[k].second);
  int multiPath = 0;
  for (size_t k = 0; k < pairs.size(); k += 13) {
    auto [a, b] = pairs[k];
    PathFlow want = LinkModel(t).deviceFlow(a, b);
    ASSERT_TRUE(want.found);
    EXPECT_EQ(got[k].res, want.res) << a << " -> " << b;
    EXPECT_EQ(got[k].bandwidth, want.bandwidth);
    EXPECT_EQ(got[k].rawBandwidth, want.rawBandwidth);
    EXPECT_EQ(got[k].latency, want.latency);
    EXPECT_EQ(got[k].hops, want.hops);
    multiPath += want.res.size() > static_cast<size_t>(want.hops);
  }
  EXPECT_GT(multiPath, 0); // some flows spread over parallel links
}

TEST(LinkModel, FlowsDoNotDependOnTheCaches) {
  topo::Topology t = topocc::testing::libraryTopology("dgx-a100x2.yaml");
  std::vector<int> ends;
  for (size_t d = 0; d < t.devices().size(); ++d)
    if (t.device(static_cast<int>(d)).kind != topo::DeviceKind::Switch)
      ends.push_back(static_cast<int>(d));
  ASSERT_GT(ends.size(), 16u); // more than the caches hold
  std::vector<std::pair<int, int>> pairs;
  for (int a : ends)
    for (int b : ends)
      pairs.push_back({a, b});
  // A fixed scramble: stride coprime with the pair count.
  size_t stride = 7919;
  while (std::gcd(stride, pairs.size()) != 1)
    ++stride;
  LinkModel shared(t);
  for (size_t i = 0, k = 0; i < pairs.size();
       ++i, k = (k + stride) % pairs.size()) {
    auto [a, b] = pairs[k];
    PathFlow got = shared.deviceFlow(a, b);
    PathFlow want = LinkModel(t).deviceFlow(a, b);
    ASSERT_EQ(got.found, want.found) << a << " -> " << b;
    EXPECT_EQ(got.res, want.res) << a << " -> " << b;
    EXPECT_EQ(got.bandwidth, want.bandwidth);
    EXPECT_EQ(got.rawBandwidth, want.rawBandwidth);
    EXPECT_EQ(got.latency, want.latency);
    EXPECT_EQ(got.hops, want.hops);
    topo::Route r = topo::RouteTree(t, a).to(b), s = t.routeDevices(a, b);
    ASSERT_EQ(r.found(), s.found());
    ASSERT_EQ(r.hops.size(), s.hops.size());
    for (size_t h = 0; h < r.hops.size(); ++h) {
      EXPECT_EQ(r.hops[h].link, s.hops[h].link);
      EXPECT_EQ(r.hops[h].dir, s.hops[h].dir);
    }
  }
}
