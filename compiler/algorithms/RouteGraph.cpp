//===- compiler/algorithms/RouteGraph.cpp - Trees on the runtime's routes -===//
//
// The rank rate graph of RouteGraph.h: a linear program over one rate per
// routed rank pair with cuts added lazily from the exact bound.
//
//===----------------------------------------------------------------------===//

#include "compiler/algorithms/RouteGraph.h"

#include "compiler/algorithms/LinearProgram.h"
#include "compiler/analysis/NetRoutes.h"
#include "support/Diagnostics.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <tuple>

namespace topocc::algorithms {

namespace {

/// One LP column: the rate of the pair (a, b), and of (b, a) too when the
/// graph is symmetric; its load per resource row.
struct Column {
  int a = -1, b = -1;
  std::vector<std::pair<int, double>> rows; ///< (resource row, share)
};

/// A cut row: S as a membership vector, and whether data leaves S
/// (all-gather) or enters it (reduce-scatter).
struct Cut {
  bool out = true;
  std::vector<char> in; ///< per rank
  bool operator<(const Cut &o) const {
    return std::tie(out, in) < std::tie(o.out, o.in);
  }
};

/// The resource that carries the mirror image of `res`'s traffic.
int mirrorOf(const analysis::LinkModel &m, int res) {
  return m.resourceOf(res / 2, 1 - res % 2);
}

/// Whether (b, a)'s route puts the same shares on the reverse directions of
/// (a, b)'s, and those have equal capacities.
bool mirrors(const analysis::LinkModel &m, const analysis::PathFlow &ab,
             const analysis::PathFlow &ba) {
  if (ab.res.size() != ba.res.size())
    return false;
  // (mirror resource, share, the resource it mirrors), by mirror.
  std::vector<std::tuple<int, double, int>> back;
  for (auto [res, share] : ab.res)
    back.emplace_back(mirrorOf(m, res), share, res);
  std::sort(back.begin(), back.end());
  for (size_t i = 0; i < back.size(); ++i) {
    auto [mirror, share, res] = back[i];
    if (mirror != ba.res[i].first ||
        std::abs(share - ba.res[i].second) > 1e-9 ||
        m.capacity(mirror) != m.capacity(res))
      return false;
  }
  return true;
}

} // namespace

llvm::Expected<RouteGraph> buildRouteGraph(const topo::Topology &t,
                                           analysis::LinkModel &m,
                                           const RouteGraphOptions &o) {
  std::vector<int> rankOf = o.ranks;
  if (rankOf.empty())
    for (int r = 0; r < t.numRanks(); ++r)
      rankOf.push_back(r);
  const int n = static_cast<int>(rankOf.size());
  for (int r : rankOf)
    if (r < 0 || r >= t.numRanks())
      return makeInternalError("buildRouteGraph: rank out of range");
  if (n < 2)
    return makeUserError(
        llvm::formatv("trees need at least 2 GPUs; the topology has {0}", n));
  RouteGraph out;

  // Routes of every ordered pair, and whether they mirror each other.
  std::optional<analysis::NcclNetRoutes> net;
  if (o.ncclNetRule && t.numNodes() > 1)
    net.emplace(t);
  std::vector<std::vector<analysis::PathFlow>> flow(
      n, std::vector<analysis::PathFlow>(n));
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) {
      if (a == b)
        continue;
      flow[a][b] = analysis::runtimeRankFlow(m, net ? &*net : nullptr,
                                             rankOf[a], rankOf[b]);
      if (!flow[a][b].found || flow[a][b].res.empty())
        return makeUserError(llvm::formatv(
            "no route from {0} to {1}: trees on the runtime's routes need "
            "one between every pair of ranks",
            t.rankName(rankOf[a]), t.rankName(rankOf[b])));
    }
  bool symmetric = true;
  for (int a = 0; a < n && symmetric; ++a)
    for (int b = a + 1; b < n && symmetric; ++b)
      symmetric = mirrors(m, flow[a][b], flow[b][a]);
  out.symmetric = symmetric;

  // Columns and resource rows (GB/s, so the LP's numbers are near 1).
  std::map<int, int> rowOf; // resource -> row
  std::vector<double> capRows;
  auto rowFor = [&](int res) {
    auto [it, fresh] = rowOf.try_emplace(res, static_cast<int>(capRows.size()));
    if (fresh)
      capRows.push_back(m.capacity(res) / 1e9);
    return it->second;
  };
  std::vector<Column> cols;
  for (int a = 0; a < n; ++a)
    for (int b = symmetric ? a + 1 : 0; b < n; ++b) {
      if (a == b)
        continue;
      Column c;
      c.a = a;
      c.b = b;
      std::map<int, double> load;
      for (auto [res, share] : flow[a][b].res)
        load[rowFor(res)] += share;
      if (symmetric)
        for (auto [res, share] : flow[b][a].res)
          load[rowFor(res)] += share;
      c.rows.assign(load.begin(), load.end());
      cols.push_back(std::move(c));
    }
  out.pairs = static_cast<int>(cols.size());
  std::map<int, double> rateLoad; // row -> load per unit of x
  for (auto [res, share] : o.loadPerRate)
    if (share > 0)
      rateLoad[rowFor(res)] += share;

  // The cuts: every single rank and every complement of one to start.
  std::vector<Cut> cuts;
  std::set<Cut> known;
  auto addCut = [&](bool leaving, std::vector<char> in) {
    if (symmetric)
      leaving = true; // the in-cut of S is the out-cut of S
    Cut c{leaving, std::move(in)};
    if (known.insert(c).second) {
      cuts.push_back(c);
      return true;
    }
    return false;
  };
  for (bool leaving : {true, false}) {
    if (leaving ? !o.allGather : !o.reduceScatter)
      continue;
    for (int v = 0; v < n; ++v) {
      std::vector<char> one(n, 0), rest(n, 1);
      one[v] = 1;
      rest[v] = 0;
      addCut(leaving, one);
      addCut(leaving, rest);
    }
  }
  // The rate a cut row gives to column c: -1 when c's pair crosses it in
  // the cut's direction (either direction for a symmetric column).
  auto crosses = [&](const Cut &cut, const Column &c) {
    bool inA = cut.in[c.a], inB = cut.in[c.b];
    if (symmetric)
      return inA != inB;
    return cut.out ? (inA && !inB) : (!inA && inB);
  };

  // The rates as a graph on the ranks, in integer quanta (the bound is
  // exact on integers): the largest rate is about kResolution quanta,
  // which fixedKUnits accepts.
  const int64_t kResolution = int64_t(1) << 19;
  auto graphOf = [&](const std::vector<double> &rates)
      -> llvm::Expected<analysis::BoundGraph> {
    double most = 0;
    for (double r : rates)
      most = std::max(most, r);
    if (!(most > 0))
      return makeUserError("the rate program for trees on the runtime's "
                           "routes found no positive rate");
    // GB/s per quantum, a whole number of bytes/s.
    const double quantum =
        std::max(1.0, std::floor(most * 1e9 / kResolution)) / 1e9;
    analysis::BoundGraph g;
    g.numVertices = n;
    for (int r = 0; r < n; ++r) {
      g.compute.push_back(r);
      g.names.push_back(t.rankName(rankOf[r]));
    }
    auto addArc = [&](int from, int to, int64_t cap) {
      analysis::BoundGraph::Arc arc;
      arc.from = from;
      arc.to = to;
      arc.cap = cap;
      g.arcs.push_back(arc);
    };
    for (size_t j = 0; j < cols.size(); ++j) {
      const int64_t cap = static_cast<int64_t>(std::floor(rates[j] / quantum));
      if (cap <= 0)
        continue;
      addArc(cols[j].a, cols[j].b, cap);
      if (symmetric)
        addArc(cols[j].b, cols[j].a, cap);
    }
    g.quantumBytesPerSec = std::llround(quantum * 1e9);
    return g;
  };

  // Adds the cuts that the rates' graph violates at rate x: a side that
  // nothing leaves or enters, else the exact bound's argmax cut per
  // orientation. False when none is violated.
  auto addViolated = [&](const analysis::BoundGraph &g,
                         const std::vector<double> &rates,
                         double x) -> llvm::Expected<bool> {
    bool added = false;
    for (bool backwards : {false, true}) {
      std::vector<char> seen = analysis::reachedFromFirstRank(g, backwards);
      if (std::count(seen.begin(), seen.end(), 1) == n)
        continue;
      // Forwards, nothing leaves the reached set; backwards, nothing
      // enters the set that reaches rank 0.
      std::vector<char> other(n);
      for (int r = 0; r < n; ++r)
        other[r] = !seen[r];
      if (o.allGather)
        added |= addCut(true, backwards ? other : seen);
      if (o.reduceScatter)
        added |= addCut(false, backwards ? seen : other);
    }
    if (added)
      return true;
    for (bool leaving : {true, false}) {
      if (leaving ? !o.allGather : !o.reduceScatter)
        continue;
      if (symmetric && !leaving)
        continue;
      auto bound = analysis::dinkelbachBound(g, /*reversed=*/!leaving,
                                             /*workers=*/1);
      if (!bound)
        return bound.takeError();
      Cut cut{leaving, std::vector<char>(n, 0)};
      for (int r : bound->cut.ranks)
        cut.in[r] = 1;
      const int size = static_cast<int>(bound->cut.ranks.size());
      double rate = 0;
      for (size_t j = 0; j < cols.size(); ++j)
        if (crosses(cut, cols[j]))
          rate += rates[j];
      if (size > 0 && rate < size * x * (1 - 1e-9))
        added |= addCut(leaving, std::move(cut.in));
    }
    return added;
  };

  // The cut loop: rates per column of `cols` and the LP's x, once no cut
  // is violated (or the rounds run out). One LP vertex, so the rates are
  // sparse; a mean of several optima (also optimal, and denser) gave
  // deeper trees that were no faster in the runtime model.
  struct Solution {
    std::vector<double> rates;
    double x = 0;
  };
  auto solve = [&]() -> llvm::Expected<Solution> {
    const int numCols = static_cast<int>(cols.size()) + 1; // + x
    for (;;) {
      ++out.rounds;
      PackingLp lp;
      lp.rows = static_cast<int>(capRows.size() + cuts.size());
      lp.cols = numCols;
      lp.a.assign(static_cast<size_t>(lp.rows) * lp.cols, 0.0);
      lp.b = capRows;
      lp.b.resize(lp.rows, 0.0);
      lp.c.assign(numCols, 0.0);
      lp.c.back() = 1;
      for (int p = 0; p + 1 < numCols; ++p)
        for (auto [row, share] : cols[p].rows)
          lp.at(row, p) = share;
      for (auto [row, share] : rateLoad)
        lp.at(row, numCols - 1) = share;
      for (size_t i = 0; i < cuts.size(); ++i) {
        const int row = static_cast<int>(capRows.size() + i);
        int size = 0;
        for (char c : cuts[i].in)
          size += c;
        lp.at(row, numCols - 1) = size;
        for (int p = 0; p + 1 < numCols; ++p)
          if (crosses(cuts[i], cols[p]))
            lp.at(row, p) = -1;
      }
      LpSolution sol = solvePackingLp(lp);
      if (!sol.optimal)
        return makeUserError(llvm::formatv(
            "the rate program for trees on the runtime's routes did not "
            "finish ({0} pairs, {1} cuts, {2} pivots)",
            cols.size(), cuts.size(), sol.pivots));
      Solution s;
      s.x = sol.x.back();
      s.rates.assign(cols.size(), 0.0);
      for (int p = 0; p + 1 < numCols; ++p)
        s.rates[p] = sol.x[p];
      auto g = graphOf(s.rates);
      if (!g)
        return g.takeError();
      auto added = addViolated(*g, s.rates, s.x);
      if (!added)
        return added.takeError();
      if (!*added || out.rounds >= o.maxRounds)
        return s;
    }
  };

  auto best = solve();
  if (!best)
    return best.takeError();
  out.lpRate = best->x * 1e9;
  out.cuts = static_cast<int>(cuts.size());
  auto g = graphOf(best->rates);
  if (!g)
    return g.takeError();
  const int64_t keep = g->quantumBytesPerSec;
  if (auto err = analysis::finishBoundGraph(*g, t))
    return err;
  g->quantumBytesPerSec *= keep;
  out.graph = std::move(*g);
  return out;
}

} // namespace topocc::algorithms
