//===- tests/unit/passes/LowerRingTest.cpp - Ring lowering ----------------===//

#include "compiler/passes/LowerRing.h"

#include "ir/Printer.h"
#include "ir/Verifier.h"

#include "tests/support/ErrorText.h"

#include "gtest/gtest.h"

#include "llvm/Support/MathExtras.h"

using namespace topocc;
using namespace topocc::ir;
using topocc::passes::lowerRing;
using topocc::passes::RingOptions;

namespace {

std::string errorText(llvm::Error e) {
  return topocc::testing::errorMessage(std::move(e));
}

RingOptions opts(Collective c, int n, int channels = 1, int chunks = 1,
                 bool inplace = false) {
  RingOptions o;
  o.collective = c;
  o.numRanks = n;
  o.channels = channels;
  o.chunks = chunks;
  o.inplace = inplace;
  return o;
}

TEST(LowerRingTest, AllReduceLayoutAndSizes) {
  auto s = lowerRing(opts(Collective::AllReduce, 4, 2, 3, false));
  ASSERT_TRUE(bool(s)) << errorText(s.takeError());
  EXPECT_EQ(s->stage, Stage::Lowered);
  EXPECT_EQ(s->chunksPerLoop, 4 * 2 * 3);
  EXPECT_EQ(s->numRanks, 4);
  for (const RankProgram &rp : s->ranks) {
    EXPECT_EQ(rp.inputChunks, 24);
    EXPECT_EQ(rp.outputChunks, 24);
    for (const Op &op : rp.ops) {
      EXPECT_EQ(op.channel, kNone);
      EXPECT_EQ(op.threadblock, kNone);
      EXPECT_TRUE(op.kind == OpKind::Send || op.kind == OpKind::Recv ||
                  op.kind == OpKind::Reduce || op.kind == OpKind::Copy)
          << mnemonic(op.kind).str();
    }
  }
  // 2 channels x 3 chunks x (2N-2) hops x N senders.
  EXPECT_EQ(s->numMessages(), 2 * 3 * 6 * 4);
  EXPECT_FALSE(bool(verifySchedule(*s)));
}

TEST(LowerRingTest, BufferSizesPerCollectiveAndMode) {
  struct Case {
    Collective c;
    bool inplace;
    int in, out;
  } cases[] = {
      {Collective::AllReduce, true, 8, 0},
      {Collective::AllGather, false, 2, 8},
      {Collective::AllGather, true, 0, 8},
      {Collective::ReduceScatter, false, 8, 2},
      {Collective::ReduceScatter, true, 8, 0},
  };
  for (const Case &c : cases) {
    auto s = lowerRing(opts(c.c, 4, 2, 1, c.inplace));
    ASSERT_TRUE(bool(s)) << errorText(s.takeError());
    EXPECT_EQ(s->chunksPerLoop, 8);
    EXPECT_EQ(s->ranks[1].inputChunks, c.in) << collectiveName(c.c).str();
    EXPECT_EQ(s->ranks[1].outputChunks, c.out) << collectiveName(c.c).str();
    EXPECT_FALSE(bool(verifySchedule(*s))) << scheduleToString(*s);
  }
}

TEST(LowerRingTest, InPlaceAddressesOnlyTheAliasedBuffer) {
  auto ar = lowerRing(opts(Collective::AllReduce, 3, 1, 2, true));
  auto ag = lowerRing(opts(Collective::AllGather, 3, 1, 2, true));
  ASSERT_TRUE(ar && ag);
  for (const RankProgram &rp : ar->ranks)
    for (const Op &op : rp.ops)
      for (const BufferRef *b : {&op.src, &op.dst})
        EXPECT_TRUE(!b->isUsed() || b->buffer != BufferKind::Output);
  for (const RankProgram &rp : ag->ranks)
    for (const Op &op : rp.ops)
      for (const BufferRef *b : {&op.src, &op.dst})
        EXPECT_TRUE(!b->isUsed() || b->buffer == BufferKind::Output);
}

TEST(LowerRingTest, CustomRingOrderFollowsTheRing) {
  RingOptions o = opts(Collective::AllGather, 4);
  o.ringOrder = {0, 3, 2, 1};
  auto s = lowerRing(o);
  ASSERT_TRUE(bool(s)) << errorText(s.takeError());
  // Rank 0 sends to 3 and receives from 1.
  for (const Op &op : s->ranks[0].ops) {
    if (sends(op.kind)) {
      EXPECT_EQ(op.sendPeer, 3);
    }
    if (receives(op.kind)) {
      EXPECT_EQ(op.recvPeer, 1);
    }
  }
  EXPECT_FALSE(bool(verifySchedule(*s)));
}

TEST(LowerRingTest, EachChannelIsOneChainPerRank) {
  auto s = lowerRing(opts(Collective::ReduceScatter, 3, 2, 2));
  ASSERT_TRUE(bool(s));
  for (const RankProgram &rp : s->ranks) {
    int starts = 0;
    for (size_t i = 0; i < rp.ops.size(); ++i) {
      if (rp.ops[i].deps.empty())
        ++starts;
      else
        EXPECT_EQ(rp.ops[i].deps, (OpDeps{OpId(i - 1)}));
    }
    EXPECT_EQ(starts, 2);
  }
}

TEST(LowerRingTest, RingOrderErrorsListEveryProblem) {
  RingOptions o = opts(Collective::AllReduce, 4);
  o.ringOrder = {0, 3, 3, 7};
  auto s = lowerRing(o);
  ASSERT_FALSE(bool(s));
  EXPECT_EQ(errorText(s.takeError()),
            "invalid ring order '0,3,3,7': expected a permutation of 0..3; "
            "rank 3 appears more than once; rank 7 is out of range 0..3; "
            "ranks 1, 2 are missing");
  o.ringOrder = {0, 1, 2};
  s = lowerRing(o);
  ASSERT_FALSE(bool(s));
  EXPECT_EQ(errorText(s.takeError()),
            "invalid ring order '0,1,2': expected a permutation of 0..3; it "
            "has 3 entries, expected 4; rank 3 is missing");
}

TEST(LowerRingTest, RejectsBadRequests) {
  auto s = lowerRing(opts(Collective::Broadcast, 4));
  ASSERT_FALSE(bool(s));
  EXPECT_EQ(errorText(s.takeError()),
            "the ring algorithm supports allreduce, allgather and "
            "reducescatter, not broadcast");
  s = lowerRing(opts(Collective::AllReduce, 1));
  ASSERT_FALSE(bool(s));
  EXPECT_EQ(errorText(s.takeError()),
            "a ring needs at least 2 ranks, the topology has 1");
  s = lowerRing(opts(Collective::AllReduce, 4, 65, 0));
  ASSERT_FALSE(bool(s));
  EXPECT_EQ(errorText(s.takeError()),
            "--channels must be between 1 and 64, got 65\n"
            "--chunks must be at least 1, got 0");
}

} // namespace

namespace {

using topocc::passes::chunksForShares;

TEST(LowerRingTest, PerChannelOrdersWithEqualChunksMatchSingleOrder) {
  // The same order on every channel with equal counts is the old lowering.
  RingOptions single = opts(Collective::AllReduce, 4, 2, 2);
  single.ringOrder = {0, 2, 1, 3};
  RingOptions per = single;
  per.ringOrder.clear();
  per.channelOrders = {{0, 2, 1, 3}, {0, 2, 1, 3}};
  per.channelChunks = {2, 2};
  auto a = lowerRing(single), b = lowerRing(per);
  ASSERT_TRUE(bool(a)) << errorText(a.takeError());
  ASSERT_TRUE(bool(b)) << errorText(b.takeError());
  EXPECT_EQ(scheduleToString(*a), scheduleToString(*b));
}

TEST(LowerRingTest, PerChannelOrdersAndSharesVerify) {
  for (Collective c : {Collective::AllReduce, Collective::AllGather,
                       Collective::ReduceScatter})
    for (bool inplace : {false, true}) {
      SCOPED_TRACE(std::string(collectiveName(c)) +
                   (inplace ? " inplace" : " outofplace"));
      RingOptions o = opts(c, 5, 3, 1, inplace);
      o.channelOrders = {{0, 1, 2, 3, 4}, {0, 3, 1, 4, 2}, {4, 2, 0, 1, 3}};
      o.channelChunks = {3, 1, 2};
      auto s = lowerRing(o);
      ASSERT_TRUE(bool(s)) << errorText(s.takeError());
      EXPECT_EQ(s->chunksPerLoop, 5 * 6);
      EXPECT_FALSE(bool(verifySchedule(*s)));
      // Channel 1's ring: rank 0 sends to 3 (one chunk), rank 3 to 1.
      int sendsTo3 = 0;
      for (const Op &op : s->ranks[0].ops)
        if (op.kind == OpKind::Send && op.sendPeer == 3)
          ++sendsTo3;
      EXPECT_EQ(sendsTo3, c == Collective::AllReduce ? 2 * 4 : 4);
    }
}

TEST(LowerRingTest, WideStepsVerifyAndCostOneStepPerPiece) {
  // Channel shares 3, 1, 2 (x2 pieces): a wide step moves the whole share,
  // so every channel has the steps of one chunk per piece; the verifier
  // proves the collective, in and out of place.
  for (Collective c : {Collective::AllReduce, Collective::AllGather,
                       Collective::ReduceScatter})
    for (bool inplace : {false, true}) {
      SCOPED_TRACE(std::string(collectiveName(c)) +
                   (inplace ? " inplace" : " outofplace"));
      RingOptions o = opts(c, 5, 3, 2, inplace);
      o.channelOrders = {{0, 1, 2, 3, 4}, {0, 3, 1, 4, 2}, {4, 0, 2, 1, 3}};
      o.channelChunks = {6, 2, 4};
      o.channelWidths = {3, 1, 2};
      auto s = lowerRing(o);
      ASSERT_TRUE(bool(s)) << errorText(s.takeError());
      EXPECT_EQ(s->chunksPerLoop, 5 * 12);
      llvm::Error problems = verifySchedule(*s);
      EXPECT_FALSE(bool(problems)) << errorText(std::move(problems));
      // Rank 0 sends to 1 only on channel 0 (width 3) and to 3 only on
      // channel 1 (width 1; channel 2 sends to 2): 2 pieces x ring steps
      // each, whatever the width.
      const int hops = c == Collective::AllReduce ? 2 * 4 : 4;
      int to1 = 0, to3 = 0;
      for (const Op &op : s->ranks[0].ops)
        if (sends(op.kind)) {
          if (op.sendPeer == 1) {
            ++to1;
            EXPECT_EQ(op.wireCount(), 3);
          }
          if (op.sendPeer == 3) {
            ++to3;
            EXPECT_EQ(op.wireCount(), 1);
          }
        }
      EXPECT_EQ(to1, 2 * hops);
      EXPECT_EQ(to3, 2 * hops);
      // Message ids stay dense: one per piece, hop and sender.
      EXPECT_EQ(s->numMessages(), (2 + 2 + 2) * hops * 5);
    }
}

TEST(LowerRingTest, WideStepsErrors) {
  RingOptions o = opts(Collective::AllReduce, 3, 2);
  o.channelChunks = {4, 3};
  o.channelWidths = {2};
  auto s = lowerRing(o);
  ASSERT_FALSE(bool(s));
  EXPECT_EQ(errorText(s.takeError()),
            "1 per-channel step widths for 2 channels");
  o.channelWidths = {3, 0};
  s = lowerRing(o);
  ASSERT_FALSE(bool(s));
  EXPECT_EQ(errorText(s.takeError()),
            "channel 0: a step width of 3 does not divide its 4 chunks\n"
            "channel 1: a step width of 0 does not divide its 3 chunks");
}

TEST(LowerRingTest, SearchedRingsWide) {
  // Quantised shares become widths; --chunks counts the pieces.
  std::vector<analysis::RingChannel> rings(2);
  rings[0].order = {0, 1, 2};
  rings[0].units = 3;
  rings[1].order = {0, 2, 1};
  rings[1].units = 1;
  RingOptions o = topocc::passes::searchedRingOptions(
      rings, Collective::AllReduce, 3, 2, /*wide=*/true);
  EXPECT_EQ(o.channelChunks, (std::vector<int32_t>{6, 2}));
  EXPECT_EQ(o.channelWidths, (std::vector<int32_t>{3, 1}));
  o = topocc::passes::searchedRingOptions(rings, Collective::AllReduce, 3, 2);
  EXPECT_EQ(o.channelChunks, (std::vector<int32_t>{6, 2}));
  EXPECT_TRUE(o.channelWidths.empty());
  // Shares without units: the pipelined split (chunksForShares, 8 units)
  // gives the widths, and each channel has --chunks pieces of them.
  rings[0].units = rings[1].units = 0;
  rings[0].share = 0.75;
  rings[1].share = 0.25;
  o = topocc::passes::searchedRingOptions(rings, Collective::AllGather, 3, 4,
                                          /*wide=*/true);
  EXPECT_EQ(o.channelWidths, (std::vector<int32_t>{6, 2}));
  EXPECT_EQ(o.channelChunks, (std::vector<int32_t>{24, 8}));
}

TEST(LowerRingTest, PerChannelErrors) {
  RingOptions o = opts(Collective::AllReduce, 3, 2);
  o.channelOrders = {{0, 1, 2}};
  o.channelChunks = {1, 0};
  auto s = lowerRing(o);
  ASSERT_FALSE(bool(s));
  EXPECT_EQ(errorText(s.takeError()),
            "1 per-channel ring orders for 2 channels\n"
            "channel 1 has 0 chunks; every channel needs at least 1");
  o.channelOrders = {{0, 1, 2}, {0, 1, 1}};
  o.channelChunks = {};
  s = lowerRing(o);
  ASSERT_FALSE(bool(s));
  EXPECT_EQ(errorText(s.takeError()),
            "channel 1: invalid ring order '0,1,1': expected a permutation of "
            "0..2; rank 1 appears more than once; rank 2 is missing");
}

TEST(LowerRingTest, ChunksForSharesLargestRemainder) {
  // The units are the smallest power of two at least channels * chunks.
  EXPECT_EQ(chunksForShares({0.25, 0.25, 0.25, 0.25}, 3),
            (std::vector<int32_t>{4, 4, 4, 4}));
  // 8 units: 0.275*8 = 2.2 (x3), 0.175*8 = 1.4 -> 2,2,2,1 + 1 to the
  // largest remainder (channel 3: 0.4).
  EXPECT_EQ(chunksForShares({0.275, 0.275, 0.275, 0.175}, 2),
            (std::vector<int32_t>{2, 2, 2, 2}));
  // 32 units: 19.2, 9.6, 3.2 -> 19, 9, 3 + 1 to channel 1.
  EXPECT_EQ(chunksForShares({0.6, 0.3, 0.1}, 10),
            (std::vector<int32_t>{19, 10, 3}));
  // Every channel keeps at least one unit (4 units: 4, 0, 0 -> 2, 1, 1).
  EXPECT_EQ(chunksForShares({0.98, 0.01, 0.01}, 1),
            (std::vector<int32_t>{2, 1, 1}));
  EXPECT_EQ(chunksForShares({0.9, 0.05, 0.05}, 4),
            (std::vector<int32_t>{14, 1, 1}));
  // Ties go to the lower channel.
  EXPECT_EQ(chunksForShares({0.5, 0.5}, 1), (std::vector<int32_t>{1, 1}));
  EXPECT_EQ(chunksForShares({1.0 / 3, 1.0 / 3, 1.0 / 3}, 1),
            (std::vector<int32_t>{2, 1, 1}));
  EXPECT_EQ(chunksForShares({0.4, 0.4, 0.2}, 2),
            (std::vector<int32_t>{3, 3, 2}));
  for (int32_t chunks : {1, 2, 3, 5, 8})
    for (size_t n : {1, 3, 5, 6, 7}) {
      std::vector<double> shares(n, 1.0 / static_cast<double>(n));
      std::vector<int32_t> kc = chunksForShares(shares, chunks);
      int32_t total = 0;
      for (int32_t k : kc)
        total += k;
      EXPECT_TRUE(llvm::isPowerOf2_32(static_cast<uint32_t>(total)))
          << n << " channels, " << chunks << " chunks: " << total;
      EXPECT_GE(total, static_cast<int32_t>(n) * chunks);
    }
}

} // namespace
