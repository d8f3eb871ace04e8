//===- compiler/topology/Routing.cpp - Routes between devices -------------===//
//
// Widest path first, then fewest hops, over Boost.Graph's Dijkstra with a
// (bottleneck, hops) distance. Decision: only switches and NICs forward
// traffic; a GPU is never an intermediate hop (real systems do not relay
// through another GPU's memory without a program doing it), so a pair that
// is only connected through a third GPU has no route.
//
//===----------------------------------------------------------------------===//

#include "compiler/topology/Topology.h"

#include "llvm/Support/FormatVariadic.h"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/dijkstra_shortest_paths.hpp>
#include <boost/graph/visitors.hpp>
#include <boost/property_map/property_map.hpp>

#include <algorithm>
#include <climits>
#include <limits>

namespace topocc::topo {

namespace {

/// Lexicographic route cost: larger bottleneck first, then fewer hops.
struct Cost {
  double width = 0;
  int hops = 0;
};

struct Better {
  bool operator()(const Cost &a, const Cost &b) const {
    if (a.width != b.width)
      return a.width > b.width;
    return a.hops < b.hops;
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
  int link = -1;
  int dir = 0;
  Cost weight;
};

using Graph = boost::adjacency_list<boost::vecS, boost::vecS,
                                    boost::directedS, boost::no_property,
                                    EdgeProp>;
using EdgeDesc = boost::graph_traits<Graph>::edge_descriptor;

/// Records the edge that last relaxed each vertex (parallel links differ).
struct PredRecorder : boost::base_visitor<PredRecorder> {
  using event_filter = boost::on_edge_relaxed;
  std::vector<EdgeDesc> *preds = nullptr;
  std::vector<bool> *has = nullptr;
  void operator()(EdgeDesc e, const Graph &g) {
    (*preds)[boost::target(e, g)] = e;
    (*has)[boost::target(e, g)] = true;
  }
};

} // namespace

RouteTree::RouteTree(const Topology &t, int source) : topo(&t), src(source) {
  size_t n = t.devices().size();
  pred.assign(n, Hop{});
  if (src < 0 || static_cast<size_t>(src) >= n)
    return;
  Graph g(n);
  for (size_t i = 0; i < t.links().size(); ++i) {
    const Link &l = t.link(static_cast<int>(i));
    for (int dir = 0; dir < 2; ++dir) {
      int u = dir == 0 ? l.from : l.to;
      int v = dir == 0 ? l.to : l.from;
      // Only the source GPU may send; other GPUs are endpoints only.
      if (t.device(u).kind == DeviceKind::Gpu && u != src)
        continue;
      if (l.effectiveCapacity(dir) <= 0)
        continue;
      boost::add_edge(
          u, v,
          EdgeProp{static_cast<int>(i), dir, Cost{l.effectiveCapacity(dir), 1}},
          g);
    }
  }
  std::vector<Cost> dist(n);
  std::vector<EdgeDesc> predEdge(n);
  std::vector<bool> hasPred(n, false);
  std::vector<boost::default_color_type> color(n);
  auto index = boost::get(boost::vertex_index, g);
  PredRecorder rec;
  rec.preds = &predEdge;
  rec.has = &hasPred;
  const Cost inf{-1, INT_MAX};
  const Cost zero{std::numeric_limits<double>::infinity(), 0};
  boost::dijkstra_shortest_paths(
      g, static_cast<std::size_t>(src),
      boost::weight_map(boost::get(&EdgeProp::weight, g))
          .distance_map(boost::make_iterator_property_map(dist.begin(), index))
          .distance_compare(Better())
          .distance_combine(Extend())
          .distance_inf(inf)
          .distance_zero(zero)
          .color_map(boost::make_iterator_property_map(color.begin(), index))
          .visitor(boost::make_dijkstra_visitor(rec)));
  for (size_t v = 0; v < n; ++v)
    if (hasPred[v]) {
      const EdgeProp &p = g[predEdge[v]];
      pred[v] =
          Hop{p.link, p.dir, static_cast<int>(boost::source(predEdge[v], g)),
              static_cast<int>(v)};
    }
}

Route RouteTree::to(int dst) const {
  Route r;
  r.bottleneck = r.rawBottleneck = std::numeric_limits<double>::infinity();
  if (dst == src) {
    r.exists = true;
    return r;
  }
  if (dst < 0 || static_cast<size_t>(dst) >= pred.size() || pred[dst].link < 0)
    return Route{};
  std::vector<Hop> hops;
  for (int v = dst; v != src;) {
    const Hop &h = pred[v];
    hops.push_back(h);
    v = h.fromDevice;
    if (hops.size() > pred.size() || v < 0)
      return Route{}; // cannot happen: predecessor chains are acyclic
  }
  std::reverse(hops.begin(), hops.end());
  r.exists = true;
  for (const Hop &h : hops) {
    const Link &l = topo->link(h.link);
    r.bottleneck = std::min(r.bottleneck, l.effectiveCapacity(h.dir));
    r.rawBottleneck = std::min(r.rawBottleneck, l.capacity(h.dir));
    r.latency += l.latency;
  }
  r.hops = std::move(hops);
  return r;
}

Route Topology::routeDevices(int src, int dst) const {
  int n = static_cast<int>(devices_.size());
  if (src < 0 || dst < 0 || src >= n || dst >= n)
    return Route{};
  return RouteTree(*this, src).to(dst);
}

std::vector<Route> Topology::routesFrom(int fromRank) const {
  std::vector<Route> out(ranks_.size());
  if (fromRank < 0 || fromRank >= numRanks())
    return out;
  RouteTree tree(*this, ranks_[fromRank]);
  for (size_t r = 0; r < ranks_.size(); ++r)
    out[r] = tree.to(ranks_[r]);
  return out;
}

Route Topology::route(int fromRank, int toRank) const {
  if (fromRank < 0 || toRank < 0 || fromRank >= numRanks() ||
      toRank >= numRanks())
    return Route{};
  return routeDevices(ranks_[fromRank], ranks_[toRank]);
}

llvm::Expected<Route> Topology::findRoute(int fromRank, int toRank) const {
  if (fromRank < 0 || toRank < 0 || fromRank >= numRanks() ||
      toRank >= numRanks())
    return makeUserError(llvm::formatv("no rank {0} or {1}: the topology has "
                                       "{2} ranks",
                                       fromRank, toRank, numRanks()));
  Route r = route(fromRank, toRank);
  if (!r.found())
    return makeUserError("no route from " + rankName(fromRank) + " to " +
                         rankName(toRank) +
                         " (only switches and NICs forward traffic)");
  return r;
}

} // namespace topocc::topo
