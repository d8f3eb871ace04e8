//===- tests/unit/backends/PlanSetJsonTest.cpp ----------------------------===//
//
// backends/PlanJson plan sets: checkPlanWindows accepts windows that tile a
// range (bounds inclusive, maxBytes 0 only last) and names the variants and
// bytes of an overlap or a gap; planSetToJson is deterministic, valid JSON
// and round-trips through parsePlanSetJson; a plan file of one schedule
// reads as one variant for every size; malformed sets are refused.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/RuntimeTestUtil.h"

#include "backends/PlanJson.h"
#include "ir/Printer.h"

#include "llvm/Support/FormatVariadic.h"

#include "llvm/Support/JSON.h"

using namespace topocc;
using namespace topocc::backends;
using namespace topocc::runtime::test;

namespace {

std::string errorText(llvm::Error err) {
  return err ? llvm::toString(std::move(err)) : std::string();
}

TEST(PlanSetJson, WindowsMustTileOneRange) {
  EXPECT_EQ(errorText(checkPlanWindows({{1, 4095}, {4096, 8191}, {8192, 0}})),
            "");
  EXPECT_EQ(errorText(checkPlanWindows({{1024, 1024}})), "");
  EXPECT_NE(errorText(checkPlanWindows({})).find("at least one variant"),
            std::string::npos);
  std::string overlap = errorText(checkPlanWindows({{1, 4096}, {4000, 0}}));
  EXPECT_NE(overlap.find("variants 0 [1, 4096] and 1 [4000, no limit] "
                         "overlap: a call of 4000 bytes would match both"),
            std::string::npos)
      << overlap;
  std::string unbounded = errorText(checkPlanWindows({{1, 0}, {4096, 0}}));
  EXPECT_NE(unbounded.find("overlap"), std::string::npos) << unbounded;
  std::string gap = errorText(checkPlanWindows({{1, 1023}, {2048, 4096}}));
  EXPECT_NE(gap.find("leave a gap: no variant serves calls of 1024 to 2047 "
                     "bytes"),
            std::string::npos)
      << gap;
  std::string empty = errorText(checkPlanWindows({{10, 5}}));
  EXPECT_NE(empty.find("variant 0: the window minBytes 10, maxBytes 5 is "
                       "empty"),
            std::string::npos)
      << empty;
}

TEST(PlanSetJson, RoundTripsAndReadsSingleSchedulePlans) {
  ir::Schedule a = compileRing(ir::Collective::AllGather, 4, 1, 1);
  ir::Schedule b = compileRing(ir::Collective::AllGather, 4, 2, 1);
  PlanMeta meta;
  meta.generator = "topocc test";
  meta.algorithm = "ring";
  auto text =
      planSetToJson({{64, 1023}, {1024, 65536}}, {&a, &b}, {meta, meta});
  ASSERT_TRUE(bool(text)) << llvm::toString(text.takeError());
  auto again =
      planSetToJson({{64, 1023}, {1024, 65536}}, {&a, &b}, {meta, meta});
  ASSERT_TRUE(bool(again));
  EXPECT_EQ(*text, *again);
  llvm::Expected<llvm::json::Value> dom = llvm::json::parse(*text);
  ASSERT_TRUE(bool(dom)) << llvm::toString(dom.takeError());
  EXPECT_EQ(*dom->getAsObject()->getString("format"), "topocc-plan-set");

  auto set = parsePlanSetJson(*text, "set.json");
  ASSERT_TRUE(bool(set)) << llvm::toString(set.takeError());
  EXPECT_TRUE(set->isSet);
  ASSERT_EQ(set->variants.size(), 2u);
  EXPECT_EQ(set->variants[0].window.minBytes, 64);
  EXPECT_EQ(set->variants[0].window.maxBytes, 1023);
  EXPECT_EQ(set->variants[1].window.minBytes, 1024);
  EXPECT_EQ(set->variants[1].window.maxBytes, 65536);
  EXPECT_EQ(ir::scheduleToString(set->variants[0].plan.schedule),
            ir::scheduleToString(a));
  EXPECT_EQ(ir::scheduleToString(set->variants[1].plan.schedule),
            ir::scheduleToString(b));

  auto single = planToJson(a, meta);
  ASSERT_TRUE(bool(single));
  auto one = parsePlanSetJson(*single, "one.json");
  ASSERT_TRUE(bool(one)) << llvm::toString(one.takeError());
  EXPECT_FALSE(one->isSet);
  ASSERT_EQ(one->variants.size(), 1u);
  EXPECT_TRUE(one->variants[0].window.contains(1));
  EXPECT_TRUE(one->variants[0].window.contains(int64_t(1) << 40));
  // A single plan does not take a window of its own.
  std::string windowed = *single;
  windowed.insert(2, "  \"minBytes\": 1,\n");
  EXPECT_NE(errorText(parsePlanJson(windowed, "w.json").takeError())
                .find("unknown field 'minBytes'"),
            std::string::npos);
}

TEST(PlanSetJson, RefusesMismatchedOrMalformedSets) {
  ir::Schedule ar = compileRing(ir::Collective::AllReduce, 4);
  ir::Schedule ag = compileRing(ir::Collective::AllGather, 4);
  PlanMeta meta;
  std::string mixed = errorText(
      planSetToJson({{1, 99}, {100, 0}}, {&ar, &ag}, {meta, meta}).takeError());
  EXPECT_NE(mixed.find("variant 1 is a allgather over 4 ranks"),
            std::string::npos)
      << mixed;
  EXPECT_NE(
      errorText(planSetToJson({{1, 99}, {50, 0}}, {&ar, &ar}, {meta, meta})
                    .takeError())
          .find("overlap"),
      std::string::npos);

  auto text = planSetToJson({{1, 99}, {100, 0}}, {&ar, &ar}, {meta, meta});
  ASSERT_TRUE(bool(text));
  // A variant without its window.
  std::string noWindow = *text;
  size_t at = noWindow.find("  \"minBytes\": 100,\n");
  ASSERT_NE(at, std::string::npos);
  noWindow.erase(at, std::string("  \"minBytes\": 100,\n").size());
  std::string missing =
      errorText(parsePlanSetJson(noWindow, "s.json").takeError());
  // Located at the variant's opening brace, on the set's own lines.
  size_t variant1 = noWindow.find("\n{", noWindow.find("\n{") + 1) + 1;
  unsigned line = 1 + unsigned(std::count(noWindow.begin(),
                                          noWindow.begin() + variant1, '\n'));
  EXPECT_EQ(missing.rfind(llvm::formatv("s.json:{0}:1: error: $.variants[1]: "
                                        "missing field 'minBytes'\n",
                                        line)
                              .str(),
                          0),
            0u)
      << missing;
  // The wrong format name.
  std::string format = *text;
  format.replace(format.find("topocc-plan-set"), 15, "topocc-plan");
  EXPECT_NE(errorText(parsePlanSetJson(format, "s.json").takeError())
                .find("expected \"topocc-plan-set\""),
            std::string::npos);
}

} // namespace
