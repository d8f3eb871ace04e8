//===- compiler/analysis/CostModel.cpp - Alpha-beta cost with contention --===//
//
// Multipath routing (max flow over the shortest paths of the widest route's
// link types), per-resource byte counts, and the critical path of messages.
//
//===----------------------------------------------------------------------===//

#include "compiler/analysis/CostModel.h"

#include "compiler/analysis/ComputeModel.h"

#include "support/Diagnostics.h"

#include "llvm/ADT/bit.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>

namespace topocc::analysis {

using topo::DeviceKind;
using topo::Duplex;

LinkModel::LinkModel(const topo::Topology &t) : topo(&t) {
  size_t n = t.links().size();
  cap.assign(2 * n, 0);
  rawCap.assign(2 * n, 0);
  for (size_t i = 0; i < n; ++i) {
    const topo::Link &l = t.link(static_cast<int>(i));
    if (l.duplex == Duplex::Half) {
      cap[2 * i] = std::max(l.effectiveCapacity(0), l.effectiveCapacity(1));
      rawCap[2 * i] = std::max(l.capacity(0), l.capacity(1));
      continue;
    }
    for (int d = 0; d < 2; ++d) {
      cap[2 * i + d] = l.effectiveCapacity(d);
      rawCap[2 * i + d] = l.capacity(d);
    }
  }
  gpu.resize(t.devices().size());
  for (size_t d = 0; d < t.devices().size(); ++d)
    gpu[d] = t.device(static_cast<int>(d)).kind == DeviceKind::Gpu;
  for (size_t i = 0; i < n; ++i) {
    const topo::Link &l = t.link(static_cast<int>(i));
    for (int d = 0; d < 2; ++d) {
      if (l.effectiveCapacity(d) <= 0)
        continue;
      int u = d == 0 ? l.from : l.to, v = d == 0 ? l.to : l.from;
      arcs.push_back({u, v, static_cast<int>(i), d,
                      1u << static_cast<unsigned>(l.type),
                      l.effectiveCapacity(d), l.capacity(d),
                      resourceOf(static_cast<int>(i), d)});
    }
  }
  const size_t nd = t.devices().size();
  outBegin.assign(nd + 1, 0);
  inBegin.assign(nd + 1, 0);
  for (const Arc &a : arcs) {
    ++outBegin[a.u + 1];
    ++inBegin[a.v + 1];
  }
  for (size_t d = 0; d < nd; ++d) {
    outBegin[d + 1] += outBegin[d];
    inBegin[d + 1] += inBegin[d];
  }
  outIds.resize(arcs.size());
  inIds.resize(arcs.size());
  std::vector<int> outFill(outBegin.begin(), outBegin.end() - 1),
      inFill(inBegin.begin(), inBegin.end() - 1);
  for (size_t id = 0; id < arcs.size(); ++id) { // ids ascending per device
    outIds[outFill[arcs[id].u]++] = static_cast<int>(id);
    inIds[inFill[arcs[id].v]++] = static_cast<int>(id);
  }
  for (int id : outIds)
    outData.push_back(arcs[id]);
  for (int id : inIds)
    inData.push_back(arcs[id]);
}

int LinkModel::findInner(const InnerKey &key) const {
  constexpr size_t kSlots = 4096;
  if (innerSlots.empty())
    innerSlots.resize(kSlots);
  InnerSlot &slot = innerSlots[InnerKeyHash()(key) % kSlots];
  if (slot.id >= 0 && slot.key == key)
    return slot.id;
  auto hit = innerIds.find(key);
  if (hit == innerIds.end())
    return -1;
  slot = {key, hit->second};
  return hit->second;
}

namespace {
/// Entries kept by each of LinkModel's most-recently-used caches: enough
/// for the GPUs and NICs that a schedule's messages visit in a stretch of
/// rank order (a route tree is 8 bytes and a search 4 bytes per device:
/// about 8 MiB for 1024 GPUs, 34 MiB for 4096).
constexpr size_t kRouteCacheEntries = 256;

/// Moves entry `i` of an MRU vector to the front.
template <typename T> T &touch(std::vector<T> &v, size_t i) {
  std::rotate(v.begin(), v.begin() + i, v.begin() + i + 1);
  return v.front();
}
} // namespace

const topo::RouteTree &LinkModel::routeTree(int src) const {
  for (size_t i = 0; i < trees.size(); ++i)
    if (trees[i].source() == src)
      return touch(trees, i);
  if (trees.size() == kRouteCacheEntries)
    trees.pop_back();
  if (!routeGraph)
    routeGraph = std::make_unique<topo::RouteGraph>(*topo);
  trees.insert(trees.begin(), topo::RouteTree(*routeGraph, src));
  return trees.front();
}

const std::vector<int> &LinkModel::hopsFrom(int root, uint32_t mask) const {
  for (size_t i = 0; i < searches.size(); ++i)
    if (searches[i].root == root && searches[i].mask == mask)
      return touch(searches, i).dist;
  if (searches.size() == kRouteCacheEntries)
    searches.pop_back();
  Distances d{root, mask, std::vector<int>(topo->devices().size(), -1)};
  std::vector<int> queue{root};
  d.dist[root] = 0;
  for (size_t head = 0; head < queue.size(); ++head) {
    int x = queue[head];
    if (x != root && gpu[x])
      continue; // GPUs never forward
    for (int k = outBegin[x]; k < outBegin[x + 1]; ++k) {
      const int y = outData[k].v;
      if (!(outData[k].typeBit & mask))
        continue;
      if (d.dist[y] < 0) {
        d.dist[y] = d.dist[x] + 1;
        queue.push_back(y);
      }
    }
  }
  searches.insert(searches.begin(), std::move(d));
  return searches.front().dist;
}

int LinkModel::resourceOf(int link, int dir) const {
  if (topo->link(link).duplex == Duplex::Half)
    return 2 * link;
  return 2 * link + dir;
}

std::pair<int, int> LinkModel::resourceEnds(int res) const {
  const topo::Link &l = topo->link(res / 2);
  return res % 2 == 0 ? std::make_pair(l.from, l.to)
                      : std::make_pair(l.to, l.from);
}

std::string LinkModel::resourceName(int res) const {
  const topo::Link &l = topo->link(res / 2);
  auto [a, b] = resourceEnds(res);
  if (l.duplex == Duplex::Half)
    return topo->device(a).name + " <-> " + topo->device(b).name +
           " (half duplex)";
  return topo->device(a).name + " -> " + topo->device(b).name;
}

namespace {

/// Edmonds-Karp over a small directed graph; returns the flow per edge.
struct FlowNet {
  struct Edge {
    int to, rev;
    double cap, flow;
    int orig; ///< index into the caller's edge list, -1 for reverse edges
  };
  std::vector<std::vector<Edge>> adj;
  explicit FlowNet(int n) : adj(n) {}
  void add(int u, int v, double c, int orig) {
    adj[u].push_back({v, static_cast<int>(adj[v].size()), c, 0, orig});
    adj[v].push_back({u, static_cast<int>(adj[u].size()) - 1, 0, 0, -1});
  }
  double run(int s, int t) {
    double total = 0;
    const double eps = 1e-9;
    for (int iter = 0; iter < 100000; ++iter) {
      std::vector<std::pair<int, int>> pred(adj.size(), {-1, -1});
      std::deque<int> q{s};
      pred[s] = {s, -1};
      while (!q.empty() && pred[t].first < 0) {
        int u = q.front();
        q.pop_front();
        for (size_t i = 0; i < adj[u].size(); ++i) {
          const Edge &e = adj[u][i];
          if (pred[e.to].first < 0 && e.cap - e.flow > eps) {
            pred[e.to] = {u, static_cast<int>(i)};
            q.push_back(e.to);
          }
        }
      }
      if (pred[t].first < 0)
        break;
      double push = std::numeric_limits<double>::infinity();
      for (int v = t; v != s; v = pred[v].first) {
        const Edge &e = adj[pred[v].first][pred[v].second];
        push = std::min(push, e.cap - e.flow);
      }
      for (int v = t; v != s; v = pred[v].first) {
        Edge &e = adj[pred[v].first][pred[v].second];
        e.flow += push;
        adj[e.to][e.rev].flow -= push;
      }
      total += push;
    }
    return total;
  }
};

} // namespace

void LinkModel::spreadOverEqualPaths(const std::vector<int> &dag, int src,
                                     const std::vector<int> &ds, double total,
                                     std::vector<double> &perEdge) const {
  if (!(total > 0))
    return;
  // Out-arcs per vertex (indices into dag) and the vertices by distance.
  std::map<int, std::vector<size_t>> out;
  for (size_t k = 0; k < dag.size(); ++k)
    out[arcs[dag[k]].u].push_back(k);
  bool branches = false;
  for (const auto &[v, ks] : out)
    branches |= ks.size() > 1;
  if (!branches)
    return;                               // one path: the max flow's
  std::vector<std::pair<int, int>> order; // (distance, vertex)
  for (const auto &[v, ks] : out)
    order.emplace_back(ds[v], v);
  std::sort(order.begin(), order.end());
  std::map<int, double> inflow{{src, total}};
  std::vector<double> spread(dag.size(), 0);
  for (auto [d, v] : order) {
    const double in = inflow[v];
    if (!(in > 0))
      continue;
    double caps = 0;
    for (size_t k : out[v]) {
      const Arc &a = arcs[dag[k]];
      caps += topo->link(a.link).effectiveCapacity(a.dir);
    }
    if (!(caps > 0))
      return;
    for (size_t k : out[v]) {
      const Arc &a = arcs[dag[k]];
      spread[k] = in * topo->link(a.link).effectiveCapacity(a.dir) / caps;
      inflow[a.v] += spread[k];
    }
  }
  // Keep the max flow where the even split would overload an arc.
  for (size_t k = 0; k < dag.size(); ++k) {
    const Arc &a = arcs[dag[k]];
    if (spread[k] > topo->link(a.link).effectiveCapacity(a.dir) * (1 + 1e-9))
      return;
  }
  perEdge = std::move(spread);
}

PathFlow LinkModel::deviceFlow(int src, int dst) const {
  return flowOf(deviceFlowParts(src, dst));
}

PathFlow LinkModel::flowOf(FlowParts parts) const {
  PathFlow &f = parts.flow;
  if (parts.resFilled)
    return std::move(f);
  const InnerFlow &in = innerFlows[parts.inner];
  f.res = in.shares;
  if (in.total > 0)
    for (int res : {parts.firstRes, parts.lastRes}) {
      auto at = std::lower_bound(
          f.res.begin(), f.res.end(), res,
          [](const std::pair<int, double> &e, int r) { return e.first < r; });
      if (at != f.res.end() && at->first == res)
        at->second += 1.0;
      else
        f.res.insert(at, {res, 1.0});
    }
  return std::move(f);
}

LinkModel::FlowParts LinkModel::deviceFlowParts(int src, int dst) const {
  FlowParts parts;
  PathFlow &f = parts.flow;
  const topo::Topology &t = *topo;
  const int nd = static_cast<int>(t.devices().size());
  if (src < 0 || dst < 0 || src >= nd || dst >= nd)
    return parts;
  topo::RouteSummary w = routeTree(src).summaryTo(dst);
  if (!w.found)
    return parts;
  f.found = true;
  f.latency = w.latency;
  if (src == dst) {
    f.bandwidth = f.rawBandwidth = std::numeric_limits<double>::infinity();
    return parts;
  }
  const uint32_t mask = w.linkTypes;
  // The arcs of those types that neither leave a GPU other than src nor
  // enter one other than dst, on a shortest src -> dst path: walked back
  // from dst over arcs that step the forward distance by one. The search
  // passes through no GPU, so its distances on switches and NICs are those
  // of the allowed arcs.
  const std::vector<int> &ds = hopsFrom(src, mask);
  int h = ds[dst];
  if (h <= 0) {
    // Cannot happen (the widest route uses these types); fall back to it.
    f.hops = w.hops;
    f.bandwidth = w.bottleneck;
    f.rawBandwidth = w.rawBottleneck;
    for (const topo::Hop &hp : routeTree(src).to(dst).hops)
      f.res.push_back({resourceOf(hp.link, hp.dir), 1.0});
    std::sort(f.res.begin(), f.res.end());
    return parts;
  }
  f.hops = h;
  auto allowed = [&](const Arc &a) {
    if (!(a.typeBit & mask))
      return false;
    if (a.u != src && gpu[a.u])
      return false;
    return a.v == dst || !gpu[a.v];
  };
  // The only possible first arc (from src to distance 1) and last arc (into
  // dst from distance h - 1), or -1 when there are several.
  // The arcs are read from the copies in device order (outData, inData):
  // a sweep over many destinations then reads them one after another.
  auto onlyArc = [&](int device, bool first) {
    const std::vector<int> &begin = first ? outBegin : inBegin;
    const std::vector<Arc> &data = first ? outData : inData;
    int only = -1;
    for (int k = begin[device]; k < begin[device + 1]; ++k) {
      const Arc &a = data[k];
      int end = first ? a.v : a.u;
      if (!allowed(a) || ds[end] != (first ? 1 : h - 1))
        continue;
      if (only >= 0)
        return -1;
      only = k;
    }
    return only;
  };
  // With one first arc e = (src, a') and one last arc l = (b', dst), every
  // path is e, a shortest a' -> b' path, l; the breadth-first augmenting
  // paths below then take the same inner arcs for every src behind a' and
  // dst behind b' with the same capacities on e and l (e and l only bound
  // each push by their residuals, which equal their capacities less the
  // flow so far): the inner flows are kept per InnerKey.
  std::optional<InnerKey> key;
  int firstArc = -1, lastArc = -1;
  int firstAt = -1, lastAt = -1; // their places in outData and inData
  if (h >= 2 && (firstAt = onlyArc(src, true)) >= 0 &&
      (lastAt = onlyArc(dst, false)) >= 0) {
    firstArc = outIds[firstAt];
    lastArc = inIds[lastAt];
    const Arc &e = outData[firstAt], &l = inData[lastAt];
    key = InnerKey{e.v, l.u, mask, e.cap, l.cap, e.rawCap, l.rawCap};
    if (int id = findInner(*key); id >= 0) {
      const InnerFlow &in = innerFlows[id];
      f.bandwidth = in.total;
      f.rawBandwidth = in.rawTotal;
      parts.inner = id;
      parts.firstRes = e.res;
      parts.lastRes = l.res;
      parts.resFilled = false;
      return parts;
    }
  }
  std::vector<int> dag;
  std::unordered_map<int, int> local{{dst, 0}};
  std::vector<int> stack{dst};
  while (!stack.empty()) {
    int x = stack.back();
    stack.pop_back();
    if (x == src)
      continue;
    for (int k = inBegin[x]; k < inBegin[x + 1]; ++k) {
      const Arc &a = inData[k];
      if (!allowed(a) || ds[a.u] < 0 || ds[a.u] + 1 != ds[x])
        continue;
      dag.push_back(inIds[k]);
      if (local.try_emplace(a.u, static_cast<int>(local.size())).second)
        stack.push_back(a.u);
    }
  }
  // Arc ids follow (link, dir): the order the max flow's paths depend on.
  std::sort(dag.begin(), dag.end());
  auto solve = [&](bool raw, std::vector<double> *perEdge) {
    FlowNet net(static_cast<int>(local.size()));
    for (size_t k = 0; k < dag.size(); ++k) {
      const Arc &a = arcs[dag[k]];
      const topo::Link &l = t.link(a.link);
      net.add(local.at(a.u), local.at(a.v),
              raw ? l.capacity(a.dir) : l.effectiveCapacity(a.dir),
              static_cast<int>(k));
    }
    double total = net.run(local.at(src), local.at(dst));
    if (perEdge) {
      perEdge->assign(dag.size(), 0);
      for (auto &vec : net.adj)
        for (auto &e : vec)
          if (e.orig >= 0)
            (*perEdge)[e.orig] = e.flow;
    }
    return total;
  };
  std::vector<double> perEdge;
  f.bandwidth = solve(false, &perEdge);
  f.rawBandwidth = solve(true, nullptr);
  spreadOverEqualPaths(dag, src, ds, f.bandwidth, perEdge);
  std::map<int, double> byRes;
  for (size_t k = 0; k < dag.size(); ++k) {
    if (perEdge[k] <= 0)
      continue;
    const Arc &a = arcs[dag[k]];
    byRes[resourceOf(a.link, a.dir)] += perEdge[k] / f.bandwidth;
  }
  f.res.assign(byRes.begin(), byRes.end());
  if (key && llvm::is_contained(dag, firstArc) &&
      llvm::is_contained(dag, lastArc)) {
    InnerFlow in;
    in.total = f.bandwidth;
    in.rawTotal = f.rawBandwidth;
    std::map<int, double> inner;
    for (size_t k = 0; k < dag.size(); ++k)
      if (perEdge[k] > 0 && dag[k] != firstArc && dag[k] != lastArc)
        inner[resourceOf(arcs[dag[k]].link, arcs[dag[k]].dir)] +=
            perEdge[k] / f.bandwidth;
    in.shares.assign(inner.begin(), inner.end());
    parts.inner = static_cast<int>(innerFlows.size());
    parts.firstRes = resourceOf(arcs[firstArc].link, arcs[firstArc].dir);
    parts.lastRes = resourceOf(arcs[lastArc].link, arcs[lastArc].dir);
    innerIds.emplace(*key, parts.inner);
    innerFlows.push_back(std::move(in));
  }
  return parts;
}

size_t LinkModel::InnerKeyHash::operator()(const InnerKey &k) const {
  size_t h = std::hash<int>()(k.from);
  auto mix = [&](size_t v) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  };
  mix(std::hash<int>()(k.to));
  mix(std::hash<uint32_t>()(k.mask));
  for (double d : {k.inCap, k.outCap, k.rawInCap, k.rawOutCap})
    mix(std::hash<uint64_t>()(d == 0 ? 0 : llvm::bit_cast<uint64_t>(d)));
  return h;
}

const PathFlow &LinkModel::rankFlow(int a, int b) {
  int n = topo->numRanks();
  assert(a >= 0 && b >= 0 && a < n && b < n && "rank out of range");
  uint64_t key = static_cast<uint64_t>(a) * static_cast<uint64_t>(n) + b;
  auto it = rankCache.find(key);
  if (it == rankCache.end())
    it = rankCache
             .emplace(key, deviceFlow(topo->rankDevice(a), topo->rankDevice(b)))
             .first;
  return it->second;
}

const PathFlow &LinkModel::viaFlow(int a, int outNic, int inNic, int b) {
  if (outNic < 0 && inNic < 0)
    return rankFlow(a, b);
  auto key = std::make_tuple(a, outNic, inNic, b);
  auto it = viaCache.find(key);
  if (it != viaCache.end())
    return it->second;
  std::vector<int> stops{topo->rankDevice(a)};
  if (outNic >= 0)
    stops.push_back(outNic);
  if (inNic >= 0)
    stops.push_back(inNic);
  stops.push_back(topo->rankDevice(b));
  PathFlow f;
  f.found = true;
  f.bandwidth = f.rawBandwidth = std::numeric_limits<double>::infinity();
  std::map<int, double> byRes;
  for (size_t i = 0; i + 1 < stops.size(); ++i) {
    PathFlow seg = deviceFlow(stops[i], stops[i + 1]);
    if (!seg.found) {
      f = PathFlow{};
      break;
    }
    f.bandwidth = std::min(f.bandwidth, seg.bandwidth);
    f.rawBandwidth = std::min(f.rawBandwidth, seg.rawBandwidth);
    f.latency += seg.latency;
    f.hops += seg.hops;
    for (auto [r, x] : seg.res)
      byRes[r] += x;
  }
  if (f.found)
    f.res.assign(byRes.begin(), byRes.end());
  return viaCache.emplace(key, std::move(f)).first->second;
}

double pipelinedTime(double m, int h, double latency, double bw, int *bestK) {
  if (bestK)
    *bestK = 1;
  if (h <= 0)
    return 0;
  double beta = bw > 0 && std::isfinite(bw) ? m / bw : 0;
  double alpha = latency / h;
  if (h == 1 || beta == 0)
    return h * alpha + beta;
  if (alpha <= 0) {
    // Infinitely fine pipelining: the store-and-forward delay vanishes.
    if (bestK)
      *bestK = 1 << 20;
    return beta;
  }
  double kc = std::sqrt((h - 1) * beta / alpha);
  auto f = [&](double k) { return (h + k - 1) * (alpha + beta / k); };
  double k1 = std::max(1.0, std::floor(kc)), k2 = std::max(1.0, std::ceil(kc));
  k1 = std::min(k1, double(1 << 20));
  k2 = std::min(k2, double(1 << 20));
  double best = f(k1);
  int k = static_cast<int>(k1);
  if (f(k2) < best) {
    best = f(k2);
    k = static_cast<int>(k2);
  }
  if (bestK)
    *bestK = k;
  return best;
}

double pipelinedLatency(double bytes, const PathFlow &f) {
  double beta = f.bandwidth > 0 && std::isfinite(f.bandwidth)
                    ? bytes / f.bandwidth
                    : 0;
  return std::max(0.0, pipelinedTime(bytes, f.hops, f.latency, f.bandwidth) -
                           beta);
}

double messageLatency(const PathFlow &f) {
  // Switches forward cut-through (the runtime model's rule, WhatIf.md): the
  // head crosses every hop's latency, the bytes stream behind it.
  return f.latency;
}

double busFactor(ir::Collective c, int n) {
  if (n <= 0)
    return 1;
  switch (c) {
  case ir::Collective::AllReduce:
    return 2.0 * (n - 1) / n;
  case ir::Collective::AllGather:
  case ir::Collective::ReduceScatter:
    return double(n - 1) / n;
  default:
    return 1;
  }
}

int ringSteps(ir::Collective c, int n) {
  return c == ir::Collective::AllReduce ? 2 * (n - 1) : n - 1;
}

namespace {

/// Fills bandwidth time, bottleneck and links from per-resource bytes.
void finishReport(CostReport &r, const std::vector<double> &bytesPerRes,
                  const LinkModel &m, ir::Collective c, int n) {
  r.bandwidthTime = r.rawBandwidthTime = 0;
  for (int res = 0; res < m.numResources(); ++res) {
    double b = bytesPerRes[res];
    if (b <= 0)
      continue;
    LinkLoad l{res, b, m.capacity(res), m.rawCapacity(res)};
    r.links.push_back(l);
    double tt = l.time();
    if (tt > r.bandwidthTime || r.bottleneck < 0) {
      r.bandwidthTime = tt;
      r.bottleneck = res;
    }
    if (l.rawCapacity > 0)
      r.rawBandwidthTime = std::max(r.rawBandwidthTime, b / l.rawCapacity);
  }
  if (r.bottleneck >= 0) {
    r.bottleneckName = m.resourceName(r.bottleneck);
    r.bottleneckBytes = bytesPerRes[r.bottleneck];
    r.bottleneckCapacity = m.capacity(r.bottleneck);
    r.bottleneckRawCapacity = m.rawCapacity(r.bottleneck);
  }
  r.time = r.bandwidthTime + r.latencyTime + r.computeTime;
  r.algbw = r.time > 0 ? r.bytes / r.time : 0;
  r.busbw = r.algbw * busFactor(c, n);
}

llvm::Error noRoute(const topo::Topology &t, int a, int b) {
  return makeUserError(llvm::formatv("no route from rank {0} ({1}) to rank "
                                     "{2} ({3})",
                                     a, t.rankName(a), b, t.rankName(b)));
}

} // namespace

llvm::Expected<CostReport> estimateSchedule(const ir::Schedule &s,
                                            LinkModel &m, double bytes) {
  const topo::Topology &t = m.topology();
  if (s.numRanks != t.numRanks())
    return makeUserError(llvm::formatv(
        "schedule has {0} ranks but topology '{1}' has {2}", s.numRanks,
        t.name(), t.numRanks()));
  if (s.chunksPerLoop <= 0)
    return makeUserError("schedule has no chunks (chunksPerLoop = 0)");
  CostReport r;
  r.bytes = bytes;
  double unit = bytes / s.chunksPerLoop;
  std::vector<ir::MsgEnds> ends = ir::indexMessages(s);
  std::vector<double> load(m.numResources(), 0);
  std::vector<double> msgLat(ends.size(), 0);
  for (size_t id = 0; id < ends.size(); ++id) {
    const ir::MsgEnds &e = ends[id];
    if (e.sender < 0 || e.receiver < 0)
      continue;
    const ir::Op &op = s.ranks[e.sender].ops[e.sendOp];
    double b = op.wireCount() * unit;
    if (e.sender == e.receiver)
      continue;
    const PathFlow &f = m.rankFlow(e.sender, e.receiver);
    if (!f.found)
      return noRoute(t, e.sender, e.receiver);
    for (auto [res, x] : f.res)
      load[res] += b * x;
    msgLat[id] = messageLatency(f);
  }
  // Longest path over ops (Kahn's order); node ids are prefix sums.
  std::vector<size_t> base(s.ranks.size() + 1, 0);
  for (size_t q = 0; q < s.ranks.size(); ++q)
    base[q + 1] = base[q] + s.ranks[q].ops.size();
  size_t total = base.back();
  std::vector<std::vector<std::pair<size_t, double>>> succ(total);
  std::vector<int> indeg(total, 0);
  auto edge = [&](size_t a, size_t b, double w) {
    succ[a].push_back({b, w});
    ++indeg[b];
  };
  bool programOrder = s.stage >= ir::Stage::ThreadblocksAssigned;
  for (size_t q = 0; q < s.ranks.size(); ++q) {
    const auto &ops = s.ranks[q].ops;
    std::map<int, size_t> lastInTb;
    for (size_t i = 0; i < ops.size(); ++i) {
      for (ir::OpId d : ops[i].deps)
        if (d >= 0 && static_cast<size_t>(d) < ops.size())
          edge(base[q] + d, base[q] + i, 0);
      if (programOrder && ops[i].threadblock >= 0) {
        auto it = lastInTb.find(ops[i].threadblock);
        if (it != lastInTb.end())
          edge(base[q] + it->second, base[q] + i, 0);
        lastInTb[ops[i].threadblock] = i;
      }
    }
  }
  for (size_t id = 0; id < ends.size(); ++id) {
    const ir::MsgEnds &e = ends[id];
    if (e.sender < 0 || e.receiver < 0)
      continue;
    edge(base[e.sender] + e.sendOp, base[e.receiver] + e.recvOp, msgLat[id]);
  }
  // Local work of each op (the simulator's ComputeModel charges).
  std::vector<double> memBw = rankMemoryBandwidths(t);
  std::vector<double> cost(total, 0);
  for (size_t q = 0; q < s.ranks.size(); ++q)
    for (size_t i = 0; i < s.ranks[q].ops.size(); ++i)
      cost[base[q] + i] = computeTime(s.ranks[q].ops[i], unit, memBw[q]);
  // dist: when an op can start; comp: the compute share of that path.
  std::vector<double> dist(total, 0), comp(total, 0);
  std::deque<size_t> ready;
  for (size_t v = 0; v < total; ++v)
    if (indeg[v] == 0)
      ready.push_back(v);
  size_t seen = 0;
  double longest = 0, longestComp = 0;
  while (!ready.empty()) {
    size_t v = ready.front();
    ready.pop_front();
    ++seen;
    double end = dist[v] + cost[v], endComp = comp[v] + cost[v];
    if (end > longest) {
      longest = end;
      longestComp = endComp;
    }
    for (auto [w, lat] : succ[v]) {
      if (end + lat > dist[w]) {
        dist[w] = end + lat;
        comp[w] = endComp;
      }
      if (--indeg[w] == 0)
        ready.push_back(w);
    }
  }
  if (seen != total)
    return makeUserError("schedule has a dependency cycle; run the verifier");
  r.computeTime = longestComp;
  r.latencyTime = longest - longestComp;
  finishReport(r, load, m, s.collective, s.numRanks);
  return r;
}

const PathFlow &hopFlow(const RingChannel &ring, size_t i, LinkModel &m) {
  size_t n = ring.order.size();
  int a = ring.order[i], b = ring.order[(i + 1) % n];
  if (i < ring.nics.size() && ring.nics[i].isSet())
    return m.viaFlow(a, ring.nics[i].out, ring.nics[i].in, b);
  return m.rankFlow(a, b);
}

RingBottleneck ringBottleneck(const RingChannel &ring, LinkModel &m) {
  RingBottleneck rb;
  std::map<int, double> load;
  for (size_t i = 0; i < ring.order.size(); ++i) {
    const PathFlow &f = hopFlow(ring, i, m);
    if (!f.found) {
      rb.routed = false;
      return rb;
    }
    for (auto [res, x] : f.res)
      load[res] += x;
  }
  rb.bandwidth = std::numeric_limits<double>::infinity();
  for (auto [res, x] : load) {
    double bw = m.capacity(res) / x;
    if (bw < rb.bandwidth) {
      rb.bandwidth = bw;
      rb.resource = res;
    }
  }
  return rb;
}

double windowLatency(llvm::ArrayRef<double> lat, int steps) {
  size_t n = lat.size();
  if (n == 0 || steps <= 0)
    return 0;
  double best = 0;
  for (size_t s = 0; s < n; ++s) {
    double sum = 0;
    for (int k = 0; k < steps; ++k)
      sum += lat[(s + k) % n];
    best = std::max(best, sum);
  }
  return best;
}

llvm::Expected<CostReport> estimateRings(llvm::ArrayRef<RingChannel> rings,
                                         ir::Collective c, double bytes,
                                         LinkModel &m) {
  const topo::Topology &t = m.topology();
  int n = t.numRanks();
  CostReport r;
  r.bytes = bytes;
  std::vector<double> load(m.numResources(), 0);
  int steps = ringSteps(c, n);
  // Local work (ComputeModel.h): the chain of each piece reduces it n-1
  // times (allreduce, reducescatter), 3 bytes of memory traffic per byte,
  // on the slowest GPU.
  double mem = slowestMemoryBandwidth(t);
  bool reduces = c == ir::Collective::AllReduce ||
                 c == ir::Collective::ReduceScatter;
  for (const RingChannel &ring : rings) {
    if (static_cast<int>(ring.order.size()) != n)
      return makeUserError(llvm::formatv(
          "ring has {0} ranks but the topology has {1}", ring.order.size(), n));
    double msg = ring.share * bytes / n;
    std::vector<double> lat(n, 0);
    for (int i = 0; i < n; ++i) {
      const PathFlow &f = hopFlow(ring, i, m);
      if (!f.found)
        return noRoute(t, ring.order[i], ring.order[(i + 1) % n]);
      for (auto [res, x] : f.res)
        load[res] += steps * msg * x;
      lat[i] = messageLatency(f);
    }
    if (ring.share > 0)
      r.latencyTime = std::max(r.latencyTime, windowLatency(lat, steps));
    if (reduces && mem > 0)
      r.computeTime = std::max(r.computeTime, (n - 1) * 3 * msg / mem);
  }
  finishReport(r, load, m, c, n);
  return r;
}

} // namespace topocc::analysis
