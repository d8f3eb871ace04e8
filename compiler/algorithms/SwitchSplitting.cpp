//===- compiler/algorithms/SwitchSplitting.cpp - Switch removal -----------===//
//
// Directed splitting-off with max-flow admissibility (FORESTCOLL.md 4).
// Network vertices: the graph's vertices, then s (super-source, k units to
// every GPU), SRC* and SNK* (terminal forcing: arcs SRC* -> x and x -> SNK*
// for every x, raised to BIG to force x to one side of the cut).
//
// Splitting (u,w),(w,t) by gamma lowers the capacity of an s-v cut with
// source side Z by gamma exactly when u,t in Z and w not (gadget A), or w in
// Z and u,t not (gadget B); every other cut keeps its capacity. So the
// largest admissible gamma is the smallest slack (flow - N k) over those
// cuts, for every GPU v on the sink side.
//
//===----------------------------------------------------------------------===//

#include "compiler/algorithms/SwitchSplitting.h"

#include "support/Diagnostics.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <set>

namespace topocc::algorithms {

namespace {

class Splitter {
public:
  Splitter(const analysis::BoundGraph &g, bool reversed,
           llvm::ArrayRef<int64_t> units, int64_t k)
      : g(g), n(static_cast<int>(g.compute.size())), k(k),
        s(g.numVertices), src(g.numVertices + 1), snk(g.numVertices + 2),
        net(g.numVertices + 3), isCompute(g.numVertices, 0),
        out(g.numVertices), in(g.numVertices) {
    for (int v : g.compute)
      isCompute[v] = 1;
    for (size_t i = 0; i < g.arcs.size(); ++i) {
      int u = reversed ? g.arcs[i].to : g.arcs[i].from;
      int t = reversed ? g.arcs[i].from : g.arcs[i].to;
      if (u == t || units[i] <= 0)
        continue;
      res.direct[{u, t}] += units[i];
      add(u, t, units[i]);
    }
    for (int v : g.compute)
      net.addArc(s, v, k);
    for (int x = 0; x <= s; ++x) {
      srcArc.push_back(net.addArc(src, x));
      snkArc.push_back(net.addArc(x, snk));
    }
    int64_t total = n * k;
    for (auto &[key, id] : arcId)
      total += net.capacity(id);
    big = total + 1;
    res.numVertices = g.numVertices;
    res.compute = g.compute;
    res.k = k;
  }

  int64_t cap(int u, int t) const {
    auto it = arcId.find({u, t});
    return it == arcId.end() ? 0 : net.capacity(it->second);
  }

  /// min over GPUs v of flow(s, v) - N k. `count`: add to res.maxFlows
  /// (not for Debug-only assertions, so counts match across builds).
  int64_t minSlack(bool count = true) {
    int64_t m = std::numeric_limits<int64_t>::max();
    for (int v : g.compute) {
      res.maxFlows += count;
      m = std::min(m, net.maxFlow(s, v) - n * k);
    }
    return m;
  }

  llvm::Expected<SwitchSplitResult> run(SplitPolicy policy) {
    if (int64_t slack = minSlack(); slack < 0)
      return makeUserError(llvm::formatv(
          "switch splitting: the tree units do not admit {0} trees per root "
          "(a GPU's max-flow is {1} short)",
          k, -slack));
    for (int w = 0; w < g.numVertices; ++w) {
      if (isCompute[w])
        continue;
      for (int u : in[w])
        res.inAtProcessing[{u, w}] = cap(u, w);
      bool proposed = false;
      if (policy == SplitPolicy::Proposal) {
        proposed = tryProposal(w);
        ++(proposed ? res.proposalsKept : res.proposalsRejected);
      }
      if (!proposed &&
          (policy == SplitPolicy::Spread || policy == SplitPolicy::Proposal))
        for (int u : std::vector<int>(in[w].begin(), in[w].end())) {
          int others = 0;
          for (int t : out[w])
            others += t != u;
          if (others == 0)
            continue;
          int64_t share = (cap(u, w) + others - 1) / others;
          for (int t : std::vector<int>(out[w].begin(), out[w].end()))
            if (t != u)
              trySplit(u, w, t, share);
        }
      for (int u : std::vector<int>(in[w].begin(), in[w].end())) {
        std::vector<int> order;
        for (int t : out[w])
          if (t != u)
            order.push_back(t);
        if (out[w].count(u))
          order.push_back(u); // the loop-discard fallback comes last
        for (int t : order) {
          if (cap(u, w) == 0)
            break;
          trySplit(u, w, t, std::numeric_limits<int64_t>::max());
        }
      }
      int64_t inLeft = 0, outLeft = 0;
      for (int u : in[w])
        inLeft += cap(u, w);
      for (int t : out[w])
        outLeft += cap(w, t);
      if (inLeft != 0 || outLeft != 0)
        return makeInternalError(llvm::formatv(
            "switch splitting: {0} could not be isolated ({1} units in "
            "and {2} out remain; its in- and out-capacity must be equal)",
            g.vertexName(w), inLeft, outLeft));
#ifndef NDEBUG
      assert(minSlack(false) >= 0 && "switch splitting broke invariant I");
#endif
    }
    for (auto &[key, id] : arcId) {
      int64_t c = net.capacity(id);
      if (c > 0) {
        assert(isCompute[key.first] && isCompute[key.second]);
        res.arcs.push_back({key.first, key.second, c});
      }
    }
    if (int64_t slack = minSlack(); slack < 0)
      return makeInternalError(llvm::formatv(
          "switch splitting: invariant I broken after removal ({0} short)",
          -slack));
    // Conservation: what entered w from u left towards some t (or looped).
    std::map<std::pair<int, int>, int64_t> sent;
    for (auto &[key, list] : res.viaSwitch)
      for (const SplitContribution &c : list)
        sent[{key.first, c.via}] += c.amount;
    for (auto &[key, amount] : res.inAtProcessing) {
      auto it = res.loopDiscarded.find(key);
      int64_t loops = it == res.loopDiscarded.end() ? 0 : it->second;
      if (sent[key] + loops != amount)
        return makeInternalError(llvm::formatv(
            "switch splitting: edge map of {0} -> {1} holds {2} units, "
            "expected {3}",
            key.first, key.second, sent[key] + loops, amount));
    }
    return std::move(res);
  }

private:
  /// Splits all of w at once by a proportional transport plan; keeps it when
  /// invariant I holds afterwards, else restores every capacity.
  bool tryProposal(int w) {
    std::vector<int> ins, outs;
    for (int u : in[w])
      if (cap(u, w) > 0)
        ins.push_back(u);
    for (int t : out[w])
      if (cap(w, t) > 0)
        outs.push_back(t);
    std::map<int, int64_t> rowRem, colRem;
    int64_t total = 0;
    for (int u : ins)
      total += rowRem[u] = cap(u, w);
    for (int t : outs)
      total -= colRem[t] = cap(w, t);
    if (total != 0)
      return false;
    std::map<std::pair<int, int>, int64_t> plan;
    for (int u : ins) {
      __int128 denom = 0;
      for (int t : outs)
        if (t != u)
          denom += colRem.count(t) ? cap(w, t) : 0;
      if (denom == 0)
        continue;
      int64_t row = cap(u, w);
      for (int t : outs) {
        if (t == u)
          continue;
        int64_t x = static_cast<int64_t>(static_cast<__int128>(row) *
                                         cap(w, t) / denom);
        x = std::min({x, rowRem[u], colRem[t]});
        if (x > 0) {
          plan[{u, t}] += x;
          rowRem[u] -= x;
          colRem[t] -= x;
        }
      }
    }
    for (bool loops : {false, true})
      for (int u : ins)
        for (int t : outs) {
          if ((t == u) != loops)
            continue;
          int64_t x = std::min(rowRem[u], colRem[t]);
          if (x > 0) {
            plan[{u, t}] += x;
            rowRem[u] -= x;
            colRem[t] -= x;
          }
        }
    for (int u : ins)
      if (rowRem[u] != 0)
        return false;
    // Apply, check I, and undo on failure.
    std::map<std::pair<int, int>, int64_t> before;
    auto save = [&](int a, int b) { before.try_emplace({a, b}, cap(a, b)); };
    for (int u : ins)
      save(u, w);
    for (int t : outs)
      save(w, t);
    for (auto &[key, x] : plan)
      if (key.first != key.second)
        save(key.first, key.second);
    for (int u : ins)
      net.setCapacity(arcId.at({u, w}), 0);
    for (int t : outs)
      net.setCapacity(arcId.at({w, t}), 0);
    for (auto &[key, x] : plan)
      if (key.first != key.second)
        add(key.first, key.second, x);
    if (minSlack() < 0) {
      for (auto &[key, c] : before)
        net.setCapacity(arcId.at(key), c);
      return false;
    }
    for (auto &[key, x] : plan) {
      if (key.first == key.second)
        res.loopDiscarded[{key.first, w}] += x;
      else
        res.viaSwitch[key].push_back({w, x});
    }
    return true;
  }

  void add(int u, int t, int64_t c) {
    auto [it, inserted] = arcId.try_emplace({u, t}, -1);
    if (inserted)
      it->second = net.addArc(u, t, 0);
    net.setCapacity(it->second, net.capacity(it->second) + c);
    out[u].insert(t);
    in[t].insert(u);
  }

  /// Max-flow from SRC* to SNK* with `source` forced to the source side and
  /// `sink` to the sink side, minus N k.
  int64_t forcedSlack(std::initializer_list<int> source,
                      std::initializer_list<int> sink) {
    for (int x : source)
      net.setCapacity(srcArc[x], big);
    for (int x : sink)
      net.setCapacity(snkArc[x], big);
    ++res.maxFlows;
    int64_t f = net.maxFlow(src, snk);
    for (int x : source)
      net.setCapacity(srcArc[x], 0);
    for (int x : sink)
      net.setCapacity(snkArc[x], 0);
    return f - n * k;
  }

  void trySplit(int u, int w, int t, int64_t limit) {
    int64_t gamma = std::min({cap(u, w), cap(w, t), limit});
    if (gamma <= 0)
      return;
    // Gadget A: u, t on the source side, w and a GPU v on the sink side.
    for (int v : g.compute) {
      if (v == u || v == t)
        continue;
      gamma = std::min(gamma, forcedSlack({s, u, t}, {w, v}));
      if (gamma <= 0)
        return;
    }
    // Gadget B: w on the source side, u, t and a GPU v on the sink side
    // (v in {u, t} is one query).
    if (isCompute[u] || isCompute[t]) {
      gamma = std::min(gamma, forcedSlack({s, w}, {u, t}));
      if (gamma <= 0)
        return;
    }
    for (int v : g.compute) {
      if (v == u || v == t)
        continue;
      gamma = std::min(gamma, forcedSlack({s, w}, {u, t, v}));
      if (gamma <= 0)
        return;
    }
    net.setCapacity(arcId.at({u, w}), cap(u, w) - gamma);
    net.setCapacity(arcId.at({w, t}), cap(w, t) - gamma);
    if (t == u) {
      res.loopDiscarded[{u, w}] += gamma;
      return;
    }
    add(u, t, gamma);
    res.viaSwitch[{u, t}].push_back({w, gamma});
  }

  const analysis::BoundGraph &g;
  const int n;
  const int64_t k;
  const int s, src, snk;
  analysis::MaxFlowNetwork net;
  std::vector<char> isCompute;
  std::vector<std::set<int>> out, in;
  std::map<std::pair<int, int>, int> arcId;
  std::vector<int> srcArc, snkArc;
  int64_t big = 0;
  SwitchSplitResult res;
};

} // namespace

llvm::Expected<SwitchSplitResult>
splitSwitches(const analysis::BoundGraph &g, bool reversed,
              llvm::ArrayRef<int64_t> units, int64_t k, SplitPolicy policy) {
  if (units.size() != g.arcs.size())
    return makeInternalError("splitSwitches: one unit count per arc expected");
  if (k < 1)
    return makeInternalError("splitSwitches: k must be positive");
  Splitter sp(g, reversed, units, k);
  return sp.run(policy);
}

int64_t minRootFlow(const SwitchSplitResult &r) {
  int s = r.numVertices;
  analysis::MaxFlowNetwork net(r.numVertices + 1);
  for (const SwitchSplitResult::Arc &a : r.arcs)
    net.addArc(a.from, a.to, a.cap);
  for (int v : r.compute)
    net.addArc(s, v, r.k);
  int64_t m = std::numeric_limits<int64_t>::max();
  for (int v : r.compute)
    m = std::min(m, net.maxFlow(s, v));
  return m;
}

} // namespace topocc::algorithms
