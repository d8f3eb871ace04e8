//===- compiler/analysis/RealizableGraph.cpp - Runtime routes -----------===//

#include "compiler/analysis/RealizableGraph.h"

#include "compiler/analysis/NetRoutes.h"
#include "support/Diagnostics.h"
#include "support/Progress.h"

#include "llvm/Support/FormatVariadic.h"

#include <array>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace topocc::analysis {

namespace {

/// The routes of every rank pair as sequences of device-to-device segments
/// (LinkModel::deviceFlow), joined at NICs: the routing of the simulator
/// (Simulator.cpp, Sim::routeFor).
class RouteSet {
public:
  RouteSet(const topo::Topology &t, LinkModel &m, bool ncclNetRule)
      : t(t), m(m) {
    if (ncclNetRule)
      net.emplace(t);
  }

  void collect() {
    ProgressTask progress("runtime routes", t.numRanks(), "ranks");
    for (int a = 0; a < t.numRanks(); ++a) {
      for (int b = 0; b < t.numRanks(); ++b)
        if (a != b)
          collectPair(a, b);
      progress.advance();
      // Keep the list distinct as it grows (each rank adds its own).
      if (routes.size() > 2 * distinct + (1u << 16))
        dedupe();
    }
    dedupe();
  }

  /// A route: up to three segment ids (GPU, NIC, NIC, GPU), -1 after the
  /// last. Lexicographic order is that of the segment id sequences.
  using Route = std::array<int, 3>;

  /// A segment's resources that touch its first or last device.
  const std::vector<int> &segmentEnds(int id) const { return segs[id].ends; }
  /// Its other resources, shared by every segment with the same ones (the
  /// switch-to-switch part of a NIC-to-NIC flow), or -1 when none.
  int segmentInner(int id) const { return segs[id].inner; }
  const std::vector<int> &inner(int id) const { return inners[id]; }
  int numInners() const { return static_cast<int>(inners.size()); }
  int segmentFrom(int id) const { return segs[id].from; }
  int segmentTo(int id) const { return segs[id].to; }
  int numSegments() const { return static_cast<int>(segs.size()); }
  /// Every distinct route, sorted (after collect()).
  const std::vector<Route> &all() const { return routes; }

private:
  /// Only which resources a segment uses matters here, not their shares:
  /// a NIC-to-NIC flow through a fat tree's spines touches every spine,
  /// and a million such pairs share a few switch-to-switch parts.
  struct Segment {
    int from = -1, to = -1;
    std::vector<int> ends;
    int inner = -1;
  };

  void dedupe() {
    llvm::sort(routes);
    routes.erase(std::unique(routes.begin(), routes.end()), routes.end());
    distinct = routes.size();
  }

  /// Segment id of device `from` to device `to`, -1 without a route.
  int segmentId(int from, int to) {
    uint64_t key =
        static_cast<uint64_t>(from) << 32 | static_cast<uint32_t>(to);
    auto [it, fresh] = index.try_emplace(key, -1);
    if (fresh) {
      PathFlow f = m.deviceFlow(from, to);
      if (f.found && !f.res.empty()) {
        it->second = static_cast<int>(segs.size());
        Segment seg{from, to, {}, -1};
        std::vector<int> rest;
        for (auto [res, share] : f.res) {
          auto [a, b] = m.resourceEnds(res);
          (a == from || b == to || a == to || b == from ? seg.ends : rest)
              .push_back(res);
        }
        if (!rest.empty()) {
          auto [at, added] =
              innerIndex.try_emplace(rest, static_cast<int>(inners.size()));
          if (added)
            inners.push_back(std::move(rest));
          seg.inner = at->second;
        }
        seg.ends.shrink_to_fit();
        segs.push_back(std::move(seg));
      }
    }
    return it->second;
  }

  void collectPair(int a, int b) {
    int ga = t.rankDevice(a), gb = t.rankDevice(b);
    if (!net || t.nodeOfRank(a) == t.nodeOfRank(b)) {
      addDirect(ga, gb);
      return;
    }
    int period = std::lcm(net->period(a), net->period(b));
    for (int c = 0; c < period; ++c) {
      std::vector<int> stops{ga};
      if (int out = net->nicFor(a, c); out >= 0)
        stops.push_back(out);
      if (int in = net->nicFor(b, c); in >= 0)
        stops.push_back(in);
      stops.push_back(gb);
      Route route{-1, -1, -1};
      bool routed = true;
      for (size_t i = 0; i + 1 < stops.size(); ++i) {
        int id = segmentId(stops[i], stops[i + 1]);
        if (id < 0) { // the simulator then routes freely (LinkModel::viaFlow)
          routed = false;
          break;
        }
        route[i] = id;
      }
      if (!routed)
        addDirect(ga, gb);
      else
        routes.push_back(route);
    }
  }

  void addDirect(int ga, int gb) {
    if (int id = segmentId(ga, gb); id >= 0)
      routes.push_back({id, -1, -1});
  }

  const topo::Topology &t;
  LinkModel &m;
  std::optional<NcclNetRoutes> net;
  std::unordered_map<uint64_t, int> index; ///< from << 32 | to
  std::vector<Segment> segs;
  std::vector<std::vector<int>> inners;
  std::map<std::vector<int>, int> innerIndex;
  std::vector<Route> routes;
  size_t distinct = 0; ///< routes[0, distinct) are sorted and distinct
};

} // namespace

llvm::Expected<BoundGraph> buildRealizableGraph(const topo::Topology &t,
                                                LinkModel &m,
                                                const RealizableOptions &o) {
  const int n = t.numRanks();
  if (n < 2)
    return makeUserError(llvm::formatv(
        "the bound needs at least 2 GPUs; the topology has {0}", n));
  RouteSet routes(t, m, o.ncclNetRule);
  routes.collect();

  // Vertices: ranks, then in(r), out(r) per used resource r.
  BoundGraph g;
  for (int r = 0; r < n; ++r) {
    g.compute.push_back(r);
    g.names.push_back(t.rankName(r));
  }
  std::map<int, int> resVertex;  // resource -> its in vertex (out = in + 1)
  std::map<int, int64_t> resCap; // resource -> bytes/s
  DiagnosticList diags;
  auto vertexOf = [&](int res) {
    auto [it, fresh] = resVertex.try_emplace(res, 0);
    if (fresh) {
      it->second = n + 2 * static_cast<int>(resVertex.size() - 1);
      std::string name = m.resourceName(res);
      g.names.push_back(name + " (in)");
      g.names.push_back(name + " (out)");
      const topo::Link &l = t.link(res / 2);
      std::string link = t.device(l.from).name + " -- " + t.device(l.to).name;
      std::optional<int64_t> whole = integralCapacity(m.capacity(res));
      if (l.duplex == topo::Duplex::Half)
        diags.add(t.diag(l.loc, "link " + link +
                                    " is half duplex; the cut bound needs "
                                    "independent bandwidth per direction"));
      else if (!whole)
        diags.add(t.diag(
            l.loc, llvm::formatv("link {0}: capacity {1} bytes/s is not a "
                                 "whole number of bytes/s; the exact bound "
                                 "needs integral capacities",
                                 link, m.capacity(res))
                       .str()));
      resCap[res] = whole.value_or(1);
    }
    return it->second;
  };

  // Arcs by (from, to) vertex, each with its capacity and resource.
  std::map<std::pair<int, int>, std::pair<int64_t, int>> arcs;
  auto addArc = [&](int from, int to, int res) {
    vertexOf(res);
    arcs.try_emplace({from, to}, resCap.at(res), res);
  };
  auto join = [&](int r1, int r2) { // out(r1) -> in(r2)
    vertexOf(r1);
    vertexOf(r2);
    int small = resCap.at(r1) <= resCap.at(r2) ? r1 : r2;
    addArc(vertexOf(r1) + 1, vertexOf(r2), small);
  };
  auto hopsAt = [&](const std::vector<int> &ends, int device, bool sending) {
    std::vector<int> out;
    for (int res : ends) {
      auto [from, to] = m.resourceEnds(res);
      if ((sending ? from : to) == device)
        out.push_back(res);
    }
    return out;
  };

  // Per segment: done (its inner arcs and joins added), and its hops
  // leaving its first device and entering its last one.
  const int numSegs = routes.numSegments();
  std::vector<char> segmentsDone(numSegs, 0), hopsKnown(numSegs, 0);
  std::vector<std::vector<int>> firstHops(numSegs), lastHops(numSegs);
  auto hopsOf = [&](int seg) {
    if (!hopsKnown[seg]) {
      hopsKnown[seg] = 1;
      const std::vector<int> &ends = routes.segmentEnds(seg);
      firstHops[seg] = hopsAt(ends, routes.segmentFrom(seg), /*sending=*/true);
      lastHops[seg] = hopsAt(ends, routes.segmentTo(seg), /*sending=*/false);
    }
  };
  // Joins and rank arcs already added: repeating one changes nothing (the
  // vertices it names exist), so each is added once.
  std::unordered_set<uint64_t> joined, rankArcs;
  auto pairKey = [](int a, int b) {
    return static_cast<uint64_t>(a) << 32 | static_cast<uint32_t>(b);
  };
  auto joinOnce = [&](int r1, int r2) {
    if (joined.insert(pairKey(r1, r2)).second)
      join(r1, r2);
  };
  // Per inner part: its arcs and the joins of its consecutive hops, once;
  // its resources by the device they enter and leave.
  struct InnerHops {
    bool done = false;
    std::unordered_map<int, std::vector<int>> entering, leaving;
  };
  std::vector<InnerHops> innerAt(routes.numInners());
  std::set<std::array<int, 3>> endJoined; // (end hop, inner, side)
  auto addInner = [&](int in) {
    InnerHops &h = innerAt[in];
    if (h.done)
      return;
    h.done = true;
    for (int res : routes.inner(in)) {
      int v = vertexOf(res);
      addArc(v, v + 1, res);
      auto [a, b] = m.resourceEnds(res);
      h.leaving[a].push_back(res);
      h.entering[b].push_back(res);
    }
    for (auto &[device, into] : h.entering) {
      auto out = h.leaving.find(device);
      if (out != h.leaving.end())
        for (int r1 : into)
          for (int r2 : out->second)
            joinOnce(r1, r2);
    }
  };
  std::map<int, int> rankOfDevice;
  for (int r = 0; r < n; ++r)
    rankOfDevice[t.rankDevice(r)] = r;
  ProgressTask progress("realizable graph", routes.all().size(), "routes");
  for (const RouteSet::Route &route : routes.all()) {
    progress.advance();
    const size_t len = route[2] >= 0 ? 3 : route[1] >= 0 ? 2 : 1;
    int rankA = rankOfDevice.at(routes.segmentFrom(route[0]));
    int rankB = rankOfDevice.at(routes.segmentTo(route[len - 1]));
    for (size_t i = 0; i < len; ++i) {
      const int seg = route[i];
      int from = routes.segmentFrom(seg), to = routes.segmentTo(seg);
      hopsOf(seg);
      if (!segmentsDone[seg]) {
        segmentsDone[seg] = 1;
        // Consecutive hops of the segment meet at its inner devices. The
        // inner part's own joins are added once per inner part; the end
        // hops' joins with it once per (end hop, inner part).
        const int in = routes.segmentInner(seg);
        if (in >= 0)
          addInner(in);
        const std::vector<int> &ends = routes.segmentEnds(seg);
        for (int res : ends) {
          int v = vertexOf(res);
          addArc(v, v + 1, res);
        }
        for (int r1 : ends) {
          auto [a1, b1] = m.resourceEnds(r1);
          if (b1 == from || b1 == to)
            continue;
          for (int r2 : ends)
            if (m.resourceEnds(r2).first == b1)
              joinOnce(r1, r2);
        }
        if (in >= 0)
          for (int r : ends) {
            auto [a, b] = m.resourceEnds(r);
            if (b != from && b != to && endJoined.insert({r, in, 0}).second)
              for (int r2 : innerAt[in].leaving[b])
                joinOnce(r, r2);
            if (a != from && a != to && endJoined.insert({r, in, 1}).second)
              for (int r1 : innerAt[in].entering[a])
                joinOnce(r1, r);
          }
      }
      if (i == 0)
        for (int r : firstHops[seg])
          if (rankArcs.insert(pairKey(rankA, 2 * r)).second)
            addArc(rankA, vertexOf(r), r);
      if (i + 1 == len) {
        for (int r : lastHops[seg])
          if (rankArcs.insert(pairKey(rankB, 2 * r + 1)).second)
            addArc(vertexOf(r) + 1, rankB, r);
      } else {
        hopsOf(route[i + 1]);
        for (int r1 : lastHops[seg])
          for (int r2 : firstHops[route[i + 1]])
            joinOnce(r1, r2);
      }
    }
  }
  if (auto err = diags.takeError())
    return err;

  g.numVertices = n + 2 * static_cast<int>(resVertex.size());
  for (const auto &[ends, value] : arcs) {
    BoundGraph::Arc a;
    a.from = ends.first;
    a.to = ends.second;
    a.cap = value.first;
    a.link = value.second / 2;
    a.dir = value.second % 2;
    g.arcs.push_back(a);
  }
  if (auto err = finishBoundGraph(g, t))
    return err;
  return g;
}

llvm::Expected<BoundResult> computeRealizableBound(const topo::Topology &t,
                                                   const RealizableOptions &o) {
  ProgressTask progress("realizable bound");
  LinkModel m(t);
  auto g = buildRealizableGraph(t, m, o);
  if (!g)
    return g.takeError();
  return computeBoundOn(std::move(*g));
}

} // namespace topocc::analysis
