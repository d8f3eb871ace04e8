//===- tests/unit/support/DiagnosticsTest.cpp -----------------------------===//

#include "support/Diagnostics.h"

#include "gtest/gtest.h"

using namespace topocc;

TEST(DiagnosticsTest, PrintsLocationSourceLineAndCaret) {
  Diagnostic d{Severity::Error, {"dgx.yaml", 3, 5}, "unknown key 'nmae'",
               "  - nmae: x"};
  std::string out;
  llvm::raw_string_ostream os(out);
  d.print(os);
  EXPECT_EQ(os.str(), "dgx.yaml:3:5: error: unknown key 'nmae'\n"
                      "  - nmae: x\n"
                      "    ^\n");
}

TEST(DiagnosticsTest, ListCollectsAllAndOnlyFailsOnErrors) {
  DiagnosticList list;
  list.warning({"a.yaml", 1, 1}, "w");
  EXPECT_FALSE(list.hasErrors());
  EXPECT_FALSE(static_cast<bool>(list.takeError()));
  list.error({"a.yaml", 2, 1}, "e1");
  list.error({"a.yaml", 3, 1}, "e2");
  llvm::Error err = list.takeError();
  ASSERT_TRUE(static_cast<bool>(err));
  std::string text = llvm::toString(std::move(err));
  EXPECT_NE(text.find("a.yaml:2:1: error: e1"), std::string::npos);
  EXPECT_NE(text.find("a.yaml:3:1: error: e2"), std::string::npos);
}

TEST(DiagnosticsTest, SourceLineOf) {
  EXPECT_EQ(sourceLineOf("a\nbc\r\nd", 2), "bc");
  EXPECT_EQ(sourceLineOf("a\nbc\nd", 3), "d");
  EXPECT_EQ(sourceLineOf("a", 4), "");
}

TEST(DiagnosticsTest, NearestMatchSuggestsTyposOnly) {
  llvm::StringRef keys[] = {"name", "schema", "links", "nodes"};
  EXPECT_EQ(nearestMatch("nmae", keys), "name");
  EXPECT_EQ(nearestMatch("link", keys), "links");
  EXPECT_EQ(nearestMatch("zzzzzzzz", keys), "");
}

TEST(DiagnosticsTest, LongLinesShowAWindowAroundTheCaret) {
  std::string line(5000, 'a');
  line[2500] = 'X';
  SourceExcerpt e = excerptAround(line, 2501, 40);
  // "..." + 40 bytes + "...", the caret under the X.
  EXPECT_EQ(e.text.size(), 46u);
  EXPECT_EQ(e.text.substr(0, 3), "...");
  EXPECT_EQ(e.text.substr(e.text.size() - 3), "...");
  ASSERT_LT(e.caretPad.size(), e.text.size());
  EXPECT_EQ(e.text[e.caretPad.size()], 'X');
  // Near the start: no leading "...".
  SourceExcerpt s = excerptAround(line, 3, 40);
  EXPECT_EQ(s.text, std::string(40, 'a') + "...");
  EXPECT_EQ(s.caretPad, "  ");
  // Near the end: no trailing "...".
  SourceExcerpt t = excerptAround(line, 5000, 40);
  EXPECT_EQ(t.text, "..." + std::string(40, 'a'));
  EXPECT_EQ(t.caretPad.size(), 3u + 39u);
  // Short lines are shown whole.
  EXPECT_EQ(excerptAround("abc", 2).text, "abc");
  EXPECT_EQ(excerptAround("abc", 2).caretPad, " ");
}

TEST(DiagnosticsTest, BinaryBytesAreEscaped) {
  std::string line = std::string("ab\0\x01", 4) + "\xFF\xFE" + "cd";
  SourceExcerpt e = excerptAround(line, 7);
  EXPECT_EQ(e.text, "ab\\x00\\x01\\xFF\\xFEcd");
  // The caret under 'c' counts the four escapes.
  EXPECT_EQ(e.caretPad, std::string(2 + 16, ' '));
  // Valid UTF-8 stays readable and counts one column a character.
  SourceExcerpt u = excerptAround("\xC2\xB5s x", 5);
  EXPECT_EQ(u.text, "\xC2\xB5s x");
  EXPECT_EQ(u.caretPad, "   ");
  // Tabs stay tabs.
  SourceExcerpt t = excerptAround("\tkey: 1", 2);
  EXPECT_EQ(t.text, "\tkey: 1");
  EXPECT_EQ(t.caretPad, "\t");
  // A printed diagnostic of a 5 MB line stays short.
  Diagnostic d{Severity::Error, {"big.yaml", 1, 4000000}, "bad", line + std::string(5000000, 'z')};
  std::string out;
  llvm::raw_string_ostream os(out);
  d.print(os);
  EXPECT_LT(os.str().size(), 400u);
}
