//===- tests/unit/topology/RouteSearchTest.cpp - RouteTree's search ------===//
//
// RouteTree runs its own Dijkstra on RouteGraph's arrays. It replaced
// Boost.Graph's dijkstra_shortest_paths (on an adjacency list rebuilt for
// every source), and ties between equally wide and long routes must keep
// resolving as they did: here a Boost reference, written as the search
// was, gives every device of every library topology (and of its scenarios)
// the same predecessor hop as RouteTree.
//
//===----------------------------------------------------------------------===//

#include "TopologyTestUtil.h"

#include "compiler/topology/Scenario.h"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/dijkstra_shortest_paths.hpp>
#include <boost/graph/visitors.hpp>
#include <boost/property_map/property_map.hpp>

#include <algorithm>
#include <climits>
#include <limits>

using namespace topocc::topo;
using namespace topocc::topo::test;

namespace {

struct Cost {
  double width = 0;
  int hops = 0;
};
struct Better {
  bool operator()(const Cost &a, const Cost &b) const {
    return a.width != b.width ? a.width > b.width : a.hops < b.hops;
  }
};
struct Extend {
  Cost operator()(const Cost &d, const Cost &w) const {
    if (d.hops == INT_MAX)
      return d;
    return {std::min(d.width, w.width), d.hops + w.hops};
  }
};
struct EdgeProp {
  int link = -1, dir = 0;
  Cost weight;
};
using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS,
                                    boost::no_property, EdgeProp>;
using EdgeDesc = boost::graph_traits<Graph>::edge_descriptor;
struct Recorder : boost::base_visitor<Recorder> {
  using event_filter = boost::on_edge_relaxed;
  std::vector<EdgeDesc> *preds = nullptr;
  std::vector<bool> *has = nullptr;
  void operator()(EdgeDesc e, const Graph &g) {
    (*preds)[boost::target(e, g)] = e;
    (*has)[boost::target(e, g)] = true;
  }
};

/// The predecessor hop of every device from `src`, by Boost.Graph.
std::vector<Hop> boostPreds(const Topology &t, int src) {
  const size_t n = t.devices().size();
  Graph g(n);
  for (size_t i = 0; i < t.links().size(); ++i) {
    const Link &l = t.link(static_cast<int>(i));
    for (int dir = 0; dir < 2; ++dir) {
      int u = dir == 0 ? l.from : l.to, v = dir == 0 ? l.to : l.from;
      if ((t.device(u).kind == DeviceKind::Gpu && u != src) ||
          l.effectiveCapacity(dir) <= 0)
        continue;
      boost::add_edge(
          u, v,
          EdgeProp{static_cast<int>(i), dir, Cost{l.effectiveCapacity(dir), 1}},
          g);
    }
  }
  std::vector<Cost> dist(n);
  std::vector<EdgeDesc> predEdge(n);
  std::vector<bool> has(n, false);
  std::vector<boost::default_color_type> color(n);
  auto index = boost::get(boost::vertex_index, g);
  Recorder rec;
  rec.preds = &predEdge;
  rec.has = &has;
  boost::dijkstra_shortest_paths(
      g, static_cast<std::size_t>(src),
      boost::weight_map(boost::get(&EdgeProp::weight, g))
          .distance_map(boost::make_iterator_property_map(dist.begin(), index))
          .distance_compare(Better())
          .distance_combine(Extend())
          .distance_inf(Cost{-1, INT_MAX})
          .distance_zero(Cost{std::numeric_limits<double>::infinity(), 0})
          .color_map(boost::make_iterator_property_map(color.begin(), index))
          .visitor(boost::make_dijkstra_visitor(rec)));
  std::vector<Hop> out(n);
  for (size_t v = 0; v < n; ++v)
    if (has[v]) {
      const EdgeProp &p = g[predEdge[v]];
      out[v] =
          Hop{p.link, p.dir, static_cast<int>(boost::source(predEdge[v], g)),
              static_cast<int>(v)};
    }
  return out;
}

/// Every device's route from every source agrees hop for hop; returns the
/// routes compared. The trees search lazily: half of them are asked from
/// the last device to the first, half the other way, so the searches stop
/// and resume at different places; summaryTo agrees with to().
size_t expectSameSearch(const Topology &t, const std::string &what) {
  RouteGraph graph(t);
  size_t compared = 0;
  const int n = static_cast<int>(t.devices().size());
  for (int src = 0; src < n; ++src) {
    std::vector<Hop> want = boostPreds(t, src);
    RouteTree tree(graph, src);
    for (int k = 0; k < n; ++k) {
      const int dst = src % 2 ? n - 1 - k : k;
      RouteSummary s = tree.summaryTo(dst);
      Route r = tree.to(dst);
      uint32_t types = 0;
      for (const Hop &h : r.hops)
        types |= 1u << static_cast<unsigned>(t.link(h.link).type);
      if (s.found != r.found() || s.hops != static_cast<int>(r.hops.size()) ||
          s.linkTypes != types || s.latency != r.latency ||
          s.bottleneck != r.bottleneck || s.rawBottleneck != r.rawBottleneck) {
        ADD_FAILURE() << what << ": " << t.device(src).name << " -> "
                      << t.device(dst).name << ": summaryTo differs from to()";
        return compared;
      }
      if (dst == src)
        continue;
      ++compared;
      const bool agree =
          r.found() == (want[dst].link >= 0) &&
          (!r.found() || (r.hops.back().link == want[dst].link &&
                          r.hops.back().dir == want[dst].dir &&
                          r.hops.back().fromDevice == want[dst].fromDevice));
      if (!agree) {
        ADD_FAILURE() << what << ": " << t.device(src).name << " -> "
                      << t.device(dst).name << " arrives over link "
                      << (r.found() ? r.hops.back().link : -1)
                      << ", Boost's search over link " << want[dst].link;
        return compared;
      }
    }
  }
  return compared;
}

} // namespace

TEST(RouteSearchTest, AgreesWithBoostOnTheLibrary) {
  const std::vector<std::string> files = libraryFiles();
  ASSERT_GE(files.size(), 10u);
  size_t compared = 0;
  for (const std::string &f : files) {
    auto t = loadTopologyFile(f);
    ASSERT_TRUE(static_cast<bool>(t)) << llvm::toString(t.takeError());
    compared += expectSameSearch(*t, f);
    // Scenarios (failed NICs, derated links) move the ties.
    for (const ScenarioDef &sc : t->scenarios()) {
      Topology patched = *t;
      if (auto err = applyScenario(patched, sc.name))
        llvm::consumeError(std::move(err)); // a sweep, or a cut
      else
        compared += expectSameSearch(patched, f + " with " + sc.name);
    }
  }
  EXPECT_GT(compared, 100000u);
}

TEST(RouteSearchTest, TiesFollowTheHeapAndArcOrder) {
  // Four equally wide two-hop routes from g0 to g1: which one the search
  // keeps is what both implementations must agree on.
  Topology t = parseOk(R"(schema: topocc/v1
nodes:
  - name: a
    gpus: [ g0, g1, g2 ]
    switches: [ { name: "s{s:0-3}", kind: pcie-switch } ]
    links:
      - { from: g0, to: "s{s:0-3}", type: pcie, bandwidth: 32 GB/s }
      - { from: "s{s:0-3}", to: g1, type: pcie, bandwidth: 32 GB/s }
      - { from: "s{s:0-3}", to: g2, type: pcie, bandwidth: 32 GB/s }
      - { from: s0, to: s3, type: pcie, bandwidth: 32 GB/s }
)");
  EXPECT_GT(expectSameSearch(t, "four switches"), 0u);
}
