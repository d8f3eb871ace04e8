//===- tests/unit/compiler/RelayPropertyTest.cpp - GPUs that relay --------===//
//
// Random connected graphs of GPUs joined only by direct links (no switch
// paths, so most pairs have no route and GPUs relay): every algorithm that
// applies (ring, trees, link matching, auto) compiles to a schedule that the
// pipeline verified, that computes its collective, and whose messages all join
// routed pairs; the cut bound equals a brute-force enumeration of vertex sets.
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipeline.h"
#include "compiler/analysis/Bound.h"
#include "compiler/lowerings/Lowering.h"
#include "compiler/topology/Topology.h"
#include "compiler/topology/TopologyParser.h"
#include "ir/Verifier.h"

#include "tests/support/ErrorText.h"

#include "llvm/Support/FormatVariadic.h"

#include "gtest/gtest.h"

#include <random>
#include <set>

using namespace topocc;

namespace {

/// A random connected graph of n GPUs: a random spanning tree plus extra
/// links, bandwidths 25 to 100 GB/s. Deterministic per seed.
std::string randomGraph(unsigned seed, int &n) {
  std::mt19937 rng(seed);
  n = 3 + static_cast<int>(rng() % 5); // 3..7 GPUs
  std::set<std::pair<int, int>> edges;
  for (int v = 1; v < n; ++v)
    edges.insert({static_cast<int>(rng() % v), v});
  int extra = static_cast<int>(rng() % n);
  for (int i = 0; i < extra; ++i) {
    int a = static_cast<int>(rng() % n), b = static_cast<int>(rng() % n);
    if (a != b)
      edges.insert({std::min(a, b), std::max(a, b)});
  }
  std::string yaml = llvm::formatv("schema: topocc/v1\nname: relay{0}\n"
                                   "fabric:\n"
                                   "  gpus: [ {{ name: \"g{{i:0-{1}}\", "
                                   "model: h100-sxm5 } ]\n  links:\n",
                                   seed, n - 1)
                         .str();
  for (auto [a, b] : edges)
    yaml += llvm::formatv("    - {{ from: g{0}, to: g{1}, type: nvlink, "
                          "bandwidth: {2} GB/s, latency: 1 us }\n",
                          a, b, 25 * (1 + rng() % 4))
                .str();
  return yaml;
}

TEST(RelayPropertyTest, SchedulesVerifyAndUseRoutedPairsOnly) {
  int compiled = 0, unroutedGraphs = 0;
  for (unsigned seed = 1; seed <= 12; ++seed) {
    int n = 0;
    std::string yaml = randomGraph(seed, n);
    SCOPED_TRACE(yaml);
    auto t = topo::parseTopology(yaml, "relay.yaml");
    ASSERT_TRUE(bool(t)) << topocc::testing::errorMessage(t.takeError());
    topo::RouteCoverage cov = topo::routeCoverage(*t);
    unroutedGraphs += cov.unrouted > 0;

    // The bound: Dinkelbach equals the enumeration of every vertex set.
    auto b = analysis::computeBound(*t);
    ASSERT_TRUE(bool(b)) << topocc::testing::errorMessage(b.takeError());
    EXPECT_EQ(analysis::bruteForceBound(b->graph, false).lambdaInt,
              b->allgather.lambdaInt);
    EXPECT_EQ(analysis::bruteForceBound(b->graph, true).lambdaInt,
              b->reduceScatter.lambdaInt);

    for (ir::Collective c :
         {ir::Collective::AllReduce, ir::Collective::AllGather,
          ir::Collective::ReduceScatter})
      for (Algorithm a : {Algorithm::Ring, Algorithm::Trees,
                          Algorithm::Matching, Algorithm::Auto}) {
        CompileRequest req;
        req.collective = c;
        req.algorithm = a;
        req.bytes = 64.0 * 1024 * 1024;
        req.target = ir::TargetLimits::forFormat(ir::OutputFormat::Plan, 0,
                                                 ir::kMscclMaxSteps);
        PassLogger log;
        auto r = compile(*t, req, log);
        if (!r) {
          // Only a ring can be impossible (no cycle of routed pairs); the
          // error says so.
          std::string msg = topocc::testing::errorMessage(r.takeError());
          EXPECT_EQ(a, Algorithm::Ring) << msg;
          EXPECT_NE(msg.find("has a route for every hop"), std::string::npos)
              << msg;
          continue;
        }
        ++compiled;
        // compile() verified it; check the postcondition again here.
        llvm::Error problems = ir::verifySchedule(r->schedule);
        EXPECT_FALSE(bool(problems))
            << topocc::testing::errorMessage(std::move(problems));
        for (ir::RankId q = 0; q < r->schedule.numRanks; ++q)
          for (const ir::Op &op : r->schedule.ranks[q].ops) {
            if (ir::sends(op.kind)) {
              EXPECT_TRUE(t->route(q, op.sendPeer).found())
                  << "rank " << q << " sends to " << op.sendPeer
                  << ", which it has no route to";
            }
          }
      }
  }
  EXPECT_GE(unroutedGraphs, 8); // most random graphs need relays
  EXPECT_GE(compiled, 12 * 9);  // trees, matching and auto always apply
}

} // namespace

namespace {

TEST(RelayPropertyTest, AutoTriesOneRingAtMostOnLargeGrids) {
  // Above 256 chips a grid's ring candidate is skipped where dims applies
  // (a torus all-reduce) and is one channel without variants elsewhere (a
  // mesh, or another collective): no search over thousands of ranks per
  // variant.
  for (const char *shape : {"torus", "mesh"})
    for (ir::Collective c :
         {ir::Collective::AllReduce, ir::Collective::AllGather}) {
      std::string yaml = llvm::formatv("schema: topocc/v1\nname: g\n"
                                       "generate:\n  {0}: [16, 18]\n"
                                       "  bandwidth: 50 GB/s\n",
                                       shape)
                             .str();
      auto t = topo::parseTopology(yaml, "grid.yaml");
      ASSERT_TRUE(bool(t)) << topocc::testing::errorMessage(t.takeError());
      CompileRequest req;
      req.collective = c;
      req.algorithm = Algorithm::Auto;
      req.channels = 0;
      lowerings::AutoContext ctx{*t, req, false, {}};
      auto cand = lowerings::autoCandidate(Algorithm::Ring, ctx);
      ASSERT_TRUE(bool(cand));
      SCOPED_TRACE(::testing::Message()
                   << shape << " " << ir::collectiveName(c).str());
      if (std::string(shape) == "torus" && c == ir::Collective::AllReduce) {
        EXPECT_FALSE(cand->request.has_value());
        ASSERT_EQ(cand->lines.size(), 1u);
        EXPECT_EQ(cand->lines[0],
                  "auto: ring not considered on a generated grid of 288 "
                  "ranks where dims applies (a ring uses two links of each "
                  "chip; --algorithm ring builds it)");
      } else {
        ASSERT_TRUE(cand->request.has_value());
        EXPECT_EQ(cand->request->channels, 1);
        EXPECT_TRUE(cand->variants.empty());
      }
    }
}

} // namespace
