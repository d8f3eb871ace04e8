//===- tests/fuzz/MscclXmlFuzzer.cpp - Fuzz the MSCCL XML checker ---------===//
//
// libFuzzer entry: run the whole conformance checker (lexer, typed view,
// executor checks, rules, import, IR verifier, symbolic semantics) on
// arbitrary bytes, in both dialects. It must never crash, hang or leak, and
// its results must be consistent: one classified finding per diagnostic, and
// an accepted file imports to a schedule the IR verifier accepts. Work is
// bounded by the checker itself (executionIsBounded) for huge ngpus/counts.
//
//===----------------------------------------------------------------------===//

#include "backends/MscclXmlCheck.h"
#include "backends/MscclXmlImport.h"
#include "ir/Verifier.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>

using namespace topocc::backends;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  for (bool legacy : {false, true}) {
    MscclCheckOptions opts;
    opts.legacy = legacy;
    MscclVerdict v = verifyMscclXml(text, "fuzz.xml", opts);
    if (v.findings.size() != v.problems.size() ||
        v.warningFindings.size() != v.warnings.size())
      abort(); // every diagnostic is classified
    for (const MscclFinding &f : v.findings)
      if (!f.consequence)
        abort(); // every error says what the executor does
    if (v.accepted() != v.problems.empty())
      abort(); // accepted exactly when there is no error
    if (!legacy && v.accepted()) {
      auto s = importMscclXml(text, "fuzz.xml");
      if (!s) {
        llvm::consumeError(s.takeError());
        abort(); // an accepted file imports
      }
      if (llvm::Error e = topocc::ir::verifySchedule(*s)) {
        llvm::consumeError(std::move(e));
        abort(); // and verifies
      }
    }
  }
  return 0;
}
