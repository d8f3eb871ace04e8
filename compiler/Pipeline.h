//===- compiler/Pipeline.h - The ordered pass pipeline ----------*- C++ -*-===//
//
// compile(): a compile request to a verified, legalized schedule. Its body
// in compiler/Pipeline.cpp is the ordered list of stages and passes: the
// algorithm's lowering (compiler/lowerings/, chosen from
// compiler/Algorithms.def, or --algorithm auto's choice among them,
// compiler/SelectAlgorithm.h), then the shared passes of
// compiler/Passes.def, with the verifier at the end (the lowering's
// structure always; every stage in full with verifyEach, and when the final
// check fails).
// runSinglePass(): one named pass on a parsed schedule (--run-pass).
// Both are reentrant: calls with their own request and logger may run on
// several threads at once.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_PIPELINE_H
#define TOPOCC_COMPILER_PIPELINE_H

#include "compiler/CompileRequest.h"
#include "compiler/PassLogger.h"
#include "compiler/topology/Topology.h"
#include "ir/Schedule.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace topocc {

/// Lowers, optimizes, assigns and legalizes; verifies the result (the
/// lowering's structure, and every stage in full with verifyEach). User errors
/// for bad requests and limits; an internal error (with the IR before and
/// after) when a stage produces a schedule the verifier rejects: when the final
/// check fails, the request is compiled again with every stage verified to name
/// the first one that broke it. Without a topology the ring is req.ringOrder or
/// rank order, and the algorithms that need the topology (hier-ring, trees,
/// cerar, hier-cerar, auto, --channels auto) are user errors.
llvm::Expected<CompileResult>
compile(int32_t numRanks, const CompileRequest &req, PassLogger &log);
/// The same on `t`'s ranks: the ring algorithm uses the ring search
/// (compiler/algorithms/RingSearch.h) for req.bytes unless an order is
/// given; trees packs ForestColl spanning trees on its links.
llvm::Expected<CompileResult> compile(const topo::Topology &t,
                                      const CompileRequest &req,
                                      PassLogger &log);

/// The final check compile() left to its caller (CompileResult::pendingCheck,
/// the request as `pending`): verifies `s` as compile() would have. When it
/// finds a problem, `pending` is compiled again with every stage verified and
/// the internal error names the stage that broke it. Reads `s` only: it may
/// run while another thread writes `s` out.
llvm::Error checkCompiled(const topo::Topology *t, int32_t numRanks,
                          const CompileRequest &pending, const ir::Schedule &s);

/// Names accepted by runSinglePass, in pipeline order.
std::vector<llvm::StringRef> passNames();

/// Runs the pass `name` (one of passNames(); a lowering is not one: it has
/// no input IR) on `s` with req.target's limits. User error when `s` is
/// invalid or not at the stage the pass expects; the result is always
/// verified (internal error with the IR before and after).
llvm::Expected<ir::Schedule> runSinglePass(llvm::StringRef name, ir::Schedule s,
                                           const CompileRequest &req,
                                           PassLogger &log);

} // namespace topocc

#endif // TOPOCC_COMPILER_PIPELINE_H
