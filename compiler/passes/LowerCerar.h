//===- compiler/passes/LowerCerar.h - CERAR to schedule IR -----*- C++ -*-===//
//
// Lowers a CERAR code (compiler/algorithms/Cerar.h) over a ring order to the
// schedule IR: per-rank encode (lincomb), L = c + N - 2 ring rounds with
// receive-and-cancel (rrc with lc=-1) and forwarding, decode (lincomb).
// One message of one component (d/c of the buffer) per rank and round, to
// the ring successor only. Stage: produces Lowered; every rank is one
// dependency chain in program order.
//
// Companion-family codes (exact, perturbed) use the in-place worker of
// docs/Algorithms-cerar.md 2.6 (section numbers below are that page's): the
// user buffer V (c components) plus a pool of N+1 scratch components (c + N + 1
// component buffers in all); encode and decode of an in-place call are applied
// in place through a pivoted LU factorisation (one temporary). Other codes
// (vandermonde, optimized, N = 2 exact with c > 2) use the generic worker of
// section 2.7 (c + 3 scratch components).
//
// The buffer is cut into c chunks (component j = chunk j); chunksPerLoop = c.
// Ring position p holds rank ring[p] and uses the code of logical index
// (p + seamOffset) mod N (seam rotation, section 2.8).
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_PASSES_LOWERCERAR_H
#define TOPOCC_COMPILER_PASSES_LOWERCERAR_H

#include "compiler/algorithms/Cerar.h"
#include "compiler/passes/LowerHierRing.h"
#include "ir/Schedule.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace topocc::passes {

struct CerarLowerOptions {
  /// The code; its ranks must equal the ring's size. Only header types and
  /// the matrices are used (no link dependency on the algorithms library).
  cerar::Design design;
  /// Ring order, a permutation of 0..N-1; empty means 0, 1, ...
  std::vector<ir::RankId> ringOrder;
  /// Seam rotation: position p uses logical index (p + seamOffset) mod N.
  int32_t seamOffset = 0;
  bool inplace = false;
  /// Force the generic worker even for companion codes (tests).
  bool forceGeneric = false;
  std::string name; ///< a default is derived when empty
};

/// Which worker a lowering used and its buffer needs.
struct CerarLoweringInfo {
  bool inPlaceWorker = false; ///< section 2.6 (else the generic one)
  int32_t peakScratch = 0;    ///< scratch components used (max over ranks)
  int32_t rounds = 0;
};

/// REQUIRES: nothing; invalid options (bad ring order, design size
/// mismatch, empty code) are user errors.
llvm::Expected<ir::Schedule> lowerCerar(const CerarLowerOptions &opts,
                                        CerarLoweringInfo *info = nullptr);

/// User error when `d` is incomplete or its matrices have the wrong shape
/// (what lowerCerar and the hierarchical lowering check first).
llvm::Error checkCerarDesign(const cerar::Design &d);

/// One CERAR ring emitted into a schedule that may hold other phases
/// (hierarchical CERAR runs one per rail between exact intra-node phases).
struct CerarRingSpec {
  const cerar::Design *design = nullptr; ///< REQUIRES: validated (lowerCerar)
  /// The ring's ranks (global ids) in ring order; size = design->ranks.
  std::vector<ir::RankId> ring;
  int32_t seamOffset = 0;
  /// Component j is chunk firstChunk + j of `input` before the call and of
  /// `result` after it; input == result is the in-place form (the encode
  /// and decode work in place).
  ir::BufferKind input = ir::BufferKind::Input;
  ir::BufferKind result = ir::BufferKind::Output;
  int32_t firstChunk = 0;
  bool forceGeneric = false;
};

/// Appends the ring's ops (encode, L rounds, decode) to `s`, continuing
/// every ring rank's chain from st.last and allocating its scratch pool
/// from st.scratchEnd; messages take ids st.nextMsg + t*N + position.
/// Returns the worker used and the largest scratch count one rank added.
CerarLoweringInfo emitCerarRing(ir::Schedule &s, const CerarRingSpec &spec,
                                ChainState &st);

/// Logical index of ring position p (seam rotation).
inline int32_t cerarLogicalIndex(int32_t pos, int32_t n, int32_t seam) {
  return (((pos + seam) % n) + n) % n;
}

} // namespace topocc::passes

#endif // TOPOCC_COMPILER_PASSES_LOWERCERAR_H
