//===- tests/unit/ir/ScheduleTest.cpp - Op tables and schedule queries ----===//

#include "ir/Schedule.h"

#include "TestSchedules.h"

#include "gtest/gtest.h"

using namespace topocc::ir;
using namespace topocc::ir::testing;

TEST(OpKinds, TablesRoundTrip) {
  EXPECT_EQ(kNumOpKinds, 10u);
  for (unsigned i = 0; i < kNumOpKinds; ++i) {
    auto k = static_cast<OpKind>(i);
    EXPECT_EQ(opKindFromMnemonic(mnemonic(k)), k) << i;
    if (!mscclCode(k).empty()) {
      EXPECT_EQ(opKindFromMscclCode(mscclCode(k)), k) << i;
    }
  }
  EXPECT_EQ(mnemonic(OpKind::RecvReduceCopySend).str(), "rrcs");
  EXPECT_EQ(mscclCode(OpKind::Copy).str(), "cpy");
  EXPECT_EQ(mscclCode(OpKind::LinComb).str(), "");
  EXPECT_FALSE(opKindFromMscclCode(""));
  EXPECT_FALSE(opKindFromMnemonic("sned"));
  EXPECT_TRUE(sends(OpKind::RecvReduceSend));
  EXPECT_TRUE(receives(OpKind::RecvReduceSend));
  EXPECT_FALSE(writesDst(OpKind::RecvReduceSend));
  EXPECT_TRUE(opFlags(OpKind::Reduce) & OF_RD);
  EXPECT_EQ(opFlags(OpKind::Nop), 0u);
}

TEST(Names, RoundTrip) {
  for (auto c : {Collective::AllReduce, Collective::AllGather,
                 Collective::ReduceScatter, Collective::Broadcast,
                 Collective::Reduce, Collective::AllToAll})
    EXPECT_EQ(collectiveFromName(collectiveName(c)), c);
  for (auto st : {Stage::Lowered, Stage::Fused, Stage::ChannelsAssigned,
                  Stage::ThreadblocksAssigned, Stage::Legalized})
    EXPECT_EQ(stageFromName(stageName(st)), st);
  EXPECT_EQ(stageName(Stage::ChannelsAssigned).str(), "channels");
  EXPECT_EQ(bufferName(BufferKind::Scratch).str(), "sc");
  EXPECT_FALSE(collectiveFromName("reduce_scatter"));
}

TEST(Op, WireCount) {
  Op send;
  send.kind = OpKind::Send;
  send.src = in(0, 3);
  EXPECT_EQ(send.wireCount(), 3);
  Op rrs;
  rrs.kind = OpKind::RecvReduceSend;
  rrs.src = in(0, 2);
  EXPECT_EQ(rrs.wireCount(), 2);
  Op recv;
  recv.kind = OpKind::Recv;
  recv.dst = out(1, 4);
  EXPECT_EQ(recv.wireCount(), 4);
  Op copy;
  copy.kind = OpKind::Copy;
  copy.src = in(0, 2);
  copy.dst = out(0, 2);
  EXPECT_EQ(copy.wireCount(), 0);
}

TEST(Schedule, NominalSizesAndMessages) {
  Schedule s = directAllGather(4, 2);
  EXPECT_EQ(s.nominalInputChunks(), 2);
  EXPECT_EQ(s.nominalOutputChunks(), 8);
  s.collective = Collective::ReduceScatter;
  EXPECT_EQ(s.nominalInputChunks(), 8);
  EXPECT_EQ(s.nominalOutputChunks(), 2);
  s.collective = Collective::AllToAll;
  EXPECT_EQ(s.nominalInputChunks(), 8);
  EXPECT_EQ(s.nominalOutputChunks(), 8);

  Schedule ring = ringAllReduce(3);
  EXPECT_EQ(ring.numMessages(), 12);
  std::vector<MsgEnds> ends = indexMessages(ring);
  ASSERT_EQ(ends.size(), 12u);
  // Rank 1 step 2 (rrcs) sends message 6, received by rank 2 step 3.
  EXPECT_EQ(ends[6].sender, 1);
  EXPECT_EQ(ends[6].sendOp, 2);
  EXPECT_EQ(ends[6].receiver, 2);
  EXPECT_EQ(ends[6].recvOp, 3);
  Schedule empty;
  EXPECT_EQ(empty.numMessages(), 0);
  EXPECT_TRUE(indexMessages(empty).empty());
}
