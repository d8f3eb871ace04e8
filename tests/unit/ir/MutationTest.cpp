//===- tests/unit/ir/MutationTest.cpp - Mutants must be rejected ----------===//

#include "Mutations.h"
#include "TestSchedules.h"

#include "gtest/gtest.h"

using namespace topocc::ir;
using namespace topocc::ir::testing;

namespace {

void run(const Schedule &s, size_t minRejected) {
  MutationStats st = expectMutantsRejected(s);
  EXPECT_GE(st.rejected, minRejected) << s.name;
  EXPECT_EQ(st.total, st.rejected + st.acceptedCorrect);
}

} // namespace

TEST(Mutation, OracleAgreesOnHandBuilt) {
  EXPECT_EQ(oracle(ringAllReduce(3)), Verdict::Correct);
  Schedule s = ringAllReduce(3);
  s.ranks[1].ops[1].msgCoeff = 2;
  EXPECT_EQ(oracle(s), Verdict::Wrong);
  s = ringAllReduce(3);
  removeOp(s, 1, 4);
  EXPECT_EQ(oracle(s), Verdict::Malformed);
  s = ringAllReduce(3, Stage::Lowered);
  s.ranks[0].ops[0].deps.push_back(4);
  EXPECT_EQ(oracle(s), Verdict::Cycle);
}

TEST(Mutation, RingLegalized) { run(ringAllReduce(3), 20); }
TEST(Mutation, RingLowered) { run(ringAllReduce(4, Stage::Lowered), 20); }
TEST(Mutation, DirectAllGather) { run(directAllGather(3, 2), 10); }
TEST(Mutation, ScratchReduce) { run(scratchAllReduce2(false), 5); }
TEST(Mutation, ScratchLincomb) { run(scratchAllReduce2(true, 3), 5); }

TEST(Mutation, HelpersRenumberDeps) {
  Schedule s = ringAllReduce(3, Stage::Lowered);
  removeOp(s, 0, 2);
  EXPECT_EQ(s.ranks[0].ops.size(), 4u);
  EXPECT_EQ(s.ranks[0].ops[2].deps, (OpDeps{1}));
  swapOps(s, 0, 0, 1);
  EXPECT_EQ(s.ranks[0].ops[0].deps, (OpDeps{1}));
  EXPECT_EQ(s.ranks[0].ops[2].deps, (OpDeps{0}));
}
