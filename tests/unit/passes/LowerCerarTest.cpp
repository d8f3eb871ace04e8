//===- tests/unit/passes/LowerCerarTest.cpp - CERAR lowering --------------===//
//
// The lowered schedule passes the structural verifier, is exact for
// c <= N (the full verifier with the allreduce postcondition), and its
// symbolic per-rank error operator norms equal the design's e_i for c > N;
// a wrong coefficient shows as a mismatch. The later passes carry coded
// schedules through unchanged in meaning; MSCCL XML refuses them.
//
//===----------------------------------------------------------------------===//

#include "compiler/passes/LowerCerar.h"
#include "compiler/algorithms/Cerar.h"
#include "compiler/algorithms/CerarVerify.h"
#include "compiler/passes/AssignChannels.h"
#include "compiler/passes/AssignThreadblocks.h"
#include "compiler/passes/Fuse.h"
#include "compiler/passes/LegalizeDependencies.h"
#include "compiler/passes/SplitChannels.h"

#include "backends/MscclXml.h"
#include "ir/Semantics.h"
#include "ir/Verifier.h"

#include "tests/support/ErrorText.h"

#include "gtest/gtest.h"

#include "llvm/Support/Error.h"

#include <cmath>
#include <cstdio>
#include <tuple>

using namespace topocc;
using namespace topocc::ir;
using cerar::Construction;

namespace {

cerar::Design design(int n, int c, Construction k, double eps = 0,
                     double kappa = 0) {
  cerar::DesignRequest r;
  r.ranks = n;
  r.components = c;
  r.construction = k;
  r.eps = eps;
  r.kappaMax = kappa;
  auto d = cerar::makeDesign(r);
  if (!d) {
    ADD_FAILURE() << llvm::toString(d.takeError());
    return cerar::Design();
  }
  return std::move(*d);
}

Schedule lower(const cerar::Design &d, bool inplace, int seam = 0,
               std::vector<RankId> ring = {}, bool generic = false,
               passes::CerarLoweringInfo *info = nullptr) {
  passes::CerarLowerOptions o;
  o.design = d;
  o.inplace = inplace;
  o.seamOffset = seam;
  o.ringOrder = std::move(ring);
  o.forceGeneric = generic;
  auto s = passes::lowerCerar(o, info);
  if (!s) {
    ADD_FAILURE() << llvm::toString(s.takeError());
    return Schedule();
  }
  return std::move(*s);
}

std::string verifyText(const Schedule &s, const cerar::Design &d,
                       std::vector<int> ring = {}, int seam = 0) {
  auto chk = cerar::verifyCerarSchedule(s, d, ring, seam);
  if (!chk)
    return llvm::toString(chk.takeError());
  return "ok";
}

VerifyOptions structural() {
  VerifyOptions v;
  v.checkSemantics = false;
  return v;
}

/// Each rank sends exactly L one-chunk messages, all to its successor.
void expectRingTraffic(const Schedule &s, const std::vector<RankId> &ring,
                       int L) {
  int n = s.numRanks;
  for (int p = 0; p < n; ++p) {
    RankId r = ring.empty() ? p : ring[p];
    RankId next = ring.empty() ? (p + 1) % n : ring[(p + 1) % n];
    int sent = 0;
    for (const Op &op : s.ranks[r].ops)
      if (sends(op.kind)) {
        ++sent;
        EXPECT_EQ(op.sendPeer, next);
        EXPECT_EQ(op.wireCount(), 1);
      }
    EXPECT_EQ(sent, L) << "rank " << r;
  }
}

TEST(LowerCerar, ExactCodesPassTheFullVerifier) {
  for (int n = 2; n <= 7; ++n)
    for (int c = 1; c <= n; ++c)
      for (bool inplace : {false, true}) {
        cerar::Design d = design(n, c, Construction::Exact);
        passes::CerarLoweringInfo info;
        Schedule s = lower(d, inplace, 0, {}, false, &info);
        EXPECT_TRUE(info.inPlaceWorker);
        // c + N + 1 component buffers: c user + at most N + 1 scratch.
        EXPECT_LE(info.peakScratch, n + 1) << "N=" << n << " c=" << c;
        EXPECT_EQ(s.chunksPerLoop, c);
        llvm::Error err = verifySchedule(s);
        EXPECT_FALSE(err) << "N=" << n << " c=" << c << " inplace=" << inplace
                          << ": " << llvm::toString(std::move(err));
        expectRingTraffic(s, {}, c + n - 2);
      }
}

TEST(LowerCerar, ApproximateCodesMatchDesignErrors) {
  for (auto [n, c, eps] : {std::tuple{3, 6, 0.1},
                           {4, 8, 1e-2},
                           {4, 6, 1e-2},
                           {4, 7, 1e-2},
                           {5, 12, 1e-2},
                           {3, 9, 1e-2},
                           {4, 12, 1e-2}}) {
    cerar::Design d = design(n, c, Construction::Perturbed, eps);
    for (bool inplace : {false, true}) {
      passes::CerarLoweringInfo info;
      Schedule s = lower(d, inplace, 0, {}, false, &info);
      EXPECT_LE(info.peakScratch, n + 1) << "N=" << n << " c=" << c;
      llvm::Error err = verifySchedule(s, structural());
      EXPECT_FALSE(err) << llvm::toString(std::move(err));
      EXPECT_EQ(verifyText(s, d), "ok") << "N=" << n << " c=" << c;
      // The exact postcondition fails: CERAR is approximate here.
      llvm::Error pc = checkPostcondition(s);
      EXPECT_TRUE(bool(pc));
      llvm::consumeError(std::move(pc));
      expectRingTraffic(s, {}, c + n - 2);
    }
  }
}

TEST(LowerCerar, SeamRotationAndRingOrder) {
  cerar::Design d = design(4, 8, Construction::Perturbed, 1e-2);
  std::vector<RankId> ring{2, 0, 3, 1};
  for (int seam : {0, 1, 3}) {
    Schedule s = lower(d, false, seam, ring);
    EXPECT_EQ(verifyText(s, d, {2, 0, 3, 1}, seam), "ok") << seam;
    auto m = cerar::measuredRankErrors(s, 8);
    ASSERT_TRUE(bool(m));
    // The exact rank is the one at the position with logical index N-1.
    int exactPos = ((3 - seam) % 4 + 4) % 4;
    EXPECT_LT((*m)[ring[exactPos]], 1e-12);
    EXPECT_NEAR((*m)[ring[(exactPos + 1) % 4]], 1e-2 * std::sqrt(3.0), 1e-9);
    expectRingTraffic(s, ring, 8 + 4 - 2);
  }
}

TEST(LowerCerar, TestVectorN3C6Leakage) {
  // docs/Algorithms-cerar.md 4.3: s_0[3] = s[3] + (G_1[0] + G_2[0]) / 10.
  cerar::Design d = design(3, 6, Construction::Perturbed, 0.1);
  Schedule s = lower(d, true);
  auto res = execute(s);
  ASSERT_TRUE(bool(res));
  const SymValue &v = res->output[0][3];
  auto coeff = [&](RankId r, int32_t ch) {
    for (const Term &t : v.terms)
      if (t.rank == r && t.chunk == ch)
        return t.coeff;
    return 0.0;
  };
  EXPECT_NEAR(coeff(0, 3), 1, 1e-12);
  EXPECT_NEAR(coeff(1, 3), 1, 1e-12);
  EXPECT_NEAR(coeff(2, 3), 1, 1e-12);
  EXPECT_NEAR(coeff(1, 0), 0.1, 1e-12);
  EXPECT_NEAR(coeff(2, 0), 0.1, 1e-12);
  EXPECT_EQ(v.terms.size(), 5u);
  // Rank 2 (logical N-1) is exact; layer 0 is exact everywhere.
  for (int j = 0; j < 6; ++j)
    EXPECT_TRUE(valuesMatch(res->output[2][j], expectedOutput(s, 2, j), 1e-12));
  for (RankId r = 0; r < 3; ++r)
    for (int j = 0; j < 3; ++j)
      EXPECT_TRUE(
          valuesMatch(res->output[r][j], expectedOutput(s, r, j), 1e-12));
}

TEST(LowerCerar, GenericWorkerForNonCompanionCodes) {
  struct Case {
    cerar::Design d;
    bool exact;
  };
  std::vector<Case> cases;
  cases.push_back({design(2, 5, Construction::Exact), true});
  cases.push_back({design(3, 3, Construction::Vandermonde, 1e-1), false});
  cases.push_back({design(4, 8, Construction::Optimized, 0, 1e2), false});
  cases.push_back({design(4, 8, Construction::Perturbed, 1e-2), false});
  for (Case &k : cases)
    for (bool inplace : {false, true}) {
      passes::CerarLoweringInfo info;
      Schedule s = lower(k.d, inplace, 1, {}, /*generic=*/true, &info);
      EXPECT_FALSE(info.inPlaceWorker);
      EXPECT_LE(info.peakScratch, k.d.components + 3);
      EXPECT_EQ(verifyText(s, k.d, {}, 1), "ok")
          << cerar::constructionName(k.d.construction).str();
      if (k.exact) {
        llvm::Error err = verifySchedule(s);
        EXPECT_FALSE(err) << llvm::toString(std::move(err));
      }
    }
}

TEST(LowerCerar, WrongCoefficientIsAMismatch) {
  cerar::Design d = design(3, 6, Construction::Perturbed, 0.1);
  Schedule s = lower(d, false);
  // Perturb the first tail coefficient (2 in x^6 = 2x^3 - 1) on rank 1.
  bool changed = false;
  for (Op &op : s.ranks[1].ops)
    if (op.kind == OpKind::LinComb && op.terms.size() == 2 &&
        op.terms[1].coeff == 2.0) {
      op.terms[1].coeff = 2.001;
      changed = true;
      break;
    }
  ASSERT_TRUE(changed);
  std::string e = verifyText(s, d);
  EXPECT_NE(e.find("cerar verification: rank "), std::string::npos) << e;
  EXPECT_NE(e.find("the schedule's error operator has norm"), std::string::npos)
      << e;

  // In an exact code a wrong cancel coefficient breaks the postcondition.
  cerar::Design x = design(4, 4, Construction::Exact);
  Schedule t = lower(x, false);
  for (Op &op : t.ranks[2].ops)
    if (op.kind == OpKind::RecvReduceCopy) {
      op.localCoeff = -0.5;
      break;
    }
  std::string f = verifyText(t, x);
  EXPECT_NE(f.find("cerar verification: rank"), std::string::npos) << f;
  llvm::Error err = verifySchedule(t);
  EXPECT_TRUE(bool(err));
  llvm::consumeError(std::move(err));
}

TEST(LowerCerar, LaterPassesKeepCodedSchedules) {
  for (auto [n, c, inplace] :
       {std::tuple{4, 8, false}, {3, 6, true}, {4, 4, false}}) {
    cerar::Design d =
        design(n, c, c <= n ? Construction::Exact : Construction::Perturbed,
               c <= n ? 0 : 1e-2);
    Schedule s = lower(d, inplace);
    auto before = cerar::measuredRankErrors(s, c);
    ASSERT_TRUE(bool(before));
    passes::fuse(s);
    ASSERT_FALSE(bool(verifySchedule(s, structural())));
    llvm::Error err = passes::assignChannels(s);
    ASSERT_FALSE(bool(err)) << llvm::toString(std::move(err));
    ASSERT_FALSE(bool(verifySchedule(s, structural())));
    err = passes::splitChannels(s, 64);
    ASSERT_FALSE(bool(err)) << llvm::toString(std::move(err));
    err = passes::assignThreadblocks(s);
    ASSERT_FALSE(bool(err)) << llvm::toString(std::move(err));
    passes::legalizeDependencies(s);
    err = verifySchedule(s, structural());
    ASSERT_FALSE(bool(err)) << llvm::toString(std::move(err));
    EXPECT_EQ(s.stage, Stage::Legalized);
    EXPECT_EQ(verifyText(s, d), "ok") << "N=" << n << " c=" << c;
    auto after = cerar::measuredRankErrors(s, c);
    ASSERT_TRUE(bool(after));
    for (int r = 0; r < n; ++r)
      EXPECT_NEAR((*after)[r], (*before)[r], 1e-12);
    if (c <= n) {
      err = verifySchedule(s);
      EXPECT_FALSE(bool(err)) << llvm::toString(std::move(err));
    }
    // MSCCL XML has no coefficients or subtraction: refused.
    auto xml = backends::mscclXmlToString(s, {});
    ASSERT_FALSE(bool(xml));
    std::string msg = llvm::toString(xml.takeError());
    EXPECT_NE(msg.find("cannot emit MSCCL XML: rank 0 %"), std::string::npos)
        << msg;
    EXPECT_TRUE(msg.find("'lincomb' has no MSCCL step type") !=
                    std::string::npos ||
                msg.find("MSCCL steps cannot scale by a coefficient") !=
                    std::string::npos)
        << msg;
  }
}

TEST(LowerCerar, BadOptions) {
  passes::CerarLowerOptions o;
  o.design = design(3, 6, Construction::Perturbed, 0.1);
  o.ringOrder = {0, 1, 1};
  auto s = passes::lowerCerar(o);
  ASSERT_FALSE(bool(s));
  EXPECT_EQ(topocc::testing::errorMessage(s.takeError()),
            "cerar lowering: the ring order must be a permutation of 0..2 "
            "(the code has N=3)");
  passes::CerarLowerOptions e;
  auto t = passes::lowerCerar(e);
  ASSERT_FALSE(bool(t));
  EXPECT_EQ(topocc::testing::errorMessage(t.takeError()),
            "cerar lowering: the code is incomplete (N=0, c=0, 0 encoders, 0 "
            "decoders)");
}

} // namespace

namespace {

/// Lincomb terms of the encode and decode of one rank (everything outside
/// the rounds: the terms of lincombs before the first send and after the
/// last receive).
std::pair<int, int> codecTerms(const Schedule &s, RankId r) {
  const std::vector<Op> &ops = s.ranks[r].ops;
  int firstSend = -1, lastRecv = -1;
  for (int i = 0; i < int(ops.size()); ++i) {
    if (sends(ops[i].kind) && firstSend < 0)
      firstSend = i;
    if (receives(ops[i].kind))
      lastRecv = i;
  }
  int enc = 0, dec = 0;
  for (int i = 0; i < int(ops.size()); ++i) {
    int t = ops[i].kind == OpKind::LinComb ? int(ops[i].terms.size()) : 0;
    t += ops[i].kind == OpKind::Copy;
    if (i < firstSend)
      enc += t;
    else if (i > lastRecv)
      dec += t;
  }
  return {enc, dec};
}

TEST(LowerCerar, EncodeDecodeStaySparse) {
  // docs/Algorithms-cerar.md 6.2: confluent encode/decode need <= q + 1 terms
  // per output (plus the permutation's copies); the pivoted LU keeps that
  // sparsity.
  for (auto [n, c] : {std::pair{4, 8}, {8, 16}, {4, 12}, {16, 32}, {16, 64}}) {
    cerar::Design d = design(n, c, Construction::Perturbed, 1e-2);
    Schedule s = lower(d, /*inplace=*/true);
    int q = (c + n - 1) / n;
    for (RankId r = 0; r < n; ++r) {
      auto [enc, dec] = codecTerms(s, r);
      EXPECT_LE(enc, (q + 2) * c) << "N=" << n << " c=" << c << " rank " << r;
      EXPECT_LE(dec, (q + 2) * c) << "N=" << n << " c=" << c << " rank " << r;
      if (r == 1)
        std::printf("N=%d c=%d rank 1: encode %d terms, decode %d terms\n", n,
                    c, enc, dec);
    }
  }
}

} // namespace
