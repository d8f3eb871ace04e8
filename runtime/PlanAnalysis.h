//===- runtime/PlanAnalysis.h - Runtime-private plan analyses ---*- C++ -*-===//
//
// Private to runtime/: what PlanAnalysis.cpp gives the rank executor
// (Interpreter.cpp) besides the analyses Interpreter.h declares. Pure
// functions.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_RUNTIME_PLANANALYSIS_H
#define TOPOCC_RUNTIME_PLANANALYSIS_H

#include "ir/Schedule.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace topocc::runtime {

/// Calls `fn(op, preds)` for every op of `rp` in list order, `preds` being
/// the ops it waits for in program order (MSCCL's): its deps and the
/// previous op of its threadblock, sorted, without repeats.
void forEachProgramOrderPreds(
    const ir::RankProgram &rp,
    llvm::function_ref<void(ir::OpId, llvm::ArrayRef<ir::OpId>)> fn);

} // namespace topocc::runtime

#endif // TOPOCC_RUNTIME_PLANANALYSIS_H
