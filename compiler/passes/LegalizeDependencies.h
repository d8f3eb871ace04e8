//===- compiler/passes/LegalizeDependencies.h - MSCCL dep form --*- C++ -*-===//
//
// Rewrites same-rank deps into what MSCCL XML can express: deps implied by
// program order (same threadblock) or by another kept dep are dropped; each op
// keeps at most one cross-threadblock dep, the others become preceding `nop`s
// of its threadblock that carry one dep each.
// Stage: ThreadblocksAssigned -> Legalized.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_PASSES_LEGALIZEDEPENDENCIES_H
#define TOPOCC_COMPILER_PASSES_LEGALIZEDEPENDENCIES_H

#include "ir/Schedule.h"

namespace topocc::passes {

/// REQUIRES: s.stage is ThreadblocksAssigned; on every rank deps point to
/// earlier ops in the list, and each threadblock's ops are listed in program
/// order. Deterministic: kept deps are ordered by target threadblock, the
/// first stays on the op.
void legalizeDependencies(ir::Schedule &s);

/// legalizeDependencies of one rank, whose threadblocks are assigned
/// (checks of the legal form copy one rank at a time).
void legalizeRank(ir::RankProgram &rp);

} // namespace topocc::passes

#endif // TOPOCC_COMPILER_PASSES_LEGALIZEDEPENDENCIES_H
