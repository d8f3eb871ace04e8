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
