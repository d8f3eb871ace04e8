//===- tests/unit/ir/TargetTest.cpp - Output formats and MSCCL runtimes ---===//
//
// ir::TargetLimits per MSCCL runtime (docs/MscclXml.md, "MSCCL runtimes"):
// msccl-executor-nccl launches as many threadblocks as the GPU has SMs;
// RCCL's MSCCL at most 64 per rank and 64 steps per threadblock, so its
// limit is min(SMs, 64); the runtime names and their parser.
//
//===----------------------------------------------------------------------===//

#include "ir/Target.h"

#include "gtest/gtest.h"

using namespace topocc;
using namespace topocc::ir;

TEST(TargetTest, RuntimeNames) {
  for (MscclRuntime r : {MscclRuntime::MscclExecutor, MscclRuntime::Rccl}) {
    auto back = parseMscclRuntime(mscclRuntimeName(r));
    ASSERT_TRUE(static_cast<bool>(back));
    EXPECT_EQ(*back, r);
  }
  EXPECT_EQ(mscclRuntimeName(MscclRuntime::Rccl), "rccl");
  EXPECT_EQ(mscclRuntimeName(MscclRuntime::MscclExecutor), "msccl-executor");
  auto bad = parseMscclRuntime("nccl");
  ASSERT_FALSE(static_cast<bool>(bad));
  std::string msg = llvm::toString(bad.takeError());
  EXPECT_NE(msg.find("'msccl-executor'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'rccl'"), std::string::npos) << msg;
}

TEST(TargetTest, RuntimeLimits) {
  EXPECT_EQ(mscclRuntimeMaxThreadblocks(MscclRuntime::Rccl), 64);
  EXPECT_EQ(mscclRuntimeMaxSteps(MscclRuntime::Rccl), 64);
  EXPECT_EQ(mscclRuntimeMaxThreadblocks(MscclRuntime::MscclExecutor), 0);
  EXPECT_EQ(mscclRuntimeMaxSteps(MscclRuntime::MscclExecutor),
            TargetLimits::kNoLimit);
}

TEST(TargetTest, ExecutorThreadblocksAreTheSmCount) {
  TargetLimits t = TargetLimits::forFormat(OutputFormat::MscclXml, 80, 64);
  EXPECT_EQ(t.runtime, MscclRuntime::MscclExecutor);
  EXPECT_EQ(t.maxThreadblocksPerRank, 80);
  EXPECT_EQ(t.smCount, 80);
  EXPECT_FALSE(t.threadblocksLimitedByRuntime());
  TargetLimits none = TargetLimits::forFormat(OutputFormat::MscclXml, 0, 64);
  EXPECT_EQ(none.maxThreadblocksPerRank, 0);
}

TEST(TargetTest, RcclThreadblocksAreAtMost64) {
  // An MI250 GCD has 104 CUs: RCCL's 64 binds.
  TargetLimits gcd = TargetLimits::forFormat(OutputFormat::MscclXml, 104, 64,
                                             MscclRuntime::Rccl);
  EXPECT_EQ(gcd.maxThreadblocksPerRank, 64);
  EXPECT_EQ(gcd.smCount, 104);
  EXPECT_TRUE(gcd.threadblocksLimitedByRuntime());
  // Fewer SMs than 64: the GPU binds.
  TargetLimits small = TargetLimits::forFormat(OutputFormat::MscclXml, 32, 64,
                                               MscclRuntime::Rccl);
  EXPECT_EQ(small.maxThreadblocksPerRank, 32);
  EXPECT_FALSE(small.threadblocksLimitedByRuntime());
  // --sm-count 0 (no SM limit) still meets RCCL's.
  TargetLimits any = TargetLimits::forFormat(OutputFormat::MscclXml, 0, 64,
                                             MscclRuntime::Rccl);
  EXPECT_EQ(any.maxThreadblocksPerRank, 64);
  EXPECT_TRUE(any.threadblocksLimitedByRuntime());
}

TEST(TargetTest, OtherFormatsIgnoreTheRuntime) {
  TargetLimits plan = TargetLimits::forFormat(OutputFormat::Plan, 104, 64,
                                              MscclRuntime::Rccl);
  EXPECT_EQ(plan.maxThreadblocksPerRank, 0);
  EXPECT_FALSE(plan.threadblocksLimitedByRuntime());
}
