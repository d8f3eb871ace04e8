//===- compiler/PassLogger.cpp - IR dumps and pass timings ----------------===//

#include "compiler/PassLogger.h"

#include "ir/Printer.h"

#include "llvm/Support/FormatVariadic.h"

namespace topocc {

void PassLogger::afterPass(llvm::StringRef pass, const ir::Schedule &s) {
  if (!printAfterAll || !irOut)
    return;
  *irOut << "// *** IR Dump After " << pass << " ***\n";
  ir::printSchedule(s, *irOut);
}

void PassLogger::recordTime(llvm::StringRef pass, double seconds) {
  if (timePasses)
    times.emplace_back(pass.str(), seconds);
}

void PassLogger::printTimings(llvm::raw_ostream &os) const {
  if (!timePasses)
    return;
  os << "===-- pass execution timing report --===\n";
  os << "  wall time (s)  pass\n";
  double total = 0;
  for (const auto &[name, secs] : times) {
    os << llvm::formatv("  {0,12:f6}  {1}\n", secs, name);
    total += secs;
  }
  os << llvm::formatv("  {0,12:f6}  total\n", total);
}

} // namespace topocc
