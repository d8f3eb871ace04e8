//===- tests/unit/analysis/RuntimeModelTest.cpp - SimMode::Runtime --------===//
//
// Closed forms of the runtime model (docs/WhatIf.md, "The runtime model"):
// a chain of h relays pipelines slice by slice, (S + (h-1)s)/B + h·latency
// plus the kernel's launch latency; a sending step holds its threadblock
// until its last byte is out; loop iterations follow each other through the
// threadblock; the iteration count and its cap; the mode names.
//
//===----------------------------------------------------------------------===//

#include "compiler/analysis/CostModel.h"
#include "compiler/analysis/Simulator.h"
#include "compiler/topology/TopologyParser.h"
#include "ir/Parser.h"
#include "tests/unit/topology/TopologyTestUtil.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace topocc;
using namespace topocc::analysis;
using topocc::topo::test::parseOk;

namespace {

ir::Schedule irOk(const std::string &text) {
  auto s = ir::parseSchedule(text, "t.ir");
  if (!s) {
    ADD_FAILURE() << llvm::toString(s.takeError());
    return ir::Schedule();
  }
  return std::move(*s);
}

/// n GPUs g0 -> g1 -> ... joined by direct links of 10 GB/s and 2 us; a
/// slow hub keeps every pair routed.
std::string chainTopo(int n) {
  std::string s = "schema: topocc/v1\nnodes:\n  - name: a\n    gpus: [";
  for (int i = 0; i < n; ++i)
    s += std::string(i ? ", " : "") + "g" + std::to_string(i);
  s += "]\n    switches: [ { name: hub, kind: pcie-switch } ]\n    links:\n";
  for (int i = 0; i < n; ++i)
    s += "      - { from: g" + std::to_string(i) +
         ", to: hub, type: pcie, bandwidth: 0.1 GB/s, latency: 50 us }\n";
  for (int i = 0; i + 1 < n; ++i)
    s += "      - { from: g" + std::to_string(i) + ", to: g" +
         std::to_string(i + 1) +
         ", type: nvlink, bandwidth: 10 GB/s, latency: 2 us }\n";
  return s;
}

/// Rank 0 sends one chunk down the chain; ranks 1..h-1 receive and forward
/// it (rcs), rank h receives it. One threadblock per rank.
std::string chainIr(int h) {
  std::string s = "schedule @chain collective=allgather ranks=" +
                  std::to_string(h + 1) +
                  " chunks=1 inplace=0 stage=threadblocks\n";
  for (int r = 0; r <= h; ++r) {
    s += "rank " + std::to_string(r) + " in=1 out=1 sc=0 {\n";
    std::string to = " -> r" + std::to_string(r + 1) + " msg=" +
                     std::to_string(r);
    std::string from = " <- r" + std::to_string(r - 1) + " msg=" +
                       std::to_string(r - 1);
    if (r == 0)
      s += "  %0 = send in[0+1]" + to;
    else if (r < h)
      s += "  %0 = rcs out[0+1]" + from + to;
    else
      s += "  %0 = recv out[0+1]" + from;
    s += " ch=0 tb=0\n}\n";
  }
  return s;
}

SimResult runOk(const ir::Schedule &s, const topo::Topology &t, double bytes,
                SimMode mode = SimMode::Runtime) {
  LinkModel m(t);
  SimOptions o;
  o.bytes = bytes;
  o.mode = mode;
  o.reduceBandwidth = 0.0;
  auto r = simulate(s, m, o);
  if (!r) {
    ADD_FAILURE() << llvm::toString(r.takeError());
    return SimResult();
  }
  return std::move(*r);
}

double rel(double a, double b) { return std::fabs(a - b) / std::fabs(b); }

TEST(RuntimeModelTest, RelayChainPipelinesSliceBySlice) {
  const double B = 10e9, a = 2e-6, S = 1024.0 * 1024; // one iteration
  RuntimeParams p;
  for (int h : {1, 2, 3, 6}) {
    topo::Topology t = parseOk(chainTopo(h + 1));
    ir::Schedule s = irOk(chainIr(h));
    SimResult r = runOk(s, t, S);
    double slice = S / p.slicesPerStep;
    double expect = (S + (h - 1) * slice) / B + h * a + p.kernelLatency;
    EXPECT_EQ(r.iterations, 1);
    EXPECT_DOUBLE_EQ(r.launchLatency, p.kernelLatency);
    EXPECT_LT(rel(r.time, expect), 1e-9) << h << ": " << r.time;
    // Store-and-forward pays every hop in full: h (S/B + a).
    SimResult sf = runOk(s, t, S, SimMode::StoreAndForward);
    EXPECT_LT(rel(sf.time, h * (S / B + a)), 1e-9) << h;
  }
}

TEST(RuntimeModelTest, LoopIterationsFollowEachOtherInTheThreadblock) {
  // One hop, 8 MiB in one chunk: 4 iterations of 2 MiB. The sender's
  // threadblock sends them back to back, the link stays busy: S/B + a.
  const double B = 10e9, a = 2e-6, S = 8.0 * 1024 * 1024;
  topo::Topology t = parseOk(chainTopo(2));
  ir::Schedule s = irOk(chainIr(1));
  RuntimeParams p;
  EXPECT_EQ(runtimeIterations(s, S, p), 4);
  SimResult r = runOk(s, t, S);
  EXPECT_EQ(r.iterations, 4);
  EXPECT_LT(rel(r.time, S / B + a + p.kernelLatency), 1e-9) << r.time;
  // Through two relays the iterations overlap: the last one's tail leaves
  // the first link at S/B and crosses two more slices' hops after it.
  topo::Topology t3 = parseOk(chainTopo(4));
  SimResult r3 = runOk(irOk(chainIr(3)), t3, S);
  double chunk = S / 4, slice = chunk / p.slicesPerStep;
  EXPECT_LT(rel(r3.time, S / B + 2 * slice / B + 3 * a + p.kernelLatency),
            1e-9)
      << r3.time;
}

// leastChainTime: h messages in turn each pay at least the least latency
// of a route between ranks (here the 2 us direct links; two hub links are
// 100 us), plus the launch in the runtime model. A tiny chunk's relay chain
// takes about that and never less.
TEST(RuntimeModelTest, LeastChainTimeBoundsARelayChain) {
  RuntimeParams p;
  for (int h : {1, 3, 6}) {
    topo::Topology t = parseOk(chainTopo(h + 1));
    EXPECT_DOUBLE_EQ(leastMessageLatency(t), 2e-6);
    ir::Schedule s = irOk(chainIr(h));
    for (SimMode mode :
         {SimMode::Runtime, SimMode::CutThrough, SimMode::StoreAndForward}) {
      const double floor = leastChainTime(t, h, mode, p);
      EXPECT_DOUBLE_EQ(
          floor, h * 2e-6 + (mode == SimMode::Runtime ? p.kernelLatency : 0.0));
      SimResult r = runOk(s, t, 8, mode);
      EXPECT_GE(r.time, floor) << h << " " << simModeName(mode).str();
      EXPECT_LT(rel(r.time, floor), 1e-3) << h << " " << r.time;
    }
  }
  // Without a direct link a route leaves one GPU and enters the other: two
  // links of 50 us at least.
  topo::Topology hub = parseOk(
      "schema: topocc/v1\nnodes:\n  - name: a\n    gpus: [g0, g1]\n"
      "    switches: [ { name: hub, kind: pcie-switch } ]\n    links:\n"
      "      - { from: g0, to: hub, type: pcie, bandwidth: 1 GB/s, latency: "
      "50 us }\n"
      "      - { from: g1, to: hub, type: pcie, bandwidth: 1 GB/s, latency: "
      "60 us }\n");
  EXPECT_DOUBLE_EQ(leastMessageLatency(hub), 100e-6);
}

TEST(RuntimeModelTest, IterationsAreCapped) {
  ir::Schedule s = irOk(chainIr(1));
  RuntimeParams p;
  EXPECT_EQ(runtimeIterations(s, 1024, p), 1);
  EXPECT_EQ(runtimeIterations(s, 2.0 * 1024 * 1024, p), 1);
  EXPECT_EQ(runtimeIterations(s, 2.0 * 1024 * 1024 + 1, p), 2);
  p.maxOpInstances = 6; // 2 ops: at most 3 iterations
  EXPECT_EQ(runtimeIterations(s, 1e12, p), 3);
}

TEST(RuntimeModelTest, SendingStepHoldsItsThreadblock) {
  // Rank 0 sends two chunks to ranks 1 and 2 from one threadblock over
  // separate links: the second send starts when the first's last byte is
  // out, so the second arrives at 2 S/2/B + a, not S/2/B + a.
  std::string topo = "schema: topocc/v1\nnodes:\n  - name: a\n    gpus: [g0, "
                     "g1, g2]\n    switches: [ { name: hub, kind: "
                     "pcie-switch } ]\n    links:\n";
  for (int i = 0; i < 3; ++i)
    topo += "      - { from: g" + std::to_string(i) +
            ", to: hub, type: pcie, bandwidth: 0.1 GB/s, latency: 50 us }\n";
  topo += "      - { from: g0, to: g1, type: nvlink, bandwidth: 10 GB/s, "
          "latency: 2 us }\n      - { from: g0, to: g2, type: nvlink, "
          "bandwidth: 10 GB/s, latency: 2 us }\n";
  topo::Topology t = parseOk(topo);
  std::string ir = "schedule @fan collective=allgather ranks=3 chunks=2 "
                   "inplace=0 stage=threadblocks\n"
                   "rank 0 in=2 out=2 sc=0 {\n"
                   "  %0 = send in[0+1] -> r1 msg=0 ch=0 tb=0\n"
                   "  %1 = send in[1+1] -> r2 msg=1 ch=0 tb=0\n}\n"
                   "rank 1 in=2 out=2 sc=0 {\n"
                   "  %0 = recv out[0+1] <- r0 msg=0 ch=0 tb=0\n}\n"
                   "rank 2 in=2 out=2 sc=0 {\n"
                   "  %0 = recv out[1+1] <- r0 msg=1 ch=0 tb=0\n}\n";
  const double B = 10e9, a = 2e-6, S = 1024.0 * 1024;
  SimResult r = runOk(irOk(ir), t, S);
  RuntimeParams p;
  EXPECT_LT(rel(r.time, 2 * (S / 2) / B + a + p.kernelLatency), 1e-9)
      << r.time;
  // Cut-through releases the threadblock at once: both in parallel.
  SimResult ct = runOk(irOk(ir), t, S, SimMode::CutThrough);
  EXPECT_LT(rel(ct.time, (S / 2) / B + a), 1e-9) << ct.time;
}

TEST(RuntimeModelTest, ModeNames) {
  for (SimMode m :
       {SimMode::Runtime, SimMode::CutThrough, SimMode::StoreAndForward}) {
    auto back = parseSimMode(simModeName(m));
    ASSERT_TRUE(static_cast<bool>(back));
    EXPECT_EQ(*back, m);
  }
  auto bad = parseSimMode("fluid");
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("expected runtime"),
            std::string::npos);
}

} // namespace
