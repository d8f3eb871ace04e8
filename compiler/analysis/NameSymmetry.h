//===- compiler/analysis/NameSymmetry.h - Symmetries proposed by names -*- C++
//-*-===//
//
// Generated topologies name their devices by indexes ("su3-dgx12/gpu5",
// "npu3_1_0"), and renaming one index's values in every name often maps
// the topology onto itself: a box to the next box, a torus dimension
// rotated. namePermutations proposes those renamings as permutations of a
// list of names; callers keep the ones that preserve what they need (the
// bound's arc capacities, the simulator's links and schedule). A
// proposal is never trusted by itself.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_ANALYSIS_NAMESYMMETRY_H
#define TOPOCC_COMPILER_ANALYSIS_NAMESYMMETRY_H

#include "llvm/ADT/ArrayRef.h"

#include <string>
#include <vector>

namespace topocc::analysis {

/// Which renamings of one index's values (in numeric order) to propose.
enum class NameMoves {
  /// Rotating every value to the next one, the last to the first.
  Rotations,
  /// Rotations, swaps of two consecutive values and the reversal; also
  /// each of them applied at once to every word with the same values (a
  /// rail: "gpu3", "nic3" and "leaf3" become "gpu4", "nic4", "leaf4").
  All,
};

/// The permutations p of [0, names.size()) with names[p[v]] the name of v
/// with one index renamed, for every index and move: a number after a
/// word ("su3", "gpu5") is an index named by the word; a number after no
/// letters is the index of its place after the last word ("npu3_1_0" has
/// the indexes "npu", "npu#1" and "npu#2"). Renamings that name a missing
/// vertex, and the identity, are left out; empty when two names are equal.
std::vector<std::vector<int>>
namePermutations(llvm::ArrayRef<std::string> names, NameMoves moves);

} // namespace topocc::analysis

#endif // TOPOCC_COMPILER_ANALYSIS_NAMESYMMETRY_H
