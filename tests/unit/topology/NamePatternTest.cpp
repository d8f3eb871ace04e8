//===- tests/unit/topology/NamePatternTest.cpp - Captures and hostlists ---===//

#include "compiler/topology/NamePattern.h"

#include "gtest/gtest.h"

using namespace topocc::topo;

namespace {
/// Expands one name pattern; "error: ..." on failure.
std::vector<std::string> expand(llvm::StringRef text) {
  Pattern p;
  PatternError err;
  if (!parsePattern(text, p, err))
    return {"error: " + err.message};
  Binding b;
  const Pattern *pp = &p;
  llvm::StringRef role = "name";
  if (!bindPatterns(llvm::ArrayRef<const Pattern *>(pp),
                    llvm::ArrayRef<llvm::StringRef>(role), b, err))
    return {"error: " + err.message};
  std::vector<std::string> out;
  b.forEach([&](llvm::ArrayRef<uint64_t> idx) {
    std::string s;
    if (!instantiate(p, b, idx, s, err)) {
      out.push_back("error: " + err.message);
      return false;
    }
    out.push_back(s);
    return true;
  });
  return out;
}

/// Expands a link's two ends into "from>to" strings.
std::vector<std::string> expandLink(llvm::StringRef from, llvm::StringRef to) {
  Pattern f, t;
  PatternError err;
  if (!parsePattern(from, f, err) || !parsePattern(to, t, err))
    return {"error: " + err.message};
  Binding b;
  const Pattern *pats[] = {&f, &t};
  const llvm::StringRef roles[] = {"from", "to"};
  if (!bindPatterns(pats, roles, b, err))
    return {"error: " + err.message};
  std::vector<std::string> out;
  b.forEach([&](llvm::ArrayRef<uint64_t> idx) {
    std::string a, c;
    if (!instantiate(f, b, idx, a, err) || !instantiate(t, b, idx, c, err)) {
      out.push_back("error: " + err.message);
      return false;
    }
    out.push_back(a + ">" + c);
    return true;
  });
  return out;
}

using V = std::vector<std::string>;
} // namespace

TEST(NamePatternTest, RangesAndZeroPadding) {
  EXPECT_EQ(expand("gpu{g:0-3}"), (V{"gpu0", "gpu1", "gpu2", "gpu3"}));
  EXPECT_EQ(expand("dgx{n:00-02}"), (V{"dgx00", "dgx01", "dgx02"}));
  EXPECT_EQ(expand("n{n:08-11}"), (V{"n08", "n09", "n10", "n11"}));
  EXPECT_EQ(expand("plain"), (V{"plain"}));
  EXPECT_EQ(expand("x{a:0,2,5-6}"), (V{"x0", "x2", "x5", "x6"}));
}

TEST(NamePatternTest, SlurmHostlists) {
  EXPECT_EQ(expand("dgx[00-02]"), (V{"dgx00", "dgx01", "dgx02"}));
  EXPECT_EQ(expand("n[1,3-4]"), (V{"n1", "n3", "n4"}));
  // Two hostlists form a product, leftmost outermost.
  EXPECT_EQ(expand("r[0-1]n[0-1]"), (V{"r0n0", "r0n1", "r1n0", "r1n1"}));
}

TEST(NamePatternTest, SameVariablePairsDistinctVariablesMultiply) {
  EXPECT_EQ(expandLink("gpu{g:0-2}", "nic{g:0-2}"),
            (V{"gpu0>nic0", "gpu1>nic1", "gpu2>nic2"}));
  EXPECT_EQ(expandLink("gpu{g:0-1}", "nvs{s:0-1}"),
            (V{"gpu0>nvs0", "gpu0>nvs1", "gpu1>nvs0", "gpu1>nvs1"}));
  // Paired captures with different ranges pair by position.
  EXPECT_EQ(expandLink("a{g:0-1}", "b{g:4-5}"), (V{"a0>b4", "a1>b5"}));
  EXPECT_EQ(expandLink("dgx{n:00-01}/mlx5_{r:0-1}", "leaf{r}"),
            (V{"dgx00/mlx5_0>leaf0", "dgx00/mlx5_1>leaf1",
               "dgx01/mlx5_0>leaf0", "dgx01/mlx5_1>leaf1"}));
}

TEST(NamePatternTest, Expressions) {
  EXPECT_EQ(expandLink("gpu{g:0-3}", "plx{g/2}"),
            (V{"gpu0>plx0", "gpu1>plx0", "gpu2>plx1", "gpu3>plx1"}));
  EXPECT_EQ(expandLink("nic{r:0-3}", "sw{r%2}"),
            (V{"nic0>sw0", "nic1>sw1", "nic2>sw0", "nic3>sw1"}));
  EXPECT_EQ(expandLink("gpu{g:0-2}", "gpu{g+1}"),
            (V{"gpu0>gpu1", "gpu1>gpu2", "gpu2>gpu3"}));
  EXPECT_EQ(expandLink("a{g:1-2}", "b{g-1}"), (V{"a1>b0", "a2>b1"}));
  EXPECT_EQ(expandLink("a{g:0-1}", "b{g*4}"), (V{"a0>b0", "a1>b4"}));
  // Padding of the capture carries over to expressions.
  EXPECT_EQ(expandLink("n{n:08-09}", "m{n+1}"), (V{"n08>m09", "n09>m10"}));
}

TEST(NamePatternTest, Errors) {
  EXPECT_EQ(expand("gpu{g:7-0}"),
            (V{"error: malformed capture '{g:7-0}': range 7-0 is empty (end "
               "before start)"}));
  EXPECT_EQ(expand("gpu{g:0-7"),
            (V{"error: unterminated '{' in name 'gpu{g:0-7'; expected '}'"}));
  EXPECT_EQ(expand("gpu{:0-7}"),
            (V{"error: malformed capture '{:0-7}': expected '{name:lo-hi}' "
               "or a reference like '{name}'"}));
  EXPECT_EQ(expand("gpu{g:a-b}"),
            (V{"error: malformed capture '{g:a-b}': expected a range 'lo-hi' "
               "of non-negative integers"}));
  EXPECT_EQ(expand("gpu{g^2}"),
            (V{"error: malformed expression '{g^2}': expected '{g}', "
               "'{g/2}', '{g%4}', '{g+1}', '{g-1}' or '{g*2}'"}));
  EXPECT_EQ(expand("gpu{g/0}"), (V{"error: division by zero in '{g/0}'"}));
  EXPECT_EQ(expand("gpu{h}"),
            (V{"error: unknown variable 'h' in '{h}'; no variable is "
               "captured here"}));
  EXPECT_EQ(expand("dgx[00-]"),
            (V{"error: malformed hostlist '[00-]': expected a range 'lo-hi' "
               "of non-negative integers; expected '[lo-hi]' or "
               "'[a,b,lo-hi]'"}));
  EXPECT_EQ(expand("gpu}"), (V{"error: unmatched '}' in name 'gpu}'"}));
  EXPECT_EQ(expandLink("gpu{g:0-7}", "nic{g:0-3}"),
            (V{"error: capture variable 'g' has 8 values in 'from' but 4 "
               "values in 'to'; paired ends must have equal length"}));
  EXPECT_EQ(expandLink("gpu{g:0-1}", "nic{g-1}"),
            (V{"error: expression '{g-1}' is negative (-1) for g=0"}));
}

TEST(NamePatternTest, CountingNeverExpands) {
  Pattern p;
  PatternError err;
  ASSERT_TRUE(parsePattern("a{x:0-999999999}b{y:0-999999999}c{z:0-999999}",
                           p, err));
  Binding b;
  const Pattern *pp = &p;
  llvm::StringRef role = "name";
  ASSERT_TRUE(bindPatterns(llvm::ArrayRef<const Pattern *>(pp),
                           llvm::ArrayRef<llvm::StringRef>(role), b, err));
  EXPECT_EQ(b.count(), kCountSaturation);
  EXPECT_EQ(expand("a{x:0-9999999999}"),
            (V{"error: malformed capture '{x:0-9999999999}': number has more "
               "than 9 digits"}));
}
