//===- tests/unit/passes/LegalizeDependenciesTest.cpp - nops for deps -----===//

#include "compiler/passes/LegalizeDependencies.h"

#include "ir/Printer.h"

#include "gtest/gtest.h"

using namespace topocc;
using namespace topocc::ir;

namespace {

/// One rank, local copies only: op i is `copy` in threadblock tbs[i].
Schedule localSchedule(std::vector<TbId> tbs,
                       std::vector<std::vector<OpId>> deps) {
  Schedule s;
  s.collective = Collective::AllReduce;
  s.numRanks = 1;
  s.chunksPerLoop = 8;
  s.inplace = false;
  s.stage = Stage::ThreadblocksAssigned;
  s.numChannels = 1;
  s.ranks.resize(1);
  s.ranks[0].inputChunks = 8;
  s.ranks[0].outputChunks = 8;
  for (size_t i = 0; i < tbs.size(); ++i) {
    Op op;
    op.kind = OpKind::Copy;
    op.src = {BufferKind::Input, int32_t(i), 1};
    op.dst = {BufferKind::Output, int32_t(i), 1};
    op.channel = 0;
    op.threadblock = tbs[i];
    op.deps.assign(deps[i].begin(), deps[i].end());
    s.ranks[0].ops.push_back(op);
  }
  return s;
}

std::string summary(const RankProgram &rp) {
  std::string out;
  for (size_t i = 0; i < rp.ops.size(); ++i) {
    out += mnemonic(rp.ops[i].kind).str() + "@" +
           std::to_string(rp.ops[i].threadblock);
    for (OpId d : rp.ops[i].deps)
      out += "<" + std::to_string(d);
    out += i + 1 < rp.ops.size() ? " " : "";
  }
  return out;
}

TEST(LegalizeDependenciesTest, ExtraDepsBecomeNops) {
  // %3 (tb 2) waits for tb 0 and tb 1: one dep stays, one goes on a nop.
  Schedule s = localSchedule({0, 1, 2, 2}, {{}, {}, {}, {0, 1}});
  passes::legalizeDependencies(s);
  EXPECT_EQ(s.stage, Stage::Legalized);
  EXPECT_EQ(summary(s.ranks[0]), "copy@0 copy@1 copy@2 nop@2<1 copy@2<0");
}

TEST(LegalizeDependenciesTest, DropsDepsImpliedByProgramOrder) {
  // %1 depends on %0 in its own threadblock; %2 already waited for tb 0 at
  // a later position than %3 needs.
  Schedule s = localSchedule({0, 0, 1, 1}, {{}, {0}, {1}, {0, 2}});
  passes::legalizeDependencies(s);
  EXPECT_EQ(summary(s.ranks[0]), "copy@0 copy@0 copy@1<1 copy@1");
}

TEST(LegalizeDependenciesTest, DropsDepsImpliedThroughAnotherThreadblock) {
  // %2 (tb 1) waits for %0 (tb 0); %3 (tb 2) waits for %0 and %2: waiting for
  // %2 implies %0.
  Schedule s = localSchedule({0, 2, 1, 2}, {{}, {}, {0}, {0, 2}});
  passes::legalizeDependencies(s);
  EXPECT_EQ(summary(s.ranks[0]), "copy@0 copy@2 copy@1<0 copy@2<2");
}

TEST(LegalizeDependenciesTest, KeepsTheLatestDepPerThreadblock) {
  Schedule s = localSchedule({0, 0, 1}, {{}, {}, {0, 1}});
  passes::legalizeDependencies(s);
  EXPECT_EQ(summary(s.ranks[0]), "copy@0 copy@0 copy@1<1");
}

} // namespace
