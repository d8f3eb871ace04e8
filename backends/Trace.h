//===- backends/Trace.h - Perfetto/Chrome trace of a simulated run -*- C++ -*-===//
//
// Writes the transfers of one simulated run (analysis::SimResult with
// recordTransfers) as Chrome trace event JSON, which Perfetto and
// chrome://tracing open: one track (thread) per directed link used, one
// complete slice per transfer with message, ranks and bytes in its args,
// times in microseconds. Stage: output. Pure function; deterministic.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_BACKENDS_TRACE_H
#define TOPOCC_BACKENDS_TRACE_H

#include "compiler/analysis/Simulator.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace topocc::backends {

/// `resourceNames[res]` names LinkModel resource `res` (the track title).
/// REQUIRES: every transfer's resource indexes resourceNames.
std::string writeChromeTrace(const analysis::SimResult &r,
                             llvm::ArrayRef<std::string> resourceNames,
                             llvm::StringRef title);

} // namespace topocc::backends

#endif // TOPOCC_BACKENDS_TRACE_H
