//===- tests/unit/ir/VerifierTest.cpp - Verifier rejections ---------------===//

#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"

#include "TestSchedules.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

using namespace topocc::ir;
using namespace topocc::ir::testing;
using ::testing::HasSubstr;

namespace {

/// All problems, one "rank R %OP: message" per line.
std::string problemsOf(const Schedule &s, VerifyOptions opts = {}) {
  std::string out;
  for (const VerifyProblem &p : findProblems(s, opts))
    out += formatProblem(p) + "\n";
  return out;
}

} // namespace

TEST(Verifier, AcceptsHandBuilt) {
  for (int n : {2, 3, 4, 7}) {
    EXPECT_EQ(problemsOf(ringAllReduce(n)), "") << n;
    EXPECT_EQ(problemsOf(ringAllReduce(n, Stage::Lowered)), "") << n;
    EXPECT_EQ(problemsOf(ringAllReduce(n, Stage::ChannelsAssigned)), "") << n;
  }
  EXPECT_EQ(problemsOf(directAllGather(4, 2)), "");
  EXPECT_EQ(problemsOf(scratchAllReduce2(false)), "");
  EXPECT_EQ(problemsOf(scratchAllReduce2(true)), "");
  EXPECT_FALSE(static_cast<bool>(verifySchedule(ringAllReduce(3))));
}

TEST(Verifier, HugeDeclaredBuffersAreAnErrorNotAnAllocation) {
  // A damaged plan header: 2e9 scratch chunks that no op uses, and a
  // chunksPerLoop of 2^30 with unused (0) inputs and outputs.
  Schedule s = scratchAllReduce2(false);
  s.ranks[0].scratchChunks = 2000000000;
  EXPECT_EQ(problemsOf(s),
            "the buffers declare 2000000010 chunks over all ranks; the "
            "verifier checks schedules of at most 67108864\n");
  Schedule t = ringAllReduce(2);
  t.chunksPerLoop = 1 << 30;
  for (RankProgram &rp : t.ranks)
    rp.inputChunks = rp.outputChunks = 0;
  EXPECT_THAT(problemsOf(t), HasSubstr("the buffers declare 4294967296 "
                                       "chunks over all ranks"));
  // The structural checks keep no state per slot: compile checks a large
  // lowering's structure (its scratch is fused away before the full check).
  VerifyOptions structure;
  structure.checkRaces = false;
  structure.checkSemantics = false;
  EXPECT_EQ(problemsOf(s, structure), "");
  structure.checkDeadlock = false;
  EXPECT_EQ(problemsOf(s, structure), "");
}

TEST(Verifier, UnmatchedMessage) {
  Schedule s = ringAllReduce(3);
  // Rank 1's final recv of message 3 becomes a nop.
  Op &op = s.ranks[1].ops[4];
  op = Op();
  op.threadblock = 0;
  op.deps = {};
  EXPECT_THAT(problemsOf(s), HasSubstr("rank 0 %3: message 3 has no "
                                       "receiving op"));
}

TEST(Verifier, CountMismatch) {
  Schedule s = directAllGather(3);
  s.ranks[1].ops[2].dst.count = 2; // receives out[0+2] from r0
  EXPECT_EQ(problemsOf(s), "rank 1 %2: receives 2 chunks in message 1, but "
                           "rank 0 %1 sends 1\n");
}

TEST(Verifier, OutOfRangeOffset) {
  Schedule s = ringAllReduce(4);
  s.ranks[0].ops[3].dst.chunk = 4;
  EXPECT_EQ(problemsOf(s),
            "rank 0 %3: writes in[4+1] past the input buffer (4 chunks)\n");
  s = ringAllReduce(4);
  s.ranks[0].ops[0].src = in(-1);
  EXPECT_EQ(problemsOf(s),
            "rank 0 %0: reads in[-1+1] before the start of the input buffer\n");
  s = ringAllReduce(4);
  s.ranks[2].ops[0].src.count = 0;
  EXPECT_THAT(problemsOf(s), HasSubstr("rank 2 %0: send source in[2+0]: a "
                                       "used operand needs at least one "
                                       "chunk"));
}

TEST(Verifier, PeersAndDeps) {
  Schedule s = ringAllReduce(3, Stage::Lowered);
  s.ranks[0].ops[0].sendPeer = 0;
  s.ranks[1].ops[2].deps.push_back(9);
  s.ranks[2].ops[1].deps.push_back(1);
  EXPECT_EQ(problemsOf(s),
            "rank 0 %0: send peer is the op's own rank\n"
            "rank 1 %2: depends on %9, which does not exist (5 ops)\n"
            "rank 2 %1: depends on itself\n");
}

TEST(Verifier, DependencyCycleIsPrinted) {
  Schedule s = ringAllReduce(3, Stage::Lowered);
  s.ranks[1].ops[1].deps.push_back(3); // %1 after %3, but %3 after %2 after %1
  std::string p = problemsOf(s);
  EXPECT_EQ(p, "rank 1 %1: dependency cycle (deadlock):\n"
               "    rank 1: %1 = rrs   in[0+1] <- r0 msg=0 -> r2 msg=5 "
               "deps(%0, %3)\n"
               "    rank 1: %2 = rrcs  in[2+1], in[2+1] <- r0 msg=1 -> r2 "
               "msg=6 deps(%1)\n"
               "    rank 1: %3 = rcs   in[1+1] <- r0 msg=2 -> r2 msg=7 "
               "deps(%2)\n");
}

TEST(Verifier, CrossRankCycle) {
  // Two ranks that each receive before they send.
  Schedule s = scratchAllReduce2();
  for (int r = 0; r < 2; ++r) {
    std::swap(s.ranks[r].ops[0], s.ranks[r].ops[1]);
    s.ranks[r].ops[0].threadblock = 0;
    s.ranks[r].ops[1].threadblock = 0;
    s.ranks[r].ops[2].threadblock = 0;
    s.ranks[r].ops[2].deps.clear();
  }
  std::string p = problemsOf(s);
  EXPECT_THAT(p, HasSubstr("dependency cycle (deadlock):\n"
                           "    rank 0: %0 = recv  sc[0+2] <- r1 msg=1"));
  EXPECT_THAT(p, HasSubstr("    rank 1: %1 = send  in[0+2]"));
}

TEST(Verifier, FifoViolation) {
  // Rank 0 sends two messages to rank 1 on one connection; rank 1 receives
  // them in the opposite order.
  const char *text = R"(schedule @fifo collective=allgather ranks=2 chunks=4 inplace=0 stage=threadblocks channels=1
rank 0 in=2 out=4 sc=0 {
  %0 = copy  out[0+2], in[0+2] ch=0 tb=0
  %1 = send  in[0+1]             -> r1 msg=0 ch=0 tb=1
  %2 = send  in[1+1]             -> r1 msg=1 ch=0 tb=1
  %3 = recv  out[2+1] <- r1 msg=2 ch=0 tb=2
  %4 = recv  out[3+1] <- r1 msg=3 ch=0 tb=2
}
rank 1 in=2 out=4 sc=0 {
  %0 = copy  out[2+2], in[0+2] ch=0 tb=0
  %1 = recv  out[1+1] <- r0 msg=1 ch=0 tb=1
  %2 = recv  out[0+1] <- r0 msg=0 ch=0 tb=1
  %3 = send  in[0+1]             -> r0 msg=2 ch=0 tb=2
  %4 = send  in[1+1]             -> r0 msg=3 ch=0 tb=2
}
)";
  auto s = parseSchedule(text, "fifo");
  ASSERT_TRUE(static_cast<bool>(s)) << llvm::toString(s.takeError());
  EXPECT_EQ(problemsOf(*s),
            "rank 1 %1: FIFO order: receives message 1 as number 0 from r0 "
            "on channel 0, but rank 0 sends message 0 (%1) as number 0\n");
  // Before threadblocks exist there is no FIFO to check.
  s->stage = Stage::ChannelsAssigned;
  EXPECT_EQ(problemsOf(*s), "");
}

TEST(Verifier, DataRace) {
  // The reduce into in[] no longer waits for the send that reads in[].
  Schedule s = scratchAllReduce2();
  s.ranks[1].ops[2].deps.clear();
  EXPECT_EQ(problemsOf(s),
            "rank 1 %2: data race: writes in[0+1], which %0 reads, and the "
            "two ops are not ordered\n");
  // Through in-place aliasing: out[] of an in-place allreduce is in[].
  s = scratchAllReduce2();
  s.ranks[0].ops[2].dst = out(0, 2);
  s.ranks[0].ops[2].deps.clear();
  EXPECT_THAT(problemsOf(s), HasSubstr("rank 0 %2: data race: writes "
                                       "out[0+1], which %0 reads"));
  // Ordered through another rank is fine: the reduce follows the receive,
  // which follows the peer's send, which follows... nothing on this rank, so
  // the race stays. Ordered by a dep is fine.
  s = scratchAllReduce2();
  s.inplace = false; // out[] is separate memory now: no conflict at all
  s.ranks[0].ops[2].dst = out(0, 2);
  s.ranks[0].ops[2].deps.clear();
  s.ranks[0].ops[2].kind = OpKind::Copy;
  s.ranks[0].ops[2].src = sc(0, 2);
  EXPECT_THAT(problemsOf(s, {.checkSemantics = false}), "");
}

// Rank 0 overwrites in[0] after sending it; the overwrite waits for the
// reply, which rank 1 sends after receiving in[0]: ordered only through the
// other rank (the race check's same-rank search finds no path, the search
// through every rank does). Without rank 1's dependency it is a race.
TEST(Verifier, AccessesOrderedOnlyThroughAnotherRank) {
  auto make = [](llvm::StringRef reply) {
    std::string text =
        (R"(schedule @x collective=allreduce ranks=2 chunks=1 inplace=0 stage=lowered
rank 0 in=1 out=1 sc=0 {
  %0 = send  in[0+1]  -> r1 msg=0
  %1 = recv  out[0+1] <- r1 msg=1
  %2 = copy  in[0+1], out[0+1] deps(%1)
}
rank 1 in=1 out=1 sc=0 {
  %0 = recv  out[0+1] <- r0 msg=0
  %1 = send  in[0+1]  -> r0 msg=1)" +
         reply + "\n}\n")
            .str();
    auto parsed = parseSchedule(text, "t.ir");
    EXPECT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
    return std::move(*parsed);
  };
  EXPECT_EQ(problemsOf(make(" deps(%0)"), {.checkSemantics = false}), "");
  EXPECT_EQ(problemsOf(make(""), {.checkSemantics = false}),
            "rank 0 %2: data race: writes in[0+1], which %0 reads, and the "
            "two ops are not ordered\n");
}

// With threadblocks, one rank's accesses are ordered through the rank's own
// program order and dependencies across threadblocks (the race check's
// threadblock clocks), or only through another rank (the clocks cannot
// tell; the search through every rank can).
TEST(Verifier, RacesAcrossThreadblocks) {
  auto parse = [](const std::string &text) {
    auto parsed = parseSchedule(text, "t.ir");
    EXPECT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
    return std::move(*parsed);
  };
  // %0 writes out[0]; %3 writes it again, after %0 only through %1 (tb 1)
  // and %2 (tb 2, program order before %3).
  auto chain = [&](llvm::StringRef dep) {
    return parse(
        (R"(schedule @x collective=allreduce ranks=1 chunks=1 inplace=0 stage=threadblocks channels=1
rank 0 in=1 out=1 sc=2 {
  %0 = copy  out[0+1], in[0+1] ch=0 tb=0
  %1 = copy  sc[0+1], out[0+1] ch=0 tb=1 deps(%0)
  %2 = copy  sc[1+1], sc[0+1] ch=0 tb=2)" +
         dep + R"(
  %3 = copy  out[0+1], sc[1+1] ch=0 tb=2
}
)")
            .str());
  };
  const VerifyOptions noSemantics{.checkSemantics = false};
  EXPECT_EQ(problemsOf(chain(" deps(%1)"), noSemantics), "");
  // Without %2's dependency nothing orders tb 2 after tb 1.
  EXPECT_EQ(problemsOf(chain(""), noSemantics),
            "rank 0 %1: data race: writes sc[0+1], which %2 reads, and the "
            "two ops are not ordered\n"
            "rank 0 %3: data race: writes out[0+1], which %1 reads, and the "
            "two ops are not ordered\n");
  // Rank 0's %2 overwrites in[0] after %0 sent it, ordered only by rank 1's
  // reply.
  auto reply = [&](llvm::StringRef dep) {
    return parse(
        (R"(schedule @x collective=allreduce ranks=2 chunks=1 inplace=0 stage=threadblocks channels=1
rank 0 in=1 out=1 sc=0 {
  %0 = send  in[0+1]  -> r1 msg=0 ch=0 tb=0
  %1 = recv  out[0+1] <- r1 msg=1 ch=0 tb=1
  %2 = copy  in[0+1], out[0+1] ch=0 tb=2 deps(%1)
}
rank 1 in=1 out=1 sc=0 {
  %0 = recv  out[0+1] <- r0 msg=0 ch=0 tb=0
  %1 = send  in[0+1]  -> r0 msg=1 ch=0 tb=1)" +
         dep + "\n}\n")
            .str());
  };
  EXPECT_EQ(problemsOf(reply(" deps(%0)"), noSemantics), "");
  EXPECT_EQ(problemsOf(reply(""), noSemantics),
            "rank 0 %2: data race: writes in[0+1], which %0 reads, and the "
            "two ops are not ordered\n");
}

TEST(Verifier, TwoSendPeersInOneThreadblock) {
  Schedule s = directAllGather(3);
  for (Op &op : s.ranks[0].ops)
    if (op.threadblock == 2)
      op.threadblock = 1;
  EXPECT_EQ(problemsOf(s),
            "rank 0 %3: threadblock 1 sends to r2 here but to r1 at %1 (one "
            "send peer per threadblock)\n"
            "rank 0 %4: threadblock 1 receives from r2 here but from r1 at "
            "%2 (one receive peer per threadblock)\n");
}

TEST(Verifier, LegalizedCrossThreadblockDeps) {
  Schedule s = directAllGather(3);
  // %5 (tb 2's recv... ) gets two cross-threadblock deps.
  s.ranks[0].ops[4].deps = {0, 1};
  EXPECT_EQ(problemsOf(s),
            "rank 0 %4: has 2 dependencies on other threadblocks; after "
            "legalization at most one (carry the others on preceding nops)\n");
  // Legal form: a nop carries the first.
  Op nop;
  nop.kind = OpKind::Nop;
  nop.channel = 0;
  nop.threadblock = 2;
  nop.deps = {0};
  s.ranks[0].ops[4].deps = {1};
  s.ranks[0].ops.insert(s.ranks[0].ops.begin() + 4, nop);
  s.ranks[0].ops[5].deps = {1};
  EXPECT_EQ(problemsOf(s), "");
  // Before legalization any number is fine.
  s = directAllGather(3);
  s.ranks[0].ops[4].deps = {0, 1};
  s.stage = Stage::ThreadblocksAssigned;
  EXPECT_EQ(problemsOf(s), "");
}

TEST(Verifier, LegalizedNopRules) {
  Schedule s = directAllGather(3);
  Op nop;
  nop.kind = OpKind::Nop;
  nop.channel = 0;
  nop.threadblock = 2;
  nop.deps = {0};
  s.ranks[0].ops.push_back(nop); // at the end of tb 2
  s.ranks[0].ops[2].deps = {1}; // redundant: same threadblock
  EXPECT_EQ(problemsOf(s),
            "rank 0 %2: redundant dependency on %1 of the same threadblock "
            "1\n"
            "rank 0 %5: nop at the end of threadblock 2: MSCCL drops it with "
            "its wait\n");
}

TEST(Verifier, StageChannels) {
  Schedule s = ringAllReduce(3);
  s.ranks[2].ops[1].channel = 1;
  s.ranks[0].ops[0].channel = kNone;
  std::string p = problemsOf(s);
  EXPECT_THAT(p, HasSubstr("rank 0 %0: has no channel"));
  EXPECT_THAT(p, HasSubstr("rank 2 %1: channel 1 is out of range (1 "
                           "channels)"));
}

TEST(Verifier, ErrorText) {
  Schedule s = ringAllReduce(3);
  s.ranks[0].ops[0].src.chunk = 7;
  llvm::Error err = verifySchedule(s);
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_EQ(llvm::toString(std::move(err)),
            "error: schedule @ring3_allreduce (stage legalized) is invalid:\n"
            "  rank 0 %0: reads in[7+1] past the input buffer (3 chunks)\n");
}

TEST(Verifier, LargeRingIsFast) {
  // 64 ranks x 127 ops, Lowered (no program order: races decided by deps).
  Schedule s = ringAllReduce(64, Stage::Lowered);
  EXPECT_EQ(problemsOf(s), "");
}
