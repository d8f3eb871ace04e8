//===- support/JsonDocument.h - Compact JSON with source offsets -*- C++
//-*-===//
//
// A validating JSON parser (RFC 8259) into a compact, read-only document
// whose every value remembers where it starts in the text, so that a
// reader of a file format can say `file:line:col` for a value of the wrong
// type or range, not only for a syntax error. Used by the plan loader
// (backends/PlanJsonRead.cpp); docs/PlanFormat.md, "Reading plans", says
// why topocc has its own parser rather than llvm::json or a library from
// Debian.
//
// Memory: 24 bytes per value (keys included) plus 4 bytes per array element
// and 8 per object member, and the decoded text of strings with escapes
// (other strings and every number stay in the caller's text, which must
// outlive the document): about 9 bytes per input byte of a plan with the
// vectors' growth, where llvm::json's DOM costs about 100.
//
// Large arrays can be left unparsed: a member of the top-level object whose
// key is in `deferredKeys` and whose value is an array is checked for syntax
// but stored as the spans of its elements (a Deferred value), which the
// caller then parses one at a time into another document (a key twice in
// one object is found only then). A plan's
// programs are read this way, so that the document holds one program at a
// time.
//
//===----------------------------------------------------------------------===//

#ifndef TOPOCC_SUPPORT_JSONDOCUMENT_H
#define TOPOCC_SUPPORT_JSONDOCUMENT_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace topocc {

class JsonDocument;

/// A [begin, end) byte range of the parsed text.
struct JsonSpan {
  size_t begin = 0, end = 0;
};

/// A value of a JsonDocument: a handle, valid while the document is alive
/// and not parsed again.
class JsonValue {
public:
  enum class Kind : uint8_t {
    Null,
    Bool,
    Number,
    String,
    Array,
    Object,
    /// An array left unparsed (JsonDocument::parse's deferredKeys).
    Deferred,
  };

  Kind kind() const;
  /// The byte offset in the text of the value's first character.
  size_t offset() const;

  bool isObject() const { return kind() == Kind::Object; }
  bool isArray() const { return kind() == Kind::Array; }

  /// The number when it is integral and fits int64_t ("3", "3.0" and "3e0"
  /// alike), else nothing (also for non-numbers).
  std::optional<int64_t> asInteger() const;
  /// Any number (±inf where the text overflows a double).
  std::optional<double> asNumber() const;
  std::optional<llvm::StringRef> asString() const;
  std::optional<bool> asBool() const;

  /// Elements of an array, members of an object, spans of a deferred array.
  size_t size() const;
  /// Element \p i of an array.
  JsonValue element(size_t i) const;
  /// Member \p i of an object, in text order.
  llvm::StringRef keyAt(size_t i) const;
  /// Where member \p i's key (its opening quote) is in the text.
  size_t keyOffsetAt(size_t i) const;
  JsonValue valueAt(size_t i) const;
  /// The member named \p key of an object (keys are unique: the parser
  /// refuses duplicates).
  std::optional<JsonValue> get(llvm::StringRef key) const;
  /// The elements of a deferred array, each without surrounding whitespace.
  llvm::ArrayRef<JsonSpan> deferredElements() const;

private:
  friend class JsonDocument;
  JsonValue(const JsonDocument *doc, uint32_t index) : doc(doc), index(index) {}
  const JsonDocument *doc;
  uint32_t index;
};

/// Where and why a text is not JSON.
struct JsonSyntaxError {
  size_t offset = 0; ///< of the offending byte (the text's size at its end)
  std::string message;
};

class JsonDocument {
public:
  /// Nesting deeper than this is refused (the parser recurses).
  static constexpr unsigned kMaxDepth = 256;

  /// Parses text[begin, end) as one JSON value, replacing what the document
  /// held. Offsets (JsonValue::offset, JsonSpan, JsonSyntaxError::offset)
  /// are of \p text. \p text must outlive the document.
  std::optional<JsonSyntaxError>
  parse(llvm::StringRef text, size_t begin, size_t end,
        llvm::ArrayRef<llvm::StringRef> deferredKeys = {});
  std::optional<JsonSyntaxError>
  parse(llvm::StringRef text,
        llvm::ArrayRef<llvm::StringRef> deferredKeys = {}) {
    return parse(text, 0, text.size(), deferredKeys);
  }

  /// The parsed value; REQUIRES: the last parse succeeded.
  JsonValue root() const { return JsonValue(this, 0); }

private:
  friend class JsonValue;
  friend class JsonParser;
  struct Node {
    JsonValue::Kind kind = JsonValue::Kind::Null;
    /// String: its characters are in `decoded` (it had escapes), not in
    /// the text.
    bool inDecoded = false;
    /// String: characters; Number: text length; Array, Object, Deferred:
    /// elements, members or spans.
    uint32_t count = 0;
    uint64_t offset = 0;
    /// Bool: 0 or 1; String: where its characters start (text or
    /// `decoded`); Array, Object: first entry in `links`; Deferred: first
    /// entry in `spans`.
    uint64_t data = 0;
  };
  llvm::StringRef text;
  std::vector<Node> nodes;
  /// Array elements (one node index each) and object members (key node,
  /// value node).
  std::vector<uint32_t> links;
  std::vector<JsonSpan> spans;
  std::string decoded;
};

/// 1-based line and column (in bytes) of \p offset in \p text.
std::pair<unsigned, unsigned> lineAndColumn(llvm::StringRef text,
                                            size_t offset);

} // namespace topocc

#endif // TOPOCC_SUPPORT_JSONDOCUMENT_H
