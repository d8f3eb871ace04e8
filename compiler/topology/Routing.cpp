//===- compiler/topology/Routing.cpp - Routes between devices -------------===//
//
// Widest path first, then fewest hops: Dijkstra's algorithm with a
// (bottleneck, hops) distance over RouteGraph, the links as arrays built
// once per caller (a search on the 4096-GPU fat tree used to rebuild a
// Boost.Graph adjacency list of 40 000 arcs first). Decision: only switches and
// NICs forward traffic; a GPU is never an intermediate hop (real systems do not
// relay through another GPU's memory without a program doing it), so a pair
// that is only connected through a third GPU has no route.
//
//===----------------------------------------------------------------------===//

#include "compiler/topology/Topology.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <limits>

namespace topocc::topo {

namespace {

/// Lexicographic route cost: larger bottleneck first, then fewer hops.
struct Cost {
  double width = 0;
  int hops = 0;
};

bool better(const Cost &a, const Cost &b) {
  if (a.width != b.width)
    return a.width > b.width;
  return a.hops < b.hops;
}

Cost extend(const Cost &d, double width) {
  if (d.hops == INT_MAX)
    return d;
  return {std::min(d.width, width), d.hops + 1};
}

} // namespace

/// The arcs with capacity, by sending device in (link, direction) order:
/// a search's ties follow that order.
struct RouteGraph::Impl {
  struct Arc {
    int to, link, dir;
    double width;
  };
  std::vector<uint32_t> begin; ///< device d's arcs: [begin[d], begin[d + 1])
  std::vector<Arc> arcs;
  std::vector<bool> isGpu;
  /// What a route's summary reads of each link, in one array.
  struct LinkFigures {
    double effective[2], raw[2], latency;
    uint32_t typeBit;
  };
  std::vector<LinkFigures> links;
};

RouteGraph::RouteGraph(const Topology &t)
    : topo(&t), impl(std::make_unique<Impl>()) {
  const size_t n = t.devices().size();
  impl->isGpu.resize(n);
  for (size_t d = 0; d < n; ++d)
    impl->isGpu[d] = t.device(static_cast<int>(d)).kind == DeviceKind::Gpu;
  std::vector<uint32_t> &begin = impl->begin;
  begin.assign(n + 1, 0);
  auto eachArc = [&](auto &&f) {
    for (size_t i = 0; i < t.links().size(); ++i) {
      const Link &l = t.link(static_cast<int>(i));
      for (int dir = 0; dir < 2; ++dir)
        if (l.effectiveCapacity(dir) > 0)
          f(dir == 0 ? l.from : l.to, dir == 0 ? l.to : l.from,
            static_cast<int>(i), dir, l.effectiveCapacity(dir));
    }
  };
  eachArc([&](int u, int, int, int, double) { ++begin[u + 1]; });
  for (size_t d = 0; d < n; ++d)
    begin[d + 1] += begin[d];
  impl->links.resize(t.links().size());
  for (size_t i = 0; i < t.links().size(); ++i) {
    const Link &l = t.link(static_cast<int>(i));
    impl->links[i] = {{l.effectiveCapacity(0), l.effectiveCapacity(1)},
                      {l.capacity(0), l.capacity(1)},
                      l.latency,
                      1u << static_cast<unsigned>(l.type)};
  }
  impl->arcs.resize(begin[n]);
  std::vector<uint32_t> fill(begin.begin(), begin.end() - 1);
  eachArc([&](int u, int v, int link, int dir, double width) {
    impl->arcs[fill[u]++] = {v, link, dir, width};
  });
}

RouteGraph::~RouteGraph() = default;

/// The state of a search that has not settled every device yet.
struct RouteTree::Search {
  enum : uint8_t { White, Gray, Black };
  static constexpr size_t kArity = 4;
  const RouteGraph::Impl *g = nullptr;
  std::vector<Cost> dist;
  std::vector<uint8_t> color;
  std::vector<int> heap;
  std::vector<size_t> at; ///< index in heap

  void up(size_t index) {
    if (index == 0)
      return;
    const int moving = heap[index];
    size_t levels = 0, i = index;
    while (i != 0) {
      size_t parent = (i - 1) / kArity;
      if (!better(dist[moving], dist[heap[parent]]))
        break;
      ++levels;
      i = parent;
    }
    i = index;
    for (size_t l = 0; l < levels; ++l) {
      size_t parent = (i - 1) / kArity;
      heap[i] = heap[parent];
      at[heap[i]] = i;
      i = parent;
    }
    heap[i] = moving;
    at[moving] = i;
  }
  void down() {
    size_t index = 0;
    const Cost moving = dist[heap[0]];
    const size_t size = heap.size();
    while (true) {
      size_t first = index * kArity + 1;
      if (first >= size)
        break;
      size_t best = first;
      size_t end = std::min(first + kArity, size);
      for (size_t c = first + 1; c < end; ++c)
        if (better(dist[heap[c]], dist[heap[best]]))
          best = c;
      if (!better(dist[heap[best]], moving))
        break;
      std::swap(heap[best], heap[index]);
      at[heap[best]] = best;
      at[heap[index]] = index;
      index = best;
    }
  }
  void push(int v) {
    heap.push_back(v);
    at[v] = heap.size() - 1;
    up(heap.size() - 1);
  }
  void pop() {
    if (heap.size() == 1) {
      heap.pop_back();
      return;
    }
    heap[0] = heap.back();
    at[heap[0]] = 0;
    heap.pop_back();
    down();
  }
};

// The graph lives until the delegated constructor returns: the search
// runs to its end there.
RouteTree::RouteTree(const Topology &t, int source)
    : RouteTree(RouteGraph(t), source, /*complete=*/true) {}

RouteTree::RouteTree(const RouteGraph &graph, int source)
    : RouteTree(graph, source, /*complete=*/false) {}

// Dijkstra's algorithm with a 4-ary indirect heap and decrease-key, the
// exact steps of Boost.Graph's dijkstra_shortest_paths (which this
// replaced; tests/unit/topology checks they agree on every source), so
// that ties between equally wide and long routes keep resolving as they
// did: by heap order, then by arc order.
RouteTree::RouteTree(const RouteGraph &graph, int source, bool complete)
    : topo(graph.topo), src(source),
      searched(complete ? nullptr : graph.impl.get()) {
  const RouteGraph::Impl &g = *graph.impl;
  const size_t n = g.isGpu.size();
  pred.assign(n, Hop{});
  if (src < 0 || static_cast<size_t>(src) >= n)
    return;
  search = std::make_unique<Search>();
  Search &s = *search;
  s.g = &g;
  s.dist.assign(n, Cost{-1, INT_MAX});
  s.dist[src] = Cost{std::numeric_limits<double>::infinity(), 0};
  s.color.assign(n, Search::White);
  s.at.assign(n, 0);
  s.color[src] = Search::Gray;
  s.push(src);
  if (complete)
    settle(-1);
}

RouteTree::RouteTree(RouteTree &&) noexcept = default;
RouteTree &RouteTree::operator=(RouteTree &&) noexcept = default;
RouteTree::~RouteTree() = default;

void RouteTree::settle(int dst) const {
  if (!search)
    return;
  Search &s = *search;
  const RouteGraph::Impl &g = *s.g;
  if (dst >= 0 && s.color[dst] == Search::Black)
    return;
  while (!s.heap.empty()) {
    const int u = s.heap[0];
    s.pop();
    // Only the source GPU sends; other GPUs are endpoints only.
    if (u == src || !g.isGpu[u]) {
      for (uint32_t k = g.begin[u]; k < g.begin[u + 1]; ++k) {
        const RouteGraph::Impl::Arc &a = g.arcs[k];
        const int v = a.to;
        if (s.color[v] == Search::Black)
          continue;
        const Cost old = s.dist[v];
        const Cost next = extend(s.dist[u], a.width);
        const bool relaxed = better(next, old);
        if (relaxed) {
          s.dist[v] = next;
          pred[v] = Hop{a.link, a.dir, u, v};
        }
        if (s.color[v] == Search::White) {
          s.color[v] = Search::Gray;
          s.push(v);
        } else if (relaxed) {
          s.up(s.at[v]);
        }
      }
    }
    s.color[u] = Search::Black;
    if (u == dst)
      return; // its route is final: settled devices are never relaxed
  }
  search.reset();
}

RouteSummary RouteTree::summaryTo(int dst) const {
  RouteSummary r;
  if (dst < 0 || static_cast<size_t>(dst) >= pred.size())
    return r;
  r.bottleneck = r.rawBottleneck = std::numeric_limits<double>::infinity();
  if (dst == src) {
    r.found = true;
    return r;
  }
  settle(dst);
  if (pred[dst].link < 0)
    return RouteSummary{};
  // The hops from the last, summed from the first as to() sums them.
  llvm::SmallVector<const Hop *, 16> hops;
  for (int v = dst; v != src;) {
    const Hop &h = pred[v];
    hops.push_back(&h);
    v = h.fromDevice;
    if (hops.size() > pred.size() || v < 0)
      return RouteSummary{}; // cannot happen: predecessor chains are acyclic
  }
  r.found = true;
  r.hops = static_cast<int>(hops.size());
  for (auto it = hops.rbegin(); it != hops.rend(); ++it) {
    const int dir = (*it)->dir;
    if (searched) { // the same figures, from one compact array
      const RouteGraph::Impl::LinkFigures &l = searched->links[(*it)->link];
      r.bottleneck = std::min(r.bottleneck, l.effective[dir]);
      r.rawBottleneck = std::min(r.rawBottleneck, l.raw[dir]);
      r.latency += l.latency;
      r.linkTypes |= l.typeBit;
      continue;
    }
    const Link &l = topo->link((*it)->link);
    r.bottleneck = std::min(r.bottleneck, l.effectiveCapacity(dir));
    r.rawBottleneck = std::min(r.rawBottleneck, l.capacity(dir));
    r.latency += l.latency;
    r.linkTypes |= 1u << static_cast<unsigned>(l.type);
  }
  return r;
}

Route RouteTree::to(int dst) const {
  Route r;
  r.bottleneck = r.rawBottleneck = std::numeric_limits<double>::infinity();
  if (dst == src) {
    r.exists = true;
    return r;
  }
  if (dst < 0 || static_cast<size_t>(dst) >= pred.size())
    return Route{};
  settle(dst);
  if (pred[dst].link < 0)
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
