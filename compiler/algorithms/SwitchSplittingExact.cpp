//===- compiler/algorithms/SwitchSplittingExact.cpp - The exact loop ------===//
//
// The exact loop of switch splitting (docs/Algorithms-trees.md, "Switch removal"): for one switch w,
// first (Spread and Proposal policies) each in-neighbour u's units spread
// over every t != u, a share each, then for every u and out-neighbour t
// (loops last) the largest admissible gamma, measured with
// terminal-forcing max-flow gadgets.
//
// Splitting (u,w),(w,t) by gamma lowers the capacity of an s-v cut with
// source side Z by gamma exactly when u,t in Z and w not (gadget A), or w in
// Z and u,t not (gadget B); every other cut keeps its capacity. So the
// largest admissible gamma is the smallest slack (flow - N k) over those
// cuts, for every GPU v on the sink side.
//
// The Spread and Greedy policies take this loop for every switch; the
// Proposal policy for a switch whose proposal was rejected.
//
//===----------------------------------------------------------------------===//

#include "compiler/algorithms/SwitchSplittingImpl.h"

#include "support/Diagnostics.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <vector>

namespace topocc::algorithms::detail {

/// Splits w off completely, one (u, t) at a time; an internal error when
/// units are left at w.
llvm::Error Splitter::splitExactly(int w, SplitPolicy policy) {
  for (int u : in[w])
    res.inAtProcessing[{u, w}] = cap(u, w);
  // Box 0's exact splits are kept for their twins in the other boxes
  // (mirrorPlan), which then need one check instead of this loop.
  std::map<Key, int64_t> exactPlan;
  recording = !shift.empty() && boxOf[w] == 0 ? &exactPlan : nullptr;
  if (policy == SplitPolicy::Spread || policy == SplitPolicy::Proposal)
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
  if (recording)
    repPlans[w] = std::move(exactPlan);
  recording = nullptr;
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
  return llvm::Error::success();
}

/// Max-flow from SRC* to SNK* with `source` forced to the source side and
/// `sink` to the sink side, minus N k.
int64_t Splitter::forcedSlack(std::initializer_list<int> source,
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

void Splitter::trySplit(int u, int w, int t, int64_t limit) {
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
  if (recording)
    (*recording)[{u, t}] += gamma;
  if (t == u) {
    res.loopDiscarded[{u, w}] += gamma;
    return;
  }
  add(u, t, gamma);
  res.viaSwitch[{u, t}].push_back({w, gamma});
}

} // namespace topocc::algorithms::detail
