//===- tests/unit/passes/AssignTest.cpp - Channels and threadblocks -------===//

#include "compiler/passes/AssignChannels.h"
#include "compiler/passes/AssignThreadblocks.h"
#include "compiler/passes/Fuse.h"
#include "compiler/passes/LowerRing.h"

#include "ir/Printer.h"
#include "ir/Verifier.h"

#include "tests/support/ErrorText.h"

#include "gtest/gtest.h"

#include <set>

using namespace topocc;
using namespace topocc::ir;

namespace {

Schedule fused(Collective c, int n, int channels, int chunks,
               bool inplace = false) {
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
  return std::move(*s);
}

TEST(AssignChannelsTest, OneChannelPerRing) {
  Schedule s = fused(Collective::AllReduce, 4, 3, 2);
  ASSERT_FALSE(bool(passes::assignChannels(s)));
  EXPECT_EQ(s.stage, Stage::ChannelsAssigned);
  EXPECT_EQ(s.numChannels, 3);
  // Lowering lists each rank's ops channel by channel, 2 chunks x 7 steps.
  for (const RankProgram &rp : s.ranks)
    for (size_t i = 0; i < rp.ops.size(); ++i)
      EXPECT_EQ(rp.ops[i].channel, ChannelId(i / 14));
  // Both ends of every message are on one channel.
  for (const MsgEnds &m : indexMessages(s))
    EXPECT_EQ(s.ranks[m.sender].ops[m.sendOp].channel,
              s.ranks[m.receiver].ops[m.recvOp].channel);
  EXPECT_FALSE(bool(verifySchedule(s)));
}

TEST(AssignChannelsTest, KeepsChannelsSetByTheLowering) {
  Schedule s = fused(Collective::AllGather, 3, 2, 1);
  for (RankProgram &rp : s.ranks)
    for (Op &op : rp.ops)
      if (op.channel == kNone && &op == &rp.ops.front())
        op.channel = 5; // the first ring: channel 5
  ASSERT_FALSE(bool(passes::assignChannels(s)));
  EXPECT_EQ(s.ranks[0].ops.front().channel, 5);
  EXPECT_EQ(s.ranks[0].ops.back().channel, 6);
  EXPECT_EQ(s.numChannels, 7);
}

TEST(AssignChannelsTest, TooManyChannels) {
  Schedule s = fused(Collective::AllGather, 2, 3, 1);
  llvm::Error err = passes::assignChannels(s, 2);
  ASSERT_TRUE(bool(err));
  EXPECT_EQ(topocc::testing::errorMessage(std::move(err)),
            "the schedule needs 3 independent channels, more than the limit "
            "of 2; use fewer --channels");
}

TEST(AssignThreadblocksTest, OneThreadblockPerRingWithItsPeers) {
  Schedule s = fused(Collective::AllReduce, 4, 2, 2, true);
  ASSERT_FALSE(bool(passes::assignChannels(s)));
  ASSERT_FALSE(bool(passes::assignThreadblocks(s)));
  EXPECT_EQ(s.stage, Stage::ThreadblocksAssigned);
  for (RankId r = 0; r < 4; ++r)
    for (const Op &op : s.ranks[r].ops) {
      EXPECT_EQ(op.threadblock, op.channel);
      if (sends(op.kind)) {
        EXPECT_EQ(op.sendPeer, (r + 1) % 4);
      }
      if (receives(op.kind)) {
        EXPECT_EQ(op.recvPeer, (r + 3) % 4);
      }
    }
  EXPECT_FALSE(bool(verifySchedule(s))) << scheduleToString(s);
}

TEST(AssignThreadblocksTest, StepLimitErrorSaysWhatToChange) {
  // 9 ranks x 4 chunks: 4 * (2*9 - 1) = 68 steps > 64.
  Schedule s = fused(Collective::AllReduce, 9, 1, 4);
  ASSERT_FALSE(bool(passes::assignChannels(s)));
  llvm::Error err = passes::assignThreadblocks(s);
  ASSERT_TRUE(bool(err));
  EXPECT_EQ(topocc::testing::errorMessage(std::move(err)),
            "rank 0 threadblock 0 (channel 0) needs 68 steps, more than the "
            "limit of 64 steps per threadblock (MSCCL_MAX_NUM_STEPS); use "
            "fewer --chunks (every chunk adds one step per ring hop), or raise "
            "--max-steps if the runtime was built with a larger "
            "MSCCL_MAX_NUM_STEPS");
  // The same schedule fits a runtime built with 128 steps.
  Schedule t = fused(Collective::AllReduce, 9, 1, 4);
  ASSERT_FALSE(bool(passes::assignChannels(t)));
  passes::ThreadblockLimits limits;
  limits.maxSteps = 128;
  EXPECT_FALSE(bool(passes::assignThreadblocks(t, limits)));
}

TEST(AssignThreadblocksTest, ConflictingPeersAreAUserError) {
  // Rank 0: tb 0 sends to 1 and receives from 2, tb 1 sends to 2 and
  // receives from 1; then an op that sends to 1 and receives from 1 would
  // need both.
  Schedule s;
  s.collective = Collective::AllReduce;
  s.numRanks = 3;
  s.chunksPerLoop = 1;
  s.stage = Stage::ChannelsAssigned;
  s.numChannels = 1;
  s.ranks.resize(3);
  Op a;
  a.kind = OpKind::RecvCopySend;
  a.dst = {BufferKind::Input, 0, 1};
  a.sendPeer = 1;
  a.sendMsg = 0;
  a.recvPeer = 2;
  a.recvMsg = 1;
  a.channel = 0;
  Op b = a;
  b.sendPeer = 2;
  b.recvPeer = 1;
  b.sendMsg = 2;
  b.recvMsg = 3;
  Op c = a;
  c.sendPeer = 1;
  c.recvPeer = 1;
  c.sendMsg = 4;
  c.recvMsg = 5;
  s.ranks[0].ops = {a, b, c};
  llvm::Error err = passes::assignThreadblocks(s);
  ASSERT_TRUE(bool(err));
  EXPECT_NE(topocc::testing::errorMessage(std::move(err))
                .find("rank 0: an op that sends to rank 1 and receives from "
                      "rank 1 on channel 0 cannot be placed"),
            std::string::npos);
}

} // namespace
