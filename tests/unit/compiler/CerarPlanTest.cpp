//===- tests/unit/compiler/CerarPlanTest.cpp - topocc::cerarPlan ----------===//
//
// The crossovers of compiler/CerarPlan.h are where the simulated times of
// the written files cross: the code is faster just above the size
// crossover and slower just below it, and faster just below the bandwidth
// factor and slower just above it.
//
//===----------------------------------------------------------------------===//

#include "compiler/CerarPlan.h"

#include "compiler/Pipeline.h"
#include "compiler/analysis/Simulator.h"
#include "compiler/topology/ScenarioCli.h"
#include "compiler/topology/Topology.h"

#include "llvm/Support/FormatVariadic.h"

#include <gtest/gtest.h>

namespace topocc {
namespace {

topo::Topology load(const char *name) {
  auto t = topo::loadTopologyFile(std::string(TOPOCC_SOURCE_DIR) +
                                  "/topologies/" + name);
  EXPECT_TRUE(bool(t)) << llvm::toString(t.takeError());
  return std::move(*t);
}

/// Simulated time of what compile writes for `req` on `t`.
double simulated(const topo::Topology &t, CompileRequest req) {
  PassLogger log;
  auto res = compile(t, req, log);
  EXPECT_TRUE(bool(res)) << llvm::toString(res.takeError());
  analysis::LinkModel m(t);
  analysis::SimOptions o;
  o.bytes = req.bytes;
  o.mode = analysis::SimMode::Runtime;
  auto sim = analysis::simulate(res->schedule, m, o);
  EXPECT_TRUE(bool(sim)) << llvm::toString(sim.takeError());
  return sim->time;
}

/// CERAR (c components) over the ring at `bytes`.
double ratio(const topo::Topology &t, double bytes, int c, double tol) {
  CompileRequest ring;
  ring.collective = ir::Collective::AllReduce;
  ring.bytes = bytes;
  ring.channels = 0;
  CompileRequest code = ring;
  code.channels = 1;
  code.algorithm = Algorithm::Cerar;
  code.components = c;
  code.tolerance = tol;
  return simulated(t, code) / simulated(t, ring);
}

TEST(CerarPlan, CrossoversAreWhereTheSimulatedTimesCross) {
  topo::Topology t = load("a100-pcie-8gpu.yaml");
  CerarPlanRequest req;
  const double mib = 1024.0 * 1024;
  req.sizes = {1 * mib, 4 * mib, 16 * mib, 64 * mib};
  req.policy.tolerance = 3e-2;
  auto rep = cerarPlan(t, req);
  ASSERT_TRUE(bool(rep)) << llvm::toString(rep.takeError());
  ASSERT_EQ(rep->rows.size(), 4u);
  EXPECT_EQ(rep->components, 16);
  // The policy keeps the ring at 1 and 4 MiB: the code there is forced.
  EXPECT_TRUE(rep->rows[0].forced);
  EXPECT_FALSE(rep->rows[3].forced);
  for (const CerarPlanRow &r : rep->rows) {
    EXPECT_GT(r.ringTime, 0);
    EXPECT_GT(r.cerarTime, 0);
    EXPECT_GT(r.contract, 0);
    EXPECT_LE(r.contract, req.policy.tolerance);
  }
  // Size: between the table's 4 and 16 MiB, within the 2% bisection.
  const double s = rep->crossoverBytes;
  ASSERT_GT(s, 4 * mib);
  ASSERT_LT(s, 16 * mib);
  EXPECT_LT(ratio(t, s, 16, 3e-2), 1.0);
  EXPECT_GT(ratio(t, s / 1.03, 16, 3e-2), 1.0);
  // Bandwidth at 64 MiB: every link scaled by the factor.
  const double f = rep->bandwidthFactor;
  ASSERT_GT(f, 1.0);
  auto at = [&](double g) {
    topo::Topology u = t;
    auto op = topo::parseScaleOption(llvm::formatv("*--*={0:F9}x", g).str());
    EXPECT_TRUE(bool(op));
    std::vector<topo::ScenarioOp> ops{std::move(*op)};
    EXPECT_FALSE(bool(topo::applyScenarioOps(u, "scaled", ops)));
    return ratio(u, 64 * mib, 16, 3e-2);
  };
  EXPECT_LT(at(f / 1.03), 1.0);
  EXPECT_GT(at(f * 1.03), 1.0);
}

TEST(CerarPlan, NoToleranceMeansNoCode) {
  topo::Topology t = load("a100-pcie-8gpu.yaml");
  CerarPlanRequest req;
  req.sizes = {64.0 * 1024 * 1024};
  auto rep = cerarPlan(t, req);
  ASSERT_TRUE(bool(rep)) << llvm::toString(rep.takeError());
  EXPECT_EQ(rep->components, 0);
  EXPECT_EQ(rep->rows[0].components, 0);
  EXPECT_NE(rep->rows[0].why.find("exact all-reduce required"),
            std::string::npos);
  EXPECT_EQ(rep->crossoverBytes, 0);
  EXPECT_EQ(rep->bandwidthFactor, 0);
}

} // namespace
} // namespace topocc
