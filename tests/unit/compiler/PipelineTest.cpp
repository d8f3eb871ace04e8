//===- tests/unit/compiler/PipelineTest.cpp - compile() end to end --------===//
//
// The property test: ring lowering through the whole pipeline verifies
// (structure, deadlock freedom, races, semantics) for every configuration
// that fits MSCCL's step limit, and every configuration that does not fails
// with the clear limit error. Plus mutation testing of lowered and legalized
// schedules, the logger and --run-pass.
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipeline.h"

#include "compiler/passes/AssignChannels.h"
#include "compiler/passes/AssignThreadblocks.h"
#include "compiler/passes/Fuse.h"
#include "compiler/passes/LowerRing.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "support/Diagnostics.h"
#include "tests/unit/ir/Mutations.h"

#include "tests/support/ErrorText.h"

#include "llvm/Support/FormatVariadic.h"
#include "gtest/gtest.h"

#include <cstdlib>
#include <map>

using namespace topocc;
using namespace topocc::ir;

namespace {

/// Steps per threadblock of a legalized ring (one threadblock per channel).
int ringSteps(Collective c, int n, int chunks, bool inplace) {
  switch (c) {
  case Collective::AllReduce:
    return chunks * (2 * n - 1);
  case Collective::AllGather:
    return chunks * n + (inplace ? 0 : 1); // + the local copy
  default:
    return chunks * n;
  }
}

CompileRequest request(Collective c, int channels, int chunks, bool inplace) {
  CompileRequest req;
  req.collective = c;
  req.channels = channels;
  req.chunks = chunks;
  req.inplace = inplace;
  return req;
}

const Collective kCollectives[] = {Collective::AllReduce, Collective::AllGather,
                                   Collective::ReduceScatter};

/// N = 2..32, channels 1..4, chunks 1..4, three collectives, both modes.
/// Every configuration with N <= 8; above that one (chunks, channels) per
/// (N, collective, mode), rotating so that every value of every parameter
/// occurs (the sanitized debug build needs about a second for one N = 32
/// schedule). TOPOCC_PROPERTY_FULL=1 runs the whole grid. Rings whose chain is
/// longer than MSCCL's 64 steps continue on extra channels (split-channels),
/// so every configuration either verifies within the limits or needs more
/// than 32 channels and says so.
TEST(PipelinePropertyTest, RingVerifiesWithinTheStepLimit) {
  const bool full = std::getenv("TOPOCC_PROPERTY_FULL") != nullptr;
  int fitted = 0, split = 0, refused = 0;
  for (int n = 2; n <= 32; ++n)
    for (int ci = 0; ci < 3; ++ci)
      for (int inplace = 0; inplace < 2; ++inplace)
        for (int chunks = 1; chunks <= 4; ++chunks)
          for (int channels = 1; channels <= 4; ++channels) {
            Collective c = kCollectives[ci];
            bool exhaustive = full || n <= 8;
            if (!exhaustive &&
                (chunks != 1 + (n + ci + 2 * inplace) % 4 ||
                 channels != 1 + (n + chunks + ci + inplace) % 4))
              continue;
            int steps = ringSteps(c, n, chunks, inplace);
            SCOPED_TRACE(llvm::formatv("n={0} {1} channels={2} chunks={3} {4}",
                                       n, collectiveName(c), channels, chunks,
                                       inplace ? "inplace" : "outofplace")
                             .str());
            PassLogger log;
            auto plan = compile(n, request(c, channels, chunks, inplace), log);
            if (!plan) {
              std::string msg = topocc::testing::errorMessage(plan.takeError());
              EXPECT_GT(steps, 64) << msg;
              EXPECT_NE(msg.find("channels, more than MSCCL's 32"),
                        std::string::npos)
                  << msg;
              ++refused;
              continue;
            }
            // compile() verified structure, deadlock freedom, races and the
            // postcondition; check the shape.
            const Schedule &s = plan->schedule;
            EXPECT_EQ(s.stage, Stage::Legalized);
            EXPECT_EQ(s.chunksPerLoop, n * channels * chunks);
            EXPECT_LE(s.numChannels, 32);
            for (const RankProgram &rp : s.ranks) {
              std::map<TbId, int> perTb;
              for (const Op &op : rp.ops)
                ++perTb[op.threadblock];
              if (steps <= 64) {
                ASSERT_EQ(perTb.size(), size_t(channels));
                for (auto [tb, count] : perTb)
                  EXPECT_EQ(count, steps);
              } else {
                EXPECT_GT(perTb.size(), size_t(channels));
                for (auto [tb, count] : perTb)
                  EXPECT_LE(count, 64);
              }
            }
            if (steps <= 64) {
              EXPECT_EQ(s.numChannels, channels);
              ++fitted;
            } else {
              EXPECT_EQ(s.numChannels % channels, 0);
              EXPECT_GT(s.numChannels, channels);
              ++split;
            }
          }
  EXPECT_GT(fitted, full ? 1000 : 500);
  EXPECT_GT(split, full ? 150 : 10);
  EXPECT_GE(refused, 0);
}

TEST(PipelineTest, VerifyEachAndCustomRing) {
  CompileRequest req = request(Collective::AllReduce, 2, 2, false);
  req.verifyEach = true;
  req.ringOrder = {0, 2, 4, 6, 7, 5, 3, 1};
  PassLogger log;
  auto plan = compile(8, req, log);
  ASSERT_TRUE(bool(plan)) << topocc::testing::errorMessage(plan.takeError());
  EXPECT_EQ(plan->algorithm, Algorithm::Ring);
}

TEST(PipelineTest, UserErrorsPassThrough) {
  PassLogger log;
  CompileRequest req = request(Collective::AllReduce, 1, 1, false);
  req.ringOrder = {1, 0, 0};
  auto plan = compile(3, req, log);
  ASSERT_FALSE(bool(plan));
  EXPECT_EQ(topocc::testing::errorMessage(plan.takeError()),
            "invalid ring order '1,0,0': expected a permutation of 0..2; rank "
            "0 appears more than once; rank 2 is missing");
  req = request(Collective::AllReduce, 1, 1, false);
  auto unknown = parseAlgorithm("tree");
  ASSERT_FALSE(bool(unknown));
  EXPECT_EQ(topocc::testing::errorMessage(unknown.takeError()),
            "unknown --algorithm 'tree'; expected 'ring', 'hier-ring', "
            "'trees', 'cerar', 'hier-cerar', 'dims', 'matching', 'dbtree' "
            "or 'auto'");
  req.algorithm = Algorithm::Trees;
  plan = compile(3, req, log);
  ASSERT_FALSE(bool(plan));
  EXPECT_EQ(topocc::testing::errorMessage(plan.takeError()),
            "--algorithm trees needs the topology: the trees are packed on "
            "its links");
  req.algorithm = Algorithm::Ring;
  req.proto = "simple";
  plan = compile(3, req, log);
  ASSERT_FALSE(bool(plan));
  EXPECT_EQ(topocc::testing::errorMessage(plan.takeError()),
            "unknown --proto 'simple'; expected 'Simple', 'LL' or 'LL128'");
}

TEST(PipelineTest, LoggerPrintsAfterEachPassAndTimes) {
  std::string ir, times;
  llvm::raw_string_ostream irOs(ir), timesOs(times);
  PassLogger log(&irOs, /*printAfterAll=*/true, /*timePasses=*/true);
  auto plan = compile(3, request(Collective::AllGather, 1, 1, true), log);
  ASSERT_TRUE(bool(plan));
  log.printTimings(timesOs);
  irOs.flush();
  timesOs.flush();
  std::vector<std::string> order;
  for (const auto &[name, secs] : log.timings())
    order.push_back(name);
  EXPECT_EQ(order, (std::vector<std::string>{
                       "lower-ring", "fuse", "assign-channels",
                       "split-channels", "assign-threadblocks",
                       "legalize-dependencies"}));
  size_t at = 0;
  for (const std::string &pass : order) {
    at = ir.find("// *** IR Dump After " + pass + " ***\nschedule @", at);
    EXPECT_NE(at, std::string::npos) << pass;
  }
  EXPECT_NE(times.find("legalize-dependencies"), std::string::npos);
  EXPECT_NE(times.find("total"), std::string::npos);
  // Nothing is printed unless asked.
  PassLogger quiet;
  ASSERT_TRUE(
      bool(compile(3, request(Collective::AllGather, 1, 1, true), quiet)));
  EXPECT_TRUE(quiet.timings().empty());
}

TEST(PipelineTest, RunSinglePassMatchesThePipeline) {
  passes::RingOptions o;
  o.collective = Collective::ReduceScatter;
  o.numRanks = 4;
  o.channels = 2;
  auto lowered = passes::lowerRing(o);
  ASSERT_TRUE(bool(lowered));
  // Through the textual form, as --run-pass --input-ir does.
  auto parsed = parseSchedule(scheduleToString(*lowered), "lowered.ir");
  ASSERT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
  Schedule s = std::move(*parsed);
  CompileRequest req = request(o.collective, 2, 1, false);
  PassLogger log;
  for (llvm::StringRef pass : passNames()) {
    auto next = runSinglePass(pass, std::move(s), req, log);
    ASSERT_TRUE(bool(next))
        << pass.str() << ": " << llvm::toString(next.takeError());
    s = std::move(*next);
  }
  auto plan = compile(4, req, log);
  ASSERT_TRUE(bool(plan));
  plan->schedule.name = s.name;
  EXPECT_EQ(scheduleToString(s), scheduleToString(plan->schedule));
}

TEST(PipelineTest, RunSinglePassChecksNameAndStage) {
  PassLogger log;
  CompileRequest req;
  auto s = passes::lowerRing({Collective::AllReduce, 3, 1, 1, {}, false, ""});
  ASSERT_TRUE(bool(s));
  auto r = runSinglePass("fuze", *s, req, log);
  ASSERT_FALSE(bool(r));
  EXPECT_EQ(topocc::testing::errorMessage(r.takeError()),
            "unknown pass 'fuze'; did you mean 'fuse'? (passes: fuse, "
            "assign-channels, split-channels, assign-threadblocks, "
            "legalize-dependencies)");
  r = runSinglePass("legalize-dependencies", *s, req, log);
  ASSERT_FALSE(bool(r));
  EXPECT_EQ(topocc::testing::errorMessage(r.takeError()),
            "pass 'legalize-dependencies' expects a schedule at stage "
            "'threadblocks', the input is at stage 'lowered'");
  // An invalid input is the user's problem, not the pass's.
  Schedule broken = *s;
  broken.ranks[0].ops.pop_back();
  r = runSinglePass("fuse", broken, req, log);
  ASSERT_FALSE(bool(r));
  EXPECT_EQ(topocc::testing::errorMessage(r.takeError())
                .rfind("the input schedule is invalid:", 0),
            0u);
}

TEST(PipelineMutationTest, LoweredAndLegalizedRingsRejectBrokenMutants) {
  for (Collective c : kCollectives)
    for (int inplace = 0; inplace < 2; ++inplace) {
      SCOPED_TRACE(std::string(collectiveName(c)) +
                   (inplace ? " inplace" : " outofplace"));
      passes::RingOptions o{c, 3, 2, 1, {}, bool(inplace), ""};
      auto lowered = passes::lowerRing(o);
      ASSERT_TRUE(bool(lowered));
      auto stats = ir::testing::expectMutantsRejected(*lowered);
      EXPECT_GT(stats.rejected, 0u);
      PassLogger log;
      auto plan = compile(3, request(c, 2, 1, inplace), log);
      ASSERT_TRUE(bool(plan));
      stats = ir::testing::expectMutantsRejected(plan->schedule);
      EXPECT_GT(stats.rejected, 0u);
    }
}

} // namespace

// deferFinalCheck: compile() returns the same schedule unverified and the
// request that made it; checkCompiled() is the check compile() would have
// run, and a schedule broken afterwards is reported as the pipeline's bug.
TEST(PipelineTest, DeferredFinalCheckIsTheCallers) {
  CompileRequest req = request(Collective::AllReduce, 2, 2, false);
  PassLogger log;
  auto checked = compile(8, req, log);
  ASSERT_TRUE(bool(checked))
      << topocc::testing::errorMessage(checked.takeError());
  EXPECT_TRUE(checked->verified);
  EXPECT_FALSE(checked->pendingCheck);

  req.deferFinalCheck = true;
  auto deferred = compile(8, req, log);
  ASSERT_TRUE(bool(deferred))
      << topocc::testing::errorMessage(deferred.takeError());
  EXPECT_FALSE(deferred->verified);
  ASSERT_TRUE(deferred->pendingCheck.has_value());
  EXPECT_FALSE(deferred->pendingCheck->deferFinalCheck);
  EXPECT_TRUE(deferred->pendingCheck->verify);
  std::string a, b;
  llvm::raw_string_ostream aos(a), bos(b);
  printSchedule(checked->schedule, aos);
  printSchedule(deferred->schedule, bos);
  EXPECT_EQ(aos.str(), bos.str());
  EXPECT_FALSE(bool(
      checkCompiled(nullptr, 8, *deferred->pendingCheck, deferred->schedule)));

  // Broken after the pipeline: the recompile does not reproduce it, so the
  // first report stands, as compile() would have made it.
  Schedule broken = deferred->schedule;
  broken.ranks[0].ops.pop_back();
  llvm::Error err = checkCompiled(nullptr, 8, *deferred->pendingCheck, broken);
  ASSERT_TRUE(bool(err));
  EXPECT_TRUE(err.isA<InternalError>());
  EXPECT_NE(llvm::toString(std::move(err))
                .find("the schedule is invalid after pass "
                      "'legalize-dependencies' (a bug in topocc)"),
            std::string::npos);

  // With every stage verified nothing is left to the caller.
  req.verifyEach = true;
  auto each = compile(8, req, log);
  ASSERT_TRUE(bool(each)) << topocc::testing::errorMessage(each.takeError());
  EXPECT_TRUE(each->verified);
  EXPECT_FALSE(each->pendingCheck);
}
