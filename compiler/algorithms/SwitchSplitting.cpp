//===- compiler/algorithms/SwitchSplitting.cpp - Switch removal -----------===//
//
// Directed splitting-off with max-flow admissibility (docs/Algorithms-trees.md, "Switch removal").
// Network vertices: the graph's vertices, then s (super-source, k units to
// every GPU), SRC* and SNK* (terminal forcing: arcs SRC* -> x and x -> SNK*
// for every x, raised to BIG to force x to one side of the cut).
//
// The strategies live in files of their own (SwitchSplittingImpl.h): the
// exact loop (SwitchSplittingExact.cpp), bulk proposals with cut learning
// (SwitchSplittingProposals.cpp) and the box-shift symmetry
// (SwitchSplittingSymmetry.cpp); this file holds the networks, the driver
// that picks a strategy per switch, and the final checks.
//
//===----------------------------------------------------------------------===//

#include "compiler/algorithms/SwitchSplitting.h"
#include "compiler/algorithms/SwitchSplittingImpl.h"

#include "support/Diagnostics.h"
#include "support/Progress.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <set>

namespace topocc::algorithms {

namespace detail {

Splitter::Splitter(const analysis::BoundGraph &g, bool reversed,
                   llvm::ArrayRef<int64_t> units, int64_t k, bool boxShift)
    : g(g), n(static_cast<int>(g.compute.size())), k(k), s(g.numVertices),
      src(g.numVertices + 1), snk(g.numVertices + 2), net(g.numVertices + 3),
      isCompute(g.numVertices, 0), out(g.numVertices), in(g.numVertices) {
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
  degree.assign(g.numVertices, 0);
  {
    std::set<Key> seen;
    for (const analysis::BoundGraph::Arc &a : g.arcs)
      if (a.from != a.to &&
          seen.insert({std::min(a.from, a.to), std::max(a.from, a.to)})
              .second) {
        ++degree[a.from];
        ++degree[a.to];
      }
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
  if (boxShift)
    findBoxShift();
}

/// min over GPUs v of flow(s, v) - N k. `count`: add to res.maxFlows
/// (not for Debug-only assertions, so counts match across builds).
int64_t Splitter::minSlack(bool count) {
  int64_t m = std::numeric_limits<int64_t>::max();
  for (int v : g.compute) {
    res.maxFlows += count;
    m = std::min(m, net.maxFlow(s, v) - n * k);
  }
  return m;
}

llvm::Expected<SwitchSplitResult> Splitter::run(SplitPolicy policy) {
  if (int64_t slack = minSlack(); slack < 0)
    return makeUserError(llvm::formatv(
        "switch splitting: the tree units do not admit {0} trees per root "
        "(a GPU's max-flow is {1} short)",
        k, -slack));
  std::vector<int> switches;
  for (int w = 0; w < g.numVertices; ++w)
    if (!isCompute[w])
      switches.push_back(w);
  bool verified = true; // the state is known to satisfy I
  ProgressTask progress("switch splitting", switches.size(), "devices");
  for (size_t i = 0; i < switches.size(); progress.set(i)) {
    if (policy == SplitPolicy::Proposal && proposeFrom(switches, i, verified))
      continue;
    int w = switches[i++];
    verified = false;
    if (llvm::Error err = splitExactly(w, policy))
      return err;
  }
  for (auto &[key, id] : arcId) {
    int64_t c = net.capacity(id);
    if (c > 0) {
      assert(isCompute[key.first] && isCompute[key.second]);
      res.arcs.push_back({key.first, key.second, c});
    }
  }
  // The last bulk check (if nothing changed since) already measured I on
  // this graph; otherwise measure it now.
  if (!verified)
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
  res.symmetricPlans = symmetricProposals;
  res.mirroredPlans = mirroredPlans;
  return std::move(res);
}

void Splitter::setCap(int arc, int64_t c) {
  if (journaling)
    journal.push_back({arc, net.capacity(arc)});
  net.setCapacity(arc, c);
}

void Splitter::add(int u, int t, int64_t c) {
  auto [it, inserted] = arcId.try_emplace({u, t}, -1);
  if (inserted)
    it->second = net.addArc(u, t, 0);
  setCap(it->second, net.capacity(it->second) + c);
  out[u].insert(t);
  in[t].insert(u);
}

} // namespace detail

llvm::Expected<SwitchSplitResult> splitSwitches(const analysis::BoundGraph &g,
                                                bool reversed,
                                                llvm::ArrayRef<int64_t> units,
                                                int64_t k, SplitPolicy policy,
                                                bool boxShift) {
  if (units.size() != g.arcs.size())
    return makeInternalError("splitSwitches: one unit count per arc expected");
  if (k < 1)
    return makeInternalError("splitSwitches: k must be positive");
  detail::Splitter sp(g, reversed, units, k, boxShift);
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
