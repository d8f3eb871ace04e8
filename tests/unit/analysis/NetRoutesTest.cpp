//===- tests/unit/analysis/NetRoutesTest.cpp - NCCL's NIC per GPU, channel ===//
//
// ncclTopoGetLocalNet's rule (compiler/analysis/NetRoutes.h) on the
// library's DGX A100 pair (each GPU its own NIC on every channel), on a box
// with two NICs per GPU (channels alternate), and the runtime model's
// routes through those NICs.
//
//===----------------------------------------------------------------------===//

#include "compiler/analysis/CostModel.h"
#include "compiler/analysis/NetRoutes.h"
#include "compiler/analysis/Simulator.h"
#include "compiler/topology/TopologyParser.h"
#include "ir/Parser.h"

#include "gtest/gtest.h"

using namespace topocc;
using namespace topocc::analysis;

namespace {

TEST(NetRoutesTest, DgxA100GpusUseTheirOwnNic) {
  auto t = topo::loadTopologyFile(std::string(TOPOCC_SOURCE_DIR) +
                                  "/topologies/dgx-a100x2.yaml");
  ASSERT_TRUE(bool(t)) << llvm::toString(t.takeError());
  NcclNetRoutes rule(*t);
  for (int r = 0; r < t->numRanks(); ++r) {
    // gpu g and mlx5_g share a PCIe switch with gpu g^1 and mlx5_g^1.
    EXPECT_EQ(rule.nearestNics(r).size(), 2u) << r;
    for (int c : {0, 1, 5, -1}) {
      int nic = rule.nicFor(r, c);
      ASSERT_GE(nic, 0);
      EXPECT_EQ(t->device(nic).localName, "mlx5_" + std::to_string(r % 8))
          << r << " " << c;
      EXPECT_EQ(t->device(nic).nodeIndex, t->nodeOfRank(r));
    }
  }
}

/// Two boxes of one GPU and two NICs on one PCIe switch, NICs on one IB
/// switch.
const char *kTwoNics = R"(schema: topocc/v1
node_templates:
  box:
    gpus: [ g0 ]
    nics: [ n0, n1 ]
    switches: [ { name: sw, kind: pcie-switch } ]
    links:
      - { from: g0, to: sw, type: pcie, bandwidth: 64 GB/s, latency: 1 us }
      - { from: "n{i:0-1}", to: sw, type: pcie, bandwidth: 64 GB/s, latency: 1 us }
nodes:
  - { name: "b[0-1]", template: box }
fabric:
  switches: [ { name: ib, kind: ib-switch } ]
  links:
    - { from: "b{b:0-1}/n{i:0-1}", to: ib, type: ib, bandwidth: 10 GB/s, latency: 1 us }
)";

TEST(NetRoutesTest, ChannelsAlternateOverNicsOfOneGpu) {
  auto t = topo::parseTopology(kTwoNics, "two.yaml");
  ASSERT_TRUE(bool(t)) << llvm::toString(t.takeError());
  NcclNetRoutes rule(*t);
  // Two NICs, one GPU near them: channel % ceil(2 / 1).
  EXPECT_EQ(t->device(rule.nicFor(0, 0)).localName, "n0");
  EXPECT_EQ(t->device(rule.nicFor(0, 1)).localName, "n1");
  EXPECT_EQ(t->device(rule.nicFor(0, 2)).localName, "n0");
  EXPECT_EQ(t->device(rule.nicFor(1, 3)).localName, "n1");

  // In the runtime model a message of channel 1 crosses n1 only; with the
  // rule off the LinkModel spreads it over both NICs.
  std::string ir = "schedule @p collective=allgather ranks=2 chunks=1 "
                   "inplace=0 stage=threadblocks\n"
                   "rank 0 in=1 out=1 sc=0 {\n"
                   "  %0 = send in[0+1] -> r1 msg=0 ch=1 tb=0\n}\n"
                   "rank 1 in=1 out=1 sc=0 {\n"
                   "  %0 = recv out[0+1] <- r0 msg=0 ch=1 tb=0\n}\n";
  auto s = ir::parseSchedule(ir, "p.ir");
  ASSERT_TRUE(bool(s)) << llvm::toString(s.takeError());
  for (bool ruleOn : {true, false}) {
    LinkModel m(*t);
    SimOptions o;
    o.bytes = 1 << 20;
    o.mode = SimMode::Runtime;
    o.runtime.ncclNetRule = ruleOn;
    auto r = simulate(*s, m, o);
    ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
    bool n0 = false, n1 = false;
    std::string used;
    for (const SimLinkStats &l : r->links) {
      std::string name = m.resourceName(l.resource);
      used += name + "=" + std::to_string(l.bytes) + "; ";
      n0 = n0 || name.find("b0/n0 ->") != std::string::npos;
      n1 = n1 || name.find("b0/n1 ->") != std::string::npos;
    }
    EXPECT_EQ(n0, !ruleOn) << ruleOn << ": " << used;
    EXPECT_TRUE(n1) << ruleOn << ": " << used;
  }
}

} // namespace
