//===- compiler/algorithms/SwitchSplitting.h - Switch removal --*- C++ -*-===//
//
// Removes every switch (every non-GPU vertex: NVSwitch, IB switch, NIC, PCIe
// switch, CPU socket) from the tree-unit graph of the bound by directed
// edge splitting (docs/Algorithms-trees.md, "Switch removal"): a pair of arcs (u,w),(w,t) at a
// switch w is replaced by gamma units on (u,t), with gamma as large as keeps
//   invariant I: flow(s, v) >= N k for every GPU v
// (s: a super-source with k units to every GPU), measured with two
// terminal-forcing max-flow gadgets. When t = u the units are discarded
// (a u -> w -> u detour carries nothing). The result is a GPU-only digraph
// whose arcs remember through which switches they run (the path-recovery
// map), so trees packed on it map back to physical links. Stage: algorithm,
// between the bound (compiler/analysis/Bound.h) and tree packing. Never
// prints; deterministic (switches, in- and out-neighbours in vertex order).
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_ALGORITHMS_SWITCHSPLITTING_H
#define TOPOCC_COMPILER_ALGORITHMS_SWITCHSPLITTING_H

#include "compiler/analysis/Bound.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace topocc::algorithms {

enum class SplitPolicy {
  /// Maximal gamma for each (u, t) in order: few, fat compute arcs.
  Greedy,
  /// First spread u's units over every t != u (gamma capped at
  /// ceil(c(u,w) / |out(w) \ {u}|)), then greedy: more, thinner compute arcs
  /// and shallower trees (docs/Algorithms-trees.md, "Shallow trees"; on one NVSwitch, a complete
  /// digraph).
  Spread,
  /// Propose a complete splitting of every remaining switch in bulk and
  /// check invariant I once for the whole batch (N max-flows); on failure
  /// undo and bisect the batch, down to one switch, which then takes the
  /// Spread loop. A switch with one in- or out-neighbour, or two neighbours
  /// with equal capacity through it (a NIC, a PCIe hop), splits exactly
  /// (every max-flow kept: no check needed); otherwise the plan is a
  /// transport in tiers: other components first (the boxes behind an IB
  /// switch), at most u's proportional share per component; then any
  /// t != u at most its proportional share; then any t != u; loops last
  /// (docs/Algorithms-trees.md, "Switch removal": the fast path, with
/// the exact loop as its fallback).
  Proposal,
};

/// Units that arc (u,t) received from splitting at switch `via`.
struct SplitContribution {
  int via = -1;
  int64_t amount = 0;
};

struct SwitchSplitResult {
  int numVertices = 0;
  std::vector<int> compute; ///< vertex id of rank r
  int64_t k = 0;
  /// Final GPU-to-GPU arcs with their capacity c'(u,t) > 0, sorted by (u,t).
  struct Arc {
    int from = -1, to = -1;
    int64_t cap = 0;
  };
  std::vector<Arc> arcs;
  /// Original capacity of every arc of the input (orientation as split).
  std::map<std::pair<int, int>, int64_t> direct;
  /// For every arc (u,t) created or grown by a split, the contributions in
  /// the order they were made. An arc's units are direct + contributions;
  /// contributions through `via` expand recursively to (u,via),(via,t).
  std::map<std::pair<int, int>, std::vector<SplitContribution>> viaSwitch;
  /// Per switch w and in-neighbour u: c(u,w) when w was processed. Equals
  /// the units u sent onward through w plus loopDiscarded[(u,w)].
  std::map<std::pair<int, int>, int64_t> inAtProcessing;
  std::map<std::pair<int, int>, int64_t> loopDiscarded;
  int maxFlows = 0; ///< max-flow computations (gadgets and checks)
  int proposalsKept = 0, proposalsRejected = 0; ///< SplitPolicy::Proposal
  /// Cuts learned from rejected proposals (SplitPolicy::Proposal).
  int cutsLearned = 0;
  /// Fabric switches split by a box-shift-symmetric plan.
  int symmetricPlans = 0;
  /// Switches inside boxes 1 .. M-1 that took their box-0 twin's plan,
  /// shifted (keeps the split symmetric under the box shift).
  int mirroredPlans = 0;
  /// The switches whose proposal was rejected (split by the exact loop).
  std::vector<int> rejected;
};

/// Splits every non-compute vertex of `g` off. `units[i]` is the capacity of
/// g.arcs[i] in tree units (DirectionalBound::arcUnits), oriented as
/// dinkelbachBound(g, reversed) saw it; `k` trees per root. `boxShift`:
/// look for the box shift (boxes: the nodes, else pods named by a prefix
/// of the node names) and split symmetrically under it (Proposal policy). Errors: invariant
/// I does not hold on entry (user error: units too small for k), or a switch
/// cannot be isolated (internal error naming the switch and its residual
/// in/out units, e.g. a switch whose in- and out-capacity differ).
llvm::Expected<SwitchSplitResult>
splitSwitches(const analysis::BoundGraph &g, bool reversed,
              llvm::ArrayRef<int64_t> units, int64_t k,
              SplitPolicy policy = SplitPolicy::Spread,
              bool boxShift = true);

/// min over GPUs v of flow(s, v) on the result's GPU-only graph (with k units
/// from s to each GPU). Invariant I holds when this is >= N k.
int64_t minRootFlow(const SwitchSplitResult &r);

} // namespace topocc::algorithms

#endif // TOPOCC_COMPILER_ALGORITHMS_SWITCHSPLITTING_H
