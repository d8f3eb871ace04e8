//===- tests/fuzz/IrParserFuzzer.cpp - Fuzz the textual IR parser ---------===//
//
// libFuzzer entry: parse arbitrary bytes; when they parse, print them back
// (print -> parse -> print must be byte-identical) and verify them. The
// verifier is only run on schedules small enough to check quickly, so that a
// header like `chunks=1000000` does not turn into a timeout.
//
//===----------------------------------------------------------------------===//

#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>

using namespace topocc::ir;

namespace {

/// A rough bound on the work of the verifier and the semantics.
bool smallEnough(const Schedule &s) {
  int64_t work = int64_t(s.numRanks) * s.numRanks * s.chunksPerLoop;
  for (const RankProgram &rp : s.ranks) {
    work += int64_t(rp.inputChunks) + rp.outputChunks + rp.scratchChunks;
    for (const Op &op : rp.ops) {
      work += std::abs(int64_t(op.src.count)) + std::abs(int64_t(op.dst.count));
      for (const LinTerm &t : op.terms)
        work += std::abs(int64_t(t.src.count));
    }
  }
  return work < (1 << 20);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  auto parsed = parseSchedule(text, "fuzz.ir");
  if (!parsed) {
    llvm::consumeError(parsed.takeError());
    return 0;
  }
  std::string first = scheduleToString(*parsed);
  auto again = parseSchedule(first, "fuzz-printed.ir");
  if (!again) {
    llvm::consumeError(again.takeError());
    abort(); // the printer wrote something the parser rejects
  }
  if (scheduleToString(*again) != first)
    abort(); // print -> parse -> print is not byte-identical
  if (smallEnough(*parsed)) {
    VerifyOptions opts;
    opts.maxProblems = 50;
    llvm::consumeError(verifySchedule(*parsed, opts));
  }
  return 0;
}
