//===- tests/unit/support/JsonDocumentTest.cpp ----------------------------===//
//
// support/JsonDocument: the grammar of RFC 8259 (what it accepts and, with
// the offset and message, what it refuses), numbers as integers and
// doubles, strings with escapes and UTF-8, unique keys, the nesting limit,
// deferred arrays, and agreement with llvm::json on random documents
// (same values; nothing llvm::json refuses is accepted).
//
//===----------------------------------------------------------------------===//

#include "support/JsonDocument.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

using namespace topocc;

namespace {

/// "ok", or "OFFSET: message".
std::string verdict(llvm::StringRef text) {
  JsonDocument doc;
  if (auto e = doc.parse(text))
    return llvm::formatv("{0}: {1}", e->offset, e->message).str();
  return "ok";
}

TEST(JsonDocument, AcceptsTheGrammar) {
  for (const char *text :
       {"0", "-0", "1.5", "-12.5e+3", "1E-2", "1e400", "true", "false", "null",
        "\"\"", "\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\\u00e9\"", "[]", "{}",
        " \t\r\n[1, [2, [3]], {\"a\": {}}]\n", "{\"a\":1,\"b\":[]}",
        "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\""})
    EXPECT_EQ(verdict(text), "ok") << text;
}

TEST(JsonDocument, RefusesWithOffsetAndReason) {
  EXPECT_EQ(verdict(""), "0: expected a value, found the end of the text");
  EXPECT_EQ(verdict("  x"), "2: expected a value, found 'x'");
  EXPECT_EQ(verdict("01"), "1: a number cannot have a leading zero");
  EXPECT_EQ(verdict("-"), "1: expected a digit");
  EXPECT_EQ(verdict("+1"), "0: expected a value, found '+'");
  EXPECT_EQ(verdict("1."), "2: expected a digit after the decimal point");
  EXPECT_EQ(verdict(".5"), "0: expected a value, found '.'");
  EXPECT_EQ(verdict("1e"), "2: expected a digit in the exponent");
  EXPECT_EQ(verdict("tru"), "0: expected a value, found 't'");
  EXPECT_EQ(verdict("[1,]"), "3: expected a value, found ']'");
  EXPECT_EQ(verdict("[1 2]"),
            "3: expected ',' or ']' after an array element, found '2'");
  EXPECT_EQ(verdict("[1"), "0: an array is not closed");
  EXPECT_EQ(verdict("{\"a\" 1}"), "5: expected ':' after an object key");
  EXPECT_EQ(verdict("{\"a\":1,}"), "7: expected a string key, found '}'");
  EXPECT_EQ(verdict("{a:1}"), "1: expected a string key, found 'a'");
  EXPECT_EQ(verdict("{\"a\":1"), "0: an object is not closed");
  EXPECT_EQ(verdict("{\"a\":1 \"b\":2}"),
            "7: expected ',' or '}' after an object member, found '\"'");
  EXPECT_EQ(verdict("\"abc"), "0: a string is not closed");
  EXPECT_EQ(verdict("\"a\nb\""),
            "2: a control character in a string (write it as an escape, "
            "e.g. \\n)");
  EXPECT_EQ(verdict("\"\\x\""), "2: expected one of \" \\ / b f n r t u "
                                "after a backslash, found 'x'");
  EXPECT_EQ(verdict("\"\\u12g4\""), "5: expected four hex digits after \\u");
  EXPECT_EQ(verdict("\"\xff\""), "1: invalid UTF-8 in a string");
  EXPECT_EQ(verdict("\"\xc0\xaf\""),
            "1: invalid UTF-8 in a string"); // overlong
  EXPECT_EQ(verdict("\"\xed\xa0\x80\""),
            "1: invalid UTF-8 in a string"); // surrogate
  EXPECT_EQ(verdict("1 2"), "2: expected the end of the text after the JSON "
                            "value");
  EXPECT_EQ(verdict("\x01"), "0: expected a value, found byte 0x01");
}

TEST(JsonDocument, DuplicateKeysAreRefused) {
  EXPECT_EQ(verdict("{\"a\":1,\"b\":2,\"a\":3}"),
            "13: the key \"a\" appears twice in one object");
  // Escapes are decoded before keys are compared.
  EXPECT_EQ(verdict("{\"a\":1,\"\\u0061\":2}"),
            "7: the key \"a\" appears twice in one object");
  // Many members (sorted, not pairwise): still found, at the later one.
  std::string big = "{";
  for (int i = 0; i < 40; ++i)
    big += llvm::formatv("\"k{0}\":{0},", i).str();
  size_t at = big.size();
  big += "\"k7\":0}";
  EXPECT_EQ(verdict(big),
            llvm::formatv("{0}: the key \"k7\" appears twice in one object", at)
                .str());
}

TEST(JsonDocument, NestingIsBounded) {
  unsigned limit = JsonDocument::kMaxDepth;
  std::string ok = std::string(limit, '[') + std::string(limit, ']');
  EXPECT_EQ(verdict(ok), "ok");
  std::string deep = std::string(limit + 1, '[') + std::string(limit + 1, ']');
  EXPECT_EQ(verdict(deep),
            llvm::formatv("{0}: nesting deeper than {0} levels", limit).str());
  // Far deeper than the stack would allow without the limit.
  EXPECT_NE(verdict(std::string(1 << 20, '[')), "ok");
}

TEST(JsonDocument, Numbers) {
  JsonDocument doc;
  ASSERT_FALSE(doc.parse("[3, -0, 3.0, 3e0, 300e-2, 1.5, 9223372036854775807, "
                         "9223372036854775808, -9223372036854775808, 1e400, "
                         "-1e400, 1e-400, \"3\"]"));
  JsonValue a = doc.root();
  ASSERT_EQ(a.size(), 13u);
  EXPECT_EQ(a.element(0).asInteger(), 3);
  EXPECT_EQ(a.element(1).asInteger(), 0);
  EXPECT_EQ(a.element(2).asInteger(), 3);
  EXPECT_EQ(a.element(3).asInteger(), 3);
  EXPECT_EQ(a.element(4).asInteger(), 3);
  EXPECT_EQ(a.element(5).asInteger(), std::nullopt);
  EXPECT_EQ(a.element(5).asNumber(), 1.5);
  EXPECT_EQ(a.element(6).asInteger(), INT64_MAX);
  EXPECT_EQ(a.element(7).asInteger(), std::nullopt); // out of range
  EXPECT_EQ(a.element(7).asNumber(), 9223372036854775808.0);
  EXPECT_EQ(a.element(8).asInteger(), INT64_MIN);
  EXPECT_EQ(a.element(9).asNumber(), INFINITY);
  EXPECT_EQ(a.element(10).asNumber(), -INFINITY);
  EXPECT_EQ(a.element(11).asNumber(), 0.0);
  EXPECT_EQ(a.element(12).asInteger(), std::nullopt);
  EXPECT_EQ(a.element(12).asNumber(), std::nullopt);
  EXPECT_EQ(a.element(0).asString(), std::nullopt);
}

TEST(JsonDocument, StringsAndKeys) {
  JsonDocument doc;
  ASSERT_FALSE(
      doc.parse("{\"plain\": \"abc\", \"esc\": \"a\\tb\\u00e9\\ud83d\\ude00\", "
                "\"lone\": \"\\ud800x\", \"t\": true, \"n\": null}"));
  JsonValue o = doc.root();
  ASSERT_TRUE(o.isObject());
  EXPECT_EQ(o.size(), 5u);
  EXPECT_EQ(o.keyAt(1), "esc");
  EXPECT_EQ(o.keyOffsetAt(1), 17u);
  EXPECT_EQ(o.get("plain")->asString(), "abc");
  EXPECT_EQ(o.get("plain")->offset(), 10u);
  EXPECT_EQ(o.get("esc")->asString(), "a\tb\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(o.get("lone")->asString(), "\xef\xbf\xbdx"); // U+FFFD
  EXPECT_EQ(o.get("t")->asBool(), true);
  EXPECT_EQ(o.get("n")->kind(), JsonValue::Kind::Null);
  EXPECT_EQ(o.get("missing"), std::nullopt);
  EXPECT_EQ(o.get("t")->asString(), std::nullopt);
}

TEST(JsonDocument, DeferredArraysKeepTheirElementsSpans) {
  std::string text = "{\"a\": [1], \"programs\": [ {\"x\": [2]} ,\n\"s\", [] ],"
                     " \"b\": {\"programs\": [3]}}";
  JsonDocument doc;
  ASSERT_FALSE(doc.parse(text, {"programs"}));
  JsonValue root = doc.root();
  EXPECT_EQ(root.get("a")->kind(), JsonValue::Kind::Array);
  JsonValue p = *root.get("programs");
  ASSERT_EQ(p.kind(), JsonValue::Kind::Deferred);
  ASSERT_EQ(p.deferredElements().size(), 3u);
  EXPECT_EQ(p.size(), 3u);
  std::vector<std::string> parts;
  for (JsonSpan s : p.deferredElements())
    parts.push_back(text.substr(s.begin, s.end - s.begin));
  EXPECT_EQ(parts, (std::vector<std::string>{"{\"x\": [2]}", "\"s\"", "[]"}));
  // Only members of the top-level object are deferred.
  EXPECT_EQ(root.get("b")->get("programs")->kind(), JsonValue::Kind::Array);
  // An element parsed on its own keeps the file's offsets.
  JsonDocument element;
  JsonSpan s0 = p.deferredElements()[0];
  ASSERT_FALSE(element.parse(text, s0.begin, s0.end));
  EXPECT_EQ(element.root().get("x")->offset(), text.find("[2]"));
  // Syntax inside a deferred array is still checked.
  EXPECT_EQ(doc.parse("{\"programs\": [1, {]}", {"programs"})->offset, 18u);
  // A deferred key whose value is not an array is parsed as usual.
  ASSERT_FALSE(doc.parse("{\"programs\": 5}", {"programs"}));
  EXPECT_EQ(doc.root().get("programs")->asInteger(), 5);
}

TEST(JsonDocument, LineAndColumn) {
  llvm::StringRef text = "ab\ncd\r\nef";
  EXPECT_EQ(lineAndColumn(text, 0), std::make_pair(1u, 1u));
  EXPECT_EQ(lineAndColumn(text, 2), std::make_pair(1u, 3u));
  EXPECT_EQ(lineAndColumn(text, 3), std::make_pair(2u, 1u));
  EXPECT_EQ(lineAndColumn(text, 7), std::make_pair(3u, 1u));
  EXPECT_EQ(lineAndColumn(text, 100), std::make_pair(3u, 3u));
}

//===-- agreement with llvm::json -----------------------------------------===//

/// A random JSON value as text, with random spacing and number notations.
void randomValue(std::mt19937 &rng, unsigned depth, std::string &out) {
  auto space = [&] {
    static const char *ws[] = {"", "", " ", "\n", "\t", "\r\n  "};
    out += ws[rng() % 6];
  };
  auto str = [&] {
    static const char *pieces[] = {
        "a",        "key",          "\\\"",
        "\\\\",     "\\/",          "\\n",
        "\\u0041",  "\\u00e9",      "\\ud83d\\ude00",
        "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80",
        " ",        "[{,:}]",       "\\t"};
    out += '"';
    for (unsigned i = 0, n = rng() % 5; i < n; ++i)
      out += pieces[rng() % std::size(pieces)];
    out += '"';
  };
  unsigned pick = depth >= 5 ? rng() % 4 : rng() % 6;
  switch (pick) {
  case 0: {
    static const char *nums[] = {"0",
                                 "-0",
                                 "7",
                                 "-42",
                                 "3.25",
                                 "1e3",
                                 "1E-3",
                                 "2.5e+2",
                                 "123456789012",
                                 "9223372036854775807",
                                 "-9223372036854775808",
                                 "18446744073709551615",
                                 "1e308",
                                 "0.1"};
    out += nums[rng() % std::size(nums)];
    break;
  }
  case 1:
    str();
    break;
  case 2: {
    static const char *lits[] = {"true", "false", "null"};
    out += lits[rng() % 3];
    break;
  }
  case 3:
    out += llvm::formatv("{0}", int(rng() % 2000) - 1000).str();
    break;
  case 4: {
    out += '[';
    for (unsigned i = 0, n = rng() % 4; i < n; ++i) {
      out += i ? "," : "";
      space();
      randomValue(rng, depth + 1, out);
      space();
    }
    out += ']';
    break;
  }
  default: {
    out += '{';
    for (unsigned i = 0, n = rng() % 4; i < n; ++i) {
      out += i ? "," : "";
      space();
      out += llvm::formatv("\"m{0}\"", i).str();
      space();
      out += ':';
      space();
      randomValue(rng, depth + 1, out);
    }
    out += '}';
    break;
  }
  }
}

/// Whether `ours` holds what llvm::json parsed as `theirs`.
::testing::AssertionResult same(JsonValue ours,
                                const llvm::json::Value &theirs) {
  using K = JsonValue::Kind;
  switch (theirs.kind()) {
  case llvm::json::Value::Null:
    if (ours.kind() == K::Null)
      return ::testing::AssertionSuccess();
    break;
  case llvm::json::Value::Boolean:
    if (ours.asBool() == theirs.getAsBoolean().getValue())
      return ::testing::AssertionSuccess();
    break;
  case llvm::json::Value::Number: {
    auto i = theirs.getAsInteger();
    // LLVM 14's parser saturates integers outside int64_t (strtoll); the
    // text holds the true value, which we read as a double.
    if (i && (*i == INT64_MAX || *i == INT64_MIN)) {
      std::optional<double> d = ours.asNumber();
      if (d && std::fabs(*d) >= 9223372036854775807.0 && (*d < 0) == (*i < 0))
        return ::testing::AssertionSuccess();
      break;
    }
    std::optional<int64_t> mine = ours.asInteger();
    bool intsAgree = i ? (mine && *mine == *i) : true;
    if (ours.asNumber() == theirs.getAsNumber().getValue() && intsAgree)
      return ::testing::AssertionSuccess();
    break;
  }
  case llvm::json::Value::String:
    if (ours.asString() == theirs.getAsString().getValue())
      return ::testing::AssertionSuccess();
    break;
  case llvm::json::Value::Array: {
    const llvm::json::Array &a = *theirs.getAsArray();
    if (!ours.isArray() || ours.size() != a.size())
      break;
    for (size_t i = 0; i < a.size(); ++i)
      if (auto r = same(ours.element(i), a[i]); !r)
        return r;
    return ::testing::AssertionSuccess();
  }
  case llvm::json::Value::Object: {
    const llvm::json::Object &o = *theirs.getAsObject();
    if (!ours.isObject() || ours.size() != o.size())
      break;
    for (const auto &kv : o) {
      std::optional<JsonValue> v = ours.get(kv.first);
      if (!v)
        return ::testing::AssertionFailure() << "no key " << kv.first.str();
      if (auto r = same(*v, kv.second); !r)
        return r;
    }
    return ::testing::AssertionSuccess();
  }
  }
  std::string s;
  llvm::raw_string_ostream(s) << theirs;
  return ::testing::AssertionFailure()
         << "differs at offset " << ours.offset() << " from " << s;
}

TEST(JsonDocument, AgreesWithLlvmJsonOnRandomDocuments) {
  std::mt19937 rng(7);
  JsonDocument doc;
  for (int i = 0; i < 2000; ++i) {
    std::string text;
    randomValue(rng, 0, text);
    auto theirs = llvm::json::parse(text);
    ASSERT_TRUE(bool(theirs)) << text << "\n"
                              << llvm::toString(theirs.takeError());
    ASSERT_FALSE(doc.parse(text)) << text;
    EXPECT_TRUE(same(doc.root(), *theirs)) << text;
  }
}

TEST(JsonDocument, RefusesWhatLlvmJsonRefuses) {
  // Damaged random documents: whatever llvm::json refuses, so do we (we
  // also refuse what it lets through: duplicate keys, leading zeros, deep
  // nesting).
  std::mt19937 rng(11);
  static const char *tokens[] = {"\"", "\\", "{",    "}",    "[",
                                 "]",  ",",  ":",    "0",    "-",
                                 ".",  "e",  "\x01", "\xff", "\\u"};
  JsonDocument doc;
  int refused = 0;
  for (int i = 0; i < 4000; ++i) {
    std::string text;
    randomValue(rng, 0, text);
    for (unsigned e = 0, n = 1 + rng() % 2; e < n && !text.empty(); ++e) {
      size_t at = rng() % (text.size() + 1);
      if (rng() % 2)
        text.insert(at, tokens[rng() % std::size(tokens)]);
      else if (at < text.size())
        text.erase(at, 1 + rng() % 3);
    }
    auto theirs = llvm::json::parse(text);
    bool ours = !doc.parse(text);
    if (!theirs) {
      llvm::consumeError(theirs.takeError());
      EXPECT_FALSE(ours) << "accepted what llvm::json refuses: " << text;
      ++refused;
    } else if (ours) {
      EXPECT_TRUE(same(doc.root(), *theirs)) << text;
    }
  }
  EXPECT_GT(refused, 1000); // the damage is real
}

} // namespace
