//===- tests/unit/support/JsonSpansTest.cpp -------------------------------===//
//
// support/JsonSpans: the spans of a top-level array's elements, through
// strings with brackets, quotes and escapes, nested values and any
// whitespace; nothing where one DOM parse must decide (not an object, the
// member missing, twice or not an array, something left open).
//
//===----------------------------------------------------------------------===//

#include "support/JsonSpans.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace topocc;

namespace {

/// The element texts, or {"(none)"}.
std::vector<std::string> elements(llvm::StringRef text,
                                  llvm::StringRef key = "a") {
  std::optional<JsonArraySpans> s = findTopLevelArray(text, key);
  if (!s)
    return {"(none)"};
  std::vector<std::string> out;
  for (auto [b, e] : s->elements)
    out.push_back(text.slice(b, e).str());
  return out;
}

using Strings = std::vector<std::string>;

TEST(JsonSpans, ElementsOfTheTopLevelArray) {
  EXPECT_EQ(elements(R"({"a": [1, 2.5e3, "x", null]})"),
            (Strings{"1", "2.5e3", "\"x\"", "null"}));
  EXPECT_EQ(elements(R"({"b": {"a": [9]}, "a": [{"a": [1]}, [2, [3]]], "c": 0})"),
            (Strings{"{\"a\": [1]}", "[2, [3]]"}));
  EXPECT_EQ(elements("{\"a\": []}"), Strings{});
  EXPECT_EQ(elements(" \r\n\t{ \"a\"\t:\r\n[ true ,false\n]\n}\n"),
            (Strings{"true", "false"}));
  // Strings hold brackets, braces, commas, escaped quotes and backslashes.
  EXPECT_EQ(elements(R"({"s": "] } [ { , \" \\", "a": ["[\"]", "\\", "{"]})"),
            (Strings{R"("[\"]")", R"("\\")", R"("{")"}));
  std::string text = R"({"x": 1, "a": [10, 20]})";
  std::optional<JsonArraySpans> s = findTopLevelArray(text, "a");
  ASSERT_TRUE(s);
  EXPECT_EQ(text.substr(s->begin, s->end - s->begin), "[10, 20]");
}

TEST(JsonSpans, NothingWhereTheWholeTextMustDecide) {
  EXPECT_EQ(elements("[1, 2]"), Strings{"(none)"});           // not an object
  EXPECT_EQ(elements(R"({"b": [1]})"), Strings{"(none)"});     // missing
  EXPECT_EQ(elements(R"({"a": 5})"), Strings{"(none)"});       // not an array
  EXPECT_EQ(elements(R"({"a": [], "a": [1]})"), Strings{"(none)"}); // twice
  EXPECT_EQ(elements(R"({"a": [1, 2})"), Strings{"(none)"});   // open array
  EXPECT_EQ(elements(R"({"a": ["x]})"), Strings{"(none)"});    // open string
  EXPECT_EQ(elements(R"({"a": [[1, 2]})"), Strings{"(none)"}); // unbalanced
  EXPECT_EQ(elements(R"({"a": [1 2]})"), Strings{"(none)"});   // no comma
  EXPECT_EQ(elements(R"({"a" [1]})"), Strings{"(none)"});      // no colon
  EXPECT_EQ(elements(R"({"s": "\"})"), Strings{"(none)"});     // escaped end
  EXPECT_EQ(elements(""), Strings{"(none)"});
}

} // namespace
