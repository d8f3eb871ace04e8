//===- tests/unit/runtime/ErrorContractTest.cpp - CERAR's error contract --===//
//
// docs/Algorithms-cerar.md section 8: the contract's terms computed by hand
// for a two-rank ring, and over the policy's table (cerar::wireError: N =
// 3, 4, 8 ranks, q = 2, 3, 4 layers, c = qN) that a tolerance at the table
// compiles and one below it is refused, and that the plan's runs in fp32,
// fp16 and bf16 stay within the bound the plan carries
// (runtime::valueErrorBound, normwise relative to the norm of all inputs).
//
//===----------------------------------------------------------------------===//

#include "compiler/algorithms/CodedErrorBound.h"
#include "compiler/topology/TopologyParser.h"

#include "tests/unit/runtime/RuntimeTestUtil.h"

#include "llvm/Support/MemoryBuffer.h"

#include <cmath>
#include <random>

using namespace topocc;
using namespace topocc::runtime;
using namespace topocc::runtime::test;

namespace {

/// N single-GPU servers on one switch (topologies/eth16-100g.yaml with N
/// nodes).
topo::Topology hosts(int n) {
  std::string path =
      std::string(TOPOCC_SOURCE_DIR) + "/topologies/eth16-100g.yaml";
  auto text = llvm::MemoryBuffer::getFile(path);
  EXPECT_TRUE(bool(text)) << path;
  std::string t = (*text)->getBuffer().str();
  std::string last = (n <= 10 ? "0" : "") + std::to_string(n - 1);
  for (const char *from : {"node[00-15]", "node{n:00-15}"}) {
    std::string f = from, to = f;
    to.replace(to.find("15"), 2, last);
    t.replace(t.find(f), f.size(), to);
  }
  auto topo = topo::parseTopology(t, "hosts.yaml");
  EXPECT_TRUE(bool(topo)) << llvm::toString(topo.takeError());
  return std::move(*topo);
}

TEST(ErrorContract, TwoRankRingByHand) {
  // Each output chunk j is one addition x0_j + x1_j (f_j = e_0j + e_1j,
  // ||f_j|| = sqrt 2), copied to the other rank; in a 16-bit buffer the sum
  // is also stored (u_T |f_j . x|). C chunks.
  ir::Schedule s = compileRing(ir::Collective::AllReduce, 2);
  auto c = cerar::analyzeErrorContract(s);
  ASSERT_TRUE(bool(c)) << llvm::toString(c.takeError());
  const double chunks = s.nominalInputChunks();
  const double u32 = std::ldexp(1.0, -24), u16 = std::ldexp(1.0, -11);
  EXPECT_EQ(c->exactBound(), 0.0);
  for (int r = 0; r < 2; ++r) {
    // Worst case: || (sum_k |J| u ||f||)_j || = u sqrt(2) sqrt(C).
    EXPECT_NEAR(c->roundoff(r, cerar::WireDtype::FP32, true),
                u32 * std::sqrt(2.0 * chunks), 1e-22);
    EXPECT_NEAR(c->roundoff(r, cerar::WireDtype::FP16, true),
                (u32 + u16) * std::sqrt(2.0 * chunks), 1e-15);
    // Probable: 9 sqrt(lambda_max) with disjoint f_j: 9 u sqrt(2), here
    // above the worst case, so the contract is the worst case.
    EXPECT_NEAR(c->roundoff(r, cerar::WireDtype::FP32),
                std::min(9 * u32 * std::sqrt(2.0),
                         u32 * std::sqrt(2.0 * chunks)),
                1e-22);
  }
  EXPECT_NEAR(c->roundoffGain(cerar::WireDtype::FP32),
              std::min(9 * std::sqrt(2.0), std::sqrt(2.0 * chunks)), 1e-9);
}

struct Measured {
  double error = 0; ///< max_r ||y_r - sum x|| / ||x||
  std::string failure;
};

/// Runs `plan` in `t` on Gaussian inputs (`count` elements per rank).
Measured runGaussian(const Plan &plan, size_t count, DType t, uint32_t seed) {
  const int n = plan.schedule().numRanks;
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal;
  std::vector<std::vector<float>> in(size_t(n), std::vector<float>(count, 0.0f));
  for (auto &v : in)
    for (float &x : v) {
      // Round to t first: the contract is for the inputs the plan gets.
      char buf[4];
      storeElement(buf, 0, t, normal(gen));
      x = loadElement(buf, 0, t);
    }
  std::vector<std::vector<float>> out;
  auto errors = runAll(plan, count, t, out, 0, {},
                       [&](int r, size_t i) { return in[size_t(r)][i]; });
  Measured m;
  for (const std::string &e : errors)
    if (!e.empty())
      m.failure = e;
  double norm = 0;
  for (auto &v : in)
    for (float x : v)
      norm += double(x) * x;
  norm = std::sqrt(norm);
  for (int r = 0; r < n && m.failure.empty(); ++r) {
    double err = 0;
    for (size_t i = 0; i < count; ++i) {
      double exact = 0;
      for (int q = 0; q < n; ++q)
        exact += in[size_t(q)][i];
      double d = out[size_t(r)][i] - exact;
      err += d * d;
    }
    m.error = std::max(m.error, std::sqrt(err) / norm);
  }
  return m;
}

TEST(ErrorContract, PolicyTableCompilesRunsAndRefuses) {
  for (int n : {3, 4, 8}) {
    topo::Topology t = hosts(n);
    for (int q = 2; q <= 4; ++q) {
      const double screen = cerar::wireError(cerar::WireDtype::FP32, q, n);
      SCOPED_TRACE("N = " + std::to_string(n) + ", q = " + std::to_string(q));
      CompileRequest req;
      req.collective = ir::Collective::AllReduce;
      req.algorithm = Algorithm::Cerar;
      req.components = q * n;
      req.bytes = 64.0 * 1024 * 1024;
      // Below the table: no eps meets it.
      req.tolerance = 0.8 * screen;
      PassLogger log;
      auto refused = compile(t, req, log);
      ASSERT_FALSE(bool(refused));
      std::string why = llvm::toString(refused.takeError());
      EXPECT_NE(why.find("no eps meets --tolerance"), std::string::npos)
          << why;
      // At the table: the contract's bound meets it.
      req.tolerance = 1.01 * screen;
      auto compiled = compile(t, req, log);
      ASSERT_TRUE(bool(compiled)) << llvm::toString(compiled.takeError());
      backends::PlanMeta meta;
      meta.algorithm = "cerar";
      compiled->setCodedMeta(meta);
      const double fp32 = valueErrorBound(meta, DType::F32);
      EXPECT_LE(fp32, req.tolerance);
      EXPECT_GT(fp32, 0.5 * screen); // the table is the contract's
      EXPECT_LE(fp32, valueErrorBound(meta, DType::F32, true));
      auto plan = Plan::fromSchedule(std::move(compiled->schedule), meta);
      ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
      for (DType d : {DType::F32, DType::F16, DType::BF16}) {
        const size_t count = size_t(q * n) * 97; // padded blocks
        Measured m = runGaussian(*plan, count, d, uint32_t(n * 10 + q));
        ASSERT_EQ(m.failure, "");
        EXPECT_LE(m.error, valueErrorBound(meta, d)) << dtypeName(d).str();
        // The bound is not vacuous in fp32: within 10x of what Gaussian
        // inputs reach.
        if (d == DType::F32) {
          EXPECT_GT(m.error, fp32 / 10) << m.error << " against " << fp32;
        }
      }
    }
  }
}

} // namespace
