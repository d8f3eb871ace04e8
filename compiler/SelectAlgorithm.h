//===- compiler/SelectAlgorithm.h - --algorithm auto ------------*- C++ -*-===//
//
// --algorithm auto: compiles every algorithm's candidate (each lowering's
// AutoCandidate, compiler/lowerings/Lowering.h, in registry order), prices
// each final schedule at the request's size, and returns the fastest.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_SELECTALGORITHM_H
#define TOPOCC_COMPILER_SELECTALGORITHM_H

#include "compiler/CompileRequest.h"
#include "compiler/PassLogger.h"
#include "compiler/topology/Topology.h"

#include "llvm/Support/Error.h"

namespace topocc {

/// The candidates are priced by the event simulator (cut-through, or
/// req.autoSimMode) up to kAutoSimulateOps ops and by the cost model beyond
/// (linear in the schedule). The result's explain lists every candidate's
/// time and the choice; the winner is compiled again with `log` only when
/// the caller prints the IR or times the passes. User error without a
/// topology or when no algorithm applies.
llvm::Expected<CompileResult> selectAlgorithm(const topo::Topology *t,
                                              const CompileRequest &req,
                                              PassLogger &log);

} // namespace topocc

#endif // TOPOCC_COMPILER_SELECTALGORITHM_H
