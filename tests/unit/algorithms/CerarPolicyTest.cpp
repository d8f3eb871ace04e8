//===- tests/unit/algorithms/CerarPolicyTest.cpp - CERAR parameter choice -===//
//
// docs/Algorithms-cerar.md section 5 (section numbers below are that page's):
// the cost formulas against the worked numbers of 5.4 and 5.5, the policy's
// decisions (slow PCIe/Ethernet -> CERAR with some c; NVLink -> ring with the
// reason), and designCerarFor on topology files.
//
//===----------------------------------------------------------------------===//

#include "compiler/algorithms/CerarPolicy.h"
#include "compiler/passes/LowerCerar.h"
#include "compiler/topology/TopologyParser.h"

#include "ir/Verifier.h"

#include "tests/support/ErrorText.h"

#include "gtest/gtest.h"

#include "llvm/Support/Error.h"

#include <cmath>

using namespace topocc;
using namespace topocc::cerar;

namespace {

const RingLink kPcie8{8, 10e-6, 20e9};
const RingLink kPcie4{4, 10e-6, 20e9};
const RingLink kIb8{8, 20e-6, 12e9};
const RingLink kNvl4{4, 5e-6, 230e9};

PolicyOptions fp32(double tol) {
  PolicyOptions o;
  o.tolerance = tol;
  o.wire = WireDtype::FP32;
  o.baseBytes = 4;
  return o;
}

TEST(CerarPolicy, CostFormulas) {
  // Section 5.4: PCIe, N = 8, S = 25 MB: ring 2.328 ms, c = 24 1.996 ms.
  EXPECT_NEAR(ringTime(kPcie8, 25e6) * 1e3, 2.3275, 1e-4);
  EXPECT_NEAR(cerarTime(kPcie8, 25e6, 24, 1.0, fp32(1)) * 1e3, 1.9958, 1e-4);
  EXPECT_NEAR(cerarTime(kPcie8, 25e6, 27, 1.0, fp32(1)) * 1e3, 1.991, 1e-3);
  // Section 5.5: PCIe N = 4, 2.83 GB: ring 212.31 ms, c = 8 192.07 ms.
  EXPECT_NEAR(ringTime(kPcie4, 2.83e9) * 1e3, 212.31, 0.01);
  EXPECT_NEAR(cerarTime(kPcie4, 2.83e9, 8, 1.0, fp32(1)) * 1e3, 192.07, 0.01);
}

TEST(CerarPolicy, PcieChoosesCerarAndSnapsToMultipleOfN) {
  // q_max = 4 on N = 8 needs tolerance >= 0.318 (the contract's table).
  PolicyDecision d = chooseCerar(kPcie8, 25e6, fp32(0.35));
  ASSERT_TRUE(d.useCerar) << d.reason;
  EXPECT_EQ(d.components, 24); // 27 snapped to 24 (section 5.4)
  EXPECT_EQ(d.q, 3);
  EXPECT_NEAR(d.cerarTime * 1e3, 1.9958, 1e-4);
  EXPECT_NEAR(d.ringTime * 1e3, 2.3275, 1e-4);
  EXPECT_EQ(d.reason.rfind("CERAR c = 24 (q = 3", 0), 0u) << d.reason;
  // q_max = 2 on N = 4 (tolerance 1e-2, between 6.03e-3 and 6.24e-2):
  // c <= 8.
  PolicyDecision e = chooseCerar(kPcie4, 2.83e9, fp32(1e-2));
  ASSERT_TRUE(e.useCerar) << e.reason;
  EXPECT_EQ(e.components, 8);
  EXPECT_NEAR(e.cerarTime * 1e3, 192.07, 0.01);
  EXPECT_NEAR(e.eps, 2e-3, 0);
  EXPECT_NEAR(e.expectedError, 6.03e-3, 1e-12);
}

TEST(CerarPolicy, EthernetChoosesCerar) {
  PolicyDecision d = chooseCerar(kIb8, 500e6, fp32(0.35));
  ASSERT_TRUE(d.useCerar) << d.reason;
  EXPECT_EQ(d.components, 32); // section 5.5: IB100, N = 8, 500 MB
  EXPECT_NEAR(d.ringTime * 1e3, 73.20, 0.01);
  EXPECT_NEAR(d.cerarTime * 1e3, 52.91, 0.01);
  EXPECT_GT(d.minBytes, 0);
  EXPECT_LT(d.minBytes, 500e6);
}

TEST(CerarPolicy, NvlinkFallsBackToRing) {
  PolicyDecision d = chooseCerar(kNvl4, 500e6, fp32(3e-2));
  EXPECT_FALSE(d.useCerar);
  EXPECT_EQ(d.reason,
            "ring bandwidth 230.0 GB/s is at or above the ceiling "
            "B_mem(N-2)/(phi N) = 93.8 GB/s: encode/decode memory traffic "
            "costs more than the saved link time for every c");
}

TEST(CerarPolicy, OtherFallbacks) {
  EXPECT_EQ(chooseCerar(kPcie8, 1e9, fp32(0)).reason,
            "exact all-reduce required (no --tolerance): CERAR is "
            "approximate for c > N and costs the same as the ring for "
            "c <= N");
  EXPECT_EQ(chooseCerar({2, 10e-6, 20e9}, 1e9, fp32(1e-2)).reason,
            "N = 2: CERAR's traffic per rank equals the ring's");
  PolicyOptions half = fp32(1e-2);
  half.baseBytes = 2; // fp32 wire against an fp16 ring
  EXPECT_EQ(chooseCerar(kPcie8, 1e9, half).reason,
            "a fp32 wire is 2x the baseline dtype, at least the ring's "
            "2(N-1)/N = 1.750: CERAR can never win");
  EXPECT_EQ(chooseCerar(kPcie8, 1e9, fp32(1e-4)).reason,
            "tolerance 1.00e-04 is below the smallest error contract a fp32 "
            "wire achieves (1.07e-02 at c = 2N, docs/Algorithms-cerar.md 8)");
  PolicyDecision small = chooseCerar(kPcie8, 1e6, fp32(3e-2));
  EXPECT_FALSE(small.useCerar);
  EXPECT_EQ(small.reason.rfind("best CERAR (c = ", 0), 0u) << small.reason;
}

TEST(CerarPolicy, KappaLimitRaisesEps) {
  // q = 3 (tolerance 0.15 on N = 8: q <= 3) at the fp32 eps 2.5e-2 has
  // kappa ~ 4.24 / 6.25e-4 = 6.8e3.
  PolicyOptions o = fp32(0.15);
  o.kappaMax = 1e3;
  PolicyDecision d = chooseCerar(kPcie8, 25e6, o);
  ASSERT_TRUE(d.useCerar) << d.reason;
  EXPECT_EQ(d.q, 3);
  EXPECT_NEAR(d.kappa, 1e3, 1e-6);
  EXPECT_NEAR(d.eps, std::sqrt(4.24 / 1e3), 1e-12);
  // A tighter limit forces an eps whose error (0.7 eps) exceeds the
  // tolerance.
  o.kappaMax = 50;
  PolicyDecision e = chooseCerar(kPcie8, 25e6, o);
  EXPECT_FALSE(e.useCerar);
  EXPECT_EQ(e.reason, "--kappa-max 5.00e+01 forces eps = 2.91e-01 at c = 24, "
                      "error about 2.04e-01 > tolerance 1.50e-01");
}

std::string topologyPath(const char *name) {
  return std::string(TOPOCC_SOURCE_DIR) + "/topologies/" + name;
}

TEST(CerarPolicy, DesignCerarForTopologies) {
  auto t = topo::loadTopologyFile(topologyPath("eth16-100g.yaml"));
  ASSERT_TRUE(bool(t)) << llvm::toString(t.takeError());
  CerarRequest req;
  req.bytes = 256.0 * 1024 * 1024;
  req.policy = fp32(2e-2); // q <= 2: c <= 2N keeps the symbolic check fast
  req.ringOrder = {};
  for (int r = 0; r < t->numRanks(); ++r)
    req.ringOrder.push_back(r);
  auto plan = designCerarFor(*t, req);
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  ASSERT_TRUE(plan->decision.useCerar) << plan->decision.reason;
  ASSERT_TRUE(plan->design.has_value());
  EXPECT_EQ(plan->design->components, plan->decision.components);
  EXPECT_EQ(plan->decision.components, 32);
  EXPECT_NEAR(plan->decision.designError, 2e-3 * std::sqrt(15.0), 1e-12);

  auto nv = topo::loadTopologyFile(topologyPath("dgx-a100.yaml"));
  ASSERT_TRUE(bool(nv)) << llvm::toString(nv.takeError());
  CerarRequest auto8;
  auto8.bytes = 1024.0 * 1024 * 1024;
  auto8.policy = fp32(3e-2);
  auto p8 = designCerarFor(*nv, auto8);
  ASSERT_TRUE(bool(p8)) << llvm::toString(p8.takeError());
  EXPECT_FALSE(p8->design.has_value());
  EXPECT_NE(p8->decision.reason.find("at or above the ceiling"),
            std::string::npos)
      << p8->decision.reason;
  // Forced without --components: the reason as an error.
  auto8.force = true;
  auto forced = designCerarFor(*nv, auto8);
  ASSERT_FALSE(bool(forced));
  EXPECT_NE(topocc::testing::errorMessage(forced.takeError())
                .find("cerar: CERAR cannot win on this ring: ring bandwidth"),
            std::string::npos);
  // Forced with c <= N: exact, passes the full verifier.
  auto8.components = 8;
  auto exact = designCerarFor(*nv, auto8);
  ASSERT_TRUE(bool(exact)) << llvm::toString(exact.takeError());
  ASSERT_TRUE(exact->design.has_value());
  passes::CerarLowerOptions lo;
  lo.design = *exact->design;
  lo.ringOrder.assign(exact->ringOrder.begin(), exact->ringOrder.end());
  auto lowered = passes::lowerCerar(lo);
  ASSERT_TRUE(bool(lowered)) << llvm::toString(lowered.takeError());
  llvm::Error err = ir::verifySchedule(*lowered);
  EXPECT_FALSE(bool(err)) << llvm::toString(std::move(err));
  // Forced with c = 5N: q = 5 has no usable fp32 error (section 5.3).
  auto8.components = 40;
  auto tooMany = designCerarFor(*nv, auto8);
  ASSERT_FALSE(bool(tooMany));
  EXPECT_EQ(topocc::testing::errorMessage(tooMany.takeError()),
            "cerar: c = 40 on N = 8 ranks needs q = 5 layers; a fp32 wire "
            "has no usable error beyond q = 4 (docs/Algorithms-cerar.md 5.3)");
  // c = 2N with a tolerance below the q = 2 contract: the code is built
  // (the lowering measures the schedule's contract and refuses it,
  // tests/unit/compiler/ErrorContractTest.cpp).
  auto8.components = 16;
  auto8.policy.tolerance = 1e-4;
  auto tight = designCerarFor(*nv, auto8);
  ASSERT_TRUE(bool(tight)) << llvm::toString(tight.takeError());
  auto8.components = 16;
  // Forced approximate code without a tolerance.
  auto8.policy.tolerance = 0;
  auto noTol = designCerarFor(*nv, auto8);
  ASSERT_FALSE(bool(noTol));
  EXPECT_EQ(topocc::testing::errorMessage(noTol.takeError()),
            "cerar: c = 16 > N = 8 is approximate; pass --tolerance to allow "
            "it, or use c <= N");
}

} // namespace
