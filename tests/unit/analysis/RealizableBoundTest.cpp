//===- tests/unit/analysis/RealizableBoundTest.cpp - The runtime's routes' bound ===//
//
// compiler/analysis/RealizableGraph.h: the cut bound on the paths the
// runtime gives each message. Closed forms on small boxes (a PCIe path
// beside an NVLink pair is not a route; a NIC farther than the nearest is
// not used; NCCL's rule alternates two nearest NICs over channels), the
// library's DGX A100 (NVLink only: 6 x 40 GB/s per GPU), and for every
// library topology up to 32 ranks: realizable <= physical on the same
// effective rates.
//
//===----------------------------------------------------------------------===//

#include "compiler/analysis/RealizableGraph.h"
#include "compiler/topology/TopologyParser.h"

#include "gtest/gtest.h"

#include <filesystem>

using namespace topocc;
using namespace topocc::analysis;

namespace {

double busbw(const BoundResult &b, ir::Collective c) {
  return boundNumbers(b, c, 1 << 30).busbw;
}

/// Two GPUs joined by NVLink (100 GB/s) and both on a PCIe switch (32 GB/s).
const char *kNvlinkAndPcie = R"(schema: topocc/v1
nodes:
  - name: box
    gpus: [ g0, g1 ]
    switches: [ { name: sw, kind: pcie-switch } ]
    links:
      - { from: g0, to: g1, type: nvlink, bandwidth: 100 GB/s, latency: 1 us }
      - { from: "g{i:0-1}", to: sw, type: pcie, bandwidth: 32 GB/s, latency: 1 us }
)";

TEST(RealizableBoundTest, PcieBesideNvlinkIsNotARoute) {
  auto t = topo::parseTopology(kNvlinkAndPcie, "box.yaml");
  ASSERT_TRUE(bool(t)) << llvm::toString(t.takeError());
  auto physical = computeBound(*t, CapacityKind::Effective);
  ASSERT_TRUE(bool(physical)) << llvm::toString(physical.takeError());
  auto realizable = computeRealizableBound(*t);
  ASSERT_TRUE(bool(realizable)) << llvm::toString(realizable.takeError());
  for (ir::Collective c :
       {ir::Collective::AllGather, ir::Collective::ReduceScatter}) {
    EXPECT_DOUBLE_EQ(busbw(*physical, c), 132e9);
    EXPECT_DOUBLE_EQ(busbw(*realizable, c), 100e9);
  }
  // The GPUs are vertices 0 and 1, named as ranks; the rest are hops.
  EXPECT_EQ(realizable->graph.vertexName(0), "box/g0");
  EXPECT_EQ(realizable->graph.compute, (std::vector<int>{0, 1}));
}

/// Two boxes of one GPU; n0 on the GPU's PCIe switch, n1 one switch
/// farther; 10 GB/s NICs on one IB switch. Optionally n1 beside n0.
std::string twoBoxes(bool bothNear) {
  std::string far = bothNear ? "sw" : "sw2";
  return R"(schema: topocc/v1
node_templates:
  box:
    gpus: [ g0 ]
    nics: [ n0, n1 ]
    switches: [ { name: sw, kind: pcie-switch }, { name: sw2, kind: pcie-switch } ]
    links:
      - { from: g0, to: sw, type: pcie, bandwidth: 64 GB/s, latency: 1 us }
      - { from: sw, to: sw2, type: pcie, bandwidth: 64 GB/s, latency: 1 us }
      - { from: n0, to: sw, type: pcie, bandwidth: 64 GB/s, latency: 1 us }
      - { from: n1, to: )" +
         far + R"(, type: pcie, bandwidth: 64 GB/s, latency: 1 us }
nodes:
  - { name: "b[0-1]", template: box }
fabric:
  switches: [ { name: ib, kind: ib-switch } ]
  links:
    - { from: "b{b:0-1}/n{i:0-1}", to: ib, type: ib, bandwidth: 10 GB/s, latency: 1 us }
)";
}

TEST(RealizableBoundTest, OnlyTheNearestNicsCarryInterNodeTraffic) {
  for (bool bothNear : {false, true}) {
    auto t = topo::parseTopology(twoBoxes(bothNear), "two.yaml");
    ASSERT_TRUE(bool(t)) << llvm::toString(t.takeError());
    auto physical = computeBound(*t, CapacityKind::Effective);
    ASSERT_TRUE(bool(physical)) << llvm::toString(physical.takeError());
    EXPECT_DOUBLE_EQ(busbw(*physical, ir::Collective::AllGather), 20e9);
    // NCCL's rule: the nearest NIC only (n1 is farther), or both in turn
    // over channels when both are nearest.
    auto rule = computeRealizableBound(*t);
    ASSERT_TRUE(bool(rule)) << llvm::toString(rule.takeError());
    EXPECT_DOUBLE_EQ(busbw(*rule, ir::Collective::AllGather),
                     bothNear ? 20e9 : 10e9)
        << bothNear;
    // Free routing (store-and-forward, cut-through) spreads over the
    // shortest paths of the widest route's link types: n1 only when it is
    // as near as n0.
    RealizableOptions free;
    free.ncclNetRule = false;
    auto spread = computeRealizableBound(*t, free);
    ASSERT_TRUE(bool(spread)) << llvm::toString(spread.takeError());
    EXPECT_NEAR(busbw(*spread, ir::Collective::AllGather),
                bothNear ? 20e9 : 10e9, 1)
        << bothNear;
  }
}

TEST(RealizableBoundTest, DgxA100GpusReachEachOtherOverNvlinkOnly) {
  auto t = topo::loadTopologyFile(std::string(TOPOCC_SOURCE_DIR) +
                                  "/topologies/dgx-a100.yaml");
  ASSERT_TRUE(bool(t)) << llvm::toString(t.takeError());
  auto b = computeRealizableBound(*t);
  ASSERT_TRUE(bool(b)) << llvm::toString(b.takeError());
  // 12 NVLinks of 25 GB/s at efficiency 0.8 per GPU; no PCIe path.
  EXPECT_NEAR(busbw(*b, ir::Collective::AllGather), 240e9, 1);
  EXPECT_NEAR(busbw(*b, ir::Collective::ReduceScatter), 240e9, 1);
  EXPECT_NEAR(busbw(*b, ir::Collective::AllReduce), 240e9, 1);
}

TEST(RealizableBoundTest, NeverAbovePhysicalOnTheLibrary) {
  int seen = 0;
  for (const auto &e : std::filesystem::directory_iterator(
           std::string(TOPOCC_SOURCE_DIR) + "/topologies")) {
    if (e.path().extension() != ".yaml")
      continue;
    auto t = topo::loadTopologyFile(e.path().string());
    ASSERT_TRUE(bool(t)) << llvm::toString(t.takeError());
    if (t->numRanks() > 32) // fattree-multipod: seconds in a Debug build
      continue;
    auto physical = computeBound(*t, CapacityKind::Effective);
    ASSERT_TRUE(bool(physical)) << llvm::toString(physical.takeError());
    for (bool rule : {true, false}) {
      RealizableOptions o;
      o.ncclNetRule = rule;
      auto r = computeRealizableBound(*t, o);
      ASSERT_TRUE(bool(r)) << e.path() << ": " << llvm::toString(r.takeError());
      for (ir::Collective c :
           {ir::Collective::AllGather, ir::Collective::ReduceScatter,
            ir::Collective::AllReduce})
        EXPECT_LE(busbw(*r, c), busbw(*physical, c) * (1 + 1e-12))
            << e.path() << " " << ir::collectiveName(c).str();
    }
    ++seen;
  }
  EXPECT_GE(seen, 9);
}

} // namespace
