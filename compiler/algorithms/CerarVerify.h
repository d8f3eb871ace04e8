//===- compiler/algorithms/CerarVerify.h - Verify lowered CERAR -*- C++ -*-===//
//
// docs/Algorithms-cerar.md 6.4: runs the structural verifier (without the
// exact postcondition), executes the schedule symbolically, builds each
// rank's error operator E_r = O_r - [I ... I] (O_r: c x N*c, the output
// components over every rank's input components), and checks that the own
// block is zero and that ||E_r||_2 equals the design's e_i of the rank's
// logical index. Exact designs must give E_r = 0. A lowering that gets a
// coefficient wrong shows as a mismatch.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_ALGORITHMS_CERARVERIFY_H
#define TOPOCC_COMPILER_ALGORITHMS_CERARVERIFY_H

#include "compiler/algorithms/Cerar.h"
#include "ir/Schedule.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <vector>

namespace topocc::cerar {

struct CerarCheck {
  std::vector<double> measured; ///< ||E_r||_2 per physical rank
  std::vector<double> expected; ///< design e_i per physical rank
  std::vector<double> ownBlock; ///< max |own block| per physical rank
  double tolerance = 0;
};

/// Measures every rank's error operator norm (no comparison). REQUIRES:
/// a structurally valid allreduce schedule with chunksPerLoop = c.
llvm::Expected<std::vector<double>> measuredRankErrors(const ir::Schedule &s,
                                                       int components);

/// Verifies `s` against `d` (ring order empty = 0..N-1; seamOffset as in
/// passes::CerarLowerOptions). Tolerance 1e-9 * max(1, kappa). User error
/// naming the first rank that differs.
llvm::Expected<CerarCheck> verifyCerarSchedule(const ir::Schedule &s,
                                               const Design &d,
                                               llvm::ArrayRef<int> ringOrder,
                                               int seamOffset);

/// Hierarchical CERAR (docs/Algorithms-cerar.md 7, passes::lowerHierCerar): the
/// nodes in ring order with their ranks by local index, and the seams.
struct HierCerarLayout {
  std::vector<std::vector<int>> nodes;
  int seamOffset = 0;
  bool staggerSeams = true; ///< rail r uses seam (seamOffset + r) mod M
};

struct HierCerarCheck {
  double maxDeviation = 0;  ///< largest |coefficient - composed operator|
  double maxCoeffError = 0; ///< largest |coefficient - exact all-reduce|
  double tolerance = 0;
};

/// Runs the structural verifier, executes `s` symbolically and compares
/// every rank's output coefficients with the composed operator: for rank
/// (node p, GPU g) and unit r*c + j (rail r, component j), the coefficient
/// on unit r*c + j' of every rank of node p' must be the rail-r CERAR
/// operator's entry [j][j'] for node p reading node p' (identity for
/// p' = p, D_i Z_{h-1} E_{i-h} at ring distance h with i the logical index
/// of node p on rail r), and every other coefficient zero. Tolerance 1e-9 *
/// max(1, kappa). User error naming the first coefficient that differs.
llvm::Expected<HierCerarCheck>
verifyHierCerarSchedule(const ir::Schedule &s, const Design &d,
                        const HierCerarLayout &layout);

} // namespace topocc::cerar

#endif // TOPOCC_COMPILER_ALGORITHMS_CERARVERIFY_H
