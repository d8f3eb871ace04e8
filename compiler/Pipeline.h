//===- compiler/Pipeline.h - The ordered pass pipeline ----------*- C++ -*-===//
//
// compile(): THE ordered list of passes from a compile request to a verified,
// Legalized schedule, with a logger that prints the IR after each pass and
// times the passes (output only to the streams the caller passes in).
// runSinglePass(): one named pass on a parsed schedule (--run-pass).
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_PIPELINE_H
#define TOPOCC_COMPILER_PIPELINE_H

#include "ir/Schedule.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <utility>
#include <vector>

namespace topocc {

struct CompileRequest {
  ir::Collective collective = ir::Collective::AllReduce;
  std::string algorithm = "ring";
  int32_t channels = 1;
  int32_t chunks = 1;
  /// Ring order (a permutation of the ranks); empty means rank order.
  std::vector<ir::RankId> ringOrder;
  bool inplace = false;
  std::string proto = "Simple"; ///< "Simple", "LL" or "LL128"
  int32_t maxSteps = 64;        ///< MSCCL_MAX_NUM_STEPS of the runtime
  bool verifyEach = false;      ///< verify after every pass, not only twice
  std::string name;             ///< schedule name; derived when empty
};

/// Prints the IR after each pass (printAfterAll) to `irOut` and records each
/// pass's wall time (timePasses), reported by printTimings. Prints nothing
/// unless asked.
class PassLogger {
public:
  PassLogger() = default;
  PassLogger(llvm::raw_ostream *irOut, bool printAfterAll, bool timePasses)
      : irOut(irOut), printAfterAll(printAfterAll), timePasses(timePasses) {}

  /// Called by the pipeline after pass `pass` produced `s`.
  void afterPass(llvm::StringRef pass, const ir::Schedule &s);
  void recordTime(llvm::StringRef pass, double seconds);
  bool isTiming() const { return timePasses; }
  /// "===-- pass timing --===" table in pass order; nothing if not timing.
  void printTimings(llvm::raw_ostream &os) const;
  llvm::ArrayRef<std::pair<std::string, double>> timings() const {
    return times;
  }

private:
  llvm::raw_ostream *irOut = nullptr;
  bool printAfterAll = false;
  bool timePasses = false;
  std::vector<std::pair<std::string, double>> times;
};

struct CompiledPlan {
  ir::Schedule schedule; ///< stage Legalized, verified
  std::string algorithm; ///< "ring"
};

/// Lowers, optimizes, assigns and legalizes; verifies after lowering and at
/// the end (and after every pass with verifyEach). User errors for bad
/// requests and limits; an internal error (with the IR before and after)
/// when a pass produces a schedule the verifier rejects.
llvm::Expected<CompiledPlan>
compile(int32_t numRanks, const CompileRequest &req, PassLogger &log);

/// Names accepted by runSinglePass, in pipeline order.
llvm::ArrayRef<llvm::StringRef> passNames();

/// Runs the pass `name` ("lower-ring" is not one: it has no input IR) on `s`.
/// User error when `s` is invalid or not at the stage the pass expects; the
/// result is always verified (internal error with the IR before and after).
llvm::Expected<ir::Schedule> runSinglePass(llvm::StringRef name, ir::Schedule s,
                                           const CompileRequest &req,
                                           PassLogger &log);

} // namespace topocc

#endif // TOPOCC_COMPILER_PIPELINE_H
