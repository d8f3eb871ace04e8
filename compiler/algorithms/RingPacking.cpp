//===- compiler/algorithms/RingPacking.cpp - Ring sets by column generation ===//
//
// Column generation (Generator) finds the LP's optimal ring set; its result
// depends only on the LP (the group's hop routes and the capacities), so it
// is kept in a small process-wide cache: auto compiles the ring search once
// per channel and chunk variant, and every variant then starts from the same
// LP solution. Quantisation (quantiseUnits, chooseUnits) turns the LP's
// shares into units of a power-of-two total.
//
//===----------------------------------------------------------------------===//

#include "compiler/algorithms/RingPacking.h"

#include "compiler/algorithms/LinearProgram.h"
#include "compiler/algorithms/LocalSearch.h"

#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <set>
#include <string>
#include <tuple>

namespace topocc::algorithms {

using analysis::LinkModel;
using analysis::PathFlow;
using analysis::RingChannel;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
/// A cycle enters only when its price is below 1 - kImprove (reduced cost).
constexpr double kImprove = 1e-6;
/// Rates are solved in GB/s so that the LP's entries are near 1.
constexpr double kUnit = 1e9;
/// Columns one pricing round may add (the cheapest cycles first).
constexpr int kAddPerRound = 8;
/// Cycles the share quantisation may choose among.
constexpr size_t kPoolLimit = 128;
/// Column generation results kept by the process-wide cache.
constexpr size_t kCacheEntries = 8;

/// (row, load per unit of rate) of one column.
using Entries = std::vector<std::pair<int, double>>;

struct Column {
  std::vector<int> order; ///< group indices, rotated to start at 0
  std::vector<std::pair<int, double>> load; ///< (resource, load), sorted
};

/// What column generation found: every column it generated, the LP's rates
/// and the resource duals at the end.
struct Generated {
  std::vector<Column> cols;
  std::vector<double> x;    ///< GB/s per column
  std::vector<double> dual; ///< per resource, per unit of load
  double lpRate = 0, upperBound = 0; ///< bytes/s
  bool optimal = false;
  int iterations = 0;
  int seeds = 0; ///< cols[0, seeds) are the greedy packing's cycles
  uint64_t evaluated = 0;
};

/// Entries of `load` with rows from `rowOf` (grown for new resources).
Entries entriesOf(const LinkModel &m,
                  const std::vector<std::pair<int, double>> &load,
                  std::vector<int> &rowOf, int &rows) {
  Entries e;
  for (auto [r, v] : load) {
    if (rowOf[r] < 0)
      rowOf[r] = rows++;
    e.emplace_back(rowOf[r], v / (m.capacity(r) / kUnit));
  }
  return e;
}

/// Integer units per column (entries `e`) summing to `total` (at most
/// maxRings columns with units), from two starts: the LP shares `x` by
/// largest remainder, and a greedy fill (each unit to the column that keeps
/// the busiest row lowest); each improved by single-unit moves that lower
/// the busiest row (ties: the sum of squared row loads); the better one.
/// Returns the set's rate, total / busiest row load (GB/s).
double quantiseUnits(const std::vector<Entries> &e, int rows,
                     const std::vector<double> &x, int total, int maxRings,
                     bool keepAll, std::vector<int> &units) {
  const int P = static_cast<int>(e.size());
  assert((!keepAll || total >= P) && "every column needs a unit");
  const int least = keepAll ? 1 : 0; // units a column keeps
  using Score = std::pair<double, double>; // busiest row, sum of squares
  auto score = [&](const std::vector<double> &l) {
    double mx = 0, sq = 0;
    for (double v : l) {
      mx = std::max(mx, v);
      sq += v * v;
    }
    return Score{mx, sq};
  };
  auto better = [](const Score &a, const Score &b) {
    return a.first < b.first * (1 - 1e-12) ||
           (a.first <= b.first * (1 + 1e-12) &&
            a.second < b.second * (1 - 1e-9));
  };
  std::vector<double> trial(rows);
  // Single-unit moves c -> d off a busiest row, first improvement.
  auto improve = [&](std::vector<int> &u) {
    std::vector<double> load(rows, 0.0);
    int distinct = 0;
    for (int p = 0; p < P; ++p) {
      distinct += u[p] > 0;
      for (auto [i, v] : e[p])
        load[i] += u[p] * v;
    }
    Score cur = score(load);
    for (int pass = 0; pass < 4 * total + 64; ++pass) {
      bool moved = false;
      for (int c = 0; c < P && !moved; ++c) {
        if (u[c] == 0)
          continue;
        bool onMax = false;
        for (auto [i, v] : e[c])
          onMax = onMax || load[i] >= cur.first * (1 - 1e-12);
        if (!onMax)
          continue;
        for (int d = 0; d < P && !moved; ++d) {
          if (d == c || u[c] <= least ||
              (u[d] == 0 && u[c] > 1 && distinct >= maxRings))
            continue;
          trial = load;
          for (auto [i, v] : e[c])
            trial[i] -= v;
          for (auto [i, v] : e[d])
            trial[i] += v;
          Score sc = score(trial);
          if (better(sc, cur)) {
            distinct += (u[d] == 0) - (u[c] == 1);
            --u[c];
            ++u[d];
            load.swap(trial);
            cur = sc;
            moved = true;
          }
        }
      }
      if (!moved)
        break;
    }
    return cur;
  };
  // Start A: largest remainder over the largest maxRings LP shares.
  std::vector<int> top(P);
  std::iota(top.begin(), top.end(), 0);
  std::stable_sort(top.begin(), top.end(),
                   [&](int a, int b) { return x[a] > x[b]; });
  top.resize(std::min<size_t>(top.size(),
                              std::max(1, std::min(maxRings, total))));
  if (keepAll) {
    top.resize(P);
    std::iota(top.begin(), top.end(), 0);
  }
  double sum = 0;
  for (int p : top)
    sum += x[p];
  const int spare = total - least * static_cast<int>(top.size());
  std::vector<int> a(P, 0);
  std::vector<std::pair<double, int>> rem;
  int given = 0;
  for (int p : top) {
    double exactUnits = sum > 0 ? x[p] / sum * spare : 0;
    a[p] = least + static_cast<int>(std::floor(exactUnits + 1e-9));
    given += a[p];
    rem.emplace_back(-(exactUnits - (a[p] - least)), p);
  }
  std::stable_sort(rem.begin(), rem.end());
  for (size_t i = 0; given < total; i = (i + 1) % rem.size(), ++given)
    ++a[rem[i].second];
  Score sa = improve(a);
  // Start B: greedy fill.
  std::vector<int> g(P, least);
  std::vector<double> load(rows, 0.0);
  for (int p = 0; p < P; ++p)
    for (auto [i, v] : e[p])
      load[i] += least * v;
  int distinct = keepAll ? P : 0;
  for (int unit = least * P; unit < total; ++unit) {
    int pick = -1;
    Score best{0, 0};
    for (int d = 0; d < P; ++d) {
      if (g[d] == 0 && distinct >= maxRings)
        continue;
      trial = load;
      for (auto [i, v] : e[d])
        trial[i] += v;
      Score sc = score(trial);
      if (pick < 0 || better(sc, best)) {
        pick = d;
        best = sc;
      }
    }
    distinct += g[pick] == 0;
    ++g[pick];
    for (auto [i, v] : e[pick])
      load[i] += v;
  }
  Score sg = improve(g);
  const bool useGreedy = better(sg, sa);
  units = useGreedy ? g : a;
  double busiest = useGreedy ? sg.first : sa.first;
  return busiest > 0 ? total / busiest : 0;
}

/// The smallest power-of-two total up to maxUnits (with keepAll, from the
/// first that gives every column a unit) whose rate is within `tolerance`
/// of the best total tried: units per column, the rate (GB/s) and the
/// total.
std::pair<std::vector<int>, double>
chooseUnits(const std::vector<Entries> &e, int rows,
            const std::vector<double> &x, int maxRings, int maxUnits,
            double tolerance, bool keepAll, int &total) {
  std::vector<std::tuple<double, int, std::vector<int>>> tried;
  double bestRate = 0;
  const int first =
      keepAll ? static_cast<int>(llvm::PowerOf2Ceil(e.size())) : 1;
  for (int u = first; u <= std::max(first, maxUnits); u *= 2) {
    std::vector<int> units;
    double rate = quantiseUnits(e, rows, x, u, maxRings, keepAll, units);
    bestRate = std::max(bestRate, rate);
    tried.emplace_back(rate, u, std::move(units));
  }
  size_t pick = 0;
  while (std::get<0>(tried[pick]) < (1 - tolerance) * bestRate)
    ++pick;
  total = std::get<1>(tried[pick]);
  return {std::move(std::get<2>(tried[pick])), std::get<0>(tried[pick])};
}

/// Column generation over the Hamiltonian cycles of one group.
class Generator {
public:
  Generator(LinkModel &m, const std::vector<int> &ranks,
            const RingPackingOptions &opts)
      : m(m), k(static_cast<int>(ranks.size())), opts(opts) {
    flows.resize(static_cast<size_t>(k) * k, nullptr);
    for (int a = 0; a < k; ++a)
      for (int b = 0; b < k; ++b)
        if (a != b)
          flows[a * k + b] = &m.rankFlow(ranks[a], ranks[b]);
    int64_t routed = 0;
    for (const PathFlow *f : flows)
      routed += f && f->found;
    sparse = 2 * routed < int64_t(k) * (k - 1);
    // A row per resource with capacity that some hop of the group uses (a
    // column loads only those): a box's group on a 4096-GPU fabric has a
    // few dozen, not the fabric's 40 000, and the tableau is rows^2. Each
    // row keeps its place among all resources with capacity as its
    // perturbation key, so the pivots are those of the LP with every row.
    std::vector<char> used(m.numResources(), 0);
    for (const PathFlow *f : flows)
      if (f && f->found)
        for (auto [r, x] : f->res)
          used[r] = 1;
    rowOf.assign(m.numResources(), -1);
    int place = 0;
    for (int r = 0; r < m.numResources(); ++r) {
      if (!(m.capacity(r) > 0))
        continue;
      if (used[r]) {
        rowOf[r] = static_cast<int>(rowRes.size());
        rowRes.push_back(r);
        rowKey.push_back(place);
      }
      ++place;
    }
  }

  /// The cache key: everything the LP depends on (the group's hop routes,
  /// the capacities they use) and the generation's own options.
  std::string key() const {
    std::string s;
    auto put = [&](const void *p, size_t n) {
      s.append(static_cast<const char *>(p), n);
    };
    put(&k, sizeof k);
    put(&opts.exactPricingLimit, sizeof opts.exactPricingLimit);
    put(&opts.maxIterations, sizeof opts.maxIterations);
    for (const PathFlow *f : flows) {
      int32_t n = f && f->found ? static_cast<int32_t>(f->res.size()) : -1;
      put(&n, sizeof n);
      if (n < 0)
        continue;
      for (auto [r, x] : f->res) {
        double c = m.capacity(r);
        put(&r, sizeof r);
        put(&x, sizeof x);
        put(&c, sizeof c);
      }
    }
    return s;
  }

  Generated run() {
    Generated out;
    // Held-Karp holds 2^(k-1) (k-1) states: at most 20 ranks (160 MiB).
    const bool exact = k <= std::min(opts.exactPricingLimit, 20);
    auto cycles = [&](const std::vector<double> &w) {
      return exact ? exactCycles(w) : heuristicCycles(w);
    };
    // Seeds: a greedy packing, each cycle the cheapest under prices of
    // 1 / residual capacity, taking all it can of what the earlier ones
    // left (the sets a person would draw: NDv2's double- and single-link
    // cycles both ways, then a PCIe ring). They start the LP and always
    // stay in the quantisation's pool.
    std::vector<double> residual(m.numResources(), 0.0), price(residual);
    for (int r = 0; r < m.numResources(); ++r)
      residual[r] = m.capacity(r);
    double firstRate = 0;
    for (int seed = 0; seed < k; ++seed) {
      for (int r = 0; r < m.numResources(); ++r)
        price[r] = residual[r] > 1e-9 * m.capacity(r) && residual[r] > 0
                       ? 1 / residual[r]
                       : 1e30;
      auto best = cycles(hopPrices(price));
      if (best.empty() || !addColumn(best.front().second))
        break;
      double rate = kInf;
      for (auto [r, x] : cols.back().load)
        rate = std::min(rate, residual[r] / x);
      if (!(rate > 0.01 * firstRate)) {
        cols.pop_back();
        seen.erase(best.front().second);
        break;
      }
      firstRate = std::max(firstRate, rate);
      for (auto [r, x] : cols.back().load)
        residual[r] = std::max(0.0, residual[r] - rate * x);
    }
    out.seeds = static_cast<int>(cols.size());
    if (cols.empty())
      return out;
    std::vector<int> all(cols.size());
    std::iota(all.begin(), all.end(), 0);
    PackingSimplex lp = fresh(all);
    bool solved = false;
    // A large sparse group (a torus: GPUs relay) prices slowly and its
    // pool grows by many columns a round: fewer rounds.
    const int rounds = sparse && k > kSparseFullRoundsRanks
                           ? std::min(opts.maxIterations, kSparseRounds)
                           : opts.maxIterations;
    for (out.iterations = 0; out.iterations < rounds; ++out.iterations) {
      solved = lp.solve();
      if (!solved)
        break;
      auto found = cycles(hopPrices(resourceDuals(lp)));
      if (found.empty())
        break;
      double cheapest = found.front().first;
      if (exact && cheapest > 0)
        out.upperBound = lp.objective() / std::min(1.0, cheapest) * kUnit;
      int added = 0;
      for (auto &[cost, c] : found) {
        if (!(cost < 1 - kImprove) || added == kAddPerRound)
          break;
        if (addColumn(c)) {
          lp.addColumn(entries(cols.back()), 1.0);
          ++added;
        }
      }
      if (added == 0) {
        out.optimal = exact && !(cheapest < 1 - kImprove);
        break;
      }
    }
    if (!solved)
      solved = lp.solve();
    all.resize(cols.size());
    std::iota(all.begin(), all.end(), 0);
    std::vector<double> x = lp.primal();
    if (!solved || worstRow(all, x) > 1 + 1e-6) {
      // Rounding drifted over many pivots: solve the pool again afresh.
      lp = fresh(all);
      lp.solve();
      x = lp.primal();
      out.optimal = false;
    }
    out.lpRate = lp.objective() * kUnit;
    out.upperBound = exact ? std::max(out.upperBound, out.lpRate) : 0;
    out.dual = resourceDuals(lp);
    out.x = std::move(x);
    out.cols = std::move(cols);
    out.evaluated = evaluated;
    return out;
  }

private:
  /// Adds the cycle (group indices) unless it has an unroutable hop, uses
  /// a resource without capacity or is already a column.
  bool addColumn(std::vector<int> order) {
    auto zero = std::find(order.begin(), order.end(), 0);
    std::rotate(order.begin(), zero, order.end());
    if (seen.count(order))
      return false;
    std::map<int, double> load;
    for (int i = 0; i < k; ++i) {
      const PathFlow *f = flows[order[i] * k + order[(i + 1) % k]];
      if (!f || !f->found)
        return false;
      for (auto [r, x] : f->res) {
        if (!(m.capacity(r) > 0))
          return false;
        load[r] += x;
      }
    }
    seen.insert(order);
    cols.push_back(Column{order, {load.begin(), load.end()}});
    return true;
  }

  Entries entries(const Column &c) const {
    Entries e;
    for (auto [r, x] : c.load)
      e.emplace_back(rowOf[r], x / (m.capacity(r) / kUnit));
    return e;
  }

  /// The LP over the columns `use`, from the slack basis; one row per
  /// resource with capacity.
  PackingSimplex fresh(const std::vector<int> &use) {
    PackingSimplex lp(std::vector<double>(rowRes.size(), 1.0), rowKey);
    for (int c : use)
      lp.addColumn(entries(cols[c]), 1.0);
    return lp;
  }

  /// Duals per resource (per unit of load) from the LP's row duals.
  std::vector<double> resourceDuals(const PackingSimplex &lp) const {
    std::vector<double> y = lp.duals(), dual(m.numResources(), 0.0);
    for (size_t i = 0; i < rowRes.size(); ++i)
      dual[rowRes[i]] = y[i] / (m.capacity(rowRes[i]) / kUnit);
    return dual;
  }

  /// Largest row load of rates `x` over columns `use` (1 when tight).
  double worstRow(const std::vector<int> &use, const std::vector<double> &x) {
    std::vector<double> row(rowRes.size(), 0.0);
    for (size_t j = 0; j < use.size(); ++j)
      for (auto [i, v] : entries(cols[use[j]]))
        row[i] += v * x[j];
    double worst = 0;
    for (double v : row)
      worst = std::max(worst, v);
    return worst;
  }

  /// Price of every hop under `dual` (per unit of load); kInf unroutable.
  std::vector<double> hopPrices(const std::vector<double> &dual) const {
    std::vector<double> w(static_cast<size_t>(k) * k, kInf);
    for (int a = 0; a < k; ++a)
      for (int b = 0; b < k; ++b) {
        const PathFlow *f = flows[a * k + b];
        if (a == b || !f || !f->found)
          continue;
        double p = 0;
        for (auto [r, x] : f->res)
          p += dual[r] * x;
        w[a * k + b] = p;
      }
    return w;
  }

  /// Cheapest Hamiltonian cycles under hop prices `w` (Held-Karp): for
  /// each last rank before the return to rank 0 the cheapest cycle through
  /// it, cheapest first (so one pass offers up to k - 1 columns).
  std::vector<std::pair<double, std::vector<int>>>
  exactCycles(const std::vector<double> &w) {
    const int rest = k - 1; // nodes 1..k-1 are bits 0..k-2
    const size_t states = size_t{1} << rest;
    dp.assign(states * rest, kInf);
    from.assign(states * rest, -1);
    for (int j = 0; j < rest; ++j)
      dp[(size_t{1} << j) * rest + j] = w[0 * k + (j + 1)];
    for (size_t mask = 1; mask < states; ++mask) {
      const double *row = &dp[mask * rest];
      for (int j = 0; j < rest; ++j) {
        double d = row[j];
        if (!(mask >> j & 1) || d == kInf)
          continue;
        const double *wj = &w[(j + 1) * k + 1];
        for (int nx = 0; nx < rest; ++nx) {
          if (mask >> nx & 1)
            continue;
          double v = d + wj[nx];
          size_t to = (mask | size_t{1} << nx) * rest + nx;
          if (v < dp[to]) {
            dp[to] = v;
            from[to] = static_cast<int8_t>(j);
          }
        }
      }
    }
    evaluated += states * rest * rest;
    std::vector<std::pair<double, std::vector<int>>> out;
    const size_t full = states - 1;
    for (int last = 0; last < rest; ++last) {
      double cost = dp[full * rest + last] + w[(last + 1) * k + 0];
      if (!(cost < kInf))
        continue;
      std::vector<int> rev;
      size_t mask = full;
      for (int j = last; j >= 0;) {
        rev.push_back(j + 1);
        int prev = from[mask * rest + j];
        mask &= ~(size_t{1} << j);
        j = prev;
      }
      rev.push_back(0);
      std::reverse(rev.begin(), rev.end());
      out.emplace_back(cost, std::move(rev));
    }
    std::stable_sort(out.begin(), out.end(),
                     [](auto &a, auto &b) { return a.first < b.first; });
    return out;
  }

  double tourCost(const std::vector<int> &o, const std::vector<double> &w) {
    ++evaluated;
    double s = 0;
    for (int i = 0; i < k; ++i)
      s += w[o[i] * k + o[(i + 1) % k]];
    return s;
  }

  /// 2-opt and Or-opt (LocalSearch.h), position 0 fixed.
  double improveTour(std::vector<int> &o, const std::vector<double> &w) {
    return improveOrder(
        o, 1, k - 1, 50,
        [&](const std::vector<int> &c) { return tourCost(c, w); },
        [](double t, double cur) { return t < cur - 1e-12; });
  }

  /// Cheap cycles by local search from every column and from a
  /// nearest-neighbour tour per start rank, cheapest first.
  std::vector<std::pair<double, std::vector<int>>>
  heuristicCycles(const std::vector<double> &w) {
    std::vector<std::vector<int>> starts;
    // On a sparse group, the newest columns only (see below).
    size_t firstCol =
        sparse && cols.size() > kSparseStarts ? cols.size() - kSparseStarts : 0;
    for (size_t c = firstCol; c < cols.size(); ++c)
      starts.push_back(cols[c].order);
    // Where most pairs have no route (a torus or mesh, whose GPUs relay),
    // nearest-neighbour tours mostly run into unrouted hops and each start
    // costs a long local search: a few evenly spaced starts suffice.
    const int numStarts = sparse ? std::min(k, kSparseStarts) : k;
    for (int i = 0; i < numStarts; ++i) {
      const int s = static_cast<int>(int64_t(i) * k / numStarts);
      std::vector<int> o{s};
      std::vector<bool> used(k, false);
      used[s] = true;
      for (int step = 1; step < k; ++step) {
        int cur = o.back(), pick = -1;
        for (int nx = 0; nx < k; ++nx)
          if (!used[nx] && (pick < 0 || w[cur * k + nx] < w[cur * k + pick]))
            pick = nx;
        used[pick] = true;
        o.push_back(pick);
      }
      std::rotate(o.begin(), std::find(o.begin(), o.end(), 0), o.end());
      starts.push_back(std::move(o));
    }
    std::vector<std::pair<double, std::vector<int>>> out;
    for (std::vector<int> &o : starts) {
      double t = improveTour(o, w);
      out.emplace_back(t, o);
    }
    std::stable_sort(out.begin(), out.end(),
                     [](auto &a, auto &b) { return a.first < b.first; });
    return out;
  }

  /// Nearest-neighbour starts of heuristicCycles on a sparse group.
  static constexpr int kSparseStarts = 4;
  /// Column generation rounds on a sparse group of more ranks than
  /// kSparseFullRoundsRanks.
  static constexpr int kSparseRounds = 20;
  static constexpr int kSparseFullRoundsRanks = 32;

  LinkModel &m;
  int k;
  bool sparse = false; ///< fewer than half of the ordered pairs route
  const RingPackingOptions &opts;
  std::vector<const PathFlow *> flows;
  std::vector<Column> cols;
  std::set<std::vector<int>> seen;
  std::vector<int> rowOf;  ///< LP row per resource, -1: no row (unused)
  std::vector<int> rowRes; ///< resource per LP row
  std::vector<int> rowKey; ///< per LP row: its perturbation key
  std::vector<double> dp;  ///< Held-Karp tables, kept between rounds
  std::vector<int8_t> from;
  uint64_t evaluated = 0;
};

/// Column generation for `ranks`, from the cache when the same LP was
/// solved before in this process.
std::shared_ptr<const Generated> generate(LinkModel &m,
                                          const std::vector<int> &ranks,
                                          const RingPackingOptions &opts) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const Generated>> cache;
  Generator g(m, ranks, opts);
  std::string key = g.key();
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end())
      return it->second;
  }
  auto result = std::make_shared<const Generated>(g.run());
  std::lock_guard<std::mutex> lock(mu);
  if (cache.size() >= kCacheEntries)
    cache.clear();
  cache.emplace(std::move(key), result);
  return result;
}

} // namespace

RingPacking packRings(LinkModel &m, const std::vector<int> &ranks,
                      const RingPackingOptions &opts) {
  assert(ranks.size() >= 2 && "a ring needs two ranks");
  RingPacking out;
  std::shared_ptr<const Generated> gen = generate(m, ranks, opts);
  out.lpRate = gen->lpRate;
  out.upperBound = gen->upperBound;
  out.optimal = gen->optimal;
  out.iterations = gen->iterations;
  out.evaluated = gen->evaluated;
  if (gen->cols.empty())
    return out;
  // The pool for quantisation: the LP's rings, then the cycles that price
  // within 2% of entering (alternative optima), cheapest first.
  const double obj = gen->lpRate / kUnit;
  std::vector<std::pair<double, int>> byPrice;
  for (size_t j = 0; j < gen->cols.size(); ++j) {
    double price = 0;
    for (auto [r, v] : gen->cols[j].load)
      price += gen->dual[r] * v;
    if (gen->x[j] > 1e-9 * std::max(1.0, obj))
      price = -2;
    else if (static_cast<int>(j) < gen->seeds)
      price = -1;
    if (price <= 1.02)
      byPrice.emplace_back(price, static_cast<int>(j));
  }
  std::stable_sort(byPrice.begin(), byPrice.end());
  std::vector<int> pool;
  std::vector<double> px;
  std::vector<Entries> e;
  std::vector<int> rowOf(m.numResources(), -1);
  int rows = 0;
  for (auto [price, j] : byPrice) {
    if (pool.size() == kPoolLimit)
      break;
    pool.push_back(j);
    px.push_back(gen->x[j]);
    e.push_back(entriesOf(m, gen->cols[j].load, rowOf, rows));
  }
  auto [units, rate] = chooseUnits(e, rows, px, opts.maxRings, opts.maxUnits,
                                   opts.tolerance, false, out.units);
  std::vector<int> order;
  for (size_t i = 0; i < pool.size(); ++i)
    if (units[i] > 0)
      order.push_back(static_cast<int>(i));
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return units[a] > units[b]; });
  for (int i : order) {
    RingChannel rc;
    for (int g : gen->cols[pool[i]].order)
      rc.order.push_back(ranks[g]);
    rc.units = units[i];
    rc.share = static_cast<double>(units[i]) / out.units;
    out.rings.push_back(std::move(rc));
  }
  out.rate = rate * kUnit;
  return out;
}

int quantiseRingShares(LinkModel &m, std::vector<RingChannel> &rings,
                       const RingPackingOptions &opts) {
  if (rings.empty())
    return 0;
  std::vector<int> rowOf(m.numResources(), -1);
  int rows = 0;
  std::vector<Entries> e;
  std::vector<double> x;
  for (const RingChannel &rc : rings) {
    std::map<int, double> load;
    for (size_t i = 0; i < rc.order.size(); ++i)
      for (auto [r, v] : analysis::hopFlow(rc, i, m).res)
        if (m.capacity(r) > 0)
          load[r] += v;
    e.push_back(entriesOf(m, {load.begin(), load.end()}, rowOf, rows));
    x.push_back(rc.share);
  }
  int total = 0;
  auto [units, rate] =
      chooseUnits(e, rows, x, static_cast<int>(rings.size()), opts.maxUnits,
                  opts.tolerance, true, total);
  std::vector<RingChannel> out;
  for (size_t i = 0; i < rings.size(); ++i)
    if (units[i] > 0) {
      RingChannel rc = std::move(rings[i]);
      rc.units = units[i];
      rc.share = static_cast<double>(units[i]) / total;
      out.push_back(std::move(rc));
    }
  rings = std::move(out);
  return total;
}

} // namespace topocc::algorithms
