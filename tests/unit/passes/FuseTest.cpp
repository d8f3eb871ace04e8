//===- tests/unit/passes/FuseTest.cpp - Fusion into MSCCL primitives ------===//

#include "compiler/passes/Fuse.h"
#include "compiler/passes/LowerRing.h"

#include "ir/Printer.h"
#include "ir/Verifier.h"

#include "gtest/gtest.h"

using namespace topocc;
using namespace topocc::ir;

namespace {

Schedule lowered(Collective c, int n, bool inplace, int channels = 1,
                 int chunks = 1) {
  passes::RingOptions o;
  o.collective = c;
  o.numRanks = n;
  o.inplace = inplace;
  o.channels = channels;
  o.chunks = chunks;
  auto s = passes::lowerRing(o);
  EXPECT_TRUE(bool(s));
  return s ? std::move(*s) : Schedule();
}

std::string kinds(const RankProgram &rp) {
  std::string out;
  for (const Op &op : rp.ops)
    out += (out.empty() ? "" : " ") + mnemonic(op.kind).str();
  return out;
}

TEST(FuseTest, RingAllReduceInPlaceIsTheMscclReferenceShape) {
  Schedule s = lowered(Collective::AllReduce, 4, true);
  passes::fuse(s);
  EXPECT_EQ(s.stage, Stage::Fused);
  for (const RankProgram &rp : s.ranks) {
    EXPECT_EQ(kinds(rp), "send rrs rrs rrcs rcs rcs recv");
    EXPECT_EQ(rp.scratchChunks, 0);
  }
  EXPECT_FALSE(bool(verifySchedule(s))) << scheduleToString(s);
}

TEST(FuseTest, OutOfPlaceAndOtherCollectives) {
  struct Case {
    Collective c;
    bool inplace;
    const char *shape;
  } cases[] = {
      {Collective::AllReduce, false, "send rrs rrcs rcs recv"},
      {Collective::ReduceScatter, false, "send rrs rrc"},
      {Collective::ReduceScatter, true, "send rrs rrc"},
      {Collective::AllGather, false, "send rcs recv copy"},
      {Collective::AllGather, true, "send rcs recv"},
  };
  for (const Case &c : cases) {
    Schedule s = lowered(c.c, 3, c.inplace);
    passes::fuse(s);
    EXPECT_EQ(kinds(s.ranks[0]), c.shape) << collectiveName(c.c).str();
    EXPECT_EQ(s.ranks[0].scratchChunks, 0);
    EXPECT_FALSE(bool(verifySchedule(s))) << scheduleToString(s);
  }
}

TEST(FuseTest, LocalOperandOfRrcIsTheReceivingRanksSlot) {
  Schedule s = lowered(Collective::AllReduce, 2, false);
  passes::fuse(s);
  // Rank 0: send in[0]; rrcs out[1] = in[1] + msg; recv out[0].
  const Op &op = s.ranks[0].ops[1];
  ASSERT_EQ(op.kind, OpKind::RecvReduceCopySend);
  EXPECT_EQ(op.src, (BufferRef{BufferKind::Input, 1, 1}));
  EXPECT_EQ(op.dst, (BufferRef{BufferKind::Output, 1, 1}));
}

TEST(FuseTest, PipelinedChunksKeepFifoOrder) {
  Schedule s = lowered(Collective::AllReduce, 3, true, 2, 3);
  passes::fuse(s);
  EXPECT_EQ(s.ranks[0].ops.size(), size_t(2 * 3 * 5));
  EXPECT_FALSE(bool(verifySchedule(s))) << scheduleToString(s);
}

/// recv(t) ; reduce(x += t) where t is read again later must not lose the
/// write to t.
TEST(FuseTest, ScratchReadElsewhereIsNotFused) {
  Schedule s;
  s.collective = Collective::AllReduce;
  s.numRanks = 2;
  s.chunksPerLoop = 1;
  s.inplace = true;
  s.ranks.resize(2);
  for (RankId r = 0; r < 2; ++r) {
    RankProgram &rp = s.ranks[r];
    rp.inputChunks = 1;
    rp.scratchChunks = 1;
    Op send;
    send.kind = OpKind::Send;
    send.src = {BufferKind::Input, 0, 1};
    send.sendPeer = 1 - r;
    send.sendMsg = r;
    Op recv;
    recv.kind = OpKind::Recv;
    recv.dst = {BufferKind::Scratch, 0, 1};
    recv.recvPeer = 1 - r;
    recv.recvMsg = 1 - r;
    recv.deps = {0};
    Op red;
    red.kind = OpKind::Reduce;
    red.dst = {BufferKind::Input, 0, 1};
    red.src = {BufferKind::Scratch, 0, 1};
    red.deps = {1};
    Op copy; // a second reader of the scratch slot
    copy.kind = OpKind::Copy;
    copy.src = {BufferKind::Scratch, 0, 1};
    copy.dst = {BufferKind::Scratch, 0, 1};
    copy.deps = {2};
    rp.ops = {send, recv, red};
    if (r == 0)
      rp.ops.push_back(copy);
  }
  passes::fuse(s);
  EXPECT_EQ(kinds(s.ranks[0]), "send recv reduce copy");
  EXPECT_EQ(kinds(s.ranks[1]), "send rrc");
  EXPECT_EQ(s.ranks[0].scratchChunks, 1);
  EXPECT_EQ(s.ranks[1].scratchChunks, 0);
}

TEST(FuseTest, IsIdempotent) {
  Schedule s = lowered(Collective::AllGather, 4, false, 2, 2);
  passes::fuse(s);
  std::string once = scheduleToString(s);
  passes::fuse(s);
  EXPECT_EQ(scheduleToString(s), once);
}

} // namespace
