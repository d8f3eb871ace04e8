//===- tests/unit/runtime/CApiTest.cpp - runtime/topocc_c.h ---------------===//
//
// The C API: a plan file loaded and run on threads over local transports
// (every element checked, fp32 and fp16), what it says about the plan, and
// each error: a missing or truncated file (the loader's file:line:col
// text), NULL arguments, a rank outside the fabric, an unknown dtype, ranks
// that disagree on the count.
//
//===----------------------------------------------------------------------===//

#include "RuntimeTestUtil.h"

#include "backends/PlanJson.h"
#include "runtime/topocc_c.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <thread>
#include <vector>

using namespace topocc;
using namespace topocc::runtime::test;

namespace {

class CApi : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("capi", dir));
  }
  void TearDown() override { llvm::sys::fs::remove_directories(dir); }

  std::string write(llvm::StringRef name, llvm::StringRef body) {
    llvm::SmallString<128> path(dir);
    llvm::sys::path::append(path, name);
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    EXPECT_FALSE(ec);
    os << body;
    return std::string(path);
  }
  std::string ringPlan(ir::Collective c, int ranks, int chunks) {
    auto text = backends::planToJson(compileRing(c, ranks, chunks), {});
    EXPECT_TRUE(bool(text));
    return text ? *text : "";
  }

  llvm::SmallString<128> dir;
};

/// Runs `plan` on `n` threads with `count` (`countOf(rank)` when given);
/// returns each rank's status and error text, and the outputs.
struct Outcome {
  std::vector<topocc_status> status;
  std::vector<std::string> error;
  std::vector<std::vector<float>> out;
};
Outcome runOnThreads(const topocc_plan *plan, int n, size_t count,
                     topocc_dtype dtype, size_t oddCount = 0) {
  Outcome o{std::vector<topocc_status>(n, TOPOCC_OK),
            std::vector<std::string>(n), std::vector<std::vector<float>>(n)};
  topocc_local_fabric *fabric = nullptr;
  EXPECT_EQ(topocc_local_fabric_create(n, &fabric), TOPOCC_OK);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      size_t c = oddCount && r == n - 1 ? oddCount : count;
      topocc_transport *tr = nullptr;
      ASSERT_EQ(topocc_local_transport_create(fabric, r, &tr), TOPOCC_OK);
      size_t esz = dtype == TOPOCC_FP32 ? 4 : 2;
      std::vector<char> in(topocc_plan_input_elements(plan, c) * esz),
          out(topocc_plan_output_elements(plan, c) * esz);
      for (size_t i = 0; i * esz < in.size(); ++i)
        runtime::storeElement(in.data(), i, runtime::DType(int(dtype)),
                              float(r + 1));
      topocc_run_options opts;
      topocc_run_options_init(&opts);
      opts.timeout_seconds = 10;
      o.status[r] = topocc_plan_run(plan, in.data(), out.data(), c, dtype, tr,
                                    &opts);
      if (o.status[r] != TOPOCC_OK)
        o.error[r] = topocc_last_error();
      for (size_t i = 0; i * esz < out.size(); ++i)
        o.out[r].push_back(
            runtime::loadElement(out.data(), i, runtime::DType(int(dtype))));
      topocc_transport_free(tr);
    });
  for (std::thread &t : threads)
    t.join();
  topocc_local_fabric_free(fabric);
  return o;
}

TEST_F(CApi, LoadsDescribesAndRunsAPlan) {
  std::string path = write("ar.json", ringPlan(ir::Collective::AllReduce, 4, 2));
  topocc_plan *plan = nullptr;
  ASSERT_EQ(topocc_plan_load(path.c_str(), &plan), TOPOCC_OK)
      << topocc_last_error();
  EXPECT_STREQ(topocc_plan_name(plan), "ring4_allreduce_c1_k2_outofplace");
  EXPECT_EQ(topocc_plan_ranks(plan), 4);
  EXPECT_EQ(topocc_plan_collective(plan), TOPOCC_ALLREDUCE);
  EXPECT_EQ(topocc_plan_inplace(plan), 0);
  EXPECT_EQ(topocc_plan_input_elements(plan, 1001), 1001u);
  for (topocc_dtype t : {TOPOCC_FP32, TOPOCC_FP16}) {
    Outcome o = runOnThreads(plan, 4, 1001, t);
    for (int r = 0; r < 4; ++r) {
      ASSERT_EQ(o.status[r], TOPOCC_OK) << o.error[r];
      ASSERT_EQ(o.out[r].size(), 1001u);
      for (float v : o.out[r])
        ASSERT_EQ(v, 10.0f); // 1 + 2 + 3 + 4
    }
  }
  topocc_plan_free(plan);

  std::string ag = write("ag.json", ringPlan(ir::Collective::AllGather, 3, 1));
  ASSERT_EQ(topocc_plan_load(ag.c_str(), &plan), TOPOCC_OK);
  EXPECT_EQ(topocc_plan_collective(plan), TOPOCC_ALLGATHER);
  EXPECT_EQ(topocc_plan_input_elements(plan, 7), 7u);
  EXPECT_EQ(topocc_plan_output_elements(plan, 7), 21u);
  Outcome o = runOnThreads(plan, 3, 7, TOPOCC_FP32);
  for (int r = 0; r < 3; ++r) {
    ASSERT_EQ(o.status[r], TOPOCC_OK) << o.error[r];
    for (size_t i = 0; i < 21; ++i)
      ASSERT_EQ(o.out[r][i], float(i / 7 + 1));
  }
  topocc_plan_free(plan);
}

TEST_F(CApi, ErrorsComeBackAsText) {
  topocc_plan *plan = reinterpret_cast<topocc_plan *>(1);
  std::string missing = dir.str().str() + "/none.json";
  EXPECT_EQ(topocc_plan_load(missing.c_str(), &plan), TOPOCC_ERROR);
  EXPECT_EQ(plan, nullptr);
  EXPECT_NE(std::string(topocc_last_error()).find("none.json"),
            std::string::npos)
      << topocc_last_error();

  std::string text = ringPlan(ir::Collective::AllReduce, 2, 1);
  std::string cut = write("cut.json", text.substr(0, text.size() / 2));
  EXPECT_EQ(topocc_plan_load(cut.c_str(), &plan), TOPOCC_ERROR);
  EXPECT_EQ(std::string(topocc_last_error()).rfind(cut + ":", 0), 0u)
      << topocc_last_error();

  EXPECT_EQ(topocc_plan_load(nullptr, &plan), TOPOCC_ERROR);
  EXPECT_STREQ(topocc_last_error(), "topocc_plan_load: path is NULL");

  topocc_local_fabric *fabric = nullptr;
  EXPECT_EQ(topocc_local_fabric_create(0, &fabric), TOPOCC_ERROR);
  EXPECT_STREQ(topocc_last_error(),
               "topocc_local_fabric_create: ranks must be 1 to 4096, got 0");
  ASSERT_EQ(topocc_local_fabric_create(2, &fabric), TOPOCC_OK);
  topocc_transport *tr = nullptr;
  EXPECT_EQ(topocc_local_transport_create(fabric, 2, &tr), TOPOCC_ERROR);
  EXPECT_STREQ(topocc_last_error(),
               "topocc_local_transport_create: rank 2 is not in 0 to 1");
  ASSERT_EQ(topocc_local_transport_create(fabric, 0, &tr), TOPOCC_OK);

  std::string good = write("good.json", text);
  ASSERT_EQ(topocc_plan_load(good.c_str(), &plan), TOPOCC_OK);
  float buf[4] = {};
  EXPECT_EQ(topocc_plan_run(plan, buf, buf, 4, topocc_dtype(7), tr, nullptr),
            TOPOCC_ERROR);
  EXPECT_STREQ(topocc_last_error(),
               "topocc_plan_run: unknown dtype 7 (TOPOCC_FP32, TOPOCC_FP16 or "
               "TOPOCC_BF16)");
  EXPECT_EQ(topocc_plan_run(plan, buf, buf, 4, TOPOCC_FP32, nullptr, nullptr),
            TOPOCC_ERROR);
  topocc_transport_free(tr);
  topocc_local_fabric_free(fabric);

  // Ranks that disagree: every rank gets the runtime's table.
  Outcome o = runOnThreads(plan, 2, 100, TOPOCC_FP32, /*oddCount=*/101);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(o.status[r], TOPOCC_ERROR);
    EXPECT_EQ(o.error[r].rfind("error: ranks disagree on the plan or the "
                               "count",
                               0),
              0u)
        << o.error[r];
  }
  topocc_plan_free(plan);
  topocc_plan_free(nullptr); // accepted
  topocc_transport_free(nullptr);
  topocc_local_fabric_free(nullptr);
}

TEST_F(CApi, OptionsDefaultToTheCppOnes) {
  topocc_run_options o;
  topocc_run_options_init(&o);
  runtime::RunOptions cpp;
  EXPECT_EQ(o.check_peers, cpp.checkPeers ? 1 : 0);
  EXPECT_EQ(o.timeout_seconds, cpp.timeoutSeconds);
}

} // namespace
