//===- compiler/analysis/BoundReport.h - bound's report -----*- C++ -*-===//
//
// What `topocc bound` reports beside the numbers of Bound.h: the link
// direction each arc of a bound graph stands for, and the whole report as
// JSON (schema topocc-bound/v1, docs/Algorithms-trees.md): the physical
// bound on --capacity rates and the realizable bound on the runtime's
// routes, each for allgather, reduce-scatter and allreduce at one size.
// The CLI and the Python module (topocc.bound) both print it from here.
// Stage: analysis. Never prints to a terminal; deterministic.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_ANALYSIS_BOUNDREPORT_H
#define TOPOCC_COMPILER_ANALYSIS_BOUNDREPORT_H

#include "compiler/analysis/Bound.h"
#include "compiler/topology/Topology.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <utility>

namespace topocc::analysis {

/// Bytes/s of arc `arc` of `g`.
double boundArcBytesPerSec(const BoundGraph &g, int arc);

/// The ends of the link direction an arc stands for: on the physical graph
/// its own ends, on the realizable graph those of the hop it carries.
std::pair<std::string, std::string> boundArcEnds(const topo::Topology &t,
                                                 const BoundGraph &g, int arc);

/// `topocc bound --format json`: `physical` (computeBound(t, capacity
/// kind named `capacity`)) and `realizable` (computeRealizableBound(t)) at
/// `bytes`, indented, with a final newline. `scenario`: the scenario
/// applied to `t` ("" when none).
void printBoundJson(llvm::raw_ostream &os, const topo::Topology &t,
                    const BoundResult &physical, const BoundResult &realizable,
                    double bytes, llvm::StringRef scenario,
                    llvm::StringRef capacity);

} // namespace topocc::analysis

#endif // TOPOCC_COMPILER_ANALYSIS_BOUNDREPORT_H
