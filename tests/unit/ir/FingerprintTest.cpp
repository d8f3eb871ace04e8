//===- tests/unit/ir/FingerprintTest.cpp - Postcondition by hashing -------===//

#include "ir/Fingerprint.h"
#include "ir/CombinedGraph.h"
#include "ir/Semantics.h"
#include "ir/Verifier.h"

#include "Mutations.h"
#include "TestSchedules.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <random>
#include <set>

using namespace topocc::ir;
using namespace topocc::ir::testing;
using ::testing::HasSubstr;

namespace {

using SlotSet = std::set<std::pair<RankId, int32_t>>;

/// The wrong outputs of `s` by fingerprints and by symbolic sums.
std::pair<SlotSet, SlotSet> bothVerdicts(const Schedule &s) {
  CombinedGraph g = buildCombinedGraph(s);
  std::vector<uint32_t> order;
  EXPECT_TRUE(topologicalOrder(g, order));
  SlotSet byHash, bySums;
  auto wrong = findWrongOutputsByFingerprint(s, g, order);
  EXPECT_TRUE(bool(wrong)) << llvm::toString(wrong.takeError());
  if (wrong)
    for (const OutputSlot &w : *wrong)
      byHash.insert({w.rank, w.chunk});
  auto res = execute(s);
  EXPECT_TRUE(bool(res)) << llvm::toString(res.takeError());
  if (res)
    for (const WrongOutput &w : findWrongOutputs(s, *res))
      bySums.insert({w.rank, w.chunk});
  return {byHash, bySums};
}

} // namespace

TEST(Fingerprint, WeightsAreFixedResidues) {
  std::set<uint64_t> seen;
  for (RankId r = 0; r < 64; ++r)
    for (int32_t c = 0; c < 64; ++c) {
      uint64_t w = fingerprintWeight(r, c);
      EXPECT_LT(w, kFingerprintPrime);
      seen.insert(w);
    }
  EXPECT_EQ(seen.size(), 64u * 64u);
  // Fixed: a verdict must not change from run to run or machine to machine.
  EXPECT_EQ(fingerprintWeight(3, 7), fingerprintWeight(3, 7));
  EXPECT_NE(fingerprintWeight(3, 7), fingerprintWeight(7, 3));
}

TEST(Fingerprint, ExactSchedulesOnly) {
  EXPECT_TRUE(isExactSchedule(ringAllReduce(4)));
  EXPECT_TRUE(isExactSchedule(scratchAllReduce2(false)));
  EXPECT_FALSE(isExactSchedule(scratchAllReduce2(true)));
  Schedule coded = ringAllReduce(4);
  coded.ranks[1].ops[1].localCoeff = 2.0;
  EXPECT_FALSE(isExactSchedule(coded));
}

// Correct schedules of several collectives pass; a missing contribution and
// a contribution counted twice are found at the slots the symbolic sums
// name.
TEST(Fingerprint, FindsMissingAndDoubledTerms) {
  for (const Schedule &s :
       {ringAllReduce(8), directAllGather(4, 2), scratchAllReduce2(false, 2)}) {
    auto [byHash, bySums] = bothVerdicts(s);
    EXPECT_TRUE(byHash.empty()) << s.name;
    EXPECT_TRUE(bySums.empty()) << s.name;
  }
  Schedule missing = ringAllReduce(8); // rank 2 forwards without adding
  Op &m = missing.ranks[2].ops[1];
  m.kind = OpKind::RecvCopySend;
  m.dst = m.src;
  m.src = BufferRef();
  auto [h1, s1] = bothVerdicts(missing);
  EXPECT_FALSE(h1.empty());
  EXPECT_EQ(h1, s1);

  // Rank 3 adds a received all-gather chunk to its own copy of the same
  // sum instead of overwriting it: every term twice.
  Schedule doubled = ringAllReduce(8);
  Op *x = nullptr;
  for (Op &op : doubled.ranks[3].ops)
    if (op.kind == OpKind::RecvCopySend && !x)
      x = &op;
  ASSERT_NE(x, nullptr);
  x->kind = OpKind::RecvReduceCopySend;
  x->src = x->dst;
  auto [h2, s2] = bothVerdicts(doubled);
  EXPECT_FALSE(h2.empty());
  EXPECT_EQ(h2, s2);
}

// On randomly damaged exact schedules the fingerprints find exactly the
// wrong outputs that the symbolic sums find (a difference in how either
// runs an op kind, aliases a slot or treats an undefined value shows here).
TEST(Fingerprint, AgreesWithSymbolicSumsOnDamagedSchedules) {
  std::mt19937 rng(2027);
  int damaged = 0;
  for (int trial = 0; trial < 600; ++trial) {
    Schedule s = trial % 3 == 0   ? ringAllReduce(6)
                 : trial % 3 == 1 ? directAllGather(4, 2)
                                  : scratchAllReduce2(false, 3);
    damageOperands(s, rng);
    ASSERT_TRUE(isExactSchedule(s));
    CombinedGraph g = buildCombinedGraph(s);
    std::vector<uint32_t> order;
    VerifyOptions structure;
    structure.checkDeadlock = structure.checkRaces = false;
    structure.checkSemantics = false;
    if (!topologicalOrder(g, order) || !findProblems(s, structure).empty())
      continue; // the semantics REQUIRE a well-formed, acyclic schedule
    auto [byHash, bySums] = bothVerdicts(s);
    damaged += !bySums.empty();
    EXPECT_EQ(byHash, bySums) << "trial " << trial;
  }
  EXPECT_GT(damaged, 150); // the damage is real
}

// The verifier's verdict on an exact schedule comes from the fingerprints,
// and its message still names the computed and the required values.
TEST(Fingerprint, VerifierNamesTheWrongValues) {
  Schedule s = ringAllReduce(4);
  llvm::Error ok = verifySchedule(s);
  EXPECT_FALSE(bool(ok)) << llvm::toString(std::move(ok));
  Op &m = s.ranks[2].ops[1];
  m.kind = OpKind::RecvCopySend;
  m.dst = m.src;
  m.src = BufferRef();
  llvm::Error err = verifySchedule(s);
  ASSERT_TRUE(bool(err));
  std::string msg = llvm::toString(std::move(err));
  EXPECT_THAT(msg, HasSubstr("out["));
  EXPECT_THAT(msg, HasSubstr(", expected r0["));
  EXPECT_THAT(msg, HasSubstr("got r"));
}
