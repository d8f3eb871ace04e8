//===- compiler/algorithms/TreePacking.h - Spanning out-trees --*- C++ -*-===//
//
// Packs k spanning out-trees per root (with multiplicities) into the GPU-only
// graph left by switch splitting, with the max-flow oracle for Edmonds'
// branching condition (docs/Algorithms-trees.md, "Tree packing"; the quoted
// names below are paragraphs of that page): a partial tree T may take
// mu = min(C_T, r(x,y), F - sum of the other unfinished trees' C) copies of
// arc (x,y), F the max-flow from x to y with each other unfinished tree
// reachable from x at its multiplicity. Attaching fewer than C_T copies
// clones T. Height-aware policy ("Shallow trees"): trees grow round-robin,
// one arc per tree per round, always from the shallowest vertex with an
// untried arc. Then every tree maps back through the switches ("Map-back and
// checks") to physical paths (loops that nested splits create,
// u -> w -> s -> w -> t, cut out), and the checks run: arborescences, k per
// root, compute-arc capacities,
// contiguous physical paths that visit no device twice, physical
// congestion <= U.
// Stage: algorithm. Never prints; deterministic.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_ALGORITHMS_TREEPACKING_H
#define TOPOCC_COMPILER_ALGORITHMS_TREEPACKING_H

#include "compiler/algorithms/SwitchSplitting.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <vector>

namespace topocc::algorithms {

/// One spanning out-tree on the ranks, carrying `mult` of its root's k units.
struct PackedTree {
  int root = -1;          ///< rank
  int64_t mult = 0;       ///< C_T
  std::vector<int> parent; ///< per rank; -1 for the root
  /// (parent rank, child rank) in the order they were attached (BFS-like).
  std::vector<std::pair<int, int>> arcs;
  int height = 0;
};

/// A compute tree's arcs expanded to physical paths (vertex ids of the
/// bound graph, GPU to GPU through switches), carrying `mult` units.
struct PhysicalTree {
  int tree = -1; ///< index into TreePackingResult::trees
  int64_t mult = 0;
  /// One path per arc of the compute tree, in PackedTree::arcs order; no
  /// path visits a vertex twice.
  std::vector<std::vector<int>> paths;
};

struct TreePackingResult {
  int numRanks = 0;
  int64_t k = 0;
  std::vector<PackedTree> trees;     ///< by root, then creation order
  std::vector<PhysicalTree> physical; ///< by tree
  int maxHeight = 0;
  double meanHeight = 0; ///< over distinct compute trees
  /// max over physical arcs of (units used / units available); <= 1.
  double congestion = 0;
  int maxFlows = 0; ///< oracle max-flows
  /// Probes answered by a box's cut without a max-flow (symmetric packing).
  int cutRejects = 0;
  /// n/d when the packing used the rank shift by d (every probed tree
  /// stands for n/d shifted copies); 1 when it did not.
  int symmetryOrder = 1;
  /// The symmetric packing needed no max-flow: the residuals and the box
  /// cuts steered every tree to completion (the checks hold all the same).
  bool oracleFree = false;
  /// The symmetric packing got stuck and the generic one ran instead.
  bool symmetryFallback = false;
};

struct PackOptions {
  /// Look for a rank shift that maps the compute graph onto itself (a
  /// cluster of identical boxes) and probe one tree per orbit; falls back
  /// to the generic packing when that gets stuck.
  bool useSymmetry = true;
  /// When the symmetric packing gets stuck: pack generically (true), or
  /// return no trees with symmetryFallback set (false: the caller splits
  /// again without the box shift, whose split can pack better generically).
  bool genericFallback = true;
  /// Try the symmetric packing without max-flows first (residuals and box
  /// cuts only; it may get stuck, then the oracle runs).
  bool tryOracleFree = true;
  /// Per rank, its block (node) for the cut pre-check of the generic
  /// packing (any partition gives a valid bound); empty: none. The
  /// symmetric packing uses the boxes of its shift.
  std::vector<int> blocks;
};

/// Packs and maps back. `g`, `reversed` and `units` are what `split` was
/// computed from. Internal errors when a check of "Map-back and checks"
/// (docs/Algorithms-trees.md) fails.
llvm::Expected<TreePackingResult>
packTrees(const SwitchSplitResult &split, const analysis::BoundGraph &g,
          bool reversed, llvm::ArrayRef<int64_t> units,
          const PackOptions &opts = {});

} // namespace topocc::algorithms

#endif // TOPOCC_COMPILER_ALGORITHMS_TREEPACKING_H
