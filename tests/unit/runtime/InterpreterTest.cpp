//===- tests/unit/runtime/InterpreterTest.cpp -----------------------------===//
//
// The interpreter runs compiled ring plans on threads over LocalTransport:
// every collective, in-place and out-of-place, 2 to 8 ranks, several chunk
// and channel counts, counts that do not divide by the chunk count, three
// dtypes, shuffled completion orders; coded (CERAR) plans at counts that
// need zero-padded runs; and its errors (rank disagreement,
// wrong job size, in-place pointer rule, timeout naming pending messages,
// a rank that never joins the header exchange).
//
//===----------------------------------------------------------------------===//

#include "RuntimeTestUtil.h"

#include "backends/PlanJson.h"
#include "compiler/topology/Topology.h"

#include "llvm/Support/FormatVariadic.h"

#include <cstring>
#include <functional>

using namespace topocc;
using namespace topocc::runtime;
using namespace topocc::runtime::test;

namespace {

struct Case {
  ir::Collective coll;
  int ranks, chunks, channels;
  bool inplace;
};

std::string name(const Case &c) {
  return llvm::formatv("{0} ranks={1} chunks={2} channels={3} {4}",
                       ir::collectiveName(c.coll), c.ranks, c.chunks,
                       c.channels, c.inplace ? "inplace" : "outofplace");
}

void checkCase(const Case &c, size_t count, DType t, uint64_t seed) {
  SCOPED_TRACE(name(c) + llvm::formatv(" count={0} {1} seed={2}", count,
                                       dtypeName(t), seed)
                             .str());
  auto plan = Plan::fromSchedule(
      compileRing(c.coll, c.ranks, c.chunks, c.channels, c.inplace));
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  std::vector<std::vector<float>> out;
  std::vector<std::string> errors = runAll(*plan, count, t, out, seed);
  for (int r = 0; r < c.ranks; ++r) {
    ASSERT_EQ(errors[r], "") << "rank " << r;
    std::vector<float> want = reference(c.coll, c.ranks, r, count);
    ASSERT_EQ(out[r].size(), want.size()) << "rank " << r;
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_EQ(out[r][i], want[i]) << "rank " << r << " element " << i;
  }
}

TEST(Interpreter, RingPlansAllCollectivesAndModes) {
  for (ir::Collective coll :
       {ir::Collective::AllReduce, ir::Collective::AllGather,
        ir::Collective::ReduceScatter})
    for (int ranks : {2, 3, 4, 8})
      for (bool inplace : {false, true})
        for (auto [chunks, channels] : {std::pair{1, 1}, std::pair{2, 2}})
          // 1001 = 7*11*13: no chunk count here divides it.
          for (size_t count : {size_t(1), size_t(5), size_t(1001)})
            checkCase({coll, ranks, chunks, channels, inplace}, count,
                      DType::F32, /*seed=*/0);
}

TEST(Interpreter, ShuffledCompletionOrders) {
  for (uint64_t seed = 1; seed <= 8; ++seed)
    checkCase({ir::Collective::AllReduce, 4, 2, 2, false}, 333, DType::F32,
              seed);
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    checkCase({ir::Collective::AllGather, 3, 1, 2, true}, 17, DType::F32,
              seed);
    checkCase({ir::Collective::ReduceScatter, 5, 2, 1, false}, 19,
              DType::F32, seed);
  }
}

TEST(Interpreter, HalfAndBfloat16) {
  for (DType t : {DType::F16, DType::BF16})
    for (ir::Collective coll :
         {ir::Collective::AllReduce, ir::Collective::AllGather,
          ir::Collective::ReduceScatter})
      checkCase({coll, 4, 2, 1, false}, 101, t, /*seed=*/3);
}

TEST(Interpreter, CountZeroAndCountBelowChunks) {
  // 8 ranks x 2 chunks = 16 chunks per loop: counts 0 and 3 leave most
  // chunks empty; messages of 0 bytes still pair up.
  checkCase({ir::Collective::AllReduce, 8, 2, 1, false}, 0, DType::F32, 0);
  checkCase({ir::Collective::AllReduce, 8, 2, 1, false}, 3, DType::F32, 0);
  checkCase({ir::Collective::ReduceScatter, 4, 2, 1, true}, 1, DType::F32, 0);
}

TEST(Interpreter, BalancedChunkLayout) {
  BufferLayout l;
  l.count = 10;
  l.chunksPerBlock = 4; // sizes 2, 3, 2, 3
  l.outputBlocks = 2;
  std::vector<size_t> offsets;
  for (int c = 0; c <= 8; ++c)
    offsets.push_back(l.chunkOffset(c));
  EXPECT_EQ(offsets, (std::vector<size_t>{0, 2, 5, 7, 10, 12, 15, 17, 20}));
  EXPECT_EQ(l.outputElements(), 20u);
}

/// A CERAR plan (exact code, c = 4 components) on the 4-rank test ring.
Plan cerarPlan(bool inplace) {
  auto t = topo::loadTopologyFile(TOPOCC_SOURCE_DIR
                                  "/tests/mpi/Inputs/ring4.yaml");
  if (!t) {
    ADD_FAILURE() << llvm::toString(t.takeError());
    return {};
  }
  CompileRequest req;
  req.collective = ir::Collective::AllReduce;
  req.algorithm = Algorithm::Cerar;
  req.components = 4;
  req.inplace = inplace;
  PassLogger log;
  auto compiled = compile(*t, req, log);
  if (!compiled) {
    ADD_FAILURE() << llvm::toString(compiled.takeError());
    return {};
  }
  auto plan = Plan::fromSchedule(std::move(compiled->schedule));
  if (!plan) {
    ADD_FAILURE() << llvm::toString(plan.takeError());
    return {};
  }
  return std::move(*plan);
}

TEST(Interpreter, PaddedRunForUnequalChunks) {
  // A coded plan combines its 4 chunks element by element, so a count that
  // is not a multiple of 4 runs on zero-padded copies; the results must be
  // the all-reduce of the user's elements, and nothing past `count` in the
  // user's buffer may change (runAll's buffers hold both views).
  for (bool inplace : {false, true}) {
    Plan plan = cerarPlan(inplace);
    ASSERT_EQ(plan.schedule().chunksPerLoop, 4);
    for (size_t count : {size_t(1), size_t(7), size_t(1001), size_t(1004)}) {
      SCOPED_TRACE(llvm::formatv("count {0} {1}", count,
                                 inplace ? "in-place" : "out-of-place")
                       .str());
      std::vector<std::vector<float>> out;
      std::vector<std::string> errors =
          runAll(plan, count, DType::F32, out);
      for (int r = 0; r < 4; ++r) {
        ASSERT_EQ(errors[r], "") << "rank " << r;
        std::vector<float> want =
            reference(ir::Collective::AllReduce, 4, r, count);
        ASSERT_EQ(out[r].size(), want.size());
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_NEAR(out[r][i], want[i], 1e-4) << "rank " << r << " " << i;
      }
    }
  }
}

std::vector<std::string> runWithCounts(const Plan &a, const Plan &b,
                                       std::vector<size_t> counts) {
  int n = a.schedule().numRanks;
  LocalFabric fabric(n);
  std::vector<std::string> errors(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      std::vector<float> send(counts[r] * n + 8), recv(counts[r] * n + 8);
      LocalTransport tr(fabric, r);
      const Plan &p = r == n - 1 ? b : a;
      if (auto err = p.run(send.data(), recv.data(), counts[r], DType::F32,
                           tr))
        errors[r] = llvm::toString(std::move(err));
    });
  for (std::thread &th : threads)
    th.join();
  return errors;
}

TEST(Interpreter, RanksThatDisagreeOnTheCountFailAlike) {
  auto plan = Plan::fromSchedule(compileRing(ir::Collective::AllReduce, 3));
  ASSERT_TRUE(bool(plan));
  std::vector<std::string> errors =
      runWithCounts(*plan, *plan, {1000, 1000, 999});
  std::string p = "plan 'ring3_allreduce_c1_k1_outofplace' " +
                  backends::formatHash(plan->hash()) +
                  " for 3 ranks (out-of-place), count ";
  std::string want =
      "error: ranks disagree on the plan or the count (every rank must load "
      "the same plan and pass the same count and dtype):\n"
      "  rank 0: " + p + "1000, fp32\n"
      "  rank 1: " + p + "1000, fp32\n"
      "  rank 2: " + p + "999, fp32  <- differs from rank 0 in count\n";
  for (const std::string &e : errors)
    EXPECT_EQ(e, want);
}

TEST(Interpreter, RanksThatLoadedDifferentPlansFailAlike) {
  auto a = Plan::fromSchedule(compileRing(ir::Collective::AllReduce, 3));
  auto b = Plan::fromSchedule(compileRing(ir::Collective::AllReduce, 3, 2));
  ASSERT_TRUE(a && b);
  std::vector<std::string> errors = runWithCounts(*a, *b, {64, 64, 64});
  for (const std::string &e : errors) {
    EXPECT_NE(e.find("<- differs from rank 0 in plan"), std::string::npos)
        << e;
    EXPECT_EQ(e, errors[0]);
  }
}

TEST(Interpreter, JobSizeMustMatchThePlan) {
  auto plan = Plan::fromSchedule(compileRing(ir::Collective::AllReduce, 4));
  ASSERT_TRUE(bool(plan));
  LocalFabric fabric(1);
  LocalTransport tr(fabric, 0);
  std::vector<float> buf(16);
  llvm::Error err = plan->run(buf.data(), buf.data() + 8, 8, DType::F32, tr);
  EXPECT_EQ(llvm::toString(std::move(err)),
            "error: plan 'ring4_allreduce_c1_k1_outofplace' is for 4 ranks "
            "but the job has 1\n");
}

TEST(Interpreter, InPlacePlansCheckTheAliasing) {
  auto plan = Plan::fromSchedule(
      compileRing(ir::Collective::AllGather, 2, 1, 1, /*inplace=*/true));
  ASSERT_TRUE(bool(plan));
  LocalFabric fabric(2);
  LocalTransport tr(fabric, 1);
  std::vector<float> buf(64);
  RunOptions opts;
  opts.checkPeers = false;
  llvm::Error err =
      plan->run(buf.data(), buf.data(), 8, DType::F32, tr, opts);
  EXPECT_EQ(llvm::toString(std::move(err)),
            "error: plan 'ring2_allgather_c1_k1_inplace' is in-place: it needs "
            "sendbuf == recvbuf + rank*count (elements)\n");
}

/// Runs a 3-rank ring all-reduce of 30 elements on ranks 0 and 1 only
/// (rank 2 never calls Plan::run) with a 0.2 s timeout; returns their
/// errors.
std::vector<std::string> runWithoutRank2(const Plan &plan, bool checkPeers) {
  LocalFabric fabric(3);
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      std::vector<float> send(30), recv(30);
      LocalTransport tr(fabric, r);
      RunOptions opts;
      opts.checkPeers = checkPeers;
      opts.timeoutSeconds = 0.2;
      if (auto err = plan.run(send.data(), recv.data(), 30, DType::F32, tr,
                              opts))
        errors[r] = llvm::toString(std::move(err));
    });
  for (std::thread &th : threads)
    th.join();
  return errors;
}

TEST(Interpreter, TimeoutNamesThePendingMessages) {
  // Rank 2 never runs: ranks 0 and 1 give up after 0.2 s.
  auto plan = Plan::fromSchedule(compileRing(ir::Collective::AllReduce, 3));
  ASSERT_TRUE(bool(plan));
  std::vector<std::string> errors = runWithoutRank2(*plan, /*checkPeers=*/false);
  // Rank 0 waits for every message from rank 2 (its ring predecessor): in
  // dataflow order its receiving ops touch disjoint memory, so none waits
  // for another (docs/Runtime.md, "Runs ops as soon as they may").
  EXPECT_EQ(errors[0], "error: rank 0: plan 'ring3_allreduce_c1_k1_outofplace' "
                       "made no progress for 0.20 s; waiting for:\n"
                       "  message 2 from rank 2 (%1 rrs)\n"
                       "  message 5 from rank 2 (%2 rrcs)\n"
                       "  message 8 from rank 2 (%3 rcs)\n"
                       "  message 11 from rank 2 (%4 recv)\n"
                       "  (1 of 5 ops done)\n");
  EXPECT_NE(errors[1].find("made no progress"), std::string::npos)
      << errors[1];
}

TEST(Interpreter, HeaderExchangeNamesTheRankThatNeverCame) {
  // Rank 2 never calls Plan::run: with the agreement check on, ranks 0 and
  // 1 give up in the header exchange and name it.
  auto plan = Plan::fromSchedule(compileRing(ir::Collective::AllReduce, 3));
  ASSERT_TRUE(bool(plan));
  std::vector<std::string> errors = runWithoutRank2(*plan, /*checkPeers=*/true);
  const std::string head =
      "error: rank 2 did not join the run of plan "
      "'ring3_allreduce_c1_k1_outofplace' " +
      backends::formatHash(plan->hash()) +
      " for 3 ranks (out-of-place), count 30, fp32 within 0.20 s (failed "
      "before calling Plan::run, died, or runs with checkPeers off); no rank "
      "ran it:\n";
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(errors[r].substr(0, head.size()), head) << errors[r];
    EXPECT_NE(errors[r].find("\n  rank 2: -  <- missing\n"), std::string::npos)
        << errors[r];
  }
}

TEST(Interpreter, RunHeadersAgreeOnlyWhenTheRunIsTheSame) {
  RunHeader a;
  a.planHash = 7;
  a.count = 100;
  a.planRanks = 4;
  RunHeader b = a;
  b.rank = 3; // the sender's rank is not part of the run
  std::strncpy(b.planName, "other", sizeof(b.planName) - 1);
  EXPECT_TRUE(sameRun(a, b));
  for (auto change : std::vector<std::function<void(RunHeader &)>>{
           [](RunHeader &h) { h.planHash = 8; },
           [](RunHeader &h) { h.count = 101; },
           [](RunHeader &h) { h.planRanks = 5; },
           [](RunHeader &h) { h.dtype = 1; },
           [](RunHeader &h) { h.inplace = 1; },
           [](RunHeader &h) { h.rank = RunHeader::kMissing; }}) {
    RunHeader c = a;
    change(c);
    EXPECT_FALSE(sameRun(a, c));
    EXPECT_FALSE(sameRun(c, a));
  }
}

} // namespace
