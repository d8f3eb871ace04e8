//===- tests/unit/ir/PrinterParserTest.cpp - Textual IR round trips -------===//

#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/PrinterUtil.h"

#include "TestSchedules.h"

#include "gtest/gtest.h"

#include <cmath>
#include <limits>

using namespace topocc::ir;
using namespace topocc::ir::testing;

namespace {

std::string roundTrip(const Schedule &s) {
  std::string first = scheduleToString(s);
  auto parsed = parseSchedule(first, "test.ir");
  if (!parsed) {
    ADD_FAILURE() << llvm::toString(parsed.takeError()) << "\n" << first;
    return first;
  }
  std::string second = scheduleToString(*parsed);
  EXPECT_EQ(first, second);
  return first;
}

std::string parseError(llvm::StringRef text) {
  auto parsed = parseSchedule(text, "t.ir");
  if (parsed) {
    ADD_FAILURE() << "parsed:\n" << text.str();
    return "";
  }
  return llvm::toString(parsed.takeError());
}

} // namespace

TEST(Printer, RingExactText) {
  Schedule s = ringAllReduce(3);
  EXPECT_EQ(scheduleToString(s),
            "schedule @ring3_allreduce collective=allreduce ranks=3 chunks=3 "
            "inplace=1 stage=legalized channels=1\n"
            "rank 0 in=3 out=3 sc=0 {\n"
            "  %0 = send  in[0+1]             -> r1 msg=0 ch=0 tb=0\n"
            "  %1 = rrs   in[2+1] <- r2 msg=8 -> r1 msg=1 ch=0 tb=0\n"
            "  %2 = rrcs  in[1+1], in[1+1] <- r2 msg=9 -> r1 msg=2 ch=0 tb=0\n"
            "  %3 = rcs   in[0+1] <- r2 msg=10 -> r1 msg=3 ch=0 tb=0\n"
            "  %4 = recv  in[2+1] <- r2 msg=11 ch=0 tb=0\n"
            "}\n"
            "rank 1 in=3 out=3 sc=0 {\n"
            "  %0 = send  in[1+1]             -> r2 msg=4 ch=0 tb=0\n"
            "  %1 = rrs   in[0+1] <- r0 msg=0 -> r2 msg=5 ch=0 tb=0\n"
            "  %2 = rrcs  in[2+1], in[2+1] <- r0 msg=1 -> r2 msg=6 ch=0 tb=0\n"
            "  %3 = rcs   in[1+1] <- r0 msg=2 -> r2 msg=7 ch=0 tb=0\n"
            "  %4 = recv  in[0+1] <- r0 msg=3 ch=0 tb=0\n"
            "}\n"
            "rank 2 in=3 out=3 sc=0 {\n"
            "  %0 = send  in[2+1]             -> r0 msg=8 ch=0 tb=0\n"
            "  %1 = rrs   in[1+1] <- r1 msg=4 -> r0 msg=9 ch=0 tb=0\n"
            "  %2 = rrcs  in[0+1], in[0+1] <- r1 msg=5 -> r0 msg=10 ch=0 tb=0\n"
            "  %3 = rcs   in[2+1] <- r1 msg=6 -> r0 msg=11 ch=0 tb=0\n"
            "  %4 = recv  in[1+1] <- r1 msg=7 ch=0 tb=0\n"
            "}\n");
}

TEST(Printer, RoundTripHandBuilt) {
  roundTrip(ringAllReduce(4));
  roundTrip(ringAllReduce(5, Stage::Lowered));
  roundTrip(directAllGather(3, 2));
  roundTrip(scratchAllReduce2(false));
  roundTrip(scratchAllReduce2(true));
}

TEST(Printer, RoundTripEveryField) {
  Schedule s = scratchAllReduce2(true);
  s.name = "weird name \"q\"\n";
  s.collective = Collective::Broadcast;
  s.root = 1;
  Op &lc = s.ranks[0].ops[2];
  lc.terms[0].coeff = 0.1;
  lc.terms[1].coeff = -1.0 / 3.0;
  Op &rcv = s.ranks[1].ops[1];
  rcv.msgCoeff = 1e-300;
  rcv.localCoeff = -0.0;       // not used by recv, printed anyway
  rcv.src = sc(1, 1);          // likewise
  s.ranks[1].ops[0].terms = {LinTerm{2.5, in(0, 1)}};
  s.ranks[1].ops[0].deps = {2, 1};
  Op nop;
  nop.deps = {0};
  nop.threadblock = 3;
  s.ranks[1].ops.push_back(nop);
  std::string text = roundTrip(s);
  EXPECT_NE(text.find("@\"weird name \\\"q\\\"\\0A\""), std::string::npos)
      << text;
  EXPECT_NE(text.find("lincomb in[0+2], 0.1*in[0+2], "
                      "-0.3333333333333333*sc[0+2]"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("recv  sc[0+2] <- r0 msg=0 lc=-0 mc=1e-300 "
                      "src=sc[1+1] ch=0 tb=1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("%3 = nop   tb=3 deps(%0)"), std::string::npos) << text;
  auto parsed = parseSchedule(text, "x");
  ASSERT_TRUE(static_cast<bool>(parsed));
  EXPECT_EQ(parsed->name, s.name);
  EXPECT_EQ(parsed->ranks[0].ops[2].terms, lc.terms);
  EXPECT_EQ(parsed->ranks[1].ops[1].msgCoeff, 1e-300);
  EXPECT_TRUE(std::signbit(parsed->ranks[1].ops[1].localCoeff));
  EXPECT_EQ(parsed->ranks[1].ops[0].deps, (OpDeps{2, 1}));
  EXPECT_EQ(parsed->root, 1);
}

TEST(Printer, ShortestDoubles) {
  EXPECT_EQ(formatDouble(1.0), "1");
  EXPECT_EQ(formatDouble(0.5), "0.5");
  EXPECT_EQ(formatDouble(0.1), "0.1");
  EXPECT_EQ(formatDouble(-2.0), "-2");
  EXPECT_EQ(formatDouble(std::numeric_limits<double>::infinity()), "inf");
  for (double d : {1.0 / 3.0, 1e-310, 123456789.125, -7e22, 0.30000000000000004})
    EXPECT_EQ(std::strtod(formatDouble(d).c_str(), nullptr), d);
}

TEST(Parser, AcceptsArchitectureExample) {
  const char *text =
      "schedule @ring4_allreduce collective=allreduce ranks=2 chunks=4 "
      "inplace=1 stage=legalized channels=1\n"
      "rank 0 in=4 out=4 sc=0 {\n"
      "  %0 = send  in[0+1]             -> r1 msg=0 ch=0 tb=0\n"
      "  %1 = rrs   in[3+1] <- r1 msg=5 -> r1 msg=6 ch=0 tb=0 deps(%0)\n"
      "}\n"
      "// a comment\n"
      "rank 1 { # another\n"
      "}\n";
  auto s = parseSchedule(text, "x");
  ASSERT_TRUE(static_cast<bool>(s)) << llvm::toString(s.takeError());
  EXPECT_EQ(s->ranks[0].ops[1].kind, OpKind::RecvReduceSend);
  EXPECT_EQ(s->ranks[0].ops[1].src, in(3));
  EXPECT_EQ(s->ranks[0].ops[1].recvMsg, 5);
  EXPECT_EQ(s->ranks[0].ops[1].sendMsg, 6);
  EXPECT_EQ(s->ranks[0].ops[1].deps, (OpDeps{0}));
  EXPECT_EQ(s->ranks[1].inputChunks, 0);
}

TEST(Parser, ErrorMessages) {
  EXPECT_EQ(parseError("schedul @x"),
            "t.ir:1:1: error: expected 'schedule', got 'schedul'\n"
            "schedul @x\n"
            "^\n");
  EXPECT_EQ(parseError("schedule @x collective=allreduse ranks=1 chunks=1\n"),
            "t.ir:1:24: error: unknown collective 'allreduse'; did you mean "
            "'allreduce'?\n"
            "schedule @x collective=allreduse ranks=1 chunks=1\n"
            "                       ^\n");
  EXPECT_EQ(parseError("schedule @x collective=allreduce ranks=1 chunks=1\n"
                       "rank 0 {\n"
                       "  %0 = sned in[0+1] -> r1 msg=0\n"
                       "}\n"),
            "t.ir:3:8: error: unknown op 'sned'; did you mean 'send'?\n"
            "  %0 = sned in[0+1] -> r1 msg=0\n"
            "       ^\n");
  EXPECT_EQ(parseError("schedule @x collective=allreduce ranks=1 chunks=1\n"
                       "rank 0 {\n"
                       "  %0 = copy out[0+1] in[0+1]\n"
                       "}\n"),
            "t.ir:3:22: error: expected ',', got 'in'\n"
            "  %0 = copy out[0+1] in[0+1]\n"
            "                     ^\n");
  EXPECT_EQ(parseError("schedule @x collective=allreduce ranks=2 chunks=1\n"
                       "rank 0 {\n"
                       "}\n"),
            "t.ir:4:1: error: expected 2 rank blocks, found 1\n");
  EXPECT_EQ(parseError("schedule @x collective=allreduce ranks=2000000 "
                       "chunks=1\n"),
            "t.ir:1:40: error: ranks must be between 0 and 1000000, got "
            "2000000\n"
            "schedule @x collective=allreduce ranks=2000000 chunks=1\n"
            "                                       ^\n");
  EXPECT_EQ(parseError("schedule @x collective=allreduce ranks=1 chunks=1\n"
                       "rank 0 {\n"
                       "  %1 = nop\n"
                       "}\n"),
            "t.ir:3:4: error: expected op %0, got %1\n"
            "  %1 = nop\n"
            "   ^\n");
  EXPECT_EQ(parseError("schedule @x collective=allreduce ranks=1 chunks=1\n"
                       "rank 0 {\n"
                       "  %0 = send 2*in[0+1] -> r1 msg=0\n"
                       "}\n"),
            "t.ir:3:13: error: a coefficient is only allowed on lincomb "
            "terms\n"
            "  %0 = send 2*in[0+1] -> r1 msg=0\n"
            "            ^\n");
  EXPECT_EQ(parseError("schedule @x collective=allreduce ranks=1 chunks=1\n"
                       "rank 0 {\n"
                       "  %0 = send in[0+99999999999] -> r1 msg=0\n"
                       "}\n"),
            "t.ir:3:27: error: a chunk count is out of range\n"
            "  %0 = send in[0+99999999999] -> r1 msg=0\n"
            "                          ^\n");
}

TEST(Parser, GarbageNeverCrashes) {
  const char *inputs[] = {
      "", "schedule", "schedule @", "schedule @\"", "schedule @\"\\",
      "schedule @x collective=allreduce ranks=-1 chunks=1",
      "schedule @x collective=allreduce ranks=1 chunks=1 rank 0 { %0 = "
      "lincomb out[0+1], 2*",
      "schedule @x collective=allreduce ranks=1 chunks=1 rank 0 { %0 = "
      "lincomb out[0+1], nan*in[0+1] deps(%0,",
      "\xff\xfe", "schedule @x ranks=1 ranks=1",
  };
  for (const char *t : inputs) {
    auto s = parseSchedule(t, "g");
    if (!s)
      llvm::consumeError(s.takeError());
  }
}
