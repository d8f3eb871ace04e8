//===- compiler/algorithms/RingSearch.cpp - Bandwidth-aware ring orders ---===//
//
// A group search orders a set of ranks (all ranks, or one node's GPUs between
// a fixed entry and exit GPU) under the ring objective
//   time = steps * msg * max_res(load_res / cap_res) + latency,
// exactly (branch and bound: loads only grow along a partial ring, so the
// partial bottleneck plus the partial latency sum is a lower bound) or
// heuristically (greedy widest neighbour, then 2-opt and Or-opt moves). A
// hop's latency here is its route's store-and-forward fill
// (analysis::pipelinedLatency: more hops cost more), which keeps orders on
// direct links where the bottleneck lies elsewhere. Further rings are chosen
// greedily on the residual capacities and shares are set so that all rings
// finish together; single-node sets also come from the ring packing LP
// (RingPacking.h), and the candidate sets, their shares quantised, are
// compared by the cost model's time (estimateRings).
//
//===----------------------------------------------------------------------===//

#include "compiler/algorithms/RingSearch.h"

#include "compiler/algorithms/LocalSearch.h"
#include "compiler/algorithms/RingPacking.h"
#include "compiler/analysis/NetRoutes.h"
#include "ir/Target.h"

#include "support/Diagnostics.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <optional>

namespace topocc::algorithms {

using analysis::LinkModel;
using analysis::NicPair;
using analysis::PathFlow;
using analysis::RingChannel;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kRel = 1e-12; ///< strict improvement threshold
constexpr double kSpread = 1e-3; ///< weight of the load-spreading tie-break
/// Channels of an NCCL graph file's ring set with auto channels: NCCL's
/// search finds at most MAXCHANNELS / 2 rings (src/graph/search.cc) and
/// duplicates them.
constexpr int kNcclGraphChannels = 16;

/// Concatenates device-to-device flows (the fractions add up per resource).
PathFlow concat(llvm::ArrayRef<PathFlow> parts) {
  PathFlow f;
  f.found = true;
  f.bandwidth = f.rawBandwidth = kInf;
  std::map<int, double> byRes;
  for (const PathFlow &p : parts) {
    if (!p.found)
      return PathFlow{};
    f.bandwidth = std::min(f.bandwidth, p.bandwidth);
    f.rawBandwidth = std::min(f.rawBandwidth, p.rawBandwidth);
    f.latency += p.latency;
    f.hops += p.hops;
    for (auto [r, x] : p.res)
      byRes[r] += x;
  }
  f.res.assign(byRes.begin(), byRes.end());
  return f;
}

/// Orders a group of k ranks (group indices 0..k-1) into a cycle that starts
/// at `first` and, when `last` >= 0, ends at `last`, whose closing hop then
/// uses `closing` instead of the direct flow.
class GroupSearch {
public:
  GroupSearch(std::vector<const PathFlow *> flows, int k,
              const std::vector<double> &cap, double scale, double msg,
              int window, int first, int last, const PathFlow *closing)
      : flow(std::move(flows)), k(k), cap(cap), scale(scale), window(window),
        first(first), last(last), closing(closing) {
    lat.assign(static_cast<size_t>(k) * k, 0);
    for (int a = 0; a < k; ++a)
      for (int b = 0; b < k; ++b)
        if (a != b && flow[a * k + b]->found)
          lat[a * k + b] = analysis::pipelinedLatency(msg, *flow[a * k + b]);
    closingLat = closing ? analysis::pipelinedLatency(msg, *closing) : 0;
    load.assign(cap.size(), 0);
    scratch.assign(cap.size(), 0);
  }

  const PathFlow &hop(int a, int b) const {
    if (closing && a == last && b == first)
      return *closing;
    return *flow[a * k + b];
  }
  double hopLat(int a, int b) const {
    if (closing && a == last && b == first)
      return closingLat;
    return lat[a * k + b];
  }

  /// Objective of a full order (group indices); kInf when unroutable.
  double eval(const std::vector<int> &order) {
    ++evaluated;
    std::vector<double> lats(order.size());
    std::vector<int> touched;
    bool ok = true;
    for (size_t i = 0; i < order.size() && ok; ++i) {
      int a = order[i], b = order[(i + 1) % order.size()];
      const PathFlow &f = hop(a, b);
      if (!f.found) {
        ok = false;
        break;
      }
      for (auto [r, x] : f.res) {
        if (scratch[r] == 0)
          touched.push_back(r);
        scratch[r] += x;
      }
      lats[i] = hopLat(a, b);
    }
    double util = 0, spread = 0;
    for (int r : touched) {
      double u = utilOf(r, scratch[r]);
      util = std::max(util, u);
      spread += u * u;
      scratch[r] = 0;
    }
    if (!ok)
      return kInf;
    // With other channels' loads present, prefer spreading load among rings
    // of equal bottleneck (a small sum-of-squares term; >= 0, so the branch
    // and bound's lower bound stays valid).
    double tie = base ? kSpread * scale * spread : 0;
    return scale * util + analysis::windowLatency(lats, window) + tie;
  }

  /// Exact branch and bound; returns the best order (empty if none routes).
  std::vector<int> exact(uint64_t maxNodes, bool &complete) {
    best = kInf;
    bestOrder.clear();
    nodeBudget = maxNodes;
    complete = true;
    std::vector<int> order{first};
    std::vector<bool> used(k, false);
    used[first] = true;
    if (k == 1) {
      bestOrder = order;
      return bestOrder;
    }
    // Candidate order per rank: widest flow first, then index.
    cand.assign(k, {});
    for (int a = 0; a < k; ++a) {
      for (int b = 0; b < k; ++b)
        if (b != a)
          cand[a].push_back(b);
      std::stable_sort(cand[a].begin(), cand[a].end(), [&](int x, int y) {
        return hop(a, x).bandwidth > hop(a, y).bandwidth;
      });
    }
    std::vector<double> lats;
    dfs(order, used, 0.0, 0.0, lats);
    complete = nodeBudget > 0;
    return bestOrder;
  }

  /// Greedy widest neighbour plus 2-opt / Or-opt local search, started from
  /// `seeds` as well (each a full order); returns the best order found.
  std::vector<int> heuristic(const std::vector<std::vector<int>> &seeds,
                             bool improve = true) {
    std::vector<std::vector<int>> starts = seeds;
    starts.push_back(greedy());
    // Where few pairs have routes (a torus or mesh, whose GPUs relay), the
    // greedy order may use an unrouted hop: unless a seed routes every hop,
    // search a Hamiltonian cycle of the routed pairs as one more start.
    if (std::none_of(
            starts.begin(), starts.end(),
            [&](const std::vector<int> &o) { return routesEveryHop(o); }))
      if (std::vector<int> h = routedCycle(kCycleSearchNodes); !h.empty())
        starts.push_back(std::move(h));
    std::vector<int> bestO;
    double bestT = kInf;
    for (std::vector<int> o : starts) {
      double t = improve ? localSearch(o) : eval(o);
      if (t < bestT * (1 - kRel) || bestO.empty()) {
        bestT = t;
        bestO = o;
      }
    }
    best = bestT;
    if (bestT == kInf)
      return {}; // no start routes every hop
    return bestO;
  }

  /// Whether every hop of the cycle `order` has a route.
  bool routesEveryHop(const std::vector<int> &order) const {
    for (size_t i = 0; i < order.size(); ++i)
      if (!hop(order[i], order[(i + 1) % order.size()]).found)
        return false;
    return true;
  }

  /// Node budget of routedCycle.
  static constexpr uint64_t kCycleSearchNodes = 2'000'000;

  /// A cycle through every rank of the group over routed pairs only (first
  /// rank first, the fixed last rank last), by depth-first search in
  /// Warnsdorff's order: the next rank is the one with the fewest unvisited
  /// routed neighbours (ties: wider hop, then index). Empty when none was
  /// found within `budget` search nodes.
  std::vector<int> routedCycle(uint64_t budget) {
    std::vector<std::vector<int>> nb(k);
    for (int a = 0; a < k; ++a)
      for (int b = 0; b < k; ++b)
        if (a != b && hop(a, b).found)
          nb[a].push_back(b);
    std::vector<int> order{first};
    std::vector<bool> used(k, false);
    used[first] = true;
    auto freeDegree = [&](int x) {
      int d = 0;
      for (int y : nb[x])
        d += !used[y];
      return d;
    };
    // Iterative DFS: per depth, the sorted candidates and the next index.
    std::vector<std::vector<int>> cands(k);
    std::vector<size_t> next(k, 0);
    auto expand = [&](int depth) {
      int cur = order[depth];
      bool lastSlot = depth + 1 == k - 1;
      std::vector<int> c;
      for (int x : nb[cur])
        if (!used[x] && (last < 0 || (x == last) == lastSlot))
          c.push_back(x);
      std::vector<int> deg(c.size());
      for (size_t i = 0; i < c.size(); ++i)
        deg[i] = freeDegree(c[i]);
      std::vector<size_t> idx(c.size());
      std::iota(idx.begin(), idx.end(), 0);
      std::stable_sort(idx.begin(), idx.end(), [&](size_t x, size_t y) {
        if (deg[x] != deg[y])
          return deg[x] < deg[y];
        double bx = hop(cur, c[x]).bandwidth, by = hop(cur, c[y]).bandwidth;
        if (bx != by)
          return bx > by;
        return c[x] < c[y];
      });
      cands[depth].clear();
      for (size_t i : idx)
        cands[depth].push_back(c[i]);
      next[depth] = 0;
    };
    if (k == 1)
      return order;
    expand(0);
    int depth = 0;
    while (depth >= 0 && budget > 0) {
      --budget;
      ++evaluated;
      if (next[depth] >= cands[depth].size()) { // backtrack
        if (depth == 0)
          break;
        used[order.back()] = false;
        order.pop_back();
        --depth;
        continue;
      }
      int x = cands[depth][next[depth]++];
      used[x] = true;
      order.push_back(x);
      if (static_cast<int>(order.size()) == k) {
        if (hop(x, first).found)
          return order;
        used[x] = false;
        order.pop_back();
        continue;
      }
      ++depth;
      expand(depth);
    }
    return {};
  }

  double bestTime() const { return best; }
  /// Loads (messages per step) already placed by other channels; they count
  /// on every resource this ring touches.
  const std::vector<double> *base = nullptr;
  uint64_t evaluated = 0;

private:
  double utilOf(int r, double l) const {
    if (l <= 0)
      return 0;
    if (base)
      l += (*base)[r];
    return cap[r] > 1e-9 ? l / cap[r] : kInf;
  }

  void dfs(std::vector<int> &order, std::vector<bool> &used, double util,
           double latSum, std::vector<double> &lats) {
    if (nodeBudget == 0)
      return;
    --nodeBudget;
    ++evaluated;
    int cur = order.back();
    if (static_cast<int>(order.size()) == k) {
      const PathFlow &f = hop(cur, first);
      if (!f.found)
        return;
      double t = eval(order);
      if (t < best * (1 - kRel)) {
        best = t;
        bestOrder = order;
      }
      return;
    }
    bool lastSlot = static_cast<int>(order.size()) == k - 1;
    for (int nx : cand[cur]) {
      if (used[nx])
        continue;
      if (last >= 0 && (nx == last) != lastSlot)
        continue;
      const PathFlow &f = hop(cur, nx);
      if (!f.found)
        continue;
      double u = util;
      for (auto [r, x] : f.res) {
        load[r] += x;
        u = std::max(u, utilOf(r, load[r]));
      }
      double l = hopLat(cur, nx);
      if (scale * u + latSum + l < best * (1 - kRel)) {
        used[nx] = true;
        order.push_back(nx);
        lats.push_back(l);
        dfs(order, used, u, latSum + l, lats);
        lats.pop_back();
        order.pop_back();
        used[nx] = false;
      }
      for (auto [r, x] : f.res)
        load[r] -= x;
    }
  }

  std::vector<int> greedy() {
    std::vector<int> order{first};
    std::vector<bool> used(k, false);
    used[first] = true;
    std::vector<double> l(cap.size(), 0);
    while (static_cast<int>(order.size()) < k) {
      int cur = order.back();
      bool lastSlot = static_cast<int>(order.size()) == k - 1;
      int pick = -1;
      double pickRate = -1;
      for (int nx = 0; nx < k; ++nx) {
        if (used[nx] || (last >= 0 && (nx == last) != lastSlot))
          continue;
        const PathFlow &f = hop(cur, nx);
        double rate = f.found ? kInf : -1;
        for (auto [r, x] : f.res)
          rate = std::min(rate, cap[r] > 0 ? cap[r] / (l[r] + x) : 0);
        if (rate > pickRate) {
          pickRate = rate;
          pick = nx;
        }
      }
      if (pick < 0) { // no routed hop: any unused rank (eval says kInf)
        for (int nx = 0; nx < k && pick < 0; ++nx)
          if (!used[nx] && (last < 0 || (nx == last) == lastSlot))
            pick = nx;
        if (pick < 0) // only the fixed last rank is left, too early
          for (int nx = 0; nx < k && pick < 0; ++nx)
            if (!used[nx])
              pick = nx;
      }
      for (auto [r, x] : hop(cur, pick).res)
        l[r] += x;
      used[pick] = true;
      order.push_back(pick);
    }
    return order;
  }

  /// First-improvement 2-opt (segment reversal) and Or-opt (move a segment
  /// of 1 to 3 ranks) over positions 1..k-1 (2..k-2 with a fixed last).
  double localSearch(std::vector<int> &o) {
    int lo = 1, hi = last >= 0 ? k - 2 : k - 1; // movable positions
    return improveOrder(
        o, lo, hi, 100, [&](const std::vector<int> &c) { return eval(c); },
        [](double t, double cur) { return t < cur * (1 - kRel); });
  }

  std::vector<const PathFlow *> flow;
  int k;
  const std::vector<double> &cap;
  double scale;
  int window;
  int first, last;
  const PathFlow *closing;
  std::vector<double> lat, load, scratch; ///< scratch: eval() only
  double closingLat = 0;
  double best = kInf;
  std::vector<int> bestOrder;
  std::vector<std::vector<int>> cand;
  uint64_t nodeBudget = 0;
};

/// Per-resource loads (messages per step) of a ring.
std::vector<double> ringLoads(const RingChannel &ring, LinkModel &m) {
  std::vector<double> load(m.numResources(), 0);
  for (size_t i = 0; i < ring.order.size(); ++i)
    for (auto [r, x] : analysis::hopFlow(ring, i, m).res)
      load[r] += x;
  return load;
}

/// Per-hop rate of a ring on capacities `cap` (min cap / load).
double ringRate(const std::vector<double> &load, const std::vector<double> &cap) {
  double rate = kInf;
  for (size_t r = 0; r < load.size(); ++r)
    if (load[r] > 0)
      rate = std::min(rate, cap[r] > 1e-9 ? cap[r] / load[r] : 0.0);
  return rate;
}

/// Ranks above which a generated grid's ring is its snake cycle (or a
/// better start) without local search.
constexpr int kSnakeOnlyRanks = 256;

/// A Hamiltonian cycle of a generated grid's neighbours, as rank order
/// (empty where this construction has none): the grid seen as rows x
/// columns, one side being dimension 0 and the other a boustrophedon path
/// over the remaining dimensions (consecutive entries differ by one step in
/// one coordinate), then the classic snake over columns 1.. with the way
/// back up column 0, which needs an even number of rows. A single
/// dimension that is a ring is its own cycle. Seeds the ring search on tori
/// and meshes, where few pairs have routes (docs/Algorithms.md, section 6).
std::vector<int> gridSnakeCycle(const topo::Topology &t) {
  const std::vector<topo::GridDim> &grid = t.grid();
  if (grid.empty())
    return {};
  std::vector<int> sizes;
  for (const topo::GridDim &d : grid)
    sizes.push_back(d.size);
  const int D = static_cast<int>(sizes.size());
  std::vector<int> stride(D, 1);
  for (int d = 1; d < D; ++d)
    stride[d] = stride[d - 1] * sizes[d - 1];
  // The boustrophedon path over dimensions 1..D-1, as linear offsets.
  std::vector<int> path{0};
  for (int d = 1; d < D; ++d) {
    std::vector<int> next;
    for (int v = 0; v < sizes[d]; ++v)
      for (size_t i = 0; i < path.size(); ++i)
        next.push_back(v * stride[d] + path[v % 2 ? path.size() - 1 - i : i]);
    path = std::move(next);
  }
  const int R = static_cast<int>(path.size()), S = sizes[0];
  std::vector<int> linear;
  if (R == 1) {
    if (S < 3 || !grid[0].ringRouted())
      return {};
    for (int x = 0; x < S; ++x)
      linear.push_back(x);
  } else if (S >= 2 && (R % 2 == 0 || S % 2 == 0)) {
    // rows x cols with an even number of rows.
    const bool rowsArePath = R % 2 == 0;
    const int rows = rowsArePath ? R : S, cols = rowsArePath ? S : R;
    auto at = [&](int row, int col) {
      return rowsArePath ? path[row] + col : path[col] + row;
    };
    for (int row = 0; row < rows; ++row)
      if (row == 0)
        for (int col = 0; col < cols; ++col)
          linear.push_back(at(row, col));
      else if (row % 2)
        for (int col = cols - 1; col >= 1; --col)
          linear.push_back(at(row, col));
      else
        for (int col = 1; col < cols; ++col)
          linear.push_back(at(row, col));
    for (int row = rows - 1; row >= 1; --row)
      linear.push_back(at(row, 0));
  } else {
    return {};
  }
  std::vector<int> order;
  for (int i : linear)
    order.push_back(t.gridRank(i));
  return order;
}

struct Searcher {
  const topo::Topology &t;
  LinkModel &m;
  const RingSearchOptions &opts;
  int n;
  int steps;
  uint64_t evaluated = 0;
  bool exact = true;

  /// Ranks the flat search orders (all ranks unless set to one node's).
  std::vector<int> group{};

  /// Best cycle over `group` (all ranks when empty) on capacities `cap`
  /// (free routing); the order is in ranks.
  RingChannel flatRing(const std::vector<double> &cap, double share,
                       bool &usedExact) {
    std::vector<int> ranks = group;
    if (ranks.empty())
      for (int r = 0; r < n; ++r)
        ranks.push_back(r);
    const int k = static_cast<int>(ranks.size());
    std::vector<const PathFlow *> flows(static_cast<size_t>(k) * k);
    for (int a = 0; a < k; ++a)
      for (int b = 0; b < k; ++b)
        flows[a * k + b] = &m.rankFlow(ranks[a], ranks[b]);
    double msg = share * opts.bytes / n;
    GroupSearch g(flows, k, cap, steps * msg, msg, steps, 0, -1, nullptr);
    std::vector<int> order;
    usedExact = k <= opts.exactLimit;
    if (usedExact) {
      bool complete = true;
      order = g.exact(opts.maxNodes, complete);
      if (!complete)
        exact = false;
    } else {
      std::vector<int> ident(k);
      std::iota(ident.begin(), ident.end(), 0);
      std::vector<std::vector<int>> seeds{ident};
      // On a generated grid, all ranks: the snake through the neighbours.
      // Every hop of it is a direct link; above kSnakeOnlyRanks the local
      // search (about k^3 work per round) is left out.
      bool improve = true;
      if (group.empty())
        if (std::vector<int> snake = gridSnakeCycle(t); !snake.empty()) {
          seeds.push_back(std::move(snake));
          improve = k <= kSnakeOnlyRanks;
        }
      order = g.heuristic(seeds, improve);
    }
    evaluated += g.evaluated;
    RingChannel rc;
    for (int i : order)
      rc.order.push_back(ranks[i]);
    rc.share = share;
    return rc;
  }

  /// Greedy residual packing: ring 0 given, then rings on what is left.
  std::vector<RingChannel> packFlat(RingChannel firstRing, int want) {
    std::vector<RingChannel> rings{firstRing};
    std::vector<double> residual(m.numResources());
    for (int r = 0; r < m.numResources(); ++r)
      residual[r] = m.capacity(r);
    std::vector<double> rates;
    auto take = [&](RingChannel &ring) {
      std::vector<double> load = ringLoads(ring, m);
      double rate = ringRate(load, residual);
      if (!(rate > 0) || !std::isfinite(rate))
        return false;
      for (size_t r = 0; r < load.size(); ++r)
        residual[r] = std::max(0.0, residual[r] - load[r] * rate);
      rates.push_back(rate);
      return true;
    };
    take(rings[0]);
    double total = rates.empty() ? 0 : rates[0];
    while (static_cast<int>(rings.size()) < want) {
      bool ex = false;
      RingChannel next = flatRing(residual, 1.0, ex);
      if (next.order.empty() || !take(next))
        break;
      if (rates.back() < 0.01 * total) {
        rates.pop_back();
        break;
      }
      total += rates.back();
      rings.push_back(next);
    }
    setShares(rings, rates);
    return rings;
  }

  static void setShares(std::vector<RingChannel> &rings,
                        const std::vector<double> &rates) {
    double total = 0;
    for (size_t i = 0; i < rings.size(); ++i)
      total += i < rates.size() ? rates[i] : 0;
    for (size_t i = 0; i < rings.size(); ++i)
      rings[i].share = total > 0 && i < rates.size()
                           ? rates[i] / total
                           : 1.0 / rings.size();
  }

  llvm::Expected<double> timeOf(const std::vector<RingChannel> &rings) {
    auto rep = analysis::estimateRings(rings, opts.collective, opts.bytes, m);
    if (!rep)
      return rep.takeError();
    return rep->time;
  }

  struct NodeInfo {
    std::vector<int> gpuRanks; ///< by local GPU index
    std::vector<int> nics;     ///< device indices, declaration order
    int sameAs = -1;           ///< structurally identical earlier node
  };

  /// Node-major rings with rail-aligned NIC hops; empty when the topology
  /// is not a multi-node one with NICs.
  std::vector<RingChannel> nodeMajor(int want, std::string &method) {
    std::vector<NodeInfo> nodes;
    std::vector<int> nodeIdx;
    for (int r = 0; r < n; ++r)
      if (t.nodeOfRank(r) < 0)
        return {};
    for (size_t ni = 0; ni < t.nodes().size(); ++ni) {
      NodeInfo info;
      for (int d : t.nodes()[ni].devices) {
        const topo::Device &dev = t.device(d);
        if (dev.kind == topo::DeviceKind::Gpu && dev.rank >= 0)
          info.gpuRanks.push_back(dev.rank);
        if (dev.kind == topo::DeviceKind::Nic)
          info.nics.push_back(d);
      }
      if (info.gpuRanks.empty())
        continue;
      nodeIdx.push_back(static_cast<int>(ni));
      nodes.push_back(std::move(info));
    }
    if (nodes.size() < 2)
      return {};
    size_t rails = SIZE_MAX;
    for (const NodeInfo &ni : nodes)
      rails = std::min(rails, ni.nics.size());
    if (rails == 0)
      return {};
    for (size_t a = 1; a < nodes.size(); ++a) {
      const topo::Node &na = t.nodes()[nodeIdx[a]];
      const topo::Node &n0 = t.nodes()[nodeIdx[0]];
      if (!na.templateName.empty() && na.templateName == n0.templateName &&
          nodes[a].gpuRanks.size() == nodes[0].gpuRanks.size() &&
          nodes[a].nics.size() == nodes[0].nics.size())
        nodes[a].sameAs = 0;
    }
    int channels = want > 0 ? want : static_cast<int>(rails);
    double msg = opts.bytes / n / channels;
    std::vector<double> cap(m.numResources());
    for (int r = 0; r < m.numResources(); ++r)
      cap[r] = m.capacity(r);
    bool allExact = true;
    std::vector<double> baseLoad(m.numResources(), 0);
    // Local path per (node, rail), in local GPU indices: entering from NIC
    // `nicIn` at one of `entries` and leaving through `nicOut` from one of
    // `exits` (both empty: the 4 GPUs nearest to the rail's NIC).
    auto localPath = [&](size_t ni, size_t rail, std::vector<int> entries,
                         std::vector<int> exits, int nicIn, int nicOut) {
      const NodeInfo &info = nodes[ni];
      int k = static_cast<int>(info.gpuRanks.size());
      int nic = info.nics[rail];
      if (nicIn < 0)
        nicIn = nic;
      if (nicOut < 0)
        nicOut = nic;
      std::vector<PathFlow> toNic(k), fromNic(k);
      std::vector<int> byNic(k);
      for (int g = 0; g < k; ++g) {
        int dev = t.rankDevice(info.gpuRanks[g]);
        toNic[g] = m.deviceFlow(dev, nicOut);
        fromNic[g] = m.deviceFlow(nicIn, dev);
        byNic[g] = g;
      }
      std::stable_sort(byNic.begin(), byNic.end(), [&](int x, int y) {
        if (toNic[x].bandwidth != toNic[y].bandwidth)
          return toNic[x].bandwidth > toNic[y].bandwidth;
        return toNic[x].hops < toNic[y].hops;
      });
      if (k == 1)
        return std::vector<int>{0};
      if (entries.empty()) {
        entries.assign(byNic.begin(), byNic.begin() + std::min(k, 4));
        exits = entries;
      }
      std::vector<const PathFlow *> flows(static_cast<size_t>(k) * k);
      for (int a = 0; a < k; ++a)
        for (int b = 0; b < k; ++b)
          flows[a * k + b] = &m.rankFlow(info.gpuRanks[a], info.gpuRanks[b]);
      std::vector<int> bestPath;
      PathFlow bestClosing;
      double bestT = kInf;
      for (int e : entries)
        for (int x : exits) {
          if (e == x)
            continue;
          PathFlow closing = concat({toNic[x], fromNic[e]});
          GroupSearch g(flows, k, cap, steps * msg, msg, k, e, x, &closing);
          g.base = &baseLoad;
          std::vector<int> path;
          if (k <= opts.exactLimit) {
            bool complete = true;
            path = g.exact(opts.maxNodes, complete);
            allExact = allExact && complete;
          } else {
            std::vector<int> seed{e};
            for (int g2 = 0; g2 < k; ++g2)
              if (g2 != e && g2 != x)
                seed.push_back(g2);
            seed.push_back(x);
            path = g.heuristic({seed});
            allExact = false;
          }
          evaluated += g.evaluated;
          if (!path.empty()) {
            double tt = g.eval(path);
            if (tt < bestT * (1 - kRel)) {
              bestT = tt;
              bestPath = path;
              bestClosing = closing;
            }
          }
        }
      // Later channels see this one's loads inside the node.
      for (size_t i = 0; i + 1 < bestPath.size(); ++i)
        for (auto [r, x] : flows[bestPath[i] * k + bestPath[i + 1]]->res)
          baseLoad[r] += x;
      for (auto [r, x] : bestClosing.res)
        baseLoad[r] += x;
      return bestPath;
    };
    std::vector<RingChannel> rings;
    std::map<std::pair<size_t, size_t>, std::vector<int>> pathCache;
    // The runtime's NICs (NCCL's rule, analysis/NetRoutes.h): a GPU sends
    // and receives through its own NIC on a channel, so an inter-node hop
    // stays on one rail only when it joins GPUs whose NICs share it. With
    // an even number of identical nodes, channel c enters node 0 at a GPU
    // whose NIC is rail c's, leaves it at one whose NIC is rail c + 1's,
    // and the next node runs the same path backwards (entering where node
    // 0 left, on the same rail), and so on around the ring.
    bool identical = true;
    for (size_t a = 1; a < nodes.size(); ++a)
      identical = identical && nodes[a].sameAs == 0;
    const bool alternate = !opts.sameLocalOrder && identical &&
                           nodes.size() % 2 == 0 &&
                           nodes[0].gpuRanks.size() >= 2 && rails >= 2;
    analysis::NcclNetRoutes rule(t);
    for (int c = 0; c < channels; ++c) {
      size_t rail = static_cast<size_t>(c) % rails;
      RingChannel rc;
      std::vector<size_t> exitPos;
      std::vector<int> altPath;
      if (alternate) {
        const NodeInfo &n0 = nodes[0];
        int nicIn = n0.nics[rail], nicOut = n0.nics[(rail + 1) % rails];
        std::vector<int> entries, exits;
        for (int g = 0; g < static_cast<int>(n0.gpuRanks.size()); ++g) {
          int nic = rule.nicFor(n0.gpuRanks[g], c);
          if (nic == nicIn)
            entries.push_back(g);
          if (nic == nicOut)
            exits.push_back(g);
        }
        if (!entries.empty() && !exits.empty())
          altPath = localPath(0, rail, entries, exits, nicIn, nicOut);
      }
      if (!altPath.empty()) {
        for (size_t ni = 0; ni < nodes.size(); ++ni) {
          if (ni % 2 == 0)
            for (int g : altPath)
              rc.order.push_back(nodes[ni].gpuRanks[g]);
          else
            for (auto it = altPath.rbegin(); it != altPath.rend(); ++it)
              rc.order.push_back(nodes[ni].gpuRanks[*it]);
          exitPos.push_back(rc.order.size() - 1);
        }
        rc.nics.assign(n, NicPair{});
        for (size_t i = 0; i < rc.order.size(); ++i) {
          int a = rc.order[i], b = rc.order[(i + 1) % rc.order.size()];
          if (t.nodeOfRank(a) != t.nodeOfRank(b))
            rc.nics[i] = NicPair{rule.nicFor(a, c), rule.nicFor(b, c)};
        }
        rings.push_back(std::move(rc));
        continue;
      }
      for (size_t ni = 0; ni < nodes.size(); ++ni) {
        size_t src = nodes[ni].sameAs >= 0 ? nodes[ni].sameAs : ni;
        auto key = std::make_pair(src, rail);
        if (!pathCache.count(key))
          pathCache[key] = localPath(src, rail, {}, {}, -1, -1);
        const std::vector<int> &path = pathCache[key];
        if (path.size() != nodes[ni].gpuRanks.size())
          return {};
        for (int g : path)
          rc.order.push_back(nodes[ni].gpuRanks[g]);
        exitPos.push_back(rc.order.size() - 1);
      }
      rc.nics.assign(n, NicPair{});
      for (size_t ni = 0; ni < nodes.size(); ++ni) {
        size_t next = (ni + 1) % nodes.size();
        rc.nics[exitPos[ni]] = NicPair{nodes[ni].nics[rail],
                                       nodes[next].nics[rail]};
      }
      rings.push_back(std::move(rc));
    }
    std::vector<double> rates;
    for (RingChannel &rc : rings)
      rates.push_back(ringRate(ringLoads(rc, m), cap));
    setShares(rings, rates);
    method = allExact ? "node-major exact" : "node-major heuristic";
    // Seeded alternative: the node's own multi-ring solution, each ring cut
    // open next to its channel's NIC. Kept when the cost model prefers it
    // (not with the alternating rings: its hops leave the NIC rule's rails).
    if (identical && !alternate && nodes[0].gpuRanks.size() >= 2) {
      auto tg = timeOf(rings);
      if (!tg) {
        llvm::consumeError(tg.takeError());
        return rings;
      }
      double bestT = *tg;
      for (bool equalShares : {false, true}) {
        std::vector<RingChannel> seeded =
            seededNodeMajor(nodes, channels, rails, cap, equalShares);
        if (seeded.empty())
          break;
        auto ts = timeOf(seeded);
        if (!ts) {
          llvm::consumeError(ts.takeError());
          continue;
        }
        if (*ts < bestT * (1 - kRel)) {
          bestT = *ts;
          rings = std::move(seeded);
          method = "node-major seeded";
        }
      }
    }
    return rings;
  }

  /// Node-major rings from node 0's single-node multi-ring solution: channel
  /// c follows local ring c mod m (m rings) through every node, leaving
  /// and entering each node through rail c mod `rails`'s NIC, cut open at
  /// the hop that minimises the cost model's time of channels 0..c (greedy,
  /// k cuts per channel). Shares: the local rings' shares split over the
  /// channels that use them, or equal. REQUIRES: identical nodes.
  std::vector<RingChannel> seededNodeMajor(const std::vector<NodeInfo> &nodes,
                                           int channels, size_t rails,
                                           const std::vector<double> &cap,
                                           bool equalShares) {
    const NodeInfo &n0 = nodes[0];
    const int k = static_cast<int>(n0.gpuRanks.size());
    group = n0.gpuRanks;
    bool ex = false;
    RingChannel first = flatRing(cap, 1.0, ex);
    std::vector<RingChannel> local;
    if (!first.order.empty())
      local = packFlat(first, std::min(opts.maxChannels, channels));
    group.clear();
    if (local.empty())
      return {};
    std::map<int, int> localOf;
    for (int g = 0; g < k; ++g)
      localOf[n0.gpuRanks[g]] = g;
    std::vector<int> uses(local.size(), 0);
    for (int c = 0; c < channels; ++c)
      ++uses[c % local.size()];
    std::vector<RingChannel> out;
    double total = 0;
    for (int c = 0; c < channels; ++c) {
      const RingChannel &lr = local[c % local.size()];
      const size_t rail = static_cast<size_t>(c) % rails;
      const int nic = n0.nics[rail];
      // Cut after position `cut` (exit lr.order[cut], entry the next one):
      // the cut that minimises the cost of the channels so far with this one.
      auto channelFor = [&](int cut) {
        RingChannel rc;
        std::vector<size_t> exitPos;
        for (const NodeInfo &node : nodes) {
          for (int i = 1; i <= k; ++i)
            rc.order.push_back(node.gpuRanks[localOf[lr.order[(cut + i) % k]]]);
          exitPos.push_back(rc.order.size() - 1);
        }
        rc.nics.assign(n, NicPair{});
        for (size_t ni = 0; ni < nodes.size(); ++ni)
          rc.nics[exitPos[ni]] =
              NicPair{nodes[ni].nics[rail],
                      nodes[(ni + 1) % nodes.size()].nics[rail]};
        rc.share = equalShares ? 1.0 : lr.share / uses[c % local.size()];
        return rc;
      };
      std::optional<RingChannel> best;
      double bestT = kInf;
      for (int cut = 0; cut < k; ++cut) {
        PathFlow out1 = m.deviceFlow(t.rankDevice(lr.order[cut]), nic);
        PathFlow in1 = m.deviceFlow(nic, t.rankDevice(lr.order[(cut + 1) % k]));
        if (!out1.found || !in1.found)
          continue;
        out.push_back(channelFor(cut));
        auto tc = analysis::estimateRings(out, opts.collective, opts.bytes, m);
        ++evaluated;
        RingChannel cand = std::move(out.back());
        out.pop_back();
        if (!tc) {
          llvm::consumeError(tc.takeError());
          continue;
        }
        if (tc->time < bestT * (1 - kRel)) {
          bestT = tc->time;
          best = std::move(cand);
        }
      }
      if (!best)
        return {};
      RingChannel rc = std::move(*best);
      total += rc.share;
      out.push_back(std::move(rc));
    }
    for (RingChannel &rc : out)
      rc.share /= total;
    return out;
  }
};

} // namespace

void padRings(std::vector<RingChannel> &rings, int want) {
  size_t have = rings.size();
  if (have == 0 || static_cast<int>(have) >= want)
    return;
  bool units = true;
  int totalUnits = 0;
  for (const RingChannel &rc : rings) {
    units = units && rc.units > 0;
    totalUnits += rc.units;
  }
  if (units && totalUnits >= want) {
    // Quantised rings: each extra channel goes to the ring with the most
    // units per channel, and a ring's units split as evenly as integers
    // allow (shares stay exact; the longest channel, which sets how many
    // segments split-channels cuts every channel into, gets shorter).
    std::vector<int> copies(have, 1);
    for (int c = static_cast<int>(have); c < want; ++c) {
      size_t pick = 0;
      for (size_t i = 1; i < have; ++i)
        if (rings[i].units * copies[pick] > rings[pick].units * copies[i])
          pick = i;
      ++copies[pick];
    }
    std::vector<RingChannel> out;
    for (size_t i = 0; i < have; ++i)
      for (int j = 0; j < copies[i]; ++j) {
        RingChannel rc = rings[i];
        rc.units = rings[i].units / copies[i] +
                   (j < rings[i].units % copies[i] ? 1 : 0);
        rc.share = rings[i].share * rc.units / rings[i].units;
        out.push_back(std::move(rc));
      }
    rings = std::move(out);
    return;
  }
  std::vector<int> copies(have, 1);
  for (int i = static_cast<int>(have); i < want; ++i)
    ++copies[i % have];
  std::vector<RingChannel> out;
  for (int c = 0; c < want; ++c) {
    size_t src = c % have;
    RingChannel rc = rings[src];
    rc.share = rings[src].share / copies[src];
    rc.units = 0; // the lowering's chunksForShares splits the shares
    out.push_back(rc);
  }
  rings = std::move(out);
}

RingChannel rankOrderRing(const topo::Topology &t) {
  RingChannel rc;
  rc.order.resize(t.numRanks());
  std::iota(rc.order.begin(), rc.order.end(), 0);
  return rc;
}

llvm::Expected<RingChannel> searchGroupRing(const topo::Topology &t,
                                            LinkModel &m,
                                            const std::vector<int> &ranks,
                                            const RingSearchOptions &opts) {
  if (ranks.size() < 2)
    return makeUserError("a ring needs at least 2 ranks");
  Searcher s{t, m, opts, t.numRanks(),
             analysis::ringSteps(opts.collective, t.numRanks())};
  s.group = ranks;
  std::vector<double> cap(m.numResources());
  for (int r = 0; r < m.numResources(); ++r)
    cap[r] = m.capacity(r);
  bool usedExact = false;
  RingChannel rc = s.flatRing(cap, 1.0, usedExact);
  if (rc.order.empty())
    return makeUserError(llvm::formatv(
        "no ring over the {0} given ranks has a route for every hop",
        ranks.size()));
  return rc;
}

llvm::Expected<RingSearchResult> searchRings(const topo::Topology &t,
                                             LinkModel &m,
                                             const RingSearchOptions &opts) {
  int n = t.numRanks();
  if (n < 2)
    return makeUserError("ring search needs at least 2 ranks");
  if (opts.channels < 0 || opts.channels > ir::kMaxRingChannels)
    return makeUserError(llvm::formatv(
        "--channels {0} is out of range (expected 1 to {1}, or auto)",
        opts.channels, ir::kMaxRingChannels));
  if (!(opts.bytes > 0))
    return makeUserError("--size must be positive");
  if (opts.collective != ir::Collective::AllReduce &&
      opts.collective != ir::Collective::AllGather &&
      opts.collective != ir::Collective::ReduceScatter)
    return makeUserError("ring search supports allreduce, allgather and "
                         "reducescatter");
  Searcher s{t, m, opts, n, analysis::ringSteps(opts.collective, n)};
  RingSearchResult res;
  std::vector<RingChannel> rings;
  int want = opts.channels > 0 ? opts.channels : opts.maxChannels;

  std::string nmMethod;
  std::vector<RingChannel> nm = s.nodeMajor(opts.channels, nmMethod);
  if (!nm.empty()) {
    rings = std::move(nm);
    res.method = nmMethod;
    res.exact = nmMethod == "node-major exact";
  } else {
    std::vector<double> cap(m.numResources());
    for (int r = 0; r < m.numResources(); ++r)
      cap[r] = m.capacity(r);
    bool usedExact = false;
    RingChannel first = s.flatRing(cap, 1.0, usedExact);
    if (first.order.empty())
      return makeUserError(llvm::formatv(
          "no ring over all {0} ranks of '{1}' has a route for every hop", n,
          t.name()));
    res.method = usedExact ? "exact" : "heuristic";
    res.exact = usedExact && s.exact;
    if (want == 1) {
      rings = {first};
    } else {
      // Two kinds of ring sets: the greedy one (each ring on what the
      // earlier ones left) with its prefixes, and the LP's optimal set
      // (RingPacking.h); the cost model keeps the fastest.
      std::vector<RingChannel> packed = s.packFlat(first, want);
      std::vector<int> all(n);
      std::iota(all.begin(), all.end(), 0);
      RingPackingOptions po;
      po.maxRings = want;
      po.maxUnits = std::max(1, opts.maxUnits);
      if (opts.sameLocalOrder && opts.channels == 0)
        po.maxUnits = std::min(po.maxUnits, kNcclGraphChannels);
      RingPacking lp = packRings(m, all, po);
      s.evaluated += lp.evaluated;
      res.lpRate = lp.lpRate;
      res.lpUpperBound = lp.upperBound;
      res.lpUnitsRate = lp.rate;
      res.lpUnits = lp.units;
      res.lpOptimal = lp.optimal;
      // Every candidate set is padded to --channels and its shares are
      // quantised to a power-of-two total of units (quantiseRingShares),
      // so that the sets are compared as the lowering realises them.
      double bestT = kInf;
      llvm::Error err = llvm::Error::success();
      auto consider = [&](std::vector<RingChannel> set, const char *how) {
        if (set.empty() || err)
          return;
        if (opts.channels > 0)
          padRings(set, opts.channels);
        if (set.front().units == 0)
          quantiseRingShares(m, set, po);
        // NCCL splits the data evenly over a graph file's channels: a ring
        // of u units becomes u channels of one unit each.
        if (opts.sameLocalOrder && opts.channels == 0) {
          int total = 0;
          for (const RingChannel &rc : set)
            total += rc.units;
          if (total > kNcclGraphChannels)
            return; // more channels than an NCCL graph set holds
          padRings(set, total);
        }
        auto tk = s.timeOf(set);
        if (!tk) {
          err = tk.takeError();
          return;
        }
        if (*tk < bestT * (1 - kRel)) {
          bestT = *tk;
          rings = std::move(set);
          res.packing = how;
        }
      };
      if (opts.channels > 0) {
        consider(packed, "");
      } else {
        // Auto: every prefix of the greedy set (shares renormalised); k = 1
        // is the single best ring, so the choice is never worse than it.
        for (size_t k = 1; k <= packed.size(); ++k) {
          std::vector<RingChannel> pre(packed.begin(), packed.begin() + k);
          double tot = 0;
          for (auto &rc : pre)
            tot += rc.share;
          for (auto &rc : pre)
            rc.share /= tot;
          consider(std::move(pre), "");
        }
      }
      consider(lp.rings,
               lp.optimal ? "ring packing LP, optimal" : "ring packing LP");
      if (err)
        return err;
    }
  }
  // Never worse than the rank-order ring (with as many channels).
  {
    std::vector<RingChannel> ro{rankOrderRing(t)};
    if (opts.channels > 1)
      padRings(ro, opts.channels);
    auto tr = s.timeOf(ro);
    auto tc = s.timeOf(rings);
    if (!tc) {
      llvm::consumeError(tc.takeError());
      if (!tr)
        return tr.takeError();
      rings = ro;
      res.method = "rank order";
      res.exact = false;
    } else if (tr && *tr < *tc * (1 - kRel)) {
      rings = ro;
      res.method = "rank order";
      res.exact = false;
    } else if (!tr) {
      llvm::consumeError(tr.takeError());
    }
  }
  auto rep = analysis::estimateRings(rings, opts.collective, opts.bytes, m);
  if (!rep)
    return rep.takeError();
  res.rings = std::move(rings);
  res.cost = std::move(*rep);
  res.evaluated = s.evaluated;
  return res;
}

} // namespace topocc::algorithms
