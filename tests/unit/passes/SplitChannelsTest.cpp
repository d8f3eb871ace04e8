//===- tests/unit/passes/SplitChannelsTest.cpp - Long chains ---------------===//

#include "compiler/passes/AssignChannels.h"
#include "compiler/passes/AssignThreadblocks.h"
#include "compiler/passes/Fuse.h"
#include "compiler/passes/LegalizeDependencies.h"
#include "compiler/passes/LowerRing.h"
#include "compiler/passes/SplitChannels.h"

#include "ir/Printer.h"
#include "ir/Verifier.h"

#include "tests/support/ErrorText.h"

#include "gtest/gtest.h"

#include <map>

using namespace topocc;
using namespace topocc::ir;

namespace {

Schedule channelsAssigned(Collective c, int n, int channels, int chunks,
                          bool inplace) {
  passes::RingOptions o;
  o.collective = c;
  o.numRanks = n;
  o.channels = channels;
  o.chunks = chunks;
  o.inplace = inplace;
  auto s = passes::lowerRing(o);
  EXPECT_TRUE(bool(s));
  if (!s)
    return Schedule();
  passes::fuse(*s);
  EXPECT_FALSE(bool(passes::assignChannels(*s)));
  return std::move(*s);
}

/// Steps per (rank, threadblock) of a legalized schedule.
int maxStepsPerThreadblock(const Schedule &s) {
  int worst = 0;
  for (const RankProgram &rp : s.ranks) {
    std::map<TbId, int> n;
    for (const Op &op : rp.ops)
      worst = std::max(worst, ++n[op.threadblock]);
  }
  return worst;
}

TEST(SplitChannelsTest, LeavesSchedulesThatFitUnchanged) {
  Schedule s = channelsAssigned(Collective::AllReduce, 8, 2, 2, true);
  Schedule before = s;
  ASSERT_FALSE(bool(passes::splitChannels(s, 64)));
  EXPECT_EQ(scheduleToString(s), scheduleToString(before));
}

TEST(SplitChannelsTest, LongRingsFitAndStayCorrect) {
  for (Collective c : {Collective::AllReduce, Collective::AllGather,
                       Collective::ReduceScatter})
    for (bool inplace : {false, true}) {
      SCOPED_TRACE(std::string(collectiveName(c)) +
                   (inplace ? " inplace" : " outofplace"));
      // 40 ranks: an allreduce chain has 79 steps, more than 64.
      Schedule s = channelsAssigned(c, 40, 1, 2, inplace);
      ASSERT_FALSE(bool(passes::splitChannels(s, 64)));
      EXPECT_GT(s.numChannels, 1);
      ASSERT_FALSE(bool(passes::assignThreadblocks(s)));
      passes::legalizeDependencies(s);
      EXPECT_LE(maxStepsPerThreadblock(s), 64);
      llvm::Error err = verifySchedule(s);
      EXPECT_FALSE(bool(err)) << topocc::testing::errorMessage(std::move(err));
    }
}

TEST(SplitChannelsTest, SplitReductionsKeepLocalOperandEqualToDestination) {
  Schedule s = channelsAssigned(Collective::AllReduce, 40, 1, 1, false);
  ASSERT_FALSE(bool(passes::splitChannels(s, 20)));
  int splitReductions = 0;
  for (const RankProgram &rp : s.ranks)
    for (const Op &op : rp.ops)
      if (op.kind == OpKind::RecvReduceCopy) {
        EXPECT_EQ(op.src, op.dst);
        ++splitReductions;
      }
  EXPECT_GT(splitReductions, 0);
  EXPECT_FALSE(bool(verifySchedule(s)));
}

TEST(SplitChannelsTest, RefusesWhenChannelsRunOut) {
  Schedule s = channelsAssigned(Collective::AllReduce, 40, 1, 1, false);
  llvm::Error err = passes::splitChannels(s, 64, /*maxChannels=*/1);
  ASSERT_TRUE(bool(err));
  EXPECT_NE(topocc::testing::errorMessage(std::move(err))
                .find("more than MSCCL's 1"),
            std::string::npos);
}

} // namespace
