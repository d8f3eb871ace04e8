//===- compiler/PassLogger.h - IR dumps and pass timings --------*- C++ -*-===//
//
// What compile() reports about its passes, to the streams its caller
// passes in: the IR after each pass (--print-after-all) and each pass's
// wall time (--time-passes). Prints nothing unless asked. Not thread-safe:
// one logger per compile() call.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_PASSLOGGER_H
#define TOPOCC_COMPILER_PASSLOGGER_H

#include "ir/Schedule.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <utility>
#include <vector>

namespace topocc {

class PassLogger {
public:
  PassLogger() = default;
  PassLogger(llvm::raw_ostream *irOut, bool printAfterAll, bool timePasses)
      : irOut(irOut), printAfterAll(printAfterAll), timePasses(timePasses) {}

  /// Called by the pipeline after pass `pass` produced `s`.
  void afterPass(llvm::StringRef pass, const ir::Schedule &s);
  void recordTime(llvm::StringRef pass, double seconds);
  bool isTiming() const { return timePasses; }
  /// Neither prints the IR nor times the passes.
  bool isQuiet() const { return !(printAfterAll && irOut) && !timePasses; }
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

} // namespace topocc

#endif // TOPOCC_COMPILER_PASSLOGGER_H
