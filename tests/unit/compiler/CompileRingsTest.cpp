//===- tests/unit/compiler/CompileRingsTest.cpp - compile() on topologies -===//
//
// compile() on a topology lowers the ring search's rings (shares as chunk
// counts), rank order only when asked; hier-ring compiles to a verified
// all-reduce that the cost model can price; multi-node rings seeded from the
// single-node solution (mi250x2).
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipeline.h"
#include "compiler/lowerings/Lowering.h"
#include "compiler/algorithms/RingSearch.h"
#include "compiler/analysis/CostModel.h"
#include "compiler/passes/LowerRing.h"
#include "compiler/topology/TopologyParser.h"
#include "ir/Verifier.h"

#include "tests/support/ErrorText.h"

#include "compiler/analysis/NetRoutes.h"

#include "gtest/gtest.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/Path.h"

#include <map>
#include <numeric>

using namespace topocc;
using namespace topocc::algorithms;
using namespace topocc::analysis;

namespace {

topo::Topology library(const char *name) {
  llvm::SmallString<256> path(TOPOCC_SOURCE_DIR);
  llvm::sys::path::append(path, "topologies", name);
  auto t = topo::loadTopologyFile(path);
  if (!t) {
    ADD_FAILURE() << llvm::toString(t.takeError());
    return topo::Topology();
  }
  return std::move(*t);
}

std::vector<int> identity(int n) {
  std::vector<int> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

TEST(CompileRingsTest, DefaultRingIsTheSearchedRing) {
  topo::Topology t = library("ndv2.yaml");
  CompileRequest req;
  PassLogger log;
  auto plan = compile(t, req, log);
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  LinkModel m(t);
  RingSearchOptions so;
  so.bytes = req.bytes;
  so.channels = 1;
  auto found = searchRings(t, m, so);
  ASSERT_TRUE(bool(found));
  ASSERT_EQ(plan->rings.size(), 1u);
  EXPECT_EQ(std::vector<int>(plan->rings[0].order.begin(),
                             plan->rings[0].order.end()),
            found->rings[0].order);
  EXPECT_NE(found->rings[0].order, identity(8)); // NDv2: rank order is bad
  EXPECT_EQ(plan->summary, "ring search (" + found->method + ")");
  // The schedule's cost is the searched ring's (free routing, chunks 1).
  auto cost = estimateSchedule(plan->schedule, m, req.bytes);
  ASSERT_TRUE(bool(cost));
  EXPECT_NEAR(cost->bandwidthTime, found->cost.bandwidthTime,
              found->cost.bandwidthTime * 1e-9);

  req.rankOrder = true;
  plan = compile(t, req, log);
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  EXPECT_EQ(plan->summary, "rank order");
  EXPECT_EQ(std::vector<int>(plan->rings[0].order.begin(),
                             plan->rings[0].order.end()),
            identity(8));
}

TEST(CompileRingsTest, AutoChannelsCarryTheSharesAsChunks) {
  // The search's shares are units of a power-of-two total (RingPacking.h);
  // each channel carries its ring's units times --chunks, and the rings
  // spread over as many channels as the steps per threadblock need.
  topo::Topology t = library("ndv2.yaml");
  CompileRequest req;
  req.channels = 0; // auto
  req.chunks = 4;
  PassLogger log;
  auto plan = compile(t, req, log);
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  ASSERT_FALSE(plan->rings.empty());
  int32_t total = 0;
  for (const ChannelRing &cr : plan->rings) {
    EXPECT_EQ(cr.chunks % 4, 0);
    total += cr.chunks;
  }
  EXPECT_TRUE(llvm::isPowerOf2_32(static_cast<uint32_t>(total / 4))) << total;
  EXPECT_EQ(plan->schedule.chunksPerLoop, 8 * total);
  // The shares as chunks keep the fluid rate of a 16-unit NVLink set (16
  // units over 40 and 20 GB/s cycles: 16 / max(5/40, 3/20) = 106.7 GB/s).
  LinkModel m(t);
  std::map<int, double> load;
  for (const ChannelRing &cr : plan->rings) {
    RingChannel rc;
    rc.order.assign(cr.order.begin(), cr.order.end());
    for (size_t i = 0; i < rc.order.size(); ++i)
      for (auto [r, x] : hopFlow(rc, i, m).res)
        load[r] += x * cr.chunks / total;
  }
  double rate = 1e300;
  for (auto [r, x] : load)
    rate = std::min(rate, m.capacity(r) / x);
  EXPECT_GE(rate, 106.6e9);
  // auto needs the search.
  req.ringOrder = identity(8);
  plan = compile(t, req, log);
  ASSERT_FALSE(bool(plan));
  EXPECT_EQ(topocc::testing::errorMessage(plan.takeError()),
            "--channels auto lets the ring search choose the rings; give a "
            "number of channels with --ring or without a topology");
}

TEST(CompileRingsTest, HierRingCompilesVerifiesAndIsCosted) {
  topo::Topology t = library("dgx-a100x2.yaml");
  CompileRequest req;
  req.algorithm = Algorithm::HierRing;
  req.chunks = 2;
  PassLogger log;
  auto plan = compile(t, req, log);
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  EXPECT_EQ(plan->algorithm, Algorithm::HierRing);
  EXPECT_EQ(plan->schedule.chunksPerLoop, 2 * 8 * 2);
  EXPECT_FALSE(bool(ir::verifySchedule(plan->schedule)));
  LinkModel m(t);
  auto cost = estimateSchedule(plan->schedule, m, 1 << 30);
  ASSERT_TRUE(bool(cost)) << llvm::toString(cost.takeError());
  EXPECT_GT(cost->busbw, 0);
  // What `topocc rings` prices: the same lowering, unoptimised.
  auto low = lowerings::lowerHierRingFor(t, ir::Collective::AllReduce, 1, 1, false,
                              1 << 30);
  ASSERT_TRUE(bool(low));
  EXPECT_FALSE(bool(ir::verifySchedule(*low)));

  // All-gather and reduce-scatter: ranks * chunks units, verified.
  for (ir::Collective c :
       {ir::Collective::AllGather, ir::Collective::ReduceScatter}) {
    req.collective = c;
    plan = compile(t, req, log);
    ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
    EXPECT_EQ(plan->schedule.chunksPerLoop, 16 * 2);
    EXPECT_FALSE(bool(ir::verifySchedule(plan->schedule)));
  }
  topo::Topology one = library("ndv2.yaml");
  req.collective = ir::Collective::AllReduce;
  plan = compile(one, req, log);
  ASSERT_FALSE(bool(plan));
  EXPECT_EQ(topocc::testing::errorMessage(plan.takeError()),
            "the hierarchical ring needs at least 2 nodes with GPUs, the "
            "topology has 1");
}

TEST(CompileRingsTest, Mi250x2RingsFollowTheRuntimesNics) {
  // Two nodes: each channel enters node 0 at a GCD whose NCCL NIC
  // (analysis/NetRoutes.h) is rail c's, leaves it at one whose NIC is rail
  // c + 1's, and node 1 runs the path backwards, so every inter-node hop
  // joins two GCDs whose NICs NCCL picks for that channel. (Seeded from
  // mi250's own rings the cost model said 169 GB/s, but those hops needed
  // NICs the runtime does not use.)
  topo::Topology t = library("mi250x2.yaml");
  LinkModel m(t);
  RingSearchOptions so; // allreduce, 1 GiB, auto channels
  auto found = searchRings(t, m, so);
  ASSERT_TRUE(bool(found)) << llvm::toString(found.takeError());
  EXPECT_TRUE(llvm::StringRef(found->method).startswith("node-major"));
  EXPECT_GT(found->cost.busbw, 120e9);
  analysis::NcclNetRoutes rule(t);
  for (size_t c = 0; c < found->rings.size(); ++c) {
    const RingChannel &rc = found->rings[c];
    for (size_t i = 0; i < 16; ++i)
      EXPECT_LT(rc.order[i], 16);
    for (size_t i = 0; i < rc.order.size(); ++i) {
      int a = rc.order[i], b = rc.order[(i + 1) % rc.order.size()];
      if (t.nodeOfRank(a) == t.nodeOfRank(b))
        continue;
      EXPECT_EQ(rc.nics[i].out, rule.nicFor(a, static_cast<int>(c)));
      EXPECT_EQ(rc.nics[i].in, rule.nicFor(b, static_cast<int>(c)));
      // The same local NIC on both sides: one rail.
      EXPECT_EQ(t.device(rc.nics[i].out).localName,
                t.device(rc.nics[i].in).localName);
    }
  }
}

} // namespace
