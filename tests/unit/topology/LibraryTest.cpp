//===- tests/unit/topology/LibraryTest.cpp - The topologies/ library ------===//
//
// Every library file loads, validates, routes every GPU pair, and every
// scenario it defines (but sweeps) applies cleanly.
//
//===----------------------------------------------------------------------===//

#include "TopologyTestUtil.h"

#include "compiler/topology/Scenario.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <algorithm>

using namespace topocc::topo;
using topocc::topo::test::libraryDir;
using topocc::topo::test::libraryFiles;

namespace {
/// Every pair routes except where GPUs relay (tori, meshes, rail-only
/// fabrics): there the pairs without a route are exactly as many as
/// routeCoverage, an independent count, says.
void expectAllPairsRoute(const Topology &t, llvm::StringRef what) {
  RouteCoverage cov = routeCoverage(t);
  uint64_t unrouted = 0;
  for (int a = 0; a < t.numRanks(); ++a) {
    std::vector<Route> routes = t.routesFrom(a);
    for (int b = 0; b < t.numRanks(); ++b) {
      const Route &r = routes[b];
      if (!r.found()) {
        ++unrouted;
        EXPECT_GT(cov.unrouted, 0u)
            << what.str() << ": " << t.rankName(a) << " -> " << t.rankName(b);
        continue;
      }
      if (a != b) {
        EXPECT_GT(r.bottleneck, 0) << what.str();
        for (size_t i = 1; i < r.hops.size(); ++i)
          EXPECT_NE(t.device(r.hops[i].fromDevice).kind, DeviceKind::Gpu)
              << what.str() << ": a GPU forwards";
      }
    }
  }
  EXPECT_EQ(unrouted, cov.unrouted) << what.str();
}
} // namespace

TEST(LibraryTest, ShipsTheDocumentedFiles) {
  std::vector<std::string> names;
  for (const std::string &f : libraryFiles())
    names.push_back(llvm::sys::path::filename(f).str());
  for (const char *want :
       {"dgx-a100.yaml", "dgx-a100x2.yaml", "dgx-h100.yaml", "dgx-h100x4.yaml",
        "mi250.yaml", "mi250x2.yaml", "ndv2.yaml", "dgx2.yaml",
        "a100-pcie-8gpu.yaml", "fattree-multipod.yaml"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end())
        << want;
}

TEST(LibraryTest, EveryFileLoadsValidatesAndRoutesAllPairs) {
  for (const std::string &f : libraryFiles()) {
    SCOPED_TRACE(f);
    auto t = loadTopologyFile(f);
    ASSERT_TRUE(static_cast<bool>(t)) << llvm::toString(t.takeError());
    EXPECT_GT(t->numRanks(), 1);
    EXPECT_FALSE(t->name().empty());
    expectAllPairsRoute(*t, f);
    for (const ScenarioDef &s : t->scenarios()) {
      bool isSweep = false;
      for (const ScenarioOp &op : s.ops)
        isSweep |= op.kind == ScenarioOp::Sweep;
      if (isSweep)
        continue;
      Topology copy = *t;
      llvm::Error err = applyScenario(copy, s.name);
      ASSERT_FALSE(static_cast<bool>(err))
          << s.name << ": " << llvm::toString(std::move(err));
      expectAllPairsRoute(copy, f + " --scenario " + s.name);
    }
  }
}

TEST(LibraryTest, HeadlineNumbers) {
  auto h = loadTopologyFile(libraryDir() + "/dgx-h100.yaml");
  ASSERT_TRUE(static_cast<bool>(h)) << llvm::toString(h.takeError());
  // 18 NVLink4 ports x 25 GB/s = 450 GB/s per direction per GPU.
  double nv = 0;
  for (int l : h->linksOf(h->rankDevice(0)))
    if (h->link(l).type == LinkType::NvLink)
      nv += h->link(l).capacity(0);
  EXPECT_DOUBLE_EQ(nv, 450e9);
  auto a = loadTopologyFile(libraryDir() + "/dgx-a100.yaml");
  ASSERT_TRUE(static_cast<bool>(a)) << llvm::toString(a.takeError());
  nv = 0;
  for (int l : a->linksOf(a->rankDevice(3)))
    if (a->link(l).type == LinkType::NvLink)
      nv += a->link(l).capacity(0);
  EXPECT_DOUBLE_EQ(nv, 300e9);
  auto n = loadTopologyFile(libraryDir() + "/ndv2.yaml");
  ASSERT_TRUE(static_cast<bool>(n)) << llvm::toString(n.takeError());
  for (int r = 0; r < 8; ++r) {
    int ports = 0;
    for (int l : n->linksOf(n->rankDevice(r)))
      if (n->link(l).type == LinkType::NvLink)
        ports += n->link(l).count;
    EXPECT_EQ(ports, 6) << "gpu" << r;
  }
}
