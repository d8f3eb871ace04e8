//===- compiler/algorithms/ForestColl.cpp - Spanning-tree schedules -------===//
//
// Fixed k (docs/Algorithms-trees.md, "Fixed k") without rational bisection:
// feasibility of floor(U b(e)) changes only at breakpoints m / b(e), which are
// at least 1 / b_max^2 apart, so a binary search over the grid U = T / D
// with D = b_max^2 finds the first feasible grid point, whose capacities
// equal those at the smallest feasible breakpoint U_k; U_k is then the
// largest breakpoint at or below it (max over e of floor(T b(e) / D) / b(e)).
//
//===----------------------------------------------------------------------===//

#include "compiler/algorithms/ForestColl.h"

#include "support/Diagnostics.h"
#include "support/Progress.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <optional>
#include <string>

namespace topocc::algorithms {

namespace {

using Wide = __int128;

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
      .count();
}

} // namespace

llvm::Expected<FixedK> fixedKUnits(const analysis::BoundGraph &g,
                                   bool reversed, int64_t k) {
  if (k < 1 || k > 1000)
    return makeUserError(llvm::formatv(
        "invalid trees per root {0} (expected 1 to 1000)", k));
  const int n = static_cast<int>(g.compute.size());
  FixedK res;
  res.k = k;
  int64_t bMax = 0, bMin = INT64_MAX;
  std::vector<int64_t> in(g.numVertices, 0);
  for (const analysis::BoundGraph::Arc &a : g.arcs) {
    bMax = std::max(bMax, a.cap);
    bMin = std::min(bMin, a.cap);
    in[reversed ? a.from : a.to] += a.cap;
  }
  int64_t minIn = INT64_MAX;
  for (int v : g.compute)
    minIn = std::min(minIn, in[v]);
  const Wide d = static_cast<Wide>(bMax) * bMax;
  if (d > (static_cast<Wide>(1) << 40))
    return makeUserError("--trees-per-root: the link capacities span too "
                         "wide a range for the exact fixed-k search");

  analysis::MaxFlowNetwork net(g.numVertices + 1);
  const int s = g.numVertices;
  for (const analysis::BoundGraph::Arc &a : g.arcs)
    net.addArc(reversed ? a.to : a.from, reversed ? a.from : a.to);
  for (int v : g.compute)
    net.addArc(s, v, k);
  auto unitsAt = [&](Wide t) {
    std::vector<int64_t> u;
    for (const analysis::BoundGraph::Arc &a : g.arcs)
      u.push_back(static_cast<int64_t>(t * a.cap / d));
    return u;
  };
  auto feasible = [&](Wide t) {
    std::vector<int64_t> u = unitsAt(t);
    for (size_t i = 0; i < u.size(); ++i)
      net.setCapacity(static_cast<int>(i), u[i]);
    for (int v : g.compute) {
      ++res.maxFlows;
      if (net.maxFlow(s, v) < n * k)
        return false;
    }
    return true;
  };
  // lo: U below (N-1) k / min_v B-(v) is infeasible; hi is feasible.
  Wide lo = static_cast<Wide>(n - 1) * k * d / minIn - 1;
  Wide hi = (static_cast<Wide>(n - 1) * k * d + bMin - 1) / bMin;
  if (lo < 0)
    lo = 0;
  if (!feasible(hi))
    return makeInternalError("fixedKUnits: the upper end is infeasible");
  while (hi - lo > 1) {
    Wide mid = lo + (hi - lo) / 2;
    if (feasible(mid))
      hi = mid;
    else
      lo = mid;
  }
  res.units = unitsAt(hi);
  // U_k = max over e of units(e) / b(e), in quanta; then s/GB.
  analysis::Fraction best{0, 1};
  for (size_t i = 0; i < g.arcs.size(); ++i) {
    analysis::Fraction f = analysis::Fraction::make(res.units[i], g.arcs[i].cap);
    if (static_cast<Wide>(f.num) * best.den > static_cast<Wide>(best.num) * f.den)
      best = f;
  }
  Wide num = static_cast<Wide>(best.num) * 1000000000;
  Wide den = static_cast<Wide>(best.den) * g.quantumBytesPerSec;
  Wide gg = num, b = den;
  while (b != 0) {
    Wide t = gg % b;
    gg = b;
    b = t;
  }
  res.u = {static_cast<int64_t>(num / gg), static_cast<int64_t>(den / gg)};
  return res;
}

llvm::Expected<Forest> buildForest(const analysis::BoundGraph &g,
                                   const ForestOptions &opts) {
  // Switches forward what they receive, so each needs equal in- and
  // out-capacity for complete splitting (docs/Algorithms-trees.md, "Switch
  // removal").
  {
    std::vector<char> isCompute(g.numVertices, 0);
    for (int v : g.compute)
      isCompute[v] = 1;
    std::vector<int64_t> in(g.numVertices, 0), out(g.numVertices, 0);
    for (const analysis::BoundGraph::Arc &a : g.arcs) {
      out[a.from] += a.cap;
      in[a.to] += a.cap;
    }
    for (int v = 0; v < g.numVertices; ++v)
      if (!isCompute[v] && in[v] != out[v])
        return makeUserError(llvm::formatv(
            "spanning trees need every switch and NIC to forward what it "
            "receives: {0} receives {1} GB/s but can send {2} GB/s",
            g.vertexName(v),
            static_cast<double>(in[v]) * g.quantumBytesPerSec / 1e9,
            static_cast<double>(out[v]) * g.quantumBytesPerSec / 1e9));
  }
  Forest f;
  f.reversed = opts.reversed;
  ProgressTask progress(opts.reversed ? "reduce-scatter forest"
                                      : "allgather forest");
  auto t0 = std::chrono::steady_clock::now();
  auto bound = analysis::dinkelbachBound(g, opts.reversed);
  if (!bound)
    return bound.takeError();
  f.bound = *bound;
  f.boundSeconds = secondsSince(t0);
  t0 = std::chrono::steady_clock::now();
  if (opts.treesPerRoot == 0 || opts.treesPerRoot == f.bound.k) {
    f.k = f.bound.k;
    f.u = f.bound.u;
    for (const analysis::BoundGraph::Arc &a : g.arcs)
      f.units.push_back(f.bound.arcUnits(a.cap));
  } else {
    auto fk = fixedKUnits(g, opts.reversed, opts.treesPerRoot);
    if (!fk)
      return fk.takeError();
    f.k = fk->k;
    f.u = fk->u;
    f.units = std::move(fk->units);
  }
  f.unitsSeconds = secondsSince(t0);
  t0 = std::chrono::steady_clock::now();
  auto split = splitSwitches(g, opts.reversed, f.units, f.k, opts.policy);
  if (!split)
    return split.takeError();
  f.split = std::move(*split);
  f.splitSeconds = secondsSince(t0);
  t0 = std::chrono::steady_clock::now();
  // A split made symmetric for the symmetric packing: when that packing
  // gets stuck, split again without the box shift and pack generically
  // (the symmetric split can need many more generic probes).
  PackOptions pack = opts.pack;
  pack.genericFallback = f.split.symmetricPlans == 0;
  if (pack.blocks.empty() &&
      static_cast<int>(g.names.size()) >= g.numVertices) {
    // The node of each GPU ("node/gpu"): blocks for the cut pre-check.
    std::map<std::string, int> nodeIndex;
    for (int v : g.compute) {
      const std::string &name = g.names[v];
      std::string node = name.substr(0, name.find('/'));
      pack.blocks.push_back(
          nodeIndex.try_emplace(node, static_cast<int>(nodeIndex.size()))
              .first->second);
    }
  }
  std::optional<ProgressTask> packing(std::in_place, "tree packing");
  auto trees = packTrees(f.split, g, opts.reversed, f.units, pack);
  packing.reset();
  if (!trees)
    return trees.takeError();
  if (trees->trees.empty()) {
    f.packSeconds = secondsSince(t0);
    t0 = std::chrono::steady_clock::now();
    auto plain = splitSwitches(g, opts.reversed, f.units, f.k, opts.policy,
                               /*boxShift=*/false);
    if (!plain)
      return plain.takeError();
    int firstSplitFlows = f.split.maxFlows, firstPackFlows = trees->maxFlows;
    f.split = std::move(*plain);
    f.split.maxFlows += firstSplitFlows; // both attempts count
    f.splitSeconds += secondsSince(t0);
    t0 = std::chrono::steady_clock::now();
    pack.genericFallback = true;
    trees = packTrees(f.split, g, opts.reversed, f.units, pack);
    if (!trees)
      return trees.takeError();
    trees->maxFlows += firstPackFlows;
    trees->symmetryFallback = true;
  }
  f.trees = std::move(*trees);
  f.packSeconds += secondsSince(t0);
  return f;
}

llvm::Expected<RoutedTime> routedTime(const Forest &f, analysis::LinkModel &m,
                                      analysis::CapacityKind kind,
                                      const analysis::NcclNetRoutes *net) {
  const int n = m.topology().numRanks();
  std::vector<double> load(m.numResources(), 0.0); // per byte of M
  for (const PackedTree &t : f.trees.trees) {
    const double share = static_cast<double>(t.mult) / f.k / n;
    for (auto [parent, child] : t.arcs) {
      // Data flows parent -> child in out-trees, child -> parent in the
      // in-trees of a reversed forest.
      int from = f.reversed ? child : parent, to = f.reversed ? parent : child;
      const analysis::PathFlow p = analysis::runtimeRankFlow(m, net, from, to);
      if (!p.found)
        return makeUserError(llvm::formatv(
            "trees: ranks {0} and {1} are joined by a tree arc but have no "
            "route",
            from, to));
      for (auto [res, frac] : p.res)
        load[res] += share * frac;
    }
  }
  RoutedTime r;
  for (int res = 0; res < m.numResources(); ++res) {
    double c = kind == analysis::CapacityKind::Raw ? m.rawCapacity(res)
                                                   : m.capacity(res);
    if (load[res] <= 0 || c <= 0)
      continue;
    if (load[res] / c > r.secondsPerByte) {
      r.secondsPerByte = load[res] / c;
      r.busiest = res;
    }
  }
  return r;
}

namespace {

/// Largest-remainder rounding of `mult` (summing to k) to K >= mult.size()
/// units, every entry at least 1.
std::vector<int64_t> roundShares(const std::vector<int64_t> &mult, int64_t k,
                                 int64_t K) {
  const size_t n = mult.size();
  std::vector<double> ideal(n);
  std::vector<int64_t> out(n);
  int64_t sum = 0;
  for (size_t i = 0; i < n; ++i) {
    ideal[i] = static_cast<double>(mult[i]) * static_cast<double>(K) /
               static_cast<double>(k);
    out[i] = std::max<int64_t>(1, static_cast<int64_t>(ideal[i]));
    sum += out[i];
  }
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i)
    order[i] = i;
  while (sum < K) {
    // The largest remainder ideal - out gets one more unit.
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return ideal[a] - out[a] > ideal[b] - out[b];
    });
    for (size_t i = 0; i < n && sum < K; ++i, ++sum)
      ++out[order[i]];
  }
  while (sum > K) {
    // The minimum of 1 overshot: the most over-served tree with more than
    // one unit gives one back.
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return out[a] - ideal[a] > out[b] - ideal[b];
    });
    bool gave = false;
    for (size_t i = 0; i < n && sum > K; ++i)
      if (out[order[i]] > 1) {
        --out[order[i]];
        --sum;
        gave = true;
      }
    if (!gave)
      break; // unreachable: K >= n
  }
  return out;
}

} // namespace

RoundedShares roundTreeShares(const Forest &f, const analysis::BoundGraph &g,
                              const ShareRoundingOptions &opts) {
  const std::vector<PackedTree> &trees = f.trees.trees;
  RoundedShares keep;
  keep.unitsPerRoot = f.k;
  for (const PackedTree &t : trees)
    keep.mult.push_back(t.mult);
  if (trees.empty() || f.k < 1)
    return keep;
  // Trees per root, in tree order.
  std::map<int, std::vector<size_t>> byRoot;
  for (size_t i = 0; i < trees.size(); ++i)
    byRoot[trees[i].root].push_back(i);
  size_t most = 0;
  for (const auto &[root, ids] : byRoot)
    most = std::max(most, ids.size());

  // Capacity per (from, to) vertex pair, and the pairs each tree's physical
  // paths cross (with multiplicity). Data of a reversed forest crosses the
  // graph's arcs against the packing's direction.
  std::map<std::pair<int, int>, int64_t> capOf;
  for (const analysis::BoundGraph::Arc &a : g.arcs)
    capOf[{a.from, a.to}] += a.cap;
  std::map<std::pair<int, int>, int> pairIndex;
  std::vector<double> caps;
  std::vector<std::map<int, int>> crosses(trees.size());
  for (const PhysicalTree &pt : f.trees.physical) {
    if (pt.tree < 0 || pt.tree >= static_cast<int>(trees.size()))
      continue;
    for (const std::vector<int> &path : pt.paths)
      for (size_t j = 0; j + 1 < path.size(); ++j) {
        std::pair<int, int> arc = f.reversed
                                      ? std::make_pair(path[j + 1], path[j])
                                      : std::make_pair(path[j], path[j + 1]);
        auto [it, fresh] =
            pairIndex.try_emplace(arc, static_cast<int>(caps.size()));
        if (fresh) {
          auto c = capOf.find(arc);
          caps.push_back(c == capOf.end() ? 0.0
                                          : static_cast<double>(c->second));
        }
        ++crosses[pt.tree][it->second];
      }
  }
  // The busiest pair's load per capacity for shares mult / K; without
  // physical paths, the largest per-tree share ratio (an upper bound).
  auto time = [&](const std::vector<int64_t> &mult, int64_t K) {
    std::vector<double> load(caps.size(), 0.0);
    for (size_t i = 0; i < trees.size(); ++i)
      for (auto [p, times] : crosses[i])
        load[p] += times * static_cast<double>(mult[i]) / K;
    double worst = 0;
    for (size_t p = 0; p < caps.size(); ++p)
      if (caps[p] > 0)
        worst = std::max(worst, load[p] / caps[p]);
    return worst;
  };
  const double exact = time(keep.mult, f.k);
  auto lossOf = [&](const std::vector<int64_t> &mult, int64_t K) {
    if (exact > 0)
      return time(mult, K) / exact - 1;
    double worst = 0;
    for (size_t i = 0; i < trees.size(); ++i)
      worst = std::max(worst, (static_cast<double>(mult[i]) / K) /
                                      (static_cast<double>(trees[i].mult) /
                                       f.k) -
                                  1);
    return worst;
  };

  std::optional<RoundedShares> best;
  auto steps = [&](int64_t units) {
    return opts.unitsPerStep > 0
               ? (units + opts.unitsPerStep - 1) / opts.unitsPerStep
               : 1;
  };
  for (int64_t K = 1; K <= opts.maxUnitsPerRoot && K > 0; K *= 2) {
    if (K < static_cast<int64_t>(most))
      continue;
    RoundedShares r;
    r.unitsPerRoot = K;
    r.rounded = true;
    r.mult.assign(trees.size(), 0);
    for (const auto &[root, ids] : byRoot) {
      std::vector<int64_t> m;
      for (size_t i : ids)
        m.push_back(trees[i].mult);
      std::vector<int64_t> q = roundShares(m, f.k, K);
      for (size_t j = 0; j < ids.size(); ++j)
        r.mult[ids[j]] = q[j];
    }
    bool moreSteps = false;
    for (size_t i = 0; i < trees.size(); ++i)
      moreSteps = moreSteps || steps(r.mult[i]) > steps(trees[i].mult);
    if (moreSteps)
      continue;
    r.loss = std::max(0.0, lossOf(r.mult, K));
    if (!best || r.loss < best->loss - 1e-12)
      best = r;
    if (r.loss <= opts.tolerance)
      return r;
    if (K > std::numeric_limits<int64_t>::max() / 2)
      break;
  }
  return best ? *best : keep;
}

namespace {
llvm::Error treesPerRootError(const llvm::Twine &given) {
  return makeUserError("invalid --trees-per-root '" + given +
                       llvm::formatv("' (expected 1 to {0} or auto)",
                                     kMaxTreesPerRoot));
}
} // namespace

llvm::Expected<std::optional<int64_t>>
parseTreesPerRoot(llvm::StringRef text) {
  if (text == "auto")
    return std::nullopt;
  int64_t k;
  if (text.getAsInteger(10, k) || k < 1 || k > kMaxTreesPerRoot)
    return treesPerRootError(text);
  return k;
}

llvm::Error checkTreesPerRoot(int64_t k) {
  if (k < 1 || k > kMaxTreesPerRoot)
    return treesPerRootError(llvm::Twine(k));
  return llvm::Error::success();
}

} // namespace topocc::algorithms
