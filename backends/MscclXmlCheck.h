//===- backends/MscclXmlCheck.h - MSCCL XML conformance checker -*- C++ -*-===//
//
// Checks an MSCCL algorithm XML file against everything the executor checks
// when it scans and loads the file for every rank, against rules 1 to 11 of
// docs/MscclXmlFormat.md 2.10 and the limits of 2.11, and (through the importer, the IR
// verifier and the symbolic semantics) for deadlock freedom, race freedom and
// the collective's postcondition in every declared mode. Stage: back end
// (verification of input files). Every diagnostic names its rule and points
// at the element or attribute (file:line:col).
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_BACKENDS_MSCCLXMLCHECK_H
#define TOPOCC_BACKENDS_MSCCLXMLCHECK_H

#include "backends/MscclXmlRules.h"
#include "support/Diagnostics.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>
#include <vector>

namespace topocc::backends {

struct MscclCheckOptions {
  /// MSCCL_MAX_NUM_STEPS of the target executor build.
  unsigned maxSteps = 64;
  /// SM count of the target GPU: warn when a rank uses more blocks
  /// (co-residency, 2.7). 0 disables the warning.
  unsigned smCount = 108;
  /// Import into the IR and check deadlock, races and the postcondition.
  bool checkExecution = true;
  /// Accept the legacy microsoft/msccl dialect (docs/MscclXmlFormat.md 3):
  /// missing outofplace, minBytes, maxBytes take the legacy defaults and
  /// coll="reduce_scatter" is read as reducescatter (a warning each). The
  /// file is still checked against the new executor otherwise.
  bool legacy = false;
};

/// One classified diagnostic. rank, tb and step are -1 where the finding is
/// not about one rank, block or step (step is the 0-based position).
struct MscclFinding {
  Diagnostic diag;
  /// The rule it violates, as the place that made the finding names it.
  MscclRule ruleId = MscclRule::Other;
  /// mscclRuleName(ruleId): "lexical", "attribute", "structure", "scan",
  /// "load", "limit", "rule 1" .. "rule 11", "postcondition", "import",
  /// "other" (warnings only).
  std::string rule;
  /// Set on every error; on warnings only where the risk is known.
  std::optional<MscclConsequence> consequence;
  int rank = -1, tb = -1, step = -1;
};

struct MscclCheckResult {
  std::vector<Diagnostic> errors;
  std::vector<Diagnostic> warnings;
  bool ok() const { return errors.empty(); }
};

/// Every problem of the file: errors make it non-conforming.
MscclCheckResult checkMscclXml(llvm::StringRef text, llvm::StringRef fileName,
                               const MscclCheckOptions &opts = {});

/// Selection metadata of one file (the <algo> attributes), for the check
/// across the files of one algorithm directory.
struct MscclAlgoMeta {
  std::string fileName;
  std::string coll;
  int ngpus = 0;
  bool inplace = false, outofplace = false;
  long long minBytes = 0, maxBytes = 0;
};

/// What a verified file declares in its <algo> element.
struct MscclAlgoInfo {
  MscclAlgoMeta meta; ///< for checkMscclWindowOverlaps
  std::string name, proto;
  int nchannels = 0, nchunksperloop = 0;
};

/// The checker's findings split into the four properties the corpus tests.
struct MscclVerdict {
  /// The executor loads it for every rank and rules 1-6 and 9-11 hold.
  bool formatOk = false;
  /// Rule 7 (IR verifier: acyclic combined graph), in every declared mode.
  bool deadlockFree = false;
  /// Rule 8 (IR verifier: no unordered conflicting accesses).
  bool raceFree = false;
  /// The symbolic execution meets the postcondition of `coll`.
  bool computesCollective = false;
  std::vector<Diagnostic> problems; ///< errors
  std::vector<Diagnostic> warnings;
  /// problems[i] classified (same order and size as `problems`).
  std::vector<MscclFinding> findings;
  /// warnings[i] classified (same order and size as `warnings`).
  std::vector<MscclFinding> warningFindings;
  /// The <algo> attributes, when the <algo> element could be read.
  std::optional<MscclAlgoInfo> algo;

  bool accepted() const {
    return formatOk && deadlockFree && raceFree && computesCollective;
  }
};

MscclVerdict verifyMscclXml(llvm::StringRef text, llvm::StringRef fileName,
                            const MscclCheckOptions &opts = {});


/// Warnings for files of the same (coll, ngpus, mode) whose size windows
/// overlap (1.3): the executor picks the smaller path.
std::vector<Diagnostic>
checkMscclWindowOverlaps(llvm::ArrayRef<MscclAlgoMeta> files);

} // namespace topocc::backends

#endif // TOPOCC_BACKENDS_MSCCLXMLCHECK_H
