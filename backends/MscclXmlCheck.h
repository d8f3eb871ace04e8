//===- backends/MscclXmlCheck.h - MSCCL XML conformance checker -*- C++ -*-===//
//
// Checks an MSCCL algorithm XML file against everything the executor checks
// when it scans and loads the file for every rank, against rules 1 to 11 of
// MSCCL_XML.md 2.10 and the limits of 2.11, and (through the importer, the IR
// verifier and the symbolic semantics) for deadlock freedom, race freedom and
// the collective's postcondition in every declared mode. Stage: back end
// (verification of input files). Every diagnostic names its rule and points
// at the element or attribute (file:line:col).
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_BACKENDS_MSCCLXMLCHECK_H
#define TOPOCC_BACKENDS_MSCCLXMLCHECK_H

#include "support/Diagnostics.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

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
};

struct MscclCheckResult {
  std::vector<Diagnostic> errors;
  std::vector<Diagnostic> warnings;
  bool ok() const { return errors.empty(); }
};

/// Every problem of the file: errors make it non-conforming.
MscclCheckResult checkMscclXml(llvm::StringRef text, llvm::StringRef fileName,
                               const MscclCheckOptions &opts = {});

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

  bool accepted() const {
    return formatOk && deadlockFree && raceFree && computesCollective;
  }
};

MscclVerdict verifyMscclXml(llvm::StringRef text, llvm::StringRef fileName,
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

/// Warnings for files of the same (coll, ngpus, mode) whose size windows
/// overlap (1.3): the executor picks the smaller path.
std::vector<Diagnostic>
checkMscclWindowOverlaps(llvm::ArrayRef<MscclAlgoMeta> files);

} // namespace topocc::backends

#endif // TOPOCC_BACKENDS_MSCCLXMLCHECK_H
