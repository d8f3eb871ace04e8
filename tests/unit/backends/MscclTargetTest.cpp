//===- tests/unit/backends/MscclTargetTest.cpp - Targets from topologies --===//
//
// backends::mscclTargetFor: the SM count from the topology's GPU model
// (V100 80, MI250 GCD 104), the runtime from the vendor (AMD: rccl, with
// its 64 threadblocks per rank), --sm-count and --msccl-runtime overriding
// both, an unknown model without --sm-count a user error, no topology
// (--run-pass) the A100 default; describeMscclTarget's wording.
//
//===----------------------------------------------------------------------===//

#include "backends/MscclTarget.h"
#include "compiler/topology/TopologyParser.h"

#include "gtest/gtest.h"

using namespace topocc;
using namespace topocc::backends;

namespace {

topo::Topology library(llvm::StringRef name) {
  auto t = topo::loadTopologyFile(std::string(TOPOCC_SOURCE_DIR) +
                                  "/topologies/" + name.str() + ".yaml");
  if (!t) {
    ADD_FAILURE() << llvm::toString(t.takeError());
    return topo::Topology();
  }
  return std::move(*t);
}

} // namespace

TEST(MscclTargetTest, FromTheGpuModel) {
  topo::Topology ndv2 = library("ndv2");
  auto t = mscclTargetFor(&ndv2, {});
  ASSERT_TRUE(static_cast<bool>(t)) << llvm::toString(t.takeError());
  EXPECT_EQ(t->runtime, ir::MscclRuntime::MscclExecutor);
  EXPECT_EQ(t->maxThreadblocksPerRank, 80);
  EXPECT_EQ(describeMscclTarget(*t), "msccl-executor, 80 SMs");
}

TEST(MscclTargetTest, AmdDefaultsToRccl) {
  topo::Topology mi250 = library("mi250");
  EXPECT_EQ(defaultMscclRuntime(mi250), ir::MscclRuntime::Rccl);
  auto t = mscclTargetFor(&mi250, {});
  ASSERT_TRUE(static_cast<bool>(t)) << llvm::toString(t.takeError());
  EXPECT_EQ(t->runtime, ir::MscclRuntime::Rccl);
  EXPECT_EQ(t->smCount, 104);
  EXPECT_EQ(t->maxThreadblocksPerRank, 64);
  EXPECT_EQ(describeMscclTarget(*t),
            "rccl, 104 SMs, 64 threadblocks per rank at most");
  MscclTargetOptions o;
  o.runtime = ir::MscclRuntime::MscclExecutor;
  auto exec = mscclTargetFor(&mi250, o);
  ASSERT_TRUE(static_cast<bool>(exec));
  EXPECT_EQ(exec->maxThreadblocksPerRank, 104);
}

TEST(MscclTargetTest, SmCountOverrides) {
  topo::Topology ndv2 = library("ndv2");
  MscclTargetOptions o;
  o.smCount = 40;
  o.maxSteps = 128;
  auto t = mscclTargetFor(&ndv2, o);
  ASSERT_TRUE(static_cast<bool>(t));
  EXPECT_EQ(t->maxThreadblocksPerRank, 40);
  EXPECT_EQ(t->maxStepsPerThreadblock, 128);
  o.smCount = 0;
  auto none = mscclTargetFor(&ndv2, o);
  ASSERT_TRUE(static_cast<bool>(none));
  EXPECT_EQ(none->maxThreadblocksPerRank, 0);
  EXPECT_EQ(describeMscclTarget(*none), "msccl-executor, no SM limit");
}

TEST(MscclTargetTest, UnknownModelNeedsSmCount) {
  auto box4 = topo::loadTopologyFile(std::string(TOPOCC_SOURCE_DIR) +
                                     "/tests/lit/Inputs/compile/box4.yaml");
  ASSERT_TRUE(static_cast<bool>(box4));
  auto t = mscclTargetFor(&*box4, {});
  ASSERT_FALSE(static_cast<bool>(t));
  std::string msg = llvm::toString(t.takeError());
  EXPECT_NE(msg.find("'test-gpu'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--sm-count"), std::string::npos) << msg;
  MscclTargetOptions o;
  o.smCount = 16;
  auto given = mscclTargetFor(&*box4, o);
  ASSERT_TRUE(static_cast<bool>(given));
  EXPECT_EQ(given->maxThreadblocksPerRank, 16);
  EXPECT_EQ(given->runtime, ir::MscclRuntime::MscclExecutor);
}

TEST(MscclTargetTest, NoTopology) {
  auto t = mscclTargetFor(nullptr, {});
  ASSERT_TRUE(static_cast<bool>(t));
  EXPECT_EQ(t->maxThreadblocksPerRank, ir::kDefaultSmCount);
  EXPECT_EQ(t->runtime, ir::MscclRuntime::MscclExecutor);
}
