//===- tests/unit/analysis/RealizableBoundTest.cpp - The runtime's routes' bound
//===//
//
// compiler/analysis/RealizableGraph.h: the cut bound on the paths the
// runtime gives each message. Closed forms on small boxes (a PCIe path
// beside an NVLink pair is not a route; a NIC farther than the nearest is
// not used; NCCL's rule alternates two nearest NICs over channels), the
// library's DGX A100 (NVLink only: 6 x 40 GB/s per GPU), and for every
// library topology up to 32 ranks: realizable <= physical on the same
// effective rates. The graph, which is collected by NIC pairs and stubs
// (RealizableGraph.cpp, RouteSet), equals one built route by route from
// every rank pair and channel, on the library and its scenarios.
//
//===----------------------------------------------------------------------===//

#include "compiler/analysis/NetRoutes.h"
#include "compiler/analysis/RealizableGraph.h"
#include "compiler/topology/Scenario.h"
#include "compiler/topology/TopologyParser.h"
#include "support/Progress.h"

#include "gtest/gtest.h"

#include <filesystem>
#include <numeric>
#include <set>
#include <tuple>

using namespace topocc;
using namespace topocc::analysis;

namespace {

double busbw(const BoundResult &b, ir::Collective c) {
  return boundNumbers(b, c, 1 << 30).busbw;
}

/// Two GPUs joined by NVLink (100 GB/s) and both on a PCIe switch (32 GB/s).
const char *kNvlinkAndPcie = R"(schema: topocc/v1
nodes:
  - name: box
    gpus: [ g0, g1 ]
    switches: [ { name: sw, kind: pcie-switch } ]
    links:
      - { from: g0, to: g1, type: nvlink, bandwidth: 100 GB/s, latency: 1 us }
      - { from: "g{i:0-1}", to: sw, type: pcie, bandwidth: 32 GB/s, latency: 1 us }
)";

TEST(RealizableBoundTest, PcieBesideNvlinkIsNotARoute) {
  auto t = topo::parseTopology(kNvlinkAndPcie, "box.yaml");
  ASSERT_TRUE(bool(t)) << llvm::toString(t.takeError());
  auto physical = computeBound(*t, CapacityKind::Effective);
  ASSERT_TRUE(bool(physical)) << llvm::toString(physical.takeError());
  auto realizable = computeRealizableBound(*t);
  ASSERT_TRUE(bool(realizable)) << llvm::toString(realizable.takeError());
  for (ir::Collective c :
       {ir::Collective::AllGather, ir::Collective::ReduceScatter}) {
    EXPECT_DOUBLE_EQ(busbw(*physical, c), 132e9);
    EXPECT_DOUBLE_EQ(busbw(*realizable, c), 100e9);
  }
  // The GPUs are vertices 0 and 1, named as ranks; the rest are hops.
  EXPECT_EQ(realizable->graph.vertexName(0), "box/g0");
  EXPECT_EQ(realizable->graph.compute, (std::vector<int>{0, 1}));
}

/// Two boxes of one GPU; n0 on the GPU's PCIe switch, n1 one switch
/// farther; 10 GB/s NICs on one IB switch. Optionally n1 beside n0.
std::string twoBoxes(bool bothNear) {
  std::string far = bothNear ? "sw" : "sw2";
  return R"(schema: topocc/v1
node_templates:
  box:
    gpus: [ g0 ]
    nics: [ n0, n1 ]
    switches: [ { name: sw, kind: pcie-switch }, { name: sw2, kind: pcie-switch } ]
    links:
      - { from: g0, to: sw, type: pcie, bandwidth: 64 GB/s, latency: 1 us }
      - { from: sw, to: sw2, type: pcie, bandwidth: 64 GB/s, latency: 1 us }
      - { from: n0, to: sw, type: pcie, bandwidth: 64 GB/s, latency: 1 us }
      - { from: n1, to: )" +
         far + R"(, type: pcie, bandwidth: 64 GB/s, latency: 1 us }
nodes:
  - { name: "b[0-1]", template: box }
fabric:
  switches: [ { name: ib, kind: ib-switch } ]
  links:
    - { from: "b{b:0-1}/n{i:0-1}", to: ib, type: ib, bandwidth: 10 GB/s, latency: 1 us }
)";
}

TEST(RealizableBoundTest, OnlyTheNearestNicsCarryInterNodeTraffic) {
  for (bool bothNear : {false, true}) {
    auto t = topo::parseTopology(twoBoxes(bothNear), "two.yaml");
    ASSERT_TRUE(bool(t)) << llvm::toString(t.takeError());
    auto physical = computeBound(*t, CapacityKind::Effective);
    ASSERT_TRUE(bool(physical)) << llvm::toString(physical.takeError());
    EXPECT_DOUBLE_EQ(busbw(*physical, ir::Collective::AllGather), 20e9);
    // NCCL's rule: the nearest NIC only (n1 is farther), or both in turn
    // over channels when both are nearest.
    auto rule = computeRealizableBound(*t);
    ASSERT_TRUE(bool(rule)) << llvm::toString(rule.takeError());
    EXPECT_DOUBLE_EQ(busbw(*rule, ir::Collective::AllGather),
                     bothNear ? 20e9 : 10e9)
        << bothNear;
    // Free routing (store-and-forward, cut-through) spreads over the
    // shortest paths of the widest route's link types: n1 only when it is
    // as near as n0.
    RealizableOptions free;
    free.ncclNetRule = false;
    auto spread = computeRealizableBound(*t, free);
    ASSERT_TRUE(bool(spread)) << llvm::toString(spread.takeError());
    EXPECT_NEAR(busbw(*spread, ir::Collective::AllGather),
                bothNear ? 20e9 : 10e9, 1)
        << bothNear;
  }
}

TEST(RealizableBoundTest, DgxA100GpusReachEachOtherOverNvlinkOnly) {
  auto t = topo::loadTopologyFile(std::string(TOPOCC_SOURCE_DIR) +
                                  "/topologies/dgx-a100.yaml");
  ASSERT_TRUE(bool(t)) << llvm::toString(t.takeError());
  auto b = computeRealizableBound(*t);
  ASSERT_TRUE(bool(b)) << llvm::toString(b.takeError());
  // 12 NVLinks of 25 GB/s at efficiency 0.8 per GPU; no PCIe path.
  EXPECT_NEAR(busbw(*b, ir::Collective::AllGather), 240e9, 1);
  EXPECT_NEAR(busbw(*b, ir::Collective::ReduceScatter), 240e9, 1);
  EXPECT_NEAR(busbw(*b, ir::Collective::AllReduce), 240e9, 1);
}

/// The library's topologies of at most `maxRanks` ranks, with their paths.
std::vector<std::pair<std::filesystem::path, topo::Topology>>
library(int maxRanks) {
  std::vector<std::pair<std::filesystem::path, topo::Topology>> out;
  for (const auto &e : std::filesystem::directory_iterator(
           std::string(TOPOCC_SOURCE_DIR) + "/topologies")) {
    if (e.path().extension() != ".yaml")
      continue;
    auto t = topo::loadTopologyFile(e.path().string());
    if (!t) {
      ADD_FAILURE() << llvm::toString(t.takeError());
      continue;
    }
    if (t->numRanks() <= maxRanks)
      out.push_back({e.path(), std::move(*t)});
  }
  return out;
}

// compile computes the bounds on a thread of their own and asks them to stop
// when the compile fails first (tools/topocc/CompileCommand.cpp): both bounds
// then return an error at once instead of finishing.
TEST(RealizableBoundTest, StopWhenTheSinkAsks) {
  auto t = topo::loadTopologyFile(std::string(TOPOCC_SOURCE_DIR) +
                                  "/topologies/dgx-a100x2.yaml");
  ASSERT_TRUE(bool(t)) << llvm::toString(t.takeError());
  StopSink stop;
  ProgressSink *old = setProgressSink(&stop);
  auto whole = computeRealizableBound(*t, {});
  ASSERT_TRUE(bool(whole)) << llvm::toString(whole.takeError());
  EXPECT_GT(busbw(*whole, ir::Collective::AllGather), 0); // not asked
  stop.requestStop();
  auto realizable = computeRealizableBound(*t, {});
  auto physical = computeBound(*t);
  setProgressSink(old);
  ASSERT_FALSE(bool(realizable));
  EXPECT_EQ(llvm::toString(realizable.takeError()),
            "error: the realizable bound was stopped before its end\n");
  ASSERT_FALSE(bool(physical));
  EXPECT_EQ(llvm::toString(physical.takeError()),
            "error: the bound was stopped before its end\n");
}

TEST(RealizableBoundTest, NeverAbovePhysicalOnTheLibrary) {
  int seen = 0;
  // Not fattree-multipod: seconds in a Debug build.
  for (const auto &[path, topology] : library(32)) {
    const topo::Topology *t = &topology;
    const std::filesystem::path &e = path;
    auto physical = computeBound(*t, CapacityKind::Effective);
    ASSERT_TRUE(bool(physical)) << llvm::toString(physical.takeError());
    for (bool rule : {true, false}) {
      RealizableOptions o;
      o.ncclNetRule = rule;
      auto r = computeRealizableBound(*t, o);
      ASSERT_TRUE(bool(r)) << e << ": " << llvm::toString(r.takeError());
      for (ir::Collective c :
           {ir::Collective::AllGather, ir::Collective::ReduceScatter,
            ir::Collective::AllReduce})
        EXPECT_LE(busbw(*r, c), busbw(*physical, c) * (1 + 1e-12))
            << e << " " << ir::collectiveName(c).str();
    }
    ++seen;
  }
  EXPECT_GE(seen, 9);
}

/// An arc of the realizable graph by what it stands for: a hop (r, r), a
/// join (r1, r2), a rank sending into r (-1 - rank, r) or r delivering to a
/// rank (r, -1 - rank); with its capacity.
using ArcKey = std::tuple<int, int, bool, int64_t>; // (a, b, hop?, cap)

/// The graph's arcs as ArcKeys; every resource vertex is named by its hop.
std::set<ArcKey> arcsOf(const BoundGraph &g, const LinkModel &m) {
  const int n = static_cast<int>(g.compute.size());
  std::vector<int> resOf(g.numVertices, -2);
  for (const BoundGraph::Arc &a : g.arcs)
    if (a.from >= n && a.to == a.from + 1 && (a.from - n) % 2 == 0)
      resOf[a.from] = resOf[a.to] = m.resourceOf(a.link, a.dir);
  std::set<ArcKey> out;
  for (const BoundGraph::Arc &a : g.arcs) {
    const int64_t cap = a.cap * g.quantumBytesPerSec;
    int from = a.from < n ? -1 - a.from : resOf[a.from];
    int to = a.to < n ? -1 - a.to : resOf[a.to];
    out.insert({from, to, a.from >= n && a.to == a.from + 1, cap});
  }
  return out;
}

/// The same, route by route: every rank pair, on every channel of NCCL's
/// rule, as the simulator routes it (GPU -> NIC -> NIC -> GPU segments, or
/// one segment within a node, without the rule, or where a segment has no
/// route). Within a segment every two of its resources that meet at a
/// device other than its ends follow one another; the last hops of one
/// segment precede the first hops of the next.
std::set<ArcKey> arcsRouteByRoute(const topo::Topology &t, LinkModel &m,
                                  bool rule) {
  std::optional<NcclNetRoutes> net;
  if (rule)
    net.emplace(t);
  std::set<ArcKey> out;
  auto cap = [&](int res) {
    return static_cast<int64_t>(std::llround(m.capacity(res)));
  };
  struct Seg {
    int from, to;
    std::vector<int> res;
  };
  auto segment = [&](int from, int to) -> std::optional<Seg> {
    PathFlow f = m.deviceFlow(from, to);
    if (!f.found || f.res.empty())
      return std::nullopt;
    Seg s{from, to, {}};
    for (auto [res, share] : f.res)
      s.res.push_back(res);
    return s;
  };
  auto addRoute = [&](int a, int b, const std::vector<Seg> &route) {
    for (size_t i = 0; i < route.size(); ++i) {
      const Seg &s = route[i];
      for (int r1 : s.res) {
        out.insert({r1, r1, true, cap(r1)});
        auto [u1, v1] = m.resourceEnds(r1);
        if (u1 == s.from && i == 0)
          out.insert({-1 - a, r1, false, cap(r1)});
        if (v1 == s.to && i + 1 == route.size())
          out.insert({r1, -1 - b, false, cap(r1)});
        for (int r2 : s.res)
          if (m.resourceEnds(r2).first == v1 && v1 != s.from && v1 != s.to)
            out.insert({r1, r2, false, std::min(cap(r1), cap(r2))});
        if (v1 == s.to && i + 1 < route.size())
          for (int r2 : route[i + 1].res)
            if (m.resourceEnds(r2).first == s.to)
              out.insert({r1, r2, false, std::min(cap(r1), cap(r2))});
      }
    }
  };
  for (int a = 0; a < t.numRanks(); ++a)
    for (int b = 0; b < t.numRanks(); ++b) {
      if (a == b)
        continue;
      const int ga = t.rankDevice(a), gb = t.rankDevice(b);
      auto direct = [&] {
        std::vector<Seg> route;
        if (auto s = segment(ga, gb)) {
          route.push_back(std::move(*s));
          addRoute(a, b, route);
        }
      };
      if (!net || t.nodeOfRank(a) == t.nodeOfRank(b)) {
        direct();
        continue;
      }
      const int period = std::lcm(net->period(a), net->period(b));
      for (int c = 0; c < period; ++c) {
        std::vector<int> stops{ga};
        for (int nic : {net->nicFor(a, c), net->nicFor(b, c)})
          if (nic >= 0)
            stops.push_back(nic);
        stops.push_back(gb);
        std::vector<Seg> route;
        for (size_t i = 0; i + 1 < stops.size(); ++i)
          if (auto s = segment(stops[i], stops[i + 1]))
            route.push_back(std::move(*s));
        if (route.size() + 1 == stops.size())
          addRoute(a, b, route);
        else
          direct();
      }
    }
  return out;
}

TEST(RealizableBoundTest, GraphEqualsRouteByRouteOnTheLibrary) {
  int compared = 0;
  // Not fattree-multipod: the reference is quadratic.
  for (const auto &[path, t] : library(64)) {
    std::vector<std::pair<std::string, topo::Topology>> cases{{"", t}};
    for (const topo::ScenarioDef &sc : t.scenarios()) {
      topo::Topology patched = t;
      if (auto err = topo::applyScenario(patched, sc.name))
        llvm::consumeError(std::move(err)); // a sweep
      else
        cases.push_back({" with " + sc.name, std::move(patched)});
    }
    for (const auto &[what, topology] : cases)
      for (bool rule : {true, false}) {
        SCOPED_TRACE(path.filename().string() + what +
                     (rule ? " (NCCL's rule)" : " (free routing)"));
        LinkModel m(topology);
        RealizableOptions o;
        o.ncclNetRule = rule;
        auto g = buildRealizableGraph(topology, m, o);
        if (!g) { // a rank pair without a route, after a failure
          llvm::consumeError(g.takeError());
          continue;
        }
        LinkModel fresh(topology);
        EXPECT_EQ(arcsOf(*g, m), arcsRouteByRoute(topology, fresh, rule));
        ++compared;
      }
  }
  EXPECT_GE(compared, 30);
}

} // namespace
