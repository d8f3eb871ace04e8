//===- tests/unit/ir/SemanticsTest.cpp - Symbolic execution ---------------===//

#include "ir/Semantics.h"
#include "ir/CombinedGraph.h"
#include "ir/Verifier.h"

#include "Mutations.h"
#include "TestSchedules.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <algorithm>
#include <random>
#include <set>

using namespace topocc::ir;
using namespace topocc::ir::testing;
using ::testing::HasSubstr;

TEST(Semantics, RingAllReduceIsCorrect) {
  Schedule s = ringAllReduce(3);
  auto res = execute(s);
  ASSERT_TRUE(static_cast<bool>(res)) << llvm::toString(res.takeError());
  ASSERT_EQ(res->output.size(), 3u);
  EXPECT_EQ(formatValue(res->output[1][2]), "r0[2] + r1[2] + r2[2]");
  EXPECT_FALSE(static_cast<bool>(checkPostcondition(s)));
  EXPECT_EQ(outputError(s, *res), (std::vector<double>{0, 0, 0}));
}

TEST(Semantics, DoubleReduceGivesCoefficientTwo) {
  Schedule s = ringAllReduce(3);
  // Rank 1's rrs adds its own chunk 0 twice.
  s.ranks[1].ops[1].localCoeff = 2.0;
  llvm::Error err = checkPostcondition(s);
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_EQ(llvm::toString(std::move(err)),
            "error: schedule @ring3_allreduce does not compute allreduce:\n"
            "  rank 0 out[0]: got r0[0] + 2*r1[0] + r2[0], expected r0[0] + "
            "r1[0] + r2[0]\n"
            "  rank 1 out[0]: got r0[0] + 2*r1[0] + r2[0], expected r0[0] + "
            "r1[0] + r2[0]\n"
            "  rank 2 out[0]: got r0[0] + 2*r1[0] + r2[0], expected r0[0] + "
            "r1[0] + r2[0]\n");
  auto res = execute(s);
  ASSERT_TRUE(static_cast<bool>(res));
  EXPECT_EQ(outputError(s, *res), (std::vector<double>{1, 1, 1}));
  // The verifier reports it too (it is not a structural problem).
  std::vector<VerifyProblem> p = findProblems(s);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(formatProblem(p[0]), "rank 0: out[0]: got r0[0] + 2*r1[0] + "
                                 "r2[0], expected r0[0] + r1[0] + r2[0]");
}

TEST(Semantics, MissingContribution) {
  Schedule s = ringAllReduce(3);
  // Rank 2 forwards what it received without adding its own chunk.
  Op &op = s.ranks[2].ops[1];
  op.kind = OpKind::RecvCopySend;
  op.dst = op.src;
  op.src = BufferRef();
  // rcs writes its dst; the dst was never read later except by this rank's
  // final value, which is overwritten by the allgather phase.
  llvm::Error err = checkPostcondition(s);
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_THAT(llvm::toString(std::move(err)),
              HasSubstr("rank 0 out[1]: got r0[1] + r1[1], expected r0[1] + "
                        "r1[1] + r2[1]"));
}

TEST(Semantics, UndefinedAndCoded) {
  Schedule s = scratchAllReduce2(true);
  // Reads scratch chunk 1 before anything wrote it: rank 0's lincomb reads
  // sc[0+2] but the receive now only fills sc[0+1]... instead make the
  // lincomb read a never-written scratch chunk by growing scratch.
  s.ranks[0].scratchChunks = 4;
  s.ranks[0].ops[2].terms[1].src = sc(2, 2);
  auto res = execute(s);
  ASSERT_TRUE(static_cast<bool>(res));
  EXPECT_EQ(formatValue(res->output[0][0]), "undef");
  EXPECT_EQ(outputError(s, *res)[0], INFINITY);

  // A coded rank: 0.5 * local + 0.5 * msg. Error 0.5 per coefficient.
  s = scratchAllReduce2(true);
  s.ranks[1].ops[2].terms[0].coeff = 0.5;
  s.ranks[1].ops[2].terms[1].coeff = 0.5;
  res = execute(s);
  ASSERT_TRUE(static_cast<bool>(res));
  EXPECT_EQ(formatValue(res->output[1][1]), "0.5*r0[1] + 0.5*r1[1]");
  EXPECT_EQ(outputError(s, *res), (std::vector<double>{0, 0.5}));
  EXPECT_FALSE(static_cast<bool>(checkPostcondition(s, 0.6)));
  llvm::Error err = checkPostcondition(s);
  EXPECT_TRUE(static_cast<bool>(err));
  llvm::consumeError(std::move(err));
}

TEST(Semantics, ExpectedOutputs) {
  Schedule s = directAllGather(4, 2);
  EXPECT_EQ(formatValue(expectedOutput(s, 0, 5)), "r2[1]");
  s.collective = Collective::ReduceScatter;
  EXPECT_EQ(formatValue(expectedOutput(s, 1, 1)),
            "r0[3] + r1[3] + r2[3] + r3[3]");
  s.collective = Collective::AllToAll;
  EXPECT_EQ(formatValue(expectedOutput(s, 1, 5)), "r2[3]");
  s.collective = Collective::Broadcast;
  s.root = 3;
  EXPECT_EQ(formatValue(expectedOutput(s, 1, 5)), "r3[5]");
  s.collective = Collective::Reduce;
  EXPECT_EQ(formatValue(expectedOutput(s, 1, 5)), "undef");
  EXPECT_EQ(formatValue(expectedOutput(s, 3, 5)),
            "r0[5] + r1[5] + r2[5] + r3[5]");
  EXPECT_EQ(formatValue(SymValue{{Term{0, 1, -1}, Term{2, 0, -2.5}}, false}),
            "-r0[1] - 2.5*r2[0]");
  EXPECT_EQ(formatValue(SymValue{{}, false}), "0");
}

TEST(Semantics, InPlaceAllGatherAliasing) {
  // In-place allgather: in[j] of rank r is out[r*N/g + j]. Each rank sends
  // its input (read as in[0+1]) and receives the peer's into out.
  Schedule s = directAllGather(2);
  s.inplace = true;
  for (int r = 0; r < 2; ++r) {
    s.ranks[r].ops.erase(s.ranks[r].ops.begin()); // no copy needed
    for (Op &op : s.ranks[r].ops)
      op.threadblock -= 1;
  }
  EXPECT_FALSE(static_cast<bool>(checkPostcondition(s)));
  EXPECT_EQ(findProblems(s).size(), 0u);
  // Out of place the same schedule misses the own chunk.
  s.inplace = false;
  llvm::Error err = checkPostcondition(s);
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_THAT(llvm::toString(std::move(err)),
              HasSubstr("rank 0 out[0]: got undef, expected r0[0]"));
}

namespace {
/// Unit terms of `chunk` on `ranks` (sorted).
SharedTerms unitTerms(std::vector<RankId> ranks, int32_t chunk) {
  std::vector<Term> t;
  for (RankId r : ranks)
    t.push_back(Term{r, chunk, 1.0});
  return SharedTerms(std::move(t));
}
std::vector<RankId> span(RankId lo, RankId hi) { // [lo, hi)
  std::vector<RankId> v;
  for (RankId r = lo; r < hi; ++r)
    v.push_back(r);
  return v;
}
} // namespace

// Partial sums of exact reductions are held as a chunk and a bit set of
// ranks; they must read, compare and combine exactly like explicit terms,
// across 64-bit word boundaries and whatever rank the set starts at.
TEST(Semantics, CompactTermsReadAndCombineLikeExplicitOnes) {
  SharedTerms a = unitTerms(span(70, 131), 5);
  ASSERT_EQ(a.size(), 61u);
  ASSERT_EQ(a.get().size(), 61u);
  EXPECT_EQ(a[0], (Term{70, 5, 1.0}));
  EXPECT_EQ(a[60], (Term{130, 5, 1.0}));
  EXPECT_TRUE(a == unitTerms(span(70, 131), 5));
  EXPECT_FALSE(a == unitTerms(span(70, 131), 4));
  EXPECT_FALSE(a == unitTerms(span(71, 132), 5));

  std::vector<RankId> low{0, 1, 2, 3};
  std::vector<RankId> high = span(131, 300);
  high.push_back(1000);
  for (const std::vector<RankId> &other :
       {low, high, std::vector<RankId>{69}}) {
    SharedTerms b = unitTerms(other, 5);
    auto u = SharedTerms::unionOfDisjoint(a, b);
    ASSERT_TRUE(u.has_value());
    auto v = SharedTerms::unionOfDisjoint(b, a);
    ASSERT_TRUE(v.has_value());
    std::vector<RankId> all = span(70, 131);
    all.insert(all.end(), other.begin(), other.end());
    std::sort(all.begin(), all.end());
    SharedTerms want = unitTerms(all, 5);
    EXPECT_TRUE(*u == want);
    EXPECT_TRUE(*v == want);
    EXPECT_EQ(u->get(), want.get());
    EXPECT_EQ(u->size(), all.size());
  }
  // Overlapping ranks, another chunk, or a coefficient other than 1: the
  // caller merges the terms.
  EXPECT_FALSE(SharedTerms::unionOfDisjoint(a, unitTerms({130, 131}, 5)));
  EXPECT_FALSE(SharedTerms::unionOfDisjoint(a, unitTerms({1}, 6)));
  EXPECT_FALSE(SharedTerms::unionOfDisjoint(a, SharedTerms{{1, 5, 2.0}}));
  // Not compact: mixed chunks or coefficients stay explicit, as given.
  SharedTerms mixed{{0, 1, 1.0}, {1, 1, 1.0}, {2, 1, 1.0}, {3, 2, 1.0}};
  EXPECT_EQ(mixed.get().size(), 4u);
  EXPECT_FALSE(mixed == unitTerms({0, 1, 2, 3}, 1));
}

// A ring all-reduce on 200 ranks (partial sums across four words) is
// verified exactly, with one output value per chunk.
TEST(Semantics, LargeRingAllReduceWithCompactSums) {
  Schedule s = ringAllReduce(200);
  auto res = execute(s);
  ASSERT_TRUE(static_cast<bool>(res)) << llvm::toString(res.takeError());
  EXPECT_FALSE(static_cast<bool>(checkPostcondition(s)));
  EXPECT_EQ(res->output[17][3].terms.size(), 200u);
  // A wrong coefficient is still found.
  s.ranks[100].ops[1].localCoeff = 2.0;
  llvm::Error err = checkPostcondition(s);
  EXPECT_TRUE(static_cast<bool>(err));
  llvm::consumeError(std::move(err));
}

namespace {

/// One batch per input chunk (what the verifier runs to name the values of
/// wrong outputs).
std::vector<ChunkBatch> chunkByChunk(const Schedule &s) {
  std::vector<ChunkBatch> out;
  for (int32_t c = 0; c < s.nominalInputChunks(); ++c)
    out.push_back(ChunkBatch{c, c + 1});
  out.back().end = INT32_MAX;
  return out;
}

/// (rank, chunk) of every wrong output, by one execution or batch by batch.
std::set<std::pair<RankId, int32_t>>
wrongOutputs(const Schedule &s, llvm::ArrayRef<ChunkBatch> batches,
             std::vector<std::string> *got = nullptr) {
  std::set<std::pair<RankId, int32_t>> out;
  CombinedGraph g = buildCombinedGraph(s);
  std::vector<uint32_t> order;
  EXPECT_TRUE(topologicalOrder(g, order));
  llvm::Error err = executeBatches(
      s, batches, g, order, [&](ChunkBatch b, const SymbolicResult &res) {
        for (const WrongOutput &w : findWrongOutputs(s, res, 1e-9, b)) {
          EXPECT_TRUE(out.insert({w.rank, w.chunk}).second)
              << "checked in two batches";
          if (got)
            got->push_back(formatValue(w.got));
        }
        return true;
      });
  EXPECT_FALSE(bool(err)) << llvm::toString(std::move(err));
  return out;
}

} // namespace

// Chunk batches reach the verdict of one execution (the verifier names
// the values of wrong outputs batch by batch): a ring all-reduce of 8 ranks
// checked one input chunk at a time is correct; without one rank's
// contribution, or reading another chunk's slot (a value that mixes
// chunks), the same outputs are wrong.
TEST(Semantics, ChunkBatchesReachTheSameVerdict) {
  Schedule s = ringAllReduce(8);
  std::vector<ChunkBatch> each = chunkByChunk(s);
  ASSERT_EQ(each.size(), 8u);
  EXPECT_EQ(each.front().begin, 0);
  for (size_t i = 1; i < each.size(); ++i)
    EXPECT_EQ(each[i].begin, each[i - 1].end);
  const std::vector<ChunkBatch> one{ChunkBatch{}};
  EXPECT_TRUE(wrongOutputs(s, each).empty());

  Schedule missing = s; // rank 2 forwards without adding its own chunk
  Op &m = missing.ranks[2].ops[1];
  m.kind = OpKind::RecvCopySend;
  m.dst = m.src;
  m.src = BufferRef();
  std::vector<std::string> gotOne, gotEach;
  auto wrong = wrongOutputs(missing, one, &gotOne);
  EXPECT_FALSE(wrong.empty());
  EXPECT_EQ(wrongOutputs(missing, each, &gotEach), wrong);
  std::sort(gotOne.begin(), gotOne.end());
  std::sort(gotEach.begin(), gotEach.end());
  EXPECT_EQ(gotEach, gotOne); // one chunk's terms: the same values

  Schedule mixed = s; // rank 3 adds chunk k+1's slot into chunk k's sum
  Op &x = mixed.ranks[3].ops[2];
  ASSERT_EQ(x.kind, OpKind::RecvReduceSend);
  x.src.chunk = (x.src.chunk + 1) % 8;
  wrong = wrongOutputs(mixed, one);
  EXPECT_FALSE(wrong.empty());
  gotEach.clear();
  EXPECT_EQ(wrongOutputs(mixed, each, &gotEach), wrong);
  EXPECT_THAT(gotEach,
              ::testing::Contains("a combination that includes other chunks"));
}

// On randomly damaged schedules (operands moved to other chunks and
// buffers, receives that add or copy swapped) the batches, one chunk each,
// on one reused set of slots and outputs, find exactly the wrong outputs
// that one execution finds (a batch that read a value left by the one
// before would differ).
TEST(Semantics, BatchesAgreeOnDamagedSchedules) {
  std::mt19937 rng(2026);
  int damaged = 0;
  for (int trial = 0; trial < 300; ++trial) {
    Schedule s = trial % 2 ? ringAllReduce(6) : directAllGather(4, 2);
    damageOperands(s, rng);
    const std::vector<ChunkBatch> one{ChunkBatch{}};
    auto whole = wrongOutputs(s, one);
    damaged += !whole.empty();
    EXPECT_EQ(wrongOutputs(s, chunkByChunk(s)), whole) << "trial " << trial;
  }
  EXPECT_GT(damaged, 100); // the damage is real
}
