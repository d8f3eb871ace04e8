//===- tests/unit/analysis/NcclModelTest.cpp - NCCL reference model -------===//

#include "compiler/analysis/NcclModel.h"
#include "compiler/topology/TopologyParser.h"

#include "gtest/gtest.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Path.h"

using namespace topocc;
using namespace topocc::analysis;

namespace {

topo::Topology library(llvm::StringRef name) {
  llvm::SmallString<256> p(TOPOCC_SOURCE_DIR);
  llvm::sys::path::append(p, "topologies", name);
  auto t = topo::loadTopologyFile(p);
  if (!t) {
    ADD_FAILURE() << llvm::toString(t.takeError());
    return topo::Topology();
  }
  return std::move(*t);
}

TEST(NcclModelTest, NvlinkAnchors) {
  // docs/Algorithms-rings.md, "2. NCCL reference model": 12 x 20 = 240
  // (A100), 18 x 20.6 = 370.8 (H100).
  NcclModelResult a = ncclEstimate(library("dgx-a100.yaml"),
                                   ir::Collective::AllReduce, 1 << 30);
  EXPECT_NEAR(a.ring.modelBusBw, 240e9, 1e3);
  EXPECT_EQ(a.intraPath, "NVL");
  EXPECT_EQ(a.ring.protocol, "Simple");
  EXPECT_GT(a.ring.busbw, 230e9);
  EXPECT_LT(a.ring.busbw, 240e9);
  NcclModelResult h = ncclEstimate(library("dgx-h100.yaml"),
                                   ir::Collective::AllReduce, 1 << 30);
  EXPECT_NEAR(h.ring.modelBusBw, 370.8e9, 1e3);
  EXPECT_EQ(h.arch, "sm90");
}

TEST(NcclModelTest, PcieAndNetAssumptions) {
  topo::Topology t = library("a100-pcie-8gpu.yaml");
  for (const topo::Link &l : t.links())
    if (l.type == topo::LinkType::Pcie) {
      EXPECT_NEAR(ncclLinkBandwidth(t, l, 0), 24e9, 1e3);
    }
  NcclModelResult r = ncclEstimate(t, ir::Collective::AllReduce, 1 << 30);
  EXPECT_EQ(r.intraPath, "PCI");
  EXPECT_NEAR(r.ring.modelBusBw, 24e9, 1e3);
  topo::Topology x2 = library("dgx-a100x2.yaml");
  NcclModelResult m = ncclEstimate(x2, ir::Collective::AllReduce, 1 << 30);
  EXPECT_EQ(m.numNodes, 2);
  EXPECT_NEAR(m.ring.modelBusBw, 8 * 24e9, 1e3); // 8 x HDR at 0.96
  // 100 GbE at efficiency 0.9: the NIC figure (0.96 of 12.5 GB/s) is capped
  // at what the link carries, so the model never beats the bound.
  NcclModelResult e = ncclEstimate(library("eth16-100g.yaml"),
                                   ir::Collective::AllReduce, 1 << 30);
  EXPECT_NEAR(e.ring.modelBusBw, 11.25e9, 1e3);
}

TEST(NcclModelTest, SmallMessagesPickLowLatencyProtocols) {
  NcclModelResult r = ncclEstimate(library("dgx-a100.yaml"),
                                   ir::Collective::AllReduce, 8192);
  EXPECT_EQ(r.ring.protocol, "LL");
  // LL ring latency: 6.6 + 14 * 0.6 us.
  EXPECT_NEAR(r.ring.latency, (6.6 + 14 * 0.6) * 1e-6, 1e-12);
  NcclModelResult ag = ncclEstimate(library("dgx-a100.yaml"),
                                    ir::Collective::AllGather, 1 << 20);
  EXPECT_FALSE(ag.tree.applicable);
  EXPECT_TRUE(ag.ring.applicable);
}

} // namespace
