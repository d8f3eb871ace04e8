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

/// A segment's parts: the resources at its two ends, and the resources
/// between them (`inner`, an id into RouteSet::inner), shared by every
/// segment with the same ones (the switch-to-switch part of a NIC-to-NIC
/// flow). Only which resources a segment uses matters here, not their
/// shares: a NIC-to-NIC flow through a fat tree's spines touches every
/// spine, and millions of NIC pairs share a few thousand inner parts.
struct Segment {
  int from = -1, to = -1;
  std::vector<int> ends;
  int inner = -1;
};

/// A segment's hops leaving its first device (`leaving`) or entering its
/// last one.
std::vector<int> segmentHops(const Segment &seg, const LinkModel &m,
                             bool leaving) {
  std::vector<int> out;
  for (int res : seg.ends) {
    auto [from, to] = m.resourceEnds(res);
    if (leaving ? from == seg.from : to == seg.to)
      out.push_back(res);
  }
  return out;
}

/// Which resources the routes of every rank pair use, and which of them
/// follow one another (the routing of the simulator: Simulator.cpp,
/// Sim::routeFor). A route is a sequence of device-to-device segments
/// (LinkModel::deviceFlow): a GPU to its NIC, that NIC to the other end's
/// NIC, that NIC to the GPU; or one segment within a node or without
/// NCCL's rule.
///
/// Collecting the routes pair by pair costs ranks^2 flows (16.7 million
/// at 4096 GPUs), so the common case is collected by its parts. A rank is
/// regular when it has a node and, on every channel, a NIC with segments
/// both ways. For two regular ranks on different nodes, on channel c, the
/// route is stub(a, c) + seg(nic(a, c), nic(b, c)) + stub(b, c). Which
/// hops follow one another then depends on:
///   - per NIC pair (x, y) used on some channel: its segment's own hops,
///     its first hops (leaving x) and its last hops (entering y);
///   - per stub: its own hops, and the union over the NIC pairs it meets
///     of their first (last) hops, which follow (precede) the stub's.
/// That union is exact: the joins of a stub with its pairs are the stub's
/// last hops times each pair's first hops, for every pair of its channel.
/// A NIC pair whose flow is LinkModel's parts (one first arc, a shared
/// inner flow, one last arc) is recorded as a head half (first arc, inner)
/// and a tail half (inner, last arc), in bit sets: about 100 ns a pair.
/// Every other pair, and every pair involving an irregular rank or within a
/// node, is routed as before, one rank pair and channel at a time.
class RouteSet {
public:
  RouteSet(const topo::Topology &t, LinkModel &m, bool ncclNetRule)
      : t(t), m(m) {
    if (ncclNetRule)
      net.emplace(t);
  }

  /// A route: up to three segment ids, -1 after the last.
  using Route = std::array<int, 3>;
  /// A stub (GPU -> NIC or NIC -> GPU segment) of a rank on a channel, and
  /// the hops of the NIC pairs that it meets: first hops after a sending
  /// stub, last hops before a receiving one.
  struct Stub {
    int rank = -1, seg = -1;
    bool sending = true;
    std::vector<int> across;
  };
  /// A keyed NIC pair's half: (end resource, RouteSet inner id or -1).
  struct Half {
    int end, inner;
    bool head;
  };

  void collect();

  const Segment &segment(int id) const { return segs[id]; }
  int numSegments() const { return static_cast<int>(segs.size()); }
  const std::vector<int> &inner(int id) const { return inners[id]; }
  int numInners() const { return static_cast<int>(inners.size()); }
  /// Every distinct route collected pair by pair, sorted.
  const std::vector<Route> &all() const { return routes; }
  const std::vector<Stub> &stubs() const { return stubList; }
  const std::vector<Half> &halves() const { return halfList; }
  /// (first hop, last hop) of keyed NIC pairs whose two ends meet,
  /// distinct.
  const std::vector<std::pair<int, int>> &endJoins() const {
    return endJoinList;
  }
  size_t pairsSwept() const { return swept; }

private:
  void dedupe() {
    llvm::sort(routes);
    routes.erase(std::unique(routes.begin(), routes.end()), routes.end());
    distinct = routes.size();
  }
  void keepDistinct() {
    if (routes.size() > 2 * distinct + (1u << 16))
      dedupe();
  }

  /// The segment of a flow from device `from` to device `to`, -1 without
  /// one (no route, or a flow over no resource).
  int addSegment(int from, int to, const PathFlow &f) {
    if (!f.found || f.res.empty())
      return -1;
    Segment seg{from, to, {}, -1};
    std::vector<int> rest;
    for (auto [res, share] : f.res) {
      auto [a, b] = m.resourceEnds(res);
      (a == from || b == to || a == to || b == from ? seg.ends : rest)
          .push_back(res);
    }
    seg.inner = internInner(std::move(rest));
    seg.ends.shrink_to_fit();
    segs.push_back(std::move(seg));
    return static_cast<int>(segs.size()) - 1;
  }

  int internInner(std::vector<int> rest) {
    if (rest.empty())
      return -1;
    auto [at, added] =
        innerIndex.try_emplace(rest, static_cast<int>(inners.size()));
    if (added)
      inners.push_back(std::move(rest));
    return at->second;
  }

  /// Segment id of device `from` to device `to`, -1 without a route;
  /// `flow` gives the pair's flow the first time it is asked for.
  template <typename FlowFn> int segmentId(int from, int to, FlowFn &&flow) {
    uint64_t key =
        static_cast<uint64_t>(from) << 32 | static_cast<uint32_t>(to);
    auto [it, fresh] = index.try_emplace(key, -1);
    if (fresh)
      it->second = addSegment(from, to, flow());
    return it->second;
  }
  int segmentId(int from, int to) {
    return segmentId(from, to, [&] { return m.deviceFlow(from, to); });
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

  /// The channels after which every rank's NIC repeats, or 0 when that is
  /// more than kMaxSweepChannels (then every pair is routed by itself).
  int sweepChannels() const;
  /// Regular ranks (see the class comment).
  std::vector<char> regularRanks(int channels);
  /// Advances `progress` by the regular ranks, as their channel-0 NICs
  /// are swept.
  void sweep(int channels, const std::vector<char> &regular,
             ProgressTask &progress);

  static constexpr int kMaxSweepChannels = 64;

  const topo::Topology &t;
  LinkModel &m;
  std::optional<NcclNetRoutes> net;
  std::unordered_map<uint64_t, int> index; ///< from << 32 | to
  std::vector<Segment> segs;
  std::vector<std::vector<int>> inners;
  std::map<std::vector<int>, int> innerIndex;
  std::vector<Route> routes;
  size_t distinct = 0; ///< routes[0, distinct) are sorted and distinct
  std::vector<Stub> stubList;
  std::vector<Half> halfList;
  std::vector<std::pair<int, int>> endJoinList;
  size_t swept = 0;
};

int RouteSet::sweepChannels() const {
  int channels = 1;
  for (int r = 0; r < t.numRanks(); ++r) {
    channels = std::lcm(channels, net->period(r));
    if (channels > kMaxSweepChannels)
      return 0;
  }
  return channels;
}

std::vector<char> RouteSet::regularRanks(int channels) {
  std::vector<char> regular(t.numRanks(), 0);
  for (int r = 0; r < t.numRanks(); ++r) {
    if (t.nodeOfRank(r) < 0)
      continue;
    const int g = t.rankDevice(r);
    bool ok = true;
    for (int c = 0; c < channels && ok; ++c) {
      const int nic = net->nicFor(r, c);
      ok = nic >= 0 && segmentId(g, nic) >= 0 && segmentId(nic, g) >= 0;
    }
    regular[r] = ok;
  }
  return regular;
}

void RouteSet::collect() {
  const int n = t.numRanks();
  const int channels = net ? sweepChannels() : 0;
  if (channels == 0) {
    ProgressTask progress("runtime routes", n, "ranks");
    for (int a = 0; a < n && !progressStopRequested(); ++a) {
      for (int b = 0; b < n; ++b)
        if (a != b)
          collectPair(a, b);
      progress.advance();
      keepDistinct(); // each rank adds its own
    }
    dedupe();
    return;
  }
  ProgressTask progress("runtime routes", n, "ranks");
  const std::vector<char> regular = regularRanks(channels);
  std::vector<int> irregular;
  std::map<int, std::vector<int>> byNode;
  for (int r = 0; r < n; ++r) {
    if (!regular[r])
      irregular.push_back(r);
    else
      byNode[t.nodeOfRank(r)].push_back(r);
  }
  // The pairs routed one by one: an irregular rank with every rank, a
  // regular one with the regular ranks of its node.
  for (int a : irregular) {
    if (progressStopRequested())
      return;
    for (int b = 0; b < n; ++b)
      if (a != b) {
        collectPair(a, b);
        if (regular[b]) // an irregular b routes its own pairs
          collectPair(b, a);
      }
    keepDistinct();
  }
  for (const auto &[node, ranks] : byNode) {
    for (int a : ranks)
      for (int b : ranks)
        if (a != b)
          collectPair(a, b);
    keepDistinct();
  }
  progress.advance(irregular.size());
  sweep(channels, regular, progress);
  dedupe();
}

void RouteSet::sweep(int channels, const std::vector<char> &regular,
                     ProgressTask &progress) {
  const int n = t.numRanks();
  const int nd = static_cast<int>(t.devices().size());
  // Per channel: the NICs regular ranks use, and the ranks on each.
  struct ChannelNics {
    std::vector<int> nics;               ///< sorted
    std::vector<std::vector<int>> ranks; ///< per nics[i]
    std::vector<int> slot;               ///< device -> index in nics, -1
    std::vector<std::vector<int>> first; ///< per nics[i]: first hops out
    std::vector<std::vector<int>> last;  ///< per nics[i]: last hops in
  };
  std::vector<ChannelNics> chan(channels);
  std::map<int, std::vector<int>> channelsOfNic; // nic -> channels using it
  for (int c = 0; c < channels; ++c) {
    ChannelNics &ch = chan[c];
    ch.slot.assign(nd, -1);
    std::map<int, std::vector<int>> ranksOf;
    for (int r = 0; r < n; ++r)
      if (regular[r])
        ranksOf[net->nicFor(r, c)].push_back(r);
    for (auto &[nic, ranks] : ranksOf) {
      ch.slot[nic] = static_cast<int>(ch.nics.size());
      ch.nics.push_back(nic);
      ch.ranks.push_back(std::move(ranks));
      channelsOfNic[nic].push_back(c);
    }
    ch.first.resize(ch.nics.size());
    ch.last.resize(ch.nics.size());
  }
  auto addTo = [](std::vector<int> &set, int res) {
    if (!llvm::is_contained(set, res))
      set.push_back(res);
  };

  // Per LinkModel inner flow: its RouteSet inner id, and the devices its
  // resources touch (a pair whose end is one of them classifies the
  // resources differently, so it is routed by itself).
  struct InnerInfo {
    bool known = false;
    int id = -1;
    std::vector<int> devices; ///< sorted
  };
  std::vector<InnerInfo> innerInfo;
  auto infoOf = [&](int lmInner) -> const InnerInfo & {
    if (static_cast<size_t>(lmInner) >= innerInfo.size())
      innerInfo.resize(lmInner + 1);
    InnerInfo &info = innerInfo[lmInner];
    if (!info.known) {
      info.known = true;
      std::vector<int> rest;
      for (auto [res, share] : m.innerShares(lmInner)) {
        rest.push_back(res);
        auto [a, b] = m.resourceEnds(res);
        info.devices.push_back(a);
        info.devices.push_back(b);
      }
      llvm::sort(info.devices);
      info.devices.erase(std::unique(info.devices.begin(), info.devices.end()),
                         info.devices.end());
      info.id = internInner(std::move(rest));
    }
    return info;
  };
  // Halves seen: per inner id + 1, a bit per end resource (numbered as
  // first seen). A sweep from one NIC then reads a few hundred inner
  // parts' bits in the order of its destinations, not a bit set per
  // destination (most of the sweep's time was those cache misses).
  std::vector<int> endIndex(m.numResources(), -1);
  int numEnds = 0;
  std::vector<std::vector<uint64_t>> headSeen, tailSeen;
  auto firstSight = [&](std::vector<std::vector<uint64_t>> &seen, int end,
                        int inner) {
    int &e = endIndex[end];
    if (e < 0)
      e = numEnds++;
    const size_t row = static_cast<size_t>(inner + 1);
    if (seen.size() <= row)
      seen.resize(row + 1);
    std::vector<uint64_t> &bits = seen[row];
    if (bits.size() <= static_cast<size_t>(e) / 64)
      bits.resize(static_cast<size_t>(e) / 64 + 1, 0);
    uint64_t &word = bits[e / 64];
    const uint64_t mask = uint64_t(1) << (e % 64);
    if (word & mask)
      return false;
    word |= mask;
    return true;
  };
  std::set<std::pair<int, int>> endJoined;

  // What a NIC pair's segment gives, per destination of the current source.
  struct PairHops {
    int stamp = -1;
    bool routed = false;
    std::vector<int> first, last;
  };
  std::vector<PairHops> pair(nd);
  std::vector<int> nodeOf(nd);
  for (int d = 0; d < nd; ++d)
    nodeOf[d] = t.device(d).nodeIndex;
  std::vector<std::pair<int, int>> missing; // (x, y) without a segment
  for (const auto &[x, xChannels] : channelsOfNic) {
    if (progressStopRequested())
      return;
    const int nodeX = nodeOf[x];
    for (int c : xChannels) {
      ChannelNics &ch = chan[c];
      const int sx = ch.slot[x];
      for (size_t sy = 0; sy < ch.nics.size(); ++sy) {
        const int y = ch.nics[sy];
        if (nodeOf[y] == nodeX)
          continue;
        PairHops &p = pair[y];
        if (p.stamp != x) {
          p.stamp = x;
          p.first.clear();
          p.last.clear();
          p.routed = false;
          ++swept;
          LinkModel::FlowParts parts = m.deviceFlowParts(x, y);
          bool keyed =
              parts.inner >= 0 && parts.flow.found && parts.flow.bandwidth > 0;
          const InnerInfo *info = keyed ? &infoOf(parts.inner) : nullptr;
          if (keyed && (std::binary_search(info->devices.begin(),
                                           info->devices.end(), x) ||
                        std::binary_search(info->devices.begin(),
                                           info->devices.end(), y)))
            keyed = false;
          if (keyed) {
            const int f = parts.firstRes, l = parts.lastRes;
            p.routed = true;
            p.first.push_back(f);
            p.last.push_back(l);
            if (firstSight(headSeen, f, info->id))
              halfList.push_back({f, info->id, true});
            if (firstSight(tailSeen, l, info->id))
              halfList.push_back({l, info->id, false});
            // The two ends meet: one hop follows the other, as a
            // segment's ends do. Ends that meet have no inner part
            // between them (all paths are the two arcs), so only pairs
            // without one need the look at the links.
            if (info->id < 0 &&
                m.resourceEnds(f).second == m.resourceEnds(l).first &&
                endJoined.insert({f, l}).second)
              endJoinList.push_back({f, l});
          } else {
            const int id =
                segmentId(x, y, [&] { return m.flowOf(std::move(parts)); });
            if (id >= 0) {
              p.routed = true;
              p.first = segmentHops(segs[id], m, true);
              p.last = segmentHops(segs[id], m, false);
              routes.push_back({id, -1, -1}); // its own hops
            }
          }
          if (!p.routed)
            missing.push_back({x, y});
        }
        if (!p.routed)
          continue;
        for (int res : p.first)
          addTo(ch.first[sx], res);
        for (int res : p.last)
          addTo(ch.last[sy], res);
      }
    }
    if (chan[0].slot[x] >= 0)
      progress.advance(chan[0].ranks[chan[0].slot[x]].size());
    keepDistinct();
  }
  // A pair of NICs without a segment: its ranks' messages route freely.
  llvm::sort(missing);
  missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
  for (auto [x, y] : missing)
    for (int c : channelsOfNic[x]) {
      ChannelNics &ch = chan[c];
      if (ch.slot[y] < 0)
        continue;
      for (int a : ch.ranks[ch.slot[x]])
        for (int b : ch.ranks[ch.slot[y]])
          addDirect(t.rankDevice(a), t.rankDevice(b));
      keepDistinct();
    }
  // The stubs that meet at least one routed pair.
  for (int c = 0; c < channels; ++c) {
    ChannelNics &ch = chan[c];
    for (size_t i = 0; i < ch.nics.size(); ++i)
      for (int r : ch.ranks[i]) {
        const int g = t.rankDevice(r), nic = ch.nics[i];
        if (!ch.first[i].empty())
          stubList.push_back({r, segmentId(g, nic), true, ch.first[i]});
        if (!ch.last[i].empty())
          stubList.push_back({r, segmentId(nic, g), false, ch.last[i]});
      }
  }
}

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
  if (progressStopRequested())
    return makeUserError("the realizable bound was stopped before its end");

  // Vertices: ranks, then in(r), out(r) per used resource r, numbered in
  // resource order at the end. Arcs are collected as (from, to) keys over
  // ranks and provisional resource vertices n + 2r (in), n + 2r + 1 (out).
  const int64_t base = n;
  auto inOf = [&](int res) { return base + 2 * static_cast<int64_t>(res); };
  auto key = [](int64_t from, int64_t to) {
    return static_cast<uint64_t>(from) << 32 | static_cast<uint32_t>(to);
  };
  // Resources with vertices (every resource an arc names), and those
  // with their in -> out arc (every hop of a route).
  std::vector<char> used(m.numResources(), 0), hop(m.numResources(), 0);
  std::vector<uint64_t> arcKeys;
  auto hopArc = [&](int res) {
    used[res] = 1;
    if (!hop[res]) {
      hop[res] = 1;
      arcKeys.push_back(key(inOf(res), inOf(res) + 1));
    }
  };
  // Joins and rank arcs: repeating one changes nothing, so each is added
  // once.
  std::unordered_set<uint64_t> joined, rankArcs;
  auto joinOnce = [&](int r1, int r2) { // out(r1) -> in(r2)
    uint64_t k = key(inOf(r1) + 1, inOf(r2));
    if (joined.insert(k).second) {
      used[r1] = used[r2] = 1;
      arcKeys.push_back(k);
    }
  };
  auto rankArc = [&](int rank, int res, bool sending) {
    used[res] = 1;
    uint64_t k = sending ? key(rank, inOf(res)) : key(inOf(res) + 1, rank);
    if (rankArcs.insert(k).second)
      arcKeys.push_back(k);
  };

  // Per segment: done (its hops and joins added), and its hops leaving its
  // first device and entering its last one.
  const int numSegs = routes.numSegments();
  std::vector<char> segmentsDone(numSegs, 0), hopsKnown(numSegs, 0);
  std::vector<std::vector<int>> firstHops(numSegs), lastHops(numSegs);
  auto hopsOf = [&](int seg) {
    if (!hopsKnown[seg]) {
      hopsKnown[seg] = 1;
      firstHops[seg] = segmentHops(routes.segment(seg), m, true);
      lastHops[seg] = segmentHops(routes.segment(seg), m, false);
    }
  };
  // Per inner part: its hops and the joins of its consecutive hops, once;
  // its resources by the device they enter and leave, as interned lists
  // (many inner parts leave a leaf switch over the same spine links).
  struct InnerHops {
    bool done = false;
    std::unordered_map<int, int> entering, leaving; ///< device -> list id
  };
  std::vector<InnerHops> innerAt(routes.numInners());
  std::map<std::vector<int>, int> listIds;
  std::vector<std::vector<int>> lists;
  auto intern = [&](std::vector<int> list) {
    auto [at, added] =
        listIds.try_emplace(list, static_cast<int>(lists.size()));
    if (added)
      lists.push_back(std::move(list));
    return at->second;
  };
  auto addInner = [&](int in) {
    InnerHops &h = innerAt[in];
    if (h.done)
      return;
    h.done = true;
    std::map<int, std::vector<int>> entering, leaving;
    for (int res : routes.inner(in)) {
      hopArc(res);
      auto [a, b] = m.resourceEnds(res);
      leaving[a].push_back(res);
      entering[b].push_back(res);
    }
    for (auto &[device, into] : entering) {
      auto out = leaving.find(device);
      if (out != leaving.end())
        for (int r1 : into)
          for (int r2 : out->second)
            joinOnce(r1, r2);
    }
    for (auto &[device, list] : entering)
      h.entering[device] = intern(std::move(list));
    for (auto &[device, list] : leaving)
      h.leaving[device] = intern(std::move(list));
  };
  // An end hop joined to an inner part's hops at a device, once per
  // (end hop, interned list, side).
  std::unordered_set<uint64_t> endJoined; // res << 32 | list << 1 | side
  auto joinEndToInner = [&](int res, int in, int device, bool intoInner) {
    const auto &byDevice =
        intoInner ? innerAt[in].leaving : innerAt[in].entering;
    auto list = byDevice.find(device);
    if (list == byDevice.end() ||
        !endJoined
             .insert(static_cast<uint64_t>(res) << 32 |
                     static_cast<uint64_t>(list->second) << 1 | intoInner)
             .second)
      return;
    for (int other : lists[list->second])
      intoInner ? joinOnce(res, other) : joinOnce(other, res);
  };
  auto addSegmentHops = [&](int seg) {
    if (segmentsDone[seg])
      return;
    segmentsDone[seg] = 1;
    const Segment &s = routes.segment(seg);
    // Consecutive hops of the segment meet at its inner devices.
    if (s.inner >= 0)
      addInner(s.inner);
    for (int res : s.ends)
      hopArc(res);
    for (int r1 : s.ends) {
      auto [a1, b1] = m.resourceEnds(r1);
      if (b1 == s.from || b1 == s.to)
        continue;
      for (int r2 : s.ends)
        if (m.resourceEnds(r2).first == b1)
          joinOnce(r1, r2);
    }
    if (s.inner >= 0)
      for (int r : s.ends) {
        auto [a, b] = m.resourceEnds(r);
        if (b != s.from && b != s.to)
          joinEndToInner(r, s.inner, b, true);
        if (a != s.from && a != s.to)
          joinEndToInner(r, s.inner, a, false);
      }
  };
  std::map<int, int> rankOfDevice;
  for (int r = 0; r < n; ++r)
    rankOfDevice[t.rankDevice(r)] = r;
  ProgressTask progress("realizable graph",
                        routes.all().size() + routes.stubs().size() +
                            routes.halves().size(),
                        "parts");
  for (const RouteSet::Route &route : routes.all()) {
    progress.advance();
    const size_t len = route[2] >= 0 ? 3 : route[1] >= 0 ? 2 : 1;
    for (size_t i = 0; i < len; ++i) {
      const int seg = route[i];
      hopsOf(seg);
      addSegmentHops(seg);
      if (i + 1 < len) {
        hopsOf(route[i + 1]);
        for (int r1 : lastHops[seg])
          for (int r2 : firstHops[route[i + 1]])
            joinOnce(r1, r2);
      }
    }
    // A NIC pair's segment of the sweep is listed alone for its own hops;
    // its ends are NICs, not ranks.
    auto rankA = rankOfDevice.find(routes.segment(route[0]).from);
    auto rankB = rankOfDevice.find(routes.segment(route[len - 1]).to);
    if (rankA == rankOfDevice.end() || rankB == rankOfDevice.end())
      continue;
    for (int r : firstHops[route[0]])
      rankArc(rankA->second, r, true);
    for (int r : lastHops[route[len - 1]])
      rankArc(rankB->second, r, false);
  }
  for (const RouteSet::Stub &stub : routes.stubs()) {
    progress.advance();
    hopsOf(stub.seg);
    addSegmentHops(stub.seg);
    if (stub.sending) {
      for (int r : firstHops[stub.seg])
        rankArc(stub.rank, r, true);
      for (int r1 : lastHops[stub.seg])
        for (int r2 : stub.across)
          joinOnce(r1, r2);
    } else {
      for (int r : lastHops[stub.seg])
        rankArc(stub.rank, r, false);
      for (int r1 : stub.across)
        for (int r2 : firstHops[stub.seg])
          joinOnce(r1, r2);
    }
  }
  for (const RouteSet::Half &half : routes.halves()) {
    progress.advance();
    hopArc(half.end);
    if (half.inner < 0)
      continue;
    addInner(half.inner);
    auto [a, b] = m.resourceEnds(half.end);
    if (half.head)
      joinEndToInner(half.end, half.inner, b, true);
    else
      joinEndToInner(half.end, half.inner, a, false);
  }
  for (auto [first, last] : routes.endJoins())
    joinOnce(first, last);

  // Number the resource vertices in resource order, then the arcs.
  BoundGraph g;
  for (int r = 0; r < n; ++r) {
    g.compute.push_back(r);
    g.names.push_back(t.rankName(r));
  }
  DiagnosticList diags;
  std::vector<int> vertexOf(m.numResources(), -1); // its in vertex
  std::vector<int64_t> capOf(m.numResources(), 0);
  for (int res = 0; res < m.numResources(); ++res) {
    if (!used[res])
      continue;
    vertexOf[res] = static_cast<int>(g.names.size());
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
      diags.add(t.diag(l.loc,
                       llvm::formatv("link {0}: capacity {1} bytes/s is not a "
                                     "whole number of bytes/s; the exact bound "
                                     "needs integral capacities",
                                     link, m.capacity(res))
                           .str()));
    capOf[res] = whole.value_or(1);
  }
  if (auto err = diags.takeError())
    return err;
  g.numVertices = static_cast<int>(g.names.size());
  // A provisional vertex: (resource, out?) or a rank.
  auto resolve = [&](int64_t v, int &res) {
    if (v < base) {
      res = -1;
      return static_cast<int>(v);
    }
    res = static_cast<int>((v - base) / 2);
    return vertexOf[res] + static_cast<int>((v - base) % 2);
  };
  g.arcs.reserve(arcKeys.size());
  for (uint64_t k : arcKeys) {
    int r1, r2;
    BoundGraph::Arc a;
    a.from = resolve(static_cast<int64_t>(k >> 32), r1);
    a.to = resolve(static_cast<int64_t>(k & 0xffffffffu), r2);
    int res = r1 < 0 ? r2 : r2 < 0 ? r1 : (capOf[r1] <= capOf[r2] ? r1 : r2);
    a.cap = capOf[res];
    a.link = res / 2;
    a.dir = res % 2;
    g.arcs.push_back(a);
  }
  llvm::sort(g.arcs, [](const BoundGraph::Arc &x, const BoundGraph::Arc &y) {
    return std::make_pair(x.from, x.to) < std::make_pair(y.from, y.to);
  });
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
