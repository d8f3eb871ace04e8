//===- backends/Trace.h - Perfetto/Chrome trace of a simulated run -*- C++ -*-===//
//
// Writes the transfers of one simulated run (analysis::SimResult with
// recordTransfers) as Chrome trace event JSON, which Perfetto and
// chrome://tracing open: one track (thread) per directed link used, one
// complete slice per transfer with message, ranks and bytes in its args,
// times in microseconds, then one flow arrow per dependency between
// transfers (SimResult::flows). The simulator returns the data; this file
// only formats it, streaming one event per line (memory of one event, not of
// the document), and can measure the output's size without keeping it.
// Stage: output. Deterministic.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_BACKENDS_TRACE_H
#define TOPOCC_BACKENDS_TRACE_H

#include "compiler/analysis/Simulator.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>

namespace topocc::backends {

/// Writes the trace JSON to `os`: a process named `title`, a thread per
/// resource used (`resourceNames[res]` names LinkModel resource `res`, the
/// track title; tracks in resource order from tid 1), a complete ("X")
/// event per transfer in r.transfers order, and per flow of r.flows a start
/// ("s") inside its source slice and a finish ("f", binding point "e": the
/// enclosing slice) inside its target slice, both at the slice's midpoint
/// (so each binds to exactly that slice), one id per flow from 1, category
/// "hop" (the next hop of one message) or "release" (a message whose
/// arrival released the next send).
/// REQUIRES: every transfer's resource indexes resourceNames; every flow
/// indexes r.transfers.
void writeChromeTrace(llvm::raw_ostream &os, const analysis::SimResult &r,
                      llvm::ArrayRef<std::string> resourceNames,
                      llvm::StringRef title);

/// The number of bytes writeChromeTrace writes (a dry run: nothing is
/// kept), so a caller can refuse a trace over a size limit before writing.
uint64_t chromeTraceBytes(const analysis::SimResult &r,
                          llvm::ArrayRef<std::string> resourceNames,
                          llvm::StringRef title);

/// The same as a string.
std::string writeChromeTrace(const analysis::SimResult &r,
                             llvm::ArrayRef<std::string> resourceNames,
                             llvm::StringRef title);

} // namespace topocc::backends

#endif // TOPOCC_BACKENDS_TRACE_H
