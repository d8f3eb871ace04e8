//===- tests/fuzz/PlanLoaderFuzzer.cpp - Fuzz the plan loader -------------===//
//
// libFuzzer entry for what every rank runs on a plan file: the JSON parser
// (support/JsonDocument) and the plan loader (backends/PlanJsonRead), for a
// plan file and for a plan set. It must never crash, hang, leak or allocate
// without bound, and its results must be consistent:
//   - a document that parses can be walked whole (every value read in every
//     way), and a located syntax error lies inside the text;
//   - the elements of a deferred array parse on their own (or have a key
//     twice, which only building finds);
//   - parsing the same text again gives the same verdict (the document is
//     reused, as the loader reuses one per program);
//   - a plan that loads has as many programs as ranks, and its schedule
//     verifies (the loader re-verified it; checked again here).
//
//===----------------------------------------------------------------------===//

#include "backends/PlanJson.h"
#include "ir/Verifier.h"
#include "support/JsonDocument.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>

using namespace topocc;

namespace {

/// Reads every value below `v`; returns how many there are.
size_t walk(JsonValue v, unsigned depth) {
  if (depth > JsonDocument::kMaxDepth + 1)
    abort(); // the parser bounds the nesting
  size_t n = 1;
  (void)v.offset();
  (void)v.asInteger();
  (void)v.asNumber();
  (void)v.asString();
  (void)v.asBool();
  switch (v.kind()) {
  case JsonValue::Kind::Array:
    for (size_t i = 0; i < v.size(); ++i)
      n += walk(v.element(i), depth + 1);
    break;
  case JsonValue::Kind::Object:
    for (size_t i = 0; i < v.size(); ++i) {
      std::optional<JsonValue> byKey = v.get(v.keyAt(i));
      if (!byKey || byKey->offset() != v.valueAt(i).offset())
        abort(); // keys are unique and found
      (void)v.keyOffsetAt(i);
      n += walk(v.valueAt(i), depth + 1);
    }
    break;
  case JsonValue::Kind::Number:
    if (!v.asNumber())
      abort(); // every number converts
    break;
  default:
    break;
  }
  return n;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  JsonDocument doc;
  for (int pass = 0; pass < 2; ++pass) {
    std::optional<JsonSyntaxError> err = doc.parse(text, {"programs"});
    if (err && err->offset > size)
      abort(); // errors point into the text (or at its end)
    if (!err) {
      walk(doc.root(), 0);
      if (doc.root().isObject())
        if (auto p = doc.root().get("programs"))
          for (JsonSpan s : p->deferredElements()) {
            JsonDocument element;
            if (s.begin >= s.end || s.end > size)
              abort();
            // Deferred elements were checked when deferred, but for keys
            // that appear twice in one object (found when built).
            if (auto e = element.parse(text, s.begin, s.end))
              if (e->message.find("appears twice") == std::string::npos)
                abort();
          }
    }
  }

  for (bool set : {false, true}) {
    if (set) {
      auto loaded = backends::parsePlanSetJson(text, "fuzz.json");
      if (!loaded) {
        llvm::consumeError(loaded.takeError());
        continue;
      }
      for (const backends::PlanVariant &v : loaded->variants)
        if (llvm::Error e = backends::verifyPlanSchedule(
                v.plan.schedule, v.plan.meta.errorBound)) {
          llvm::consumeError(std::move(e));
          abort(); // a loaded variant verifies
        }
    } else {
      auto plan = backends::parsePlanJson(text, "fuzz.json");
      if (!plan) {
        llvm::consumeError(plan.takeError());
        continue;
      }
      if (plan->schedule.ranks.size() != size_t(plan->schedule.numRanks))
        abort(); // one program per rank
      if (llvm::Error e = backends::verifyPlanSchedule(plan->schedule,
                                                       plan->meta.errorBound)) {
        llvm::consumeError(std::move(e));
        abort(); // a loaded plan verifies
      }
    }
  }
  return 0;
}
