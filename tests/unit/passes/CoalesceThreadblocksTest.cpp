//===- tests/unit/passes/CoalesceThreadblocksTest.cpp - Coalescing --------===//
//
// Issue 4, MSCCL XML of tree schedules (docs/Algorithms-trees.md,
// "Coalescing"): when separate threadblocks per tree piece exceed the SM count,
// assign-threadblocks merges roles with the same (channel, send peer, receive
// peer) across trees into one threadblock, with the steps in one global order
// at both ends of every (link, channel) FIFO; a receiver whose list order
// differs from its sender's is reordered, not deadlocked; a rank that forwards
// between more peer pairs than it may launch threadblocks is refused with the
// count.
//
//===----------------------------------------------------------------------===//

#include "compiler/passes/AssignChannels.h"
#include "compiler/passes/AssignThreadblocks.h"
#include "compiler/passes/Fuse.h"
#include "compiler/passes/LegalizeDependencies.h"
#include "compiler/passes/LowerTrees.h"

#include "ir/Verifier.h"

#include "tests/support/ErrorText.h"

#include "gtest/gtest.h"

#include <map>
#include <set>

using namespace topocc;
using namespace topocc::ir;
using topocc::testing::errorMessage;

namespace {

/// Allgather on 3 ranks, 2 units per root: root 0's two units take two
/// trees with the same path 0 -> 1 -> 2; roots 1 and 2 are stars.
passes::TreeLoweringOptions twoTreesOnOnePath() {
  passes::TreeLoweringOptions o;
  o.collective = Collective::AllGather;
  o.numRanks = 3;
  o.maxChannels = 32;
  o.broadcast.unitsPerRoot = 2;
  o.broadcast.trees = {{0, 0, 1, {kNone, 0, 1}},
                       {0, 1, 1, {kNone, 0, 1}},
                       {1, 0, 2, {1, kNone, 1}},
                       {2, 0, 2, {2, 2, kNone}}};
  return o;
}

Schedule channelled(const passes::TreeLoweringOptions &o) {
  auto s = passes::lowerTrees(o);
  EXPECT_TRUE(bool(s)) << llvm::toString(s.takeError());
  if (!s)
    return Schedule();
  passes::fuse(*s);
  EXPECT_FALSE(bool(passes::assignChannels(*s, 1000)));
  return std::move(*s);
}

int32_t threadblocks(const RankProgram &rp) {
  std::set<TbId> tbs;
  for (const Op &op : rp.ops)
    tbs.insert(op.threadblock);
  return static_cast<int32_t>(tbs.size());
}

/// The limits of MSCCL XML for tree schedules: `smCount` threadblocks per
/// rank, 32 channels, coalescing on.
passes::ThreadblockLimits coalescing(int32_t smCount) {
  passes::ThreadblockLimits lim;
  lim.smCount = smCount;
  lim.maxChannels = 32;
  lim.coalesce = true;
  return lim;
}

TEST(CoalesceThreadblocksTest, SeparateShapeKeptWhenItFits) {
  Schedule s = channelled(twoTreesOnOnePath());
  // The two trees share links 0 -> 1 and 1 -> 2: channels 0 and 1; root
  // 1's edge 1 -> 2 then needs channel 2.
  EXPECT_EQ(s.numChannels, 3);
  passes::ThreadblockLimits lim = coalescing(108);
  passes::ThreadblockInfo info;
  ASSERT_FALSE(bool(passes::assignThreadblocks(s, lim, &info)));
  EXPECT_FALSE(info.coalesced);
  // Rank 1 forwards both trees in their own threadblocks (recv 0, send 2)
  // on channels 0 and 1, and sends its own units to 0 and 2 and receives
  // rank 2's: 5 threadblocks.
  EXPECT_EQ(threadblocks(s.ranks[1]), 5);
}

TEST(CoalesceThreadblocksTest, TwoTreesOnALinkShareOneThreadblockInOrder) {
  Schedule s = channelled(twoTreesOnOnePath());
  passes::ThreadblockLimits lim = coalescing(4);
  passes::ThreadblockInfo info;
  llvm::Error err = passes::assignThreadblocks(s, lim, &info);
  ASSERT_FALSE(bool(err)) << llvm::toString(std::move(err));
  EXPECT_TRUE(info.coalesced);
  EXPECT_EQ(info.whyCoalesced,
            "rank 1 would launch 5 threadblocks, more than the 4 SMs of the "
            "target: MSCCL's blocks spin-wait on each other and must all be "
            "resident, so the schedule would hang (use --sm-count for another "
            "GPU, fewer --channels or --trees-per-root, or --emit plan)");
  for (const RankProgram &rp : s.ranks)
    EXPECT_LE(threadblocks(rp), 4);
  // Root 0's units 0 and 1 are output chunks 0 and 1. At every rank, the
  // ops that move them over 0 -> 1 -> 2 are in one threadblock, unit 0
  // first: the same order at both ends of each link.
  for (RankId r = 0; r < 3; ++r) {
    std::map<int32_t, std::pair<OpId, TbId>> unit; // chunk -> (op, tb)
    const auto &ops = s.ranks[r].ops;
    for (size_t i = 0; i < ops.size(); ++i) {
      const Op &op = ops[i];
      bool onPath = (r == 0 && op.sendPeer == 1) ||
                    (r == 1 && op.recvPeer == 0) || (r == 2 && op.recvPeer == 1);
      // Root 0's units: input chunks 0, 1 of rank 0, output chunks 0, 1.
      const BufferRef &b = r == 0 ? op.src : op.dst;
      if (!onPath || b.chunk >= 2)
        continue;
      unit[b.chunk] = {static_cast<OpId>(i), op.threadblock};
    }
    ASSERT_EQ(unit.size(), 2u) << "rank " << r;
    auto first = unit.begin()->second, second = unit.rbegin()->second;
    EXPECT_EQ(first.second, second.second) << "rank " << r;
    EXPECT_LT(first.first, second.first) << "rank " << r;
    if (r == 1) {
      // Forwarded with rcs: receive from 0, send to 2, one channel.
      EXPECT_EQ(ops[first.first].kind, OpKind::RecvCopySend);
      EXPECT_EQ(ops[first.first].channel, ops[second.first].channel);
    }
  }
  passes::legalizeDependencies(s);
  EXPECT_FALSE(bool(verifySchedule(s)));
}

/// Two independent sends 0 -> 1 (messages 0 and 1) that rank 1 receives in
/// the opposite list order: fine on separate channels and threadblocks, a
/// FIFO mismatch (and a deadlock) if merged as listed.
Schedule crossedMessages() {
  Schedule s;
  s.collective = Collective::AllToAll; // semantics not checked
  s.numRanks = 2;
  s.chunksPerLoop = 2;
  s.stage = Stage::ChannelsAssigned;
  s.numChannels = 2;
  s.ranks.resize(2);
  for (RankProgram &rp : s.ranks) {
    rp.inputChunks = 2;
    rp.outputChunks = 2;
  }
  auto in = [](int32_t c) { return BufferRef{BufferKind::Input, c, 1}; };
  auto out = [](int32_t c) { return BufferRef{BufferKind::Output, c, 1}; };
  Op a = makeSend(in(0), 1, 0), b = makeSend(in(1), 1, 1);
  a.channel = 0;
  b.channel = 1;
  s.ranks[0].ops = {a, b};
  Op rb = makeRecv(out(1), 0, 1), ra = makeRecv(out(0), 0, 0);
  rb.channel = 1;
  ra.channel = 0;
  s.ranks[1].ops = {rb, ra};
  return s;
}

TEST(CoalesceThreadblocksTest, MergedFifoFollowsOneOrderAtBothEnds) {
  Schedule s = crossedMessages();
  VerifyOptions noSemantics;
  noSemantics.checkSemantics = false;
  ASSERT_FALSE(bool(verifySchedule(s, noSemantics)));
  passes::ThreadblockLimits lim = coalescing(1);
  passes::ThreadblockInfo info;
  llvm::Error err = passes::assignThreadblocks(s, lim, &info);
  ASSERT_FALSE(bool(err)) << llvm::toString(std::move(err));
  EXPECT_TRUE(info.coalesced);
  EXPECT_EQ(info.chains, 2);
  EXPECT_EQ(s.numChannels, 1);
  // One threadblock per rank; rank 1 now receives message 0 first, as
  // rank 0 sends it.
  for (const RankProgram &rp : s.ranks)
    EXPECT_EQ(threadblocks(rp), 1);
  EXPECT_EQ(s.ranks[0].ops[0].sendMsg, 0);
  EXPECT_EQ(s.ranks[1].ops[0].recvMsg, 0);
  EXPECT_EQ(s.ranks[1].ops[1].recvMsg, 1);
  passes::legalizeDependencies(s);
  EXPECT_FALSE(bool(verifySchedule(s, noSemantics)));
}

TEST(CoalesceThreadblocksTest, WithoutCoalescingTheSmCountIsAnError) {
  Schedule s = crossedMessages();
  passes::ThreadblockLimits lim;
  lim.smCount = 1;
  EXPECT_EQ(errorMessage(passes::assignThreadblocks(s, lim)),
            "rank 0 would launch 2 threadblocks, more than the 1 SMs of the "
            "target: MSCCL's blocks spin-wait on each other and must all be "
            "resident, so the schedule would hang (use --sm-count for another "
            "GPU, fewer --channels or --trees-per-root, or --emit plan)");
}

TEST(CoalesceThreadblocksTest, TooManyForwardingPairsIsRefused) {
  // Rank 1 forwards 0 -> 2 (root 0's trees) and 2 -> 0 (root 2's): two
  // (receive peer, send peer) pairs, one threadblock allowed.
  passes::TreeLoweringOptions o;
  o.collective = Collective::AllGather;
  o.numRanks = 3;
  o.broadcast.unitsPerRoot = 1;
  o.broadcast.trees = {{0, 0, 1, {kNone, 0, 1}},
                       {1, 0, 1, {1, kNone, 1}},
                       {2, 0, 1, {1, 2, kNone}}};
  Schedule s = channelled(o);
  passes::ThreadblockLimits lim = coalescing(1);
  EXPECT_EQ(errorMessage(passes::assignThreadblocks(s, lim)),
            "separate threadblocks per tree piece do not fit (rank 0 would "
            "launch 3 threadblocks, more than the 1 SMs of the target: "
            "MSCCL's blocks spin-wait on each other and must all be resident, "
            "so the schedule would hang (use --sm-count for another GPU, "
            "fewer --channels or --trees-per-root, or --emit plan)), and "
            "neither does the coalesced shape: rank 1 forwards between 2 "
            "distinct (receive peer, send peer) pairs, and a threadblock "
            "serves one pair, so it needs more than the 1 threadblocks it may "
            "launch; use --trees-per-root with a smaller K or --emit plan");
}

} // namespace
