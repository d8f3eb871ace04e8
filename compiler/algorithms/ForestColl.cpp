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

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <chrono>
#include <map>
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
  auto trees = packTrees(f.split, g, opts.reversed, f.units, pack);
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

llvm::Expected<RoutedTime> routedTime(const Forest &f,
                                      analysis::LinkModel &m,
                                      analysis::CapacityKind kind) {
  const int n = m.topology().numRanks();
  std::vector<double> load(m.numResources(), 0.0); // per byte of M
  for (const PackedTree &t : f.trees.trees) {
    const double share = static_cast<double>(t.mult) / f.k / n;
    for (auto [parent, child] : t.arcs) {
      // Data flows parent -> child in out-trees, child -> parent in the
      // in-trees of a reversed forest.
      int from = f.reversed ? child : parent, to = f.reversed ? parent : child;
      const analysis::PathFlow &p = m.rankFlow(from, to);
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
