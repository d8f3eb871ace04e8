//===- tests/unit/compiler/RealizableRoutesTest.cpp - Realizable hops ---===//
//
// Every message of a compiled schedule, simulated in the runtime model,
// loads only link directions that the realizable graph
// (compiler/analysis/RealizableGraph.h) holds as hops, and no exact
// schedule runs faster than the realizable bound: the bound is computed on
// the paths the schedules really take. Rings and trees on boxes with PCIe
// beside NVLink (dgx-a100x2: two NICs per GPU pair), on a hybrid cube mesh
// whose GPU pairs without NVLink go over PCIe (ndv2) and on a two-box MI250.
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipeline.h"

#include "compiler/analysis/Prediction.h"
#include "compiler/analysis/RealizableGraph.h"
#include "compiler/analysis/Simulator.h"
#include "compiler/topology/TopologyParser.h"

#include "gtest/gtest.h"

#include <set>
#include <string>

using namespace topocc;

namespace {

struct Case {
  const char *file;
  ir::Collective collective;
  Algorithm algorithm;
};

TEST(RealizableRoutesTest, SchedulesUseOnlyRealizableHops) {
  const Case cases[] = {
      {"dgx-a100x2.yaml", ir::Collective::AllGather, Algorithm::Trees},
      {"dgx-a100x2.yaml", ir::Collective::AllReduce, Algorithm::Ring},
      {"ndv2.yaml", ir::Collective::AllReduce, Algorithm::Ring},
      {"ndv2.yaml", ir::Collective::ReduceScatter, Algorithm::Trees},
      {"mi250x2.yaml", ir::Collective::AllGather, Algorithm::Ring},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(std::string(c.file) + " " +
                 ir::collectiveName(c.collective).str() + " " +
                 algorithmName(c.algorithm).str());
    auto t = topo::loadTopologyFile(std::string(TOPOCC_SOURCE_DIR) +
                                    "/topologies/" + c.file);
    ASSERT_TRUE(bool(t)) << llvm::toString(t.takeError());
    CompileRequest req;
    req.collective = c.collective;
    req.algorithm = c.algorithm;
    req.channels = c.algorithm == Algorithm::Ring ? 0 : 1;
    req.bytes = 64.0 * 1024 * 1024;
    PassLogger log;
    auto plan = compile(*t, req, log);
    ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());

    analysis::LinkModel m(*t);
    auto g = analysis::buildRealizableGraph(*t, m);
    ASSERT_TRUE(bool(g)) << llvm::toString(g.takeError());
    std::set<int> hops; // resources with an in -> out arc
    const int n = t->numRanks();
    for (const analysis::BoundGraph::Arc &a : g->arcs)
      if (a.from >= n && a.to == a.from + 1)
        hops.insert(m.resourceOf(a.link, a.dir));

    analysis::SimOptions o;
    o.bytes = req.bytes;
    o.mode = analysis::SimMode::Runtime;
    auto sim = analysis::simulate(plan->schedule, m, o);
    ASSERT_TRUE(bool(sim)) << llvm::toString(sim.takeError());
    int loaded = 0;
    for (const analysis::SimLinkStats &l : sim->links) {
      if (l.bytes <= 0)
        continue;
      ++loaded;
      EXPECT_TRUE(hops.count(l.resource)) << m.resourceName(l.resource);
    }
    EXPECT_GT(loaded, 0);

    auto bound = analysis::computeBoundOn(std::move(*g));
    ASSERT_TRUE(bool(bound)) << llvm::toString(bound.takeError());
    EXPECT_GE(sim->time,
              analysis::boundNumbers(*bound, c.collective, req.bytes).time);
  }
}

} // namespace
