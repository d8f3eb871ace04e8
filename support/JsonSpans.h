//===- support/JsonSpans.h - Find a JSON array's elements without a DOM ---===//
//
// A scan over JSON text that only skips strings and brackets: where the
// top-level member `key` (an array) and each of its elements lie, so that a
// caller can parse the elements one at a time. Parsing a large file into one
// llvm::json DOM costs ~100 bytes per input byte (its arrays grow by copying
// their elements); backends/PlanJson parses a plan's programs and ops this
// way.
//
//===----------------------------------------------------------------------===//

#ifndef TOPOCC_SUPPORT_JSONSPANS_H
#define TOPOCC_SUPPORT_JSONSPANS_H

#include "llvm/ADT/StringRef.h"

#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

namespace topocc {

struct JsonArraySpans {
  size_t begin = 0, end = 0; ///< the array, brackets included: [begin, end)
  /// Each element's [begin, end), without the whitespace around it.
  std::vector<std::pair<size_t, size_t>> elements;
};

/// The spans of the array that is the value of the top-level object member
/// \p key in \p text. Nothing when the text does not start (after
/// whitespace) with an object, the member is missing, appears twice or is not
/// an array, or a string or bracket is left open: the caller then parses the
/// whole text, which reports what is wrong. The scan does not validate
/// scalars or strings; parsing the spans does.
std::optional<JsonArraySpans> findTopLevelArray(llvm::StringRef text,
                                                llvm::StringRef key);

} // namespace topocc

#endif // TOPOCC_SUPPORT_JSONSPANS_H
