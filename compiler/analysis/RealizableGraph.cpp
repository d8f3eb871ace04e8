//===- compiler/analysis/RealizableGraph.cpp - Runtime routes -----------===//

#include "compiler/analysis/RealizableGraph.h"

#include "compiler/analysis/NetRoutes.h"
#include "support/Diagnostics.h"
#include "support/Progress.h"

#include "llvm/Support/FormatVariadic.h"

#include <map>
#include <numeric>
#include <optional>
#include <set>

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
    }
  }

  const PathFlow &segment(int id) const { return segs[id].flow; }
  int segmentFrom(int id) const { return segs[id].from; }
  int segmentTo(int id) const { return segs[id].to; }
  const std::set<std::vector<int>> &all() const { return routes; }

private:
  struct Segment {
    int from = -1, to = -1;
    PathFlow flow;
  };

  /// Segment id of device `from` to device `to`, -1 without a route.
  int segmentId(int from, int to) {
    auto [it, fresh] = index.try_emplace({from, to}, -1);
    if (fresh) {
      PathFlow f = m.deviceFlow(from, to);
      if (f.found && !f.res.empty()) {
        it->second = static_cast<int>(segs.size());
        segs.push_back({from, to, std::move(f)});
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
      std::vector<int> route;
      for (size_t i = 0; i + 1 < stops.size(); ++i) {
        int id = segmentId(stops[i], stops[i + 1]);
        if (id < 0) { // the simulator then routes freely (LinkModel::viaFlow)
          route.clear();
          break;
        }
        route.push_back(id);
      }
      if (route.empty())
        addDirect(ga, gb);
      else
        routes.insert(std::move(route));
    }
  }

  void addDirect(int ga, int gb) {
    if (int id = segmentId(ga, gb); id >= 0)
      routes.insert({id});
  }

  const topo::Topology &t;
  LinkModel &m;
  std::optional<NcclNetRoutes> net;
  std::map<std::pair<int, int>, int> index;
  std::vector<Segment> segs;
  std::set<std::vector<int>> routes;
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
  auto hopsAt = [&](const PathFlow &f, int device, bool sending) {
    std::vector<int> out;
    for (auto [res, share] : f.res) {
      auto [from, to] = m.resourceEnds(res);
      if ((sending ? from : to) == device)
        out.push_back(res);
    }
    return out;
  };

  std::set<int> segmentsDone;
  std::map<int, int> rankOfDevice;
  for (int r = 0; r < n; ++r)
    rankOfDevice[t.rankDevice(r)] = r;
  for (const std::vector<int> &route : routes.all()) {
    int rankA = rankOfDevice.at(routes.segmentFrom(route.front()));
    int rankB = rankOfDevice.at(routes.segmentTo(route.back()));
    for (size_t i = 0; i < route.size(); ++i) {
      const PathFlow &f = routes.segment(route[i]);
      int from = routes.segmentFrom(route[i]), to = routes.segmentTo(route[i]);
      std::map<int, std::pair<std::vector<int>, std::vector<int>>> at;
      if (segmentsDone.insert(route[i]).second)
        for (auto [res, share] : f.res) {
          int v = vertexOf(res);
          addArc(v, v + 1, res);
          auto [a, b] = m.resourceEnds(res);
          at[a].second.push_back(res); // leaves a
          at[b].first.push_back(res);  // enters b
        }
      for (auto &[device, inOut] : at) {
        if (device == from || device == to)
          continue;
        for (int r1 : inOut.first)
          for (int r2 : inOut.second)
            join(r1, r2);
      }
      if (i == 0)
        for (int r : hopsAt(f, from, /*sending=*/true))
          addArc(rankA, vertexOf(r), r);
      if (i + 1 == route.size())
        for (int r : hopsAt(f, to, /*sending=*/false))
          addArc(vertexOf(r) + 1, rankB, r);
      else
        for (int r1 : hopsAt(f, to, false))
          for (int r2 : hopsAt(routes.segment(route[i + 1]), to, true))
            join(r1, r2);
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
