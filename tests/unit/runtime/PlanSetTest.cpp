//===- tests/unit/runtime/PlanSetTest.cpp ---------------------------------===//
//
// Plan sets (compile --emit plan --sizes): Plan::select picks the variant
// whose window holds the call's message size in the nccl-tests convention
// (allreduce: the buffer; allgather: the whole output; reducescatter: the
// whole input), both bounds inclusive; Plan::run runs that variant and gets
// the collective's result on either side of a boundary; a set written by
// backends::planSetToJson loads with Plan::load, a plan file of one
// schedule still loads as before; sizes outside every window, overlapping
// or gapped windows and variants of different calls are errors.
//
//===----------------------------------------------------------------------===//

#include "RuntimeTestUtil.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace topocc;
using namespace topocc::runtime;
using namespace topocc::runtime::test;

namespace {

Plan planOf(ir::Schedule s) {
  auto p = Plan::fromSchedule(std::move(s));
  if (!p) {
    ADD_FAILURE() << llvm::toString(p.takeError());
    return {};
  }
  return std::move(*p);
}

/// Two ring plans of `c` over `ranks` ranks (1 and 2 channels: different
/// hashes) serving [1, split - 1] and [split, 0 = no limit] bytes.
llvm::Expected<Plan> twoWindows(ir::Collective c, int ranks, int64_t split) {
  std::vector<Plan> plans;
  plans.push_back(planOf(compileRing(c, ranks, 1, 1)));
  plans.push_back(planOf(compileRing(c, ranks, 1, 2)));
  return Plan::fromVariants({{1, split - 1}, {split, 0}}, std::move(plans));
}

uint64_t selectedHash(const Plan &set, size_t count, DType t) {
  auto v = set.select(count, t);
  if (!v) {
    ADD_FAILURE() << llvm::toString(v.takeError());
    return 0;
  }
  return (*v)->hash();
}

void expectError(llvm::Error err, llvm::StringRef part) {
  ASSERT_TRUE(bool(err)) << "expected an error containing: " << part.str();
  std::string text = llvm::toString(std::move(err));
  EXPECT_NE(text.find(part.str()), std::string::npos) << text;
}

TEST(PlanSet, SelectsByMessageSizeInclusiveBounds) {
  auto set = twoWindows(ir::Collective::AllReduce, 4, 4096);
  ASSERT_TRUE(bool(set)) << llvm::toString(set.takeError());
  ASSERT_EQ(set->variants().size(), 2u);
  const uint64_t small = set->variants()[0].plan->hash();
  const uint64_t large = set->variants()[1].plan->hash();
  ASSERT_NE(small, large);
  // Allreduce: count * sizeof(type). 1023 fp32 = 4092 B, 1024 = 4096 B.
  EXPECT_EQ(selectedHash(*set, 1, DType::F32), small);
  EXPECT_EQ(selectedHash(*set, 1023, DType::F32), small);
  EXPECT_EQ(selectedHash(*set, 1024, DType::F32), large);
  EXPECT_EQ(selectedHash(*set, 2047, DType::F16), small);    // 4094 B
  EXPECT_EQ(selectedHash(*set, 2048, DType::F16), large);    // 4096 B
  EXPECT_EQ(selectedHash(*set, 1 << 20, DType::F32), large); // no limit
  EXPECT_EQ(set->callBytes(1024, DType::F32), 4096);
}

TEST(PlanSet, AllGatherAndReduceScatterCountTheWholeBuffer) {
  for (ir::Collective c :
       {ir::Collective::AllGather, ir::Collective::ReduceScatter}) {
    SCOPED_TRACE(ir::collectiveName(c).str());
    // 4 ranks: a call of count fp32 elements per rank is 16 * count bytes.
    auto set = twoWindows(c, 4, 4096);
    ASSERT_TRUE(bool(set)) << llvm::toString(set.takeError());
    EXPECT_EQ(set->callBytes(256, DType::F32), 4096);
    EXPECT_EQ(selectedHash(*set, 255, DType::F32),
              set->variants()[0].plan->hash());
    EXPECT_EQ(selectedHash(*set, 256, DType::F32),
              set->variants()[1].plan->hash());
  }
}

TEST(PlanSet, RunsTheSelectedVariantCorrectly) {
  for (ir::Collective c : {ir::Collective::AllReduce, ir::Collective::AllGather,
                           ir::Collective::ReduceScatter}) {
    auto set = twoWindows(c, 3, 1200);
    ASSERT_TRUE(bool(set)) << llvm::toString(set.takeError());
    // Either side of the boundary (allreduce 1200 B = 300 fp32; allgather
    // and reducescatter 3 * 100 fp32), and counts no chunk count divides.
    for (size_t count : {size_t(7), size_t(99), size_t(100), size_t(301)}) {
      SCOPED_TRACE(
          llvm::formatv("{0} count {1}", ir::collectiveName(c), count).str());
      std::vector<std::vector<float>> out;
      std::vector<std::string> errors = runAll(*set, count, DType::F32, out);
      for (int r = 0; r < 3; ++r) {
        ASSERT_EQ(errors[r], "") << "rank " << r;
        EXPECT_EQ(out[r], reference(c, 3, r, count)) << "rank " << r;
      }
    }
  }
}

TEST(PlanSet, SizeOutsideEveryWindowIsAnError) {
  std::vector<Plan> plans;
  plans.push_back(planOf(compileRing(ir::Collective::AllReduce, 2)));
  auto set = Plan::fromVariants({{1024, 65536}}, std::move(plans));
  ASSERT_TRUE(bool(set)) << llvm::toString(set.takeError());
  auto below = set->select(255, DType::F32); // 1020 B
  ASSERT_FALSE(bool(below));
  expectError(below.takeError(), "no variant serves a call of 1020 bytes");
  auto above = set->select(16385, DType::F32);
  expectError(above.takeError(), "its windows cover 1024 to 65536 bytes");
  std::vector<std::vector<float>> out;
  std::vector<std::string> errors = runAll(*set, 255, DType::F32, out);
  for (const std::string &e : errors)
    EXPECT_NE(e.find("no variant serves"), std::string::npos) << e;
}

TEST(PlanSet, NearestServesEverySize) {
  std::vector<Plan> plans;
  plans.push_back(planOf(compileRing(ir::Collective::AllReduce, 2, 1, 1)));
  plans.push_back(planOf(compileRing(ir::Collective::AllReduce, 2, 1, 2)));
  auto set = Plan::fromVariants({{1024, 4095}, {4096, 65536}}, std::move(plans));
  ASSERT_TRUE(bool(set)) << llvm::toString(set.takeError());
  const uint64_t small = set->variants()[0].plan->hash();
  const uint64_t large = set->variants()[1].plan->hash();
  EXPECT_EQ(set->nearest(1, DType::F32).hash(), small);     // 4 B: below
  EXPECT_EQ(set->nearest(1023, DType::F32).hash(), small);  // inside
  EXPECT_EQ(set->nearest(1024, DType::F32).hash(), large);  // 4096 B
  EXPECT_EQ(set->nearest(16384, DType::F32).hash(), large); // 65536 B
  EXPECT_EQ(set->nearest(16385, DType::F32).hash(), large); // above
  // A plan of one schedule is its own nearest.
  Plan one = planOf(compileRing(ir::Collective::AllReduce, 2));
  EXPECT_EQ(&one.nearest(7, DType::F16), &one);
}

TEST(PlanSet, OverlapsGapsAndMismatchedVariantsAreErrors) {
  auto two = [](std::vector<backends::PlanWindow> w) {
    std::vector<Plan> plans;
    plans.push_back(planOf(compileRing(ir::Collective::AllReduce, 2, 1, 1)));
    plans.push_back(planOf(compileRing(ir::Collective::AllReduce, 2, 1, 2)));
    return Plan::fromVariants(std::move(w), std::move(plans)).takeError();
  };
  expectError(two({{1, 4096}, {4096, 8192}}),
              "variants 0 [1, 4096] and 1 [4096, 8192] overlap: a call of "
              "4096 bytes would match both");
  expectError(two({{1, 0}, {4096, 8192}}), "overlap");
  expectError(two({{1, 4095}, {8192, 0}}),
              "leave a gap: no variant serves calls of 4096 to 8191 bytes");
  expectError(two({{1, 4095}, {9000, 8192}}), "is empty");
  EXPECT_FALSE(bool(two({{1, 4095}, {4096, 0}})));

  std::vector<Plan> mixed;
  mixed.push_back(planOf(compileRing(ir::Collective::AllReduce, 2)));
  mixed.push_back(planOf(compileRing(ir::Collective::AllGather, 2)));
  expectError(
      Plan::fromVariants({{1, 4095}, {4096, 0}}, std::move(mixed)).takeError(),
      "is not the same call as variant 0");
}

TEST(PlanSet, LoadsSetsAndSingleSchedulePlans) {
  ir::Schedule a = compileRing(ir::Collective::AllReduce, 4, 1, 1);
  ir::Schedule b = compileRing(ir::Collective::AllReduce, 4, 1, 2);
  backends::PlanMeta meta;
  meta.algorithm = "ring";
  auto text = backends::planSetToJson({{1, 4095}, {4096, 1 << 20}}, {&a, &b},
                                      {meta, meta});
  ASSERT_TRUE(bool(text)) << llvm::toString(text.takeError());
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("planset", dir));
  auto write = [&](llvm::StringRef name, llvm::StringRef body) {
    std::string path = (dir + "/" + name).str();
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    EXPECT_FALSE(ec);
    os << body;
    return path;
  };
  auto set = Plan::load(write("set.json", *text));
  ASSERT_TRUE(bool(set)) << llvm::toString(set.takeError());
  // The same text from memory gives the same set; its errors carry the
  // name given.
  auto fromText = Plan::loadText(*text, "<memory>");
  ASSERT_TRUE(bool(fromText)) << llvm::toString(fromText.takeError());
  ASSERT_EQ(fromText->variants().size(), 2u);
  EXPECT_EQ(fromText->variants()[1].plan->hash(),
            set->variants()[1].plan->hash());
  expectError(Plan::loadText("{\"schema\": ", "<memory>").takeError(),
              "<memory>:1:");
  ASSERT_EQ(set->variants().size(), 2u);
  EXPECT_EQ(set->variants()[1].window.minBytes, 4096);
  EXPECT_EQ(set->variants()[1].window.maxBytes, 1 << 20);
  EXPECT_EQ(selectedHash(*set, 1023, DType::F32), backends::planContentHash(a));
  EXPECT_EQ(selectedHash(*set, 1024, DType::F32), backends::planContentHash(b));

  // A plan of one schedule (the format before plan sets) loads as before.
  auto single = backends::planToJson(a, meta);
  ASSERT_TRUE(bool(single)) << llvm::toString(single.takeError());
  auto one = Plan::load(write("one.json", *single));
  ASSERT_TRUE(bool(one)) << llvm::toString(one.takeError());
  EXPECT_TRUE(one->variants().empty());
  EXPECT_EQ(one->hash(), backends::planContentHash(a));
  EXPECT_EQ(selectedHash(*one, 1 << 30, DType::F32),
            backends::planContentHash(a));

  // A set whose windows were edited to overlap (or leave a gap) is refused.
  std::string overlap = *text;
  size_t at = overlap.find("\"minBytes\": 4096");
  ASSERT_NE(at, std::string::npos);
  overlap.replace(at, 16, "\"minBytes\": 4000");
  auto bad = Plan::load(write("overlap.json", overlap));
  expectError(bad.takeError(),
              "overlap: a call of 4000 bytes would match both");
  std::string gap = *text;
  gap.replace(at, 16, "\"minBytes\": 5000");
  expectError(Plan::load(write("gap.json", gap)).takeError(),
              "no variant serves calls of 4096 to 4999 bytes");
  llvm::sys::fs::remove_directories(dir);
}

} // namespace
