//===- backends/MscclXmlImport.h - MSCCL XML to schedule IR ----*- C++ -*-===//
//
// Imports an MSCCL algorithm XML file (new executor dialect, or the legacy
// microsoft/msccl dialect) into a Legalized ir::Schedule so that third-party
// files can be verified and simulated. Blocks become threadblocks, steps ops,
// FIFO pairing per (sender, receiver, channel) in document order gives the
// message ids, depid/deps and nop chains become same-rank deps.
// Stage: back end (input). Invariant established: stage == Legalized.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_BACKENDS_MSCCLXMLIMPORT_H
#define TOPOCC_BACKENDS_MSCCLXMLIMPORT_H

#include "backends/MscclXmlReader.h"
#include "backends/MscclXmlRules.h"
#include "ir/Schedule.h"
#include "support/Diagnostics.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <vector>

namespace topocc::backends {

struct MscclImportOptions {
  /// The call mode to model. Default: in-place when the file says
  /// inplace="1", otherwise out-of-place.
  std::optional<bool> inplace;
  /// Root of broadcast/reduce (the file has none). Default: the only rank
  /// that never receives (broadcast) or never sends (reduce), else 0.
  std::optional<int> root;
};

/// An imported schedule with the source location of every op.
struct MscclImport {
  ir::Schedule schedule;
  /// opLocs[rank][op]: the <step> element the op comes from.
  std::vector<std::vector<SourceLoc>> opLocs;
  /// Things that are imported but suspicious (legacy spellings, ...).
  std::vector<Diagnostic> warnings;
};

/// Reads and imports `text`. Errors are DiagnosticErrors with file:line:col.
llvm::Expected<MscclImport>
importMscclXmlDetailed(llvm::StringRef text, llvm::StringRef fileName,
                       const MscclImportOptions &opts = {});

/// The same, returning only the schedule.
llvm::Expected<ir::Schedule>
importMscclXml(llvm::StringRef text, llvm::StringRef fileName,
               const MscclImportOptions &opts = {});

/// Imports an already-built view (the checker's path). When `errorTags` is
/// given, it receives the rule of each diagnostic of a failed import, in
/// order (MscclRule::Import for what breaks no numbered rule).
/// REQUIRES: algo.complete; `doc` is the document `algo` was built from.
llvm::Expected<MscclImport>
importMscclAlgo(const XmlDocument &doc, const MscclAlgo &algo,
                const MscclImportOptions &opts,
                std::vector<MscclRuleTag> *errorTags = nullptr);

} // namespace topocc::backends

#endif // TOPOCC_BACKENDS_MSCCLXMLIMPORT_H
