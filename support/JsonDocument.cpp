//===- support/JsonDocument.cpp - Compact JSON with source offsets --------===//
//
// A recursive-descent parser over RFC 8259's grammar. Each value becomes a
// Node; a container's children are collected on a stack while it is open
// and copied to `links` when it closes, so every container's entries are
// contiguous. Deferred arrays are parsed in "check only" mode: the same
// code, building nothing.
//
//===----------------------------------------------------------------------===//

#include "support/JsonDocument.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Twine.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace topocc {

//===-- parser ------------------------------------------------------------===//

class JsonParser {
public:
  JsonParser(JsonDocument &doc, llvm::StringRef text, size_t begin, size_t end,
             llvm::ArrayRef<llvm::StringRef> deferredKeys)
      : doc(doc), text(text), pos(begin), end(end), deferredKeys(deferredKeys) {
  }

  std::optional<JsonSyntaxError> run() {
    skipSpace();
    if (!value(0, /*build=*/true))
      return std::move(err);
    skipSpace();
    if (pos != end)
      fail("expected the end of the text after the JSON value");
    return std::move(err);
  }

private:
  using Kind = JsonValue::Kind;
  using Node = JsonDocument::Node;

  JsonDocument &doc;
  llvm::StringRef text;
  size_t pos, end;
  llvm::ArrayRef<llvm::StringRef> deferredKeys;
  std::optional<JsonSyntaxError> err;
  /// Children of the open containers.
  std::vector<uint32_t> stack;

  bool fail(const llvm::Twine &msg) { return failAt(pos, msg); }
  bool failAt(size_t at, const llvm::Twine &msg) {
    if (!err)
      err = JsonSyntaxError{at, msg.str()};
    return false;
  }

  bool atEnd() const { return pos >= end; }
  char peek() const { return atEnd() ? '\0' : text[pos]; }

  void skipSpace() {
    while (!atEnd()) {
      char c = text[pos];
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
        return;
      ++pos;
    }
  }

  /// A new node; nothing when the document is full.
  std::optional<uint32_t> addNode(Kind kind, size_t offset) {
    if (doc.nodes.size() >= std::numeric_limits<uint32_t>::max()) {
      failAt(offset, "more than 4294967295 values in one document");
      return std::nullopt;
    }
    Node n;
    n.kind = kind;
    n.offset = offset;
    doc.nodes.push_back(n);
    return uint32_t(doc.nodes.size() - 1);
  }

  /// Parses one value at `pos` (no leading whitespace). With `build`, its
  /// node is pushed on `stack` (and is node 0 for the root).
  bool value(unsigned depth, bool build) {
    if (atEnd())
      return fail("expected a value, found the end of the text");
    switch (text[pos]) {
    case '{':
    case '[':
      if (depth >= JsonDocument::kMaxDepth)
        return fail(llvm::Twine("nesting deeper than ") +
                    llvm::Twine(JsonDocument::kMaxDepth) + " levels");
      return text[pos] == '{' ? object(depth, build) : array(depth, build);
    case '"':
      return string(build);
    case 't':
      return literal("true", Kind::Bool, 1, build);
    case 'f':
      return literal("false", Kind::Bool, 0, build);
    case 'n':
      return literal("null", Kind::Null, 0, build);
    default:
      if (text[pos] == '-' || (text[pos] >= '0' && text[pos] <= '9'))
        return number(build);
      return fail(llvm::Twine("expected a value, found ") + describe(pos));
    }
  }

  /// "'x'" for a printable byte, "byte 0xNN" otherwise.
  std::string describe(size_t at) const {
    unsigned char c = static_cast<unsigned char>(text[at]);
    if (c >= 0x20 && c < 0x7f)
      return std::string("'") + char(c) + "'";
    static const char *hex = "0123456789abcdef";
    return std::string("byte 0x") + hex[c >> 4] + hex[c & 15];
  }

  bool literal(llvm::StringRef word, Kind kind, uint64_t data, bool build) {
    if (text.substr(pos, std::min(word.size(), end - pos)) != word)
      return fail(llvm::Twine("expected a value, found ") + describe(pos));
    size_t at = pos;
    pos += word.size();
    if (!build)
      return true;
    auto n = addNode(kind, at);
    if (!n)
      return false;
    doc.nodes[*n].data = data;
    stack.push_back(*n);
    return true;
  }

  static bool isDigit(char c) { return c >= '0' && c <= '9'; }

  bool number(bool build) {
    size_t at = pos;
    if (peek() == '-')
      ++pos;
    if (peek() == '0') {
      ++pos;
      if (isDigit(peek()))
        return fail("a number cannot have a leading zero");
    } else if (isDigit(peek())) {
      while (isDigit(peek()))
        ++pos;
    } else {
      return fail("expected a digit");
    }
    if (peek() == '.') {
      ++pos;
      if (!isDigit(peek()))
        return fail("expected a digit after the decimal point");
      while (isDigit(peek()))
        ++pos;
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos;
      if (peek() == '+' || peek() == '-')
        ++pos;
      if (!isDigit(peek()))
        return fail("expected a digit in the exponent");
      while (isDigit(peek()))
        ++pos;
    }
    if (pos - at > std::numeric_limits<uint32_t>::max())
      return failAt(at, "a number longer than 4294967295 characters");
    if (!build)
      return true;
    auto n = addNode(Kind::Number, at);
    if (!n)
      return false;
    doc.nodes[*n].count = uint32_t(pos - at);
    stack.push_back(*n);
    return true;
  }

  static void appendUtf8(std::string &out, uint32_t cp) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += char(0xE0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xF0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3F));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
  }

  /// Four hex digits at `pos`.
  std::optional<uint32_t> hex4() {
    if (end - pos < 4) {
      fail("expected four hex digits after \\u");
      return std::nullopt;
    }
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text[pos + i];
      uint32_t d;
      if (c >= '0' && c <= '9')
        d = uint32_t(c - '0');
      else if (c >= 'a' && c <= 'f')
        d = uint32_t(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        d = uint32_t(c - 'A' + 10);
      else {
        failAt(pos + i, "expected four hex digits after \\u");
        return std::nullopt;
      }
      v = v * 16 + d;
    }
    pos += 4;
    return v;
  }

  /// The length of the UTF-8 sequence at `pos` (a lead byte >= 0x80), or 0
  /// when it is not well-formed (RFC 3629: no overlong forms, surrogates or
  /// code points above U+10FFFF).
  size_t utf8Length() const {
    auto byte = [&](size_t i) -> unsigned {
      return pos + i < end ? static_cast<unsigned char>(text[pos + i]) : 0;
    };
    auto cont = [&](size_t i) { return (byte(i) & 0xC0) == 0x80; };
    unsigned b0 = byte(0);
    if (b0 >= 0xC2 && b0 <= 0xDF)
      return cont(1) ? 2 : 0;
    if (b0 >= 0xE0 && b0 <= 0xEF) {
      unsigned b1 = byte(1);
      if ((b0 == 0xE0 && b1 < 0xA0) || (b0 == 0xED && b1 >= 0xA0))
        return 0;
      return cont(1) && cont(2) ? 3 : 0;
    }
    if (b0 >= 0xF0 && b0 <= 0xF4) {
      unsigned b1 = byte(1);
      if ((b0 == 0xF0 && b1 < 0x90) || (b0 == 0xF4 && b1 >= 0x90))
        return 0;
      return cont(1) && cont(2) && cont(3) ? 4 : 0;
    }
    return 0;
  }

  /// A string at `pos` (the opening quote). With `build`, a String node on
  /// the stack; its characters stay in the text unless it has escapes.
  bool string(bool build) {
    size_t at = pos++;
    size_t first = pos;
    bool escaped = false;
    std::string out; // the decoded characters, once an escape is seen
    while (true) {
      if (atEnd())
        return failAt(at, "a string is not closed");
      char c = text[pos];
      if (c == '"')
        break;
      if (static_cast<unsigned char>(c) < 0x20)
        return fail("a control character in a string (write it as an "
                    "escape, e.g. \\n)");
      if (c == '\\') {
        if (!escaped && build) {
          out.assign(text.data() + first, pos - first);
        }
        escaped = true;
        ++pos;
        if (atEnd())
          return failAt(at, "a string is not closed");
        char e = text[pos++];
        char plain = 0;
        switch (e) {
        case '"':
          plain = '"';
          break;
        case '\\':
          plain = '\\';
          break;
        case '/':
          plain = '/';
          break;
        case 'b':
          plain = '\b';
          break;
        case 'f':
          plain = '\f';
          break;
        case 'n':
          plain = '\n';
          break;
        case 'r':
          plain = '\r';
          break;
        case 't':
          plain = '\t';
          break;
        case 'u': {
          auto cp = hex4();
          if (!cp)
            return false;
          uint32_t code = *cp;
          if (code >= 0xD800 && code <= 0xDBFF && end - pos >= 6 &&
              text[pos] == '\\' && text[pos + 1] == 'u') {
            size_t save = pos;
            pos += 2;
            auto lo = hex4();
            if (!lo)
              return false;
            if (*lo >= 0xDC00 && *lo <= 0xDFFF)
              code = 0x10000 + ((code - 0xD800) << 10) + (*lo - 0xDC00);
            else
              pos = save; // the next escape stands on its own
          }
          if (code >= 0xD800 && code <= 0xDFFF)
            code = 0xFFFD; // a lone surrogate: the replacement character
          if (build)
            appendUtf8(out, code);
          continue;
        }
        default:
          return failAt(pos - 1,
                        llvm::Twine("expected one of \" \\ / b f n r t u "
                                    "after a backslash, found ") +
                            describe(pos - 1));
        }
        if (build)
          out += plain;
        continue;
      }
      size_t len = 1;
      if (static_cast<unsigned char>(c) >= 0x80 && !(len = utf8Length()))
        return fail("invalid UTF-8 in a string");
      if (escaped && build)
        out.append(text.data() + pos, len);
      pos += len;
    }
    size_t rawLen = pos - first;
    ++pos; // the closing quote
    if (!build)
      return true;
    if ((escaped ? out.size() : rawLen) > std::numeric_limits<uint32_t>::max())
      return failAt(at, "a string longer than 4294967295 bytes");
    auto n = addNode(Kind::String, at);
    if (!n)
      return false;
    Node &node = doc.nodes[*n];
    if (escaped) {
      node.inDecoded = true;
      node.data = doc.decoded.size();
      node.count = uint32_t(out.size());
      doc.decoded += out;
    } else {
      node.data = first;
      node.count = uint32_t(rawLen);
    }
    stack.push_back(*n);
    return true;
  }

  enum class Sep { More, Closed, Error };
  /// After a member or element: ',' (more follow) or `close` (the
  /// container opened at `at` ends).
  Sep separator(char close, size_t at, llvm::StringRef container,
                llvm::StringRef item) {
    skipSpace();
    if (peek() == ',') {
      ++pos;
      skipSpace();
      return Sep::More;
    }
    if (peek() == close) {
      ++pos;
      return Sep::Closed;
    }
    if (atEnd())
      failAt(at, "an " + container + " is not closed");
    else
      fail("expected ',' or '" + llvm::Twine(close) + "' after an " + item +
           ", found " + describe(pos));
    return Sep::Error;
  }

  /// Moves the top `count` entries of `stack` to `links`; the container
  /// node `n` points at them.
  void close(uint32_t n, size_t base) {
    Node &node = doc.nodes[n];
    node.data = doc.links.size();
    doc.links.insert(doc.links.end(), stack.begin() + base, stack.end());
    stack.resize(base);
  }

  llvm::StringRef keyText(uint32_t keyNode) const {
    const Node &k = doc.nodes[keyNode];
    return k.inDecoded ? llvm::StringRef(doc.decoded).substr(k.data, k.count)
                       : text.substr(k.data, k.count);
  }

  /// Refuses an object with a key twice (members: key, value pairs at
  /// stack[base...]).
  bool uniqueKeys(size_t base) {
    size_t m = (stack.size() - base) / 2;
    auto twice = [&](uint32_t later, llvm::StringRef key) {
      return failAt(doc.nodes[later].offset,
                    "the key \"" + key + "\" appears twice in one object");
    };
    if (m <= 16) { // the common case: no allocation
      for (size_t i = 1; i < m; ++i)
        for (size_t j = 0; j < i; ++j)
          if (keyText(stack[base + 2 * i]) == keyText(stack[base + 2 * j]))
            return twice(stack[base + 2 * i], keyText(stack[base + 2 * i]));
      return true;
    }
    std::vector<std::pair<llvm::StringRef, uint32_t>> keys;
    keys.reserve(m);
    for (size_t i = 0; i < m; ++i)
      keys.push_back({keyText(stack[base + 2 * i]), stack[base + 2 * i]});
    std::stable_sort(
        keys.begin(), keys.end(),
        [](const auto &a, const auto &b) { return a.first < b.first; });
    for (size_t i = 1; i < keys.size(); ++i)
      if (keys[i].first == keys[i - 1].first) {
        // Report the later of the two in the text.
        return twice(std::max(keys[i].second, keys[i - 1].second),
                     keys[i].first);
      }
    return true;
  }

  bool object(unsigned depth, bool build) {
    size_t at = pos++;
    std::optional<uint32_t> n;
    if (build && !(n = addNode(Kind::Object, at)))
      return false;
    size_t base = stack.size();
    skipSpace();
    if (peek() == '}') {
      ++pos;
    } else {
      while (true) {
        if (peek() != '"')
          return atEnd() ? failAt(at, "an object is not closed")
                         : fail(llvm::Twine("expected a string key, found ") +
                                describe(pos));
        if (!string(build))
          return false;
        skipSpace();
        if (peek() != ':')
          return atEnd() ? failAt(at, "an object is not closed")
                         : fail("expected ':' after an object key");
        ++pos;
        skipSpace();
        bool deferred = false;
        if (build && depth == 0 && peek() == '[' && !deferredKeys.empty())
          deferred = llvm::is_contained(deferredKeys, keyText(stack.back()));
        if (deferred ? !deferredArray(depth + 1, build)
                     : !value(depth + 1, build))
          return false;
        Sep sep = separator('}', at, "object", "object member");
        if (sep == Sep::Error)
          return false;
        if (sep == Sep::Closed)
          break;
      }
    }
    if (!build)
      return true;
    if (!uniqueKeys(base))
      return false;
    doc.nodes[*n].count = uint32_t((stack.size() - base) / 2);
    close(*n, base);
    stack.push_back(*n);
    return true;
  }

  /// The elements of an array at `pos`, each parsed by `element`.
  template <typename Fn> bool elements(size_t at, Fn element) {
    ++pos;
    skipSpace();
    if (peek() == ']') {
      ++pos;
      return true;
    }
    while (true) {
      if (atEnd())
        return failAt(at, "an array is not closed");
      if (!element())
        return false;
      Sep sep = separator(']', at, "array", "array element");
      if (sep != Sep::More)
        return sep == Sep::Closed;
    }
  }

  bool array(unsigned depth, bool build) {
    size_t at = pos;
    std::optional<uint32_t> n;
    if (build && !(n = addNode(Kind::Array, at)))
      return false;
    size_t base = stack.size();
    if (!elements(at, [&] { return value(depth + 1, build); }))
      return false;
    if (!build)
      return true;
    doc.nodes[*n].count = uint32_t(stack.size() - base);
    close(*n, base);
    stack.push_back(*n);
    return true;
  }

  /// An array checked but not built: a Deferred node with its elements'
  /// spans.
  bool deferredArray(unsigned depth, bool build) {
    size_t at = pos;
    size_t first = doc.spans.size();
    if (!elements(at, [&] {
          size_t b = pos;
          if (!value(depth + 1, /*build=*/false))
            return false;
          if (build)
            doc.spans.push_back({b, pos});
          return true;
        }))
      return false;
    if (!build)
      return true;
    auto n = addNode(Kind::Deferred, at);
    if (!n)
      return false;
    doc.nodes[*n].data = first;
    doc.nodes[*n].count = uint32_t(doc.spans.size() - first);
    stack.push_back(*n);
    return true;
  }
};

std::optional<JsonSyntaxError>
JsonDocument::parse(llvm::StringRef t, size_t begin, size_t end,
                    llvm::ArrayRef<llvm::StringRef> deferredKeys) {
  text = t;
  nodes.clear();
  links.clear();
  spans.clear();
  decoded.clear();
  end = std::min(end, t.size());
  begin = std::min(begin, end);
  JsonParser p(*this, t, begin, end, deferredKeys);
  // Containers are created before their children: node 0 is the root.
  return p.run();
}

//===-- values ------------------------------------------------------------===//

JsonValue::Kind JsonValue::kind() const { return doc->nodes[index].kind; }

size_t JsonValue::offset() const { return doc->nodes[index].offset; }

std::optional<double> JsonValue::asNumber() const {
  const JsonDocument::Node &n = doc->nodes[index];
  if (n.kind != Kind::Number)
    return std::nullopt;
  const char *b = doc->text.data() + n.offset, *e = b + n.count;
  double d = 0;
  auto [ptr, ec] = std::from_chars(b, e, d);
  if (ec == std::errc::result_out_of_range) {
    // Overflow or underflow, where from_chars leaves d unset: strtod gives
    // ±HUGE_VAL (inf) or the nearest subnormal or zero.
    std::string copy(b, n.count);
    return std::strtod(copy.c_str(), nullptr);
  }
  if (ec != std::errc() || ptr != e)
    return std::nullopt; // not reached: the parser checked the grammar
  return d;
}

std::optional<int64_t> JsonValue::asInteger() const {
  const JsonDocument::Node &n = doc->nodes[index];
  if (n.kind != Kind::Number)
    return std::nullopt;
  llvm::StringRef s(doc->text.data() + n.offset, n.count);
  if (s.find_first_of(".eE") == llvm::StringRef::npos) {
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(s.begin(), s.end(), v);
    if (ec == std::errc() && ptr == s.end())
      return v;
    return std::nullopt; // out of range
  }
  std::optional<double> d = asNumber();
  // [-2^63, 2^63): every double in it converts exactly.
  if (!d || *d != std::trunc(*d) || !(*d >= -9223372036854775808.0) ||
      !(*d < 9223372036854775808.0))
    return std::nullopt;
  return static_cast<int64_t>(*d);
}

std::optional<llvm::StringRef> JsonValue::asString() const {
  const JsonDocument::Node &n = doc->nodes[index];
  if (n.kind != Kind::String)
    return std::nullopt;
  if (n.inDecoded)
    return llvm::StringRef(doc->decoded).substr(n.data, n.count);
  return doc->text.substr(n.data, n.count);
}

std::optional<bool> JsonValue::asBool() const {
  const JsonDocument::Node &n = doc->nodes[index];
  if (n.kind != Kind::Bool)
    return std::nullopt;
  return n.data != 0;
}

size_t JsonValue::size() const {
  const JsonDocument::Node &n = doc->nodes[index];
  switch (n.kind) {
  case Kind::Array:
  case Kind::Object:
  case Kind::Deferred:
    return n.count;
  default:
    return 0;
  }
}

JsonValue JsonValue::element(size_t i) const {
  const JsonDocument::Node &n = doc->nodes[index];
  return JsonValue(doc, doc->links[n.data + i]);
}

llvm::StringRef JsonValue::keyAt(size_t i) const {
  const JsonDocument::Node &n = doc->nodes[index];
  return *JsonValue(doc, doc->links[n.data + 2 * i]).asString();
}

size_t JsonValue::keyOffsetAt(size_t i) const {
  const JsonDocument::Node &n = doc->nodes[index];
  return doc->nodes[doc->links[n.data + 2 * i]].offset;
}

JsonValue JsonValue::valueAt(size_t i) const {
  const JsonDocument::Node &n = doc->nodes[index];
  return JsonValue(doc, doc->links[n.data + 2 * i + 1]);
}

std::optional<JsonValue> JsonValue::get(llvm::StringRef key) const {
  if (kind() != Kind::Object)
    return std::nullopt;
  for (size_t i = 0, e = size(); i < e; ++i)
    if (keyAt(i) == key)
      return valueAt(i);
  return std::nullopt;
}

llvm::ArrayRef<JsonSpan> JsonValue::deferredElements() const {
  const JsonDocument::Node &n = doc->nodes[index];
  if (n.kind != Kind::Deferred)
    return {};
  return llvm::ArrayRef<JsonSpan>(doc->spans).slice(n.data, n.count);
}

std::pair<unsigned, unsigned> lineAndColumn(llvm::StringRef text,
                                            size_t offset) {
  offset = std::min(offset, text.size());
  llvm::StringRef before = text.take_front(offset);
  unsigned line = 1 + unsigned(before.count('\n'));
  size_t lineStart = before.rfind('\n');
  lineStart = lineStart == llvm::StringRef::npos ? 0 : lineStart + 1;
  return {line, unsigned(offset - lineStart) + 1};
}

} // namespace topocc
