//===- compiler/algorithms/TreePacking.cpp - Spanning out-trees -----------===//
//
// The arc oracle of docs/Algorithms-trees.md, "The oracle in one network":
// a query source sigma with arcs sigma -> x (BIG while x is the tail under
// test) and
// sigma -> a_i (C_i for every other unfinished tree i), and a_i -> z (BIG)
// for every z already in tree i. F = flow(sigma, y).
//
//===----------------------------------------------------------------------===//

#include "compiler/algorithms/TreePacking.h"

#include "support/Diagnostics.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

namespace topocc::algorithms {

namespace {

using Key = std::pair<int, int>;

struct Growing {
  int root = -1;
  int64_t mult = 0;
  std::vector<char> inTree;
  std::vector<int> order; ///< ranks in attach order (depth non-decreasing)
  std::vector<int> depth, parent;
  std::vector<Key> arcs;
  size_t cursor = 0; ///< order[< cursor] have no untried arcs left
  std::set<Key> rejected;
  bool finished = false;
  int aux = -1;      ///< a_i
  int sigmaArc = -1; ///< sigma -> a_i
  std::vector<int> auxArcs; ///< a_i -> z, zeroed when the tree finishes
  int created = 0;   ///< creation index (determinism of the final order)
  std::vector<int> inBlock; ///< vertices per block (symmetric packing)
};

using PathList = std::vector<std::pair<std::vector<int>, int64_t>>;

/// Removes the loops of a walk: when a vertex comes back, the detour since
/// its first visit is cut out (x -> w -> s -> w -> y becomes x -> w -> y).
/// The result uses a subset of the walk's arcs, so no link carries more.
void shortcutLoops(std::vector<int> &p) {
  std::vector<int> out;
  out.reserve(p.size());
  for (int v : p) {
    auto it = std::find(out.begin(), out.end(), v);
    if (it != out.end())
      out.erase(it + 1, out.end());
    else
      out.push_back(v);
  }
  p = std::move(out);
}

/// Zip-merges two lists of (path, units) with equal totals: walks both and
/// emits the concatenation with the smaller remaining multiplicity, loops
/// cut out (nested splits can route u -> w -> s -> w -> t).
PathList zipPaths(const PathList &a, const PathList &b) {
  PathList out;
  size_t i = 0, j = 0;
  int64_t ra = a.empty() ? 0 : a[0].second, rb = b.empty() ? 0 : b[0].second;
  while (i < a.size() && j < b.size()) {
    int64_t take = std::min(ra, rb);
    std::vector<int> p = a[i].first;
    p.insert(p.end(), b[j].first.begin() + 1, b[j].first.end());
    shortcutLoops(p);
    out.push_back({std::move(p), take});
    ra -= take;
    rb -= take;
    if (ra == 0 && ++i < a.size())
      ra = a[i].second;
    if (rb == 0 && ++j < b.size())
      rb = b[j].second;
  }
  return out;
}

class MapBack {
public:
  explicit MapBack(const SwitchSplitResult &s) : split(s) {
    for (auto &[key, list] : s.viaSwitch) {
      std::vector<int64_t> &rem = remaining[key];
      for (const SplitContribution &c : list)
        rem.push_back(c.amount);
    }
    directLeft = s.direct;
  }

  /// Physical paths for m units of (u,t), consuming capacity.
  llvm::Expected<PathList> expand(int u, int t, int64_t m) {
    PathList out;
    int64_t need = m;
    auto via = split.viaSwitch.find({u, t});
    if (via != split.viaSwitch.end()) {
      std::vector<int64_t> &rem = remaining[{u, t}];
      for (size_t i = 0; i < rem.size() && need > 0; ++i) {
        int64_t take = std::min(need, rem[i]);
        if (take == 0)
          continue;
        int w = via->second[i].via;
        auto a = expand(u, w, take);
        if (!a)
          return a.takeError();
        auto b = expand(w, t, take);
        if (!b)
          return b.takeError();
        PathList z = zipPaths(*a, *b);
        out.insert(out.end(), z.begin(), z.end());
        rem[i] -= take;
        need -= take;
      }
    }
    if (need > 0) {
      int64_t &d = directLeft[{u, t}];
      if (d < need)
        return makeInternalError(llvm::formatv(
            "tree map-back: arc {0} -> {1} is {2} units short", u, t,
            need - d));
      d -= need;
      out.push_back({{u, t}, need});
    }
    return out;
  }

private:
  const SwitchSplitResult &split;
  std::map<Key, std::vector<int64_t>> remaining;
  std::map<Key, int64_t> directLeft;
};

/// The smallest d (a proper divisor of n) such that shifting every rank by d
/// (r -> (r + d) mod n) maps the compute graph onto itself, capacities
/// included; 0 when there is none. Ranks are numbered box by box, so on a
/// cluster of identical boxes behind symmetric switches d is the box size.
int findRankShift(const SwitchSplitResult &split,
                  const std::vector<int> &rankOf, int n) {
  std::map<Key, int64_t> cap;
  for (const SwitchSplitResult::Arc &a : split.arcs)
    cap[{rankOf[a.from], rankOf[a.to]}] = a.cap;
  for (int d = 1; d <= n / 2; ++d) {
    if (n % d != 0)
      continue;
    bool ok = true;
    for (auto it = cap.begin(); ok && it != cap.end(); ++it) {
      auto img = cap.find({(it->first.first + d) % n,
                           (it->first.second + d) % n});
      ok = img != cap.end() && img->second == it->second;
    }
    if (ok)
      return d;
  }
  return 0;
}

/// Grows k spanning out-trees per root with the arc oracle. With `shift`
/// d > 0 (findRankShift), only the trees of roots 0..d-1 (and their clones)
/// are probed; every attach is repeated on the n/d - 1 shifted copies, so
/// the state stays symmetric and the probes drop by the factor n/d. A
/// probe certifies one attach, not the whole orbit's, so this can get stuck:
/// it then returns false and the caller starts over without the shift.
/// The generic run (d = 0) cannot get stuck while invariant I holds.
class Grower {
public:
  Grower(const SwitchSplitResult &split, const std::vector<int> &rankOf,
         int shift, bool optimistic, const std::vector<int> &blocks)
      : n(static_cast<int>(split.compute.size())), k(split.k), d(shift),
        m(shift > 0 ? n / shift : 1), optimistic(optimistic), net(n + 1),
        sigma(n) {
    // Blocks for the cut pre-check: the caller's (the nodes), else the
    // boxes of the shift, else none. Any partition is sound; the nodes are
    // at least as fine as the shift's boxes (a pod of a fat tree holds
    // several nodes), and finer blocks answer more probes.
    if (static_cast<int>(blocks.size()) == n) {
      blockOf = blocks;
    } else if (d > 0) {
      for (int r = 0; r < n; ++r)
        blockOf.push_back(r / d);
    }
    for (int b : blockOf)
      numBlocks = std::max(numBlocks, b + 1);
    big = 1 + n * k;
    outNbrs.resize(n);
    for (const SwitchSplitResult::Arc &a : split.arcs) {
      int x = rankOf[a.from], y = rankOf[a.to];
      arcId[{x, y}] = net.addArc(x, y, a.cap);
      outNbrs[x].push_back(y);
      big += a.cap;
    }
    for (std::vector<int> &o : outNbrs)
      std::sort(o.begin(), o.end());
    sigmaTo.resize(n);
    for (int x = 0; x < n; ++x)
      sigmaTo[x] = net.addArc(sigma, x, 0);
    source = net.addVertex();
    capArc = net.addArc(source, sigma, 0);
    if (numBlocks > 0) {
      blockIn.assign(numBlocks, 0);
      for (const SwitchSplitResult::Arc &a : split.arcs) {
        int x = rankOf[a.from], y = rankOf[a.to];
        if (blockOf[x] != blockOf[y])
          blockIn[blockOf[y]] += a.cap;
      }
      touch.assign(numBlocks, 0);
    }
    for (int r = 0; r < n; ++r) {
      Growing t;
      t.root = r;
      t.mult = k;
      t.inTree.assign(n, 0);
      t.inTree[r] = 1;
      t.order = {r};
      t.depth.assign(n, -1);
      t.depth[r] = 0;
      t.parent.assign(n, -1);
      t.created = r;
      if (numBlocks > 0) {
        t.inBlock.assign(numBlocks, 0);
        t.inBlock[blockOf[r]] = 1;
        touch[blockOf[r]] += k;
      }
      addAux(t);
      unfinished += k;
      trees.push_back(std::move(t));
    }
    for (int r = 0; r < (d > 0 ? d : n); ++r) {
      reps.push_back(r);
      std::vector<int> img;
      for (int j = 1; j < m; ++j)
        img.push_back(r + j * d);
      images.push_back(std::move(img));
    }
    nextCreated = n;
  }

  /// true: every tree spans; false: a probed tree cannot grow (only with a
  /// shift). Internal error when a generic run gets stuck.
  llvm::Expected<bool> run() {
    bool anyUnfinished = true;
    while (anyUnfinished) {
      anyUnfinished = false;
      size_t count = reps.size();
      for (size_t o = 0; o < count; ++o) {
        int i = reps[o];
        if (trees[i].finished)
          continue;
        if (!growOnce(o)) {
          if (d > 0)
            return false;
          return makeInternalError(llvm::formatv(
              "tree packing: the tree of rank {0} with {1} units cannot grow "
              "(invariant I does not hold)",
              trees[i].root, trees[i].mult));
        }
        anyUnfinished |= !trees[i].finished;
      }
      for (size_t o = count; o < reps.size(); ++o)
        anyUnfinished |= !trees[reps[o]].finished;
    }
    return true;
  }

  std::vector<Growing> trees;
  int maxFlows = 0;
  int cutRejects = 0; ///< probes rejected by the block cut, no max-flow

private:
  int shiftRank(int v, int j) const { return (v + j * d) % n; }
  int64_t residual(int x, int y) const {
    return net.capacity(arcId.at({x, y}));
  }

  void addAux(Growing &t) {
    if (optimistic)
      return;
    t.aux = net.addVertex();
    t.sigmaArc = net.addArc(sigma, t.aux, t.finished ? 0 : t.mult);
    t.auxArcs.clear();
    for (int z : t.order)
      t.auxArcs.push_back(net.addArc(t.aux, z, t.finished ? 0 : big));
  }

  int64_t test(Growing &t, int x, int y) {
    // The block of y as the cut X (y in X, x not): F <= r-(X) + the units
    // of the other unfinished trees that touch X, so when r-(X) does not
    // exceed the units of the other trees that do not, mu <= 0 without a
    // max-flow.
    int64_t cutMu = std::numeric_limits<int64_t>::max();
    if (numBlocks > 0 && blockOf[x] != blockOf[y]) {
      int b = blockOf[y];
      int64_t notTouching =
          unfinished - touch[b] - (t.inBlock[b] > 0 ? 0 : t.mult);
      if (blockIn[b] <= notTouching) {
        ++cutRejects;
        return 0;
      }
      cutMu = blockIn[b] - notTouching;
    }
    if (optimistic)
      return std::min({t.mult, residual(x, y), cutMu});
    net.setCapacity(sigmaTo[x], big);
    net.setCapacity(t.sigmaArc, 0);
    ++maxFlows;
    // Only F up to (U - C_T) + min(C_T, r) matters: a source arc with that
    // capacity stops the flow there (F beyond it through x is often large).
    net.setCapacity(capArc,
                    unfinished - t.mult + std::min(t.mult, residual(x, y)));
    int64_t f = net.maxFlowValue(source, y);
    net.setCapacity(sigmaTo[x], 0);
    net.setCapacity(t.sigmaArc, t.mult);
    return std::min({t.mult, residual(x, y), f - (unfinished - t.mult)});
  }

  /// Splits tree i into mu units (kept in i) and mult - mu (a new tree).
  int cloneRest(int i, int64_t mu) {
    Growing c = trees[i];
    c.mult = trees[i].mult - mu;
    c.created = nextCreated++;
    trees[i].mult = mu;
    if (!optimistic)
      net.setCapacity(trees[i].sigmaArc, mu);
    addAux(c);
    trees.push_back(std::move(c));
    return static_cast<int>(trees.size()) - 1;
  }

  void attach(int i, int x, int y, int64_t mu) {
    Growing &t = trees[i];
    t.inTree[y] = 1;
    t.order.push_back(y);
    t.depth[y] = t.depth[x] + 1;
    t.parent[y] = x;
    t.arcs.push_back({x, y});
    net.setCapacity(arcId.at({x, y}), residual(x, y) - mu);
    if (numBlocks > 0) {
      if (blockOf[x] != blockOf[y])
        blockIn[blockOf[y]] -= mu;
      if (t.inBlock[blockOf[y]]++ == 0)
        touch[blockOf[y]] += t.mult;
    }
    if (!optimistic)
      t.auxArcs.push_back(net.addArc(t.aux, y, big));
    if (static_cast<int>(t.order.size()) == n) {
      t.finished = true;
      // A finished tree's aux vertex is dead (sigma -> a_i is 0); closing
      // its arcs keeps Boykov-Kolmogorov's search trees out.
      if (!optimistic)
        net.setCapacity(t.sigmaArc, 0);
      for (int a : t.auxArcs)
        net.setCapacity(a, 0);
      unfinished -= t.mult;
      for (int b = 0; b < numBlocks; ++b)
        touch[b] -= t.mult; // a spanning tree touches every block
    }
  }

  /// One arc for the probed tree of orbit o (and its shifted copies), from
  /// its shallowest vertex with an untried arc. false: none can be added.
  bool growOnce(size_t o) {
    int i = reps[o];
    while (trees[i].cursor < trees[i].order.size()) {
      int x = trees[i].order[trees[i].cursor];
      for (int y : outNbrs[x]) {
        Growing &t = trees[i];
        if (t.inTree[y] || t.rejected.count({x, y}) || residual(x, y) == 0)
          continue;
        int64_t mu = test(t, x, y);
        if (mu <= 0) {
          t.rejected.insert({x, y});
          continue;
        }
        if (mu < t.mult) { // clone the rest, in every shifted copy too
          int c = cloneRest(i, mu);
          std::vector<int> img;
          for (int j : images[o])
            img.push_back(cloneRest(j, mu));
          reps.push_back(c);
          images.push_back(std::move(img));
        }
        attach(i, x, y, mu);
        for (size_t j = 0; j < images[o].size(); ++j)
          attach(images[o][j], shiftRank(x, static_cast<int>(j) + 1),
                 shiftRank(y, static_cast<int>(j) + 1), mu);
        return true;
      }
      ++trees[i].cursor;
    }
    return false;
  }

  int n;
  int64_t k;
  int d, m;
  /// No max-flow: only residuals and the block cuts (a necessary
  /// condition), so it may get stuck; the result is checked all the same.
  bool optimistic;
  analysis::MaxFlowNetwork net;
  int sigma;
  int64_t big = 0, unfinished = 0;
  std::map<Key, int> arcId; // rank pair -> residual arc
  std::vector<std::vector<int>> outNbrs;
  std::vector<int> sigmaTo;
  int source = -1, capArc = -1; ///< source -> sigma, capped per probe
  std::vector<int> reps;                 ///< the probed tree of each orbit
  std::vector<std::vector<int>> images;  ///< its shifted copies, by shift
  int nextCreated = 0;
  /// The cut pre-check's blocks (boxes of d ranks, or the caller's
  /// nodes): residual units entering each block, and the units of the
  /// unfinished trees that touch it.
  std::vector<int64_t> blockIn, touch;
  std::vector<int> blockOf; ///< per rank; empty: no cut pre-check
  int numBlocks = 0;
};

} // namespace

llvm::Expected<TreePackingResult>
packTrees(const SwitchSplitResult &split, const analysis::BoundGraph &g,
          bool reversed, llvm::ArrayRef<int64_t> units,
          const PackOptions &opts) {
  const int n = static_cast<int>(split.compute.size());
  const int64_t k = split.k;
  std::vector<int> rankOf(split.numVertices, -1);
  for (int r = 0; r < n; ++r)
    rankOf[split.compute[r]] = r;
  for (const SwitchSplitResult::Arc &a : split.arcs)
    if (rankOf[a.from] < 0 || rankOf[a.to] < 0)
      return makeInternalError("packTrees: an arc does not join two GPUs");

  TreePackingResult res;
  res.numRanks = n;
  res.k = k;
  std::vector<Growing> trees;
  int shift = opts.useSymmetry ? findRankShift(split, rankOf, n) : 0;
  if (shift > 0) {
    // Cheapest first: the block cuts alone, then the exact oracle.
    for (bool optimistic : {true, false}) {
      if (optimistic && !opts.tryOracleFree)
        continue;
      // With few shifts the exact symmetric run saves little and, on the
      // clone-heavy packings of a large k, costs more than the generic one
      // (2x MI250 at k = 83: 6 627 max-flows against 2 534).
      if (!optimistic && n / shift < 4)
        continue;
      Grower sym(split, rankOf, shift, optimistic, opts.blocks);
      auto done = sym.run();
      if (!done)
        return done.takeError();
      res.maxFlows += sym.maxFlows;
      res.cutRejects += sym.cutRejects;
      if (*done) {
        res.symmetryOrder = n / shift;
        res.oracleFree = optimistic;
        trees = std::move(sym.trees);
        break;
      }
    }
    res.symmetryFallback = trees.empty();
    if (trees.empty() && !opts.genericFallback)
      return res;
  }
  if (trees.empty()) {
    Grower gen(split, rankOf, 0, false, opts.blocks);
    auto done = gen.run();
    if (!done)
      return done.takeError();
    res.maxFlows += gen.maxFlows;
    res.cutRejects += gen.cutRejects;
    trees = std::move(gen.trees);
  }

  std::stable_sort(trees.begin(), trees.end(),
                   [](const Growing &a, const Growing &b) {
                     return std::tie(a.root, a.created) <
                            std::tie(b.root, b.created);
                   });
  // Checks (1)-(3): arborescences, k per root, compute-arc capacities.
  std::vector<int64_t> perRoot(n, 0);
  std::map<Key, int64_t> used;
  int64_t heightSum = 0;
  for (const Growing &t : trees) {
    if (static_cast<int>(t.arcs.size()) != n - 1)
      return makeInternalError("tree packing: a tree is not spanning");
    PackedTree p;
    p.root = t.root;
    p.mult = t.mult;
    p.parent = t.parent;
    p.arcs = t.arcs;
    for (int v = 0; v < n; ++v)
      p.height = std::max(p.height, t.depth[v]);
    perRoot[t.root] += t.mult;
    for (const Key &a : t.arcs)
      used[a] += t.mult;
    heightSum += p.height;
    res.maxHeight = std::max(res.maxHeight, p.height);
    res.trees.push_back(std::move(p));
  }
  for (int r = 0; r < n; ++r)
    if (perRoot[r] != k)
      return makeInternalError(llvm::formatv(
          "tree packing: rank {0} roots {1} units, expected {2}", r,
          perRoot[r], k));
  for (const SwitchSplitResult::Arc &a : split.arcs) {
    auto it = used.find({rankOf[a.from], rankOf[a.to]});
    if (it != used.end() && it->second > a.cap)
      return makeInternalError("tree packing: a compute arc is over capacity");
  }
  res.meanHeight = static_cast<double>(heightSum) / res.trees.size();

  // Map back through the switches, then checks (4) and (5).
  MapBack mb(split);
  std::map<Key, int64_t> physCap, physUsed;
  for (size_t i = 0; i < g.arcs.size(); ++i) {
    int u = reversed ? g.arcs[i].to : g.arcs[i].from;
    int t = reversed ? g.arcs[i].from : g.arcs[i].to;
    physCap[{u, t}] += units[i];
  }
  for (size_t ti = 0; ti < res.trees.size(); ++ti) {
    const PackedTree &t = res.trees[ti];
    std::vector<std::pair<std::vector<std::vector<int>>, int64_t>> list{
        {{}, t.mult}};
    for (const Key &a : t.arcs) {
      auto e = mb.expand(split.compute[a.first], split.compute[a.second],
                         t.mult);
      if (!e)
        return e.takeError();
      std::vector<std::pair<std::vector<std::vector<int>>, int64_t>> next;
      size_t i = 0, j = 0;
      int64_t ri = list[0].second, rj = (*e)[0].second;
      while (i < list.size() && j < e->size()) {
        int64_t take = std::min(ri, rj);
        auto paths = list[i].first;
        paths.push_back((*e)[j].first);
        next.push_back({std::move(paths), take});
        ri -= take;
        rj -= take;
        if (ri == 0 && ++i < list.size())
          ri = list[i].second;
        if (rj == 0 && ++j < e->size())
          rj = (*e)[j].second;
      }
      list = std::move(next);
    }
    for (auto &[paths, mult] : list) {
      for (size_t a = 0; a < paths.size(); ++a) {
        const std::vector<int> &p = paths[a];
        if (p.size() < 2 || p.front() != split.compute[t.arcs[a].first] ||
            p.back() != split.compute[t.arcs[a].second])
          return makeInternalError("tree map-back: a path is not contiguous");
        for (size_t h = 0; h < p.size(); ++h)
          if (std::find(p.begin() + h + 1, p.end(), p[h]) != p.end())
            return makeInternalError(llvm::formatv(
                "tree map-back: a path visits vertex {0} twice", p[h]));
        for (size_t h = 0; h + 1 < p.size(); ++h) {
          if (!physCap.count({p[h], p[h + 1]}))
            return makeInternalError(
                "tree map-back: a path uses a missing link");
          physUsed[{p[h], p[h + 1]}] += mult;
        }
      }
      res.physical.push_back({static_cast<int>(ti), mult, std::move(paths)});
    }
  }
  for (auto &[key, u] : physUsed) {
    int64_t cap = physCap[key];
    double c = cap > 0 ? static_cast<double>(u) / cap : 1e300;
    res.congestion = std::max(res.congestion, c);
    if (u > cap)
      return makeInternalError(llvm::formatv(
          "tree map-back: link {0} -> {1} carries {2} units, capacity {3}",
          key.first, key.second, u, cap));
  }
  return res;
}

} // namespace topocc::algorithms
