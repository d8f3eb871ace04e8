//===- backends/MscclVerify.h - `topocc verify` of files -------*- C++ -*-===//
//
// What `topocc verify` computes for its files, for the CLI and the Python
// module (topocc.verify): each file read and checked (MscclXmlCheck.h), its
// rank count compared with a topology's, accepted files simulated on it at
// one size beside the realizable bound (compiler/analysis/Prediction.h),
// and the window overlaps across the files; and the report as JSON
// (docs/Verify.md). Stage: back end (verification of input files). Never
// prints to a terminal; deterministic.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_BACKENDS_MSCCLVERIFY_H
#define TOPOCC_BACKENDS_MSCCLVERIFY_H

#include "backends/MscclXmlCheck.h"
#include "compiler/analysis/Bound.h"
#include "compiler/analysis/Prediction.h"
#include "compiler/analysis/Simulator.h"
#include "compiler/topology/Topology.h"
#include "support/Diagnostics.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <vector>

namespace topocc::backends {

struct MscclVerifyOptions {
  bool legacy = false;    ///< --legacy
  unsigned maxSteps = 64; ///< --max-steps
  /// --sm-count; -1: the topology's GPU model, else 108 (an A100).
  int smCount = -1;
  /// --topology (null: none) and the file it was read from.
  const topo::Topology *topology = nullptr;
  std::string topologyFile;
  double bytes = 0; ///< --size of the simulated call (with a topology)
  analysis::SimMode mode = analysis::SimMode::Runtime; ///< --mode
};

/// One file's outcome.
struct MscclFileResult {
  std::string file;
  MscclVerdict verdict;
  /// Set when the file cannot be read (then `verdict` is empty).
  std::string ioError;
  /// --topology: "" when it matches, else why not.
  std::string topologyError;
  /// --topology, accepted files: the simulated run at --size, the
  /// realizable bound for the same call, or why either could not be
  /// computed.
  std::optional<analysis::SimResult> sim;
  std::string simError;
  std::optional<analysis::BoundNumbers> bound;
  std::string boundError;
  std::optional<analysis::Prediction> prediction; ///< with `sim`
  bool accepted() const {
    return ioError.empty() && topologyError.empty() && verdict.accepted();
  }
  /// Whether some finding, error or warning, says the executor hangs or
  /// computes a wrong result (the SM-count warning among them).
  bool hangsOrRunsWrongly() const {
    auto bad = [](const MscclFinding &f) {
      return f.consequence && (*f.consequence == MscclConsequence::Hangs ||
                               *f.consequence == MscclConsequence::RunsWrongly);
    };
    return llvm::any_of(verdict.findings, bad) ||
           llvm::any_of(verdict.warningFindings, bad);
  }
};

struct MscclVerifyReport {
  std::vector<MscclFileResult> files; ///< in the order given
  std::vector<Diagnostic> overlaps;   ///< window overlaps (warnings)
  /// `topocc verify`'s exit status 0: every file accepted and no finding,
  /// error or warning, says the executor hangs or computes wrongly.
  bool passes() const {
    return llvm::all_of(files, [](const MscclFileResult &r) {
      return r.accepted() && !r.hangsOrRunsWrongly();
    });
  }
};

/// Verifies `files` (a file that cannot be read is a reject with its
/// ioError). User errors: the options (--max-steps, --sm-count) and the
/// topology's GPU model when it gives the SM count.
llvm::Expected<MscclVerifyReport>
verifyMscclFiles(llvm::ArrayRef<std::string> files,
                 const MscclVerifyOptions &opts);

/// "every power of two from 64 B (fp32), ..." (ServedSizes.h) for a file
/// whose <algo> was read.
std::string mscclServesText(const MscclAlgoInfo &a);

/// `topocc verify --format json`, indented, with a final newline.
void printMscclVerifyJson(llvm::raw_ostream &os,
                          const MscclVerifyReport &report,
                          const MscclVerifyOptions &opts);

} // namespace topocc::backends

#endif // TOPOCC_BACKENDS_MSCCLVERIFY_H
