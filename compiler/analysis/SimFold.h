//===- compiler/analysis/SimFold.h - Folding symmetric ranks -*- C++ -*-===//
//
// A schedule on a regular fabric often looks the same from many ranks: a
// hierarchical ring over 512 boxes in 16 units of a fat tree runs the
// same program, in the same time, in every unit. findSimFold finds such a
// symmetry, a permutation σ of the ranks and of the link resources that
// maps the topology, the routes and the schedule onto themselves, and the
// simulator then executes one rank per orbit of σ: each message keeps its
// real receiver for its route, and each resource stands for its orbit
// (docs/WhatIf.md, "Folding symmetric ranks"). σ comes from the device
// names (NameSymmetry.h); it is checked, not trusted: a proposal counts
// only when every rank and every link resource lies on a cycle of the same
// length k (no resource is shared by ranks of one orbit), the links it
// maps keep their capacity, latency and kind, every GPU keeps its model,
// and rank σ(r) runs rank r's program op for op with its peers mapped by
// σ. The simulator checks the routes themselves (Simulator.cpp) and
// simulates every rank when they do not map.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_ANALYSIS_SIMFOLD_H
#define TOPOCC_COMPILER_ANALYSIS_SIMFOLD_H

#include "compiler/analysis/CostModel.h"
#include "ir/Schedule.h"

#include <optional>
#include <vector>

namespace topocc::analysis {

/// The orbits of a permutation whose cycles all have one length.
class CyclicOrbits {
public:
  /// The orbits of `perm`; nullopt unless every element whose `moves` is
  /// true lies on a cycle of length `order` (elements it leaves out stay
  /// fixed and count as orbits of their own).
  static std::optional<CyclicOrbits> of(const std::vector<int> &perm, int order,
                                        const std::vector<bool> &moves);
  /// The first element of x's orbit (the orbit's representative).
  int rep(int x) const { return first[x]; }
  /// j with σ^j(rep(x)) = x.
  int shift(int x) const { return pos[x]; }
  /// σ^j(x) for any integer j.
  int image(int x, int j) const;
  int order() const { return k; }

private:
  int k = 1;
  std::vector<int> first, pos;
  std::vector<int>
      cycleStart; ///< x: its cycle's members start at cycles[cycleStart[x]]
  std::vector<int> cycles;
};

struct SimFold {
  CyclicOrbits ranks, resources;
  /// The representatives' programs with every message named by its
  /// representative-sent id (the other ranks' programs are empty). A send
  /// keeps its real peer, which the route of its message follows.
  ir::Schedule quotient;
  int order() const { return ranks.order(); }
};

/// A symmetry of `s` on `m`'s topology for the simulator to fold, of the
/// largest order found; nullopt when there is none (or only one of order
/// below 2). `memoryBandwidth` per rank is what local work costs.
std::optional<SimFold> findSimFold(const ir::Schedule &s, const LinkModel &m,
                                   const std::vector<double> &memoryBandwidth);

} // namespace topocc::analysis

#endif // TOPOCC_COMPILER_ANALYSIS_SIMFOLD_H
