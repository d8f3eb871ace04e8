//===- tests/unit/analysis/BoundTest.cpp - Exact cut bound ----------------===//
//
// The exact fractions of docs/Algorithms-trees.md, "Reference fixtures"
// (lambda*, iterations, k, U, c(e), argmax cut), a brute-force cross-check on
// every fixture small enough, a property test on random meshes with switches,
// and the error texts.
//===----------------------------------------------------------------------===//

#include "compiler/analysis/Bound.h"
#include "compiler/analysis/RealizableGraph.h"
#include "compiler/topology/TopologyParser.h"
#include "tests/support/BoundGraphs.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Path.h"

#include "gtest/gtest.h"

#include <map>
#include <random>
#include <set>

using namespace topocc;
using namespace topocc::analysis;
using namespace topocc::testgraphs;

namespace {

std::string inputPath(llvm::StringRef rel) {
  llvm::SmallString<256> p(TOPOCC_SOURCE_DIR);
  llvm::sys::path::append(p, rel);
  return std::string(p);
}

topo::Topology loadOk(llvm::StringRef rel) {
  auto t = topo::loadTopologyFile(inputPath(rel));
  if (!t) {
    ADD_FAILURE() << llvm::toString(t.takeError());
    return topo::Topology();
  }
  return std::move(*t);
}

BoundResult boundOk(const topo::Topology &t) {
  auto b = computeBound(t);
  if (!b) {
    ADD_FAILURE() << llvm::toString(b.takeError());
    return BoundResult();
  }
  return std::move(*b);
}

DirectionalBound dinkelbachOk(const BoundGraph &g, bool reversed) {
  auto b = dinkelbachBound(g, reversed);
  if (!b) {
    ADD_FAILURE() << llvm::toString(b.takeError());
    return DirectionalBound();
  }
  return std::move(*b);
}

/// A GPU-only mesh: arc i->j and j->i of `perLink` GB/s times m[i][j].
/// The argmax cut really has the ratio lambda*.
void expectCutMatches(const BoundGraph &g, const DirectionalBound &b) {
  ASSERT_GT(b.cut.capacity, 0);
  EXPECT_EQ(Fraction::make(static_cast<int64_t>(b.cut.ranks.size()),
                           b.cut.capacity),
            b.lambdaInt);
  int64_t sum = 0;
  for (int a : b.cut.arcs)
    sum += g.arcs[a].cap;
  EXPECT_EQ(sum, b.cut.capacity);
  EXPECT_LT(b.cut.ranks.size(), g.compute.size());
}

struct Expected72 {
  const char *file;
  Fraction lambda;
  int iterations;
  int64_t k;
  Fraction u;
  size_t cutGpus;
  double cutGBps;
};

} // namespace

TEST(BoundTest, FractionBasics) {
  EXPECT_EQ(Fraction::make(14, 300).str(), "7/150");
  EXPECT_EQ(Fraction::make(6, 3).str(), "2");
  EXPECT_EQ(Fraction::make(0, 5).str(), "0");
}

// The exact optimum ("Reference fixtures"), the fixtures that topocc/v1 can
// express (GPU meshes without switches cannot: GPUs do not forward in topocc/v1
// routing).
TEST(BoundTest, ReferenceFixturesFromYaml) {
  const Expected72 cases[] = {
      {"tests/lit/Inputs/bound/fc-dgx-a100x1.yaml", {7, 300}, 1, 1, {7, 300},
       7, 300},
      {"tests/lit/Inputs/bound/fc-dgx-a100x2.yaml", {3, 65}, 1, 13, {3, 5},
       15, 325},
      {"tests/lit/Inputs/bound/fc-dgx-a100x4.yaml", {3, 25}, 2, 1, {3, 25},
       24, 200},
      {"tests/lit/Inputs/bound/fc-mi250x2.yaml", {15, 166}, 2, 83, {15, 2},
       30, 332},
  };
  for (const Expected72 &c : cases) {
    SCOPED_TRACE(c.file);
    topo::Topology t = loadOk(c.file);
    BoundResult b = boundOk(t);
    for (const DirectionalBound *d : {&b.allgather, &b.reduceScatter}) {
      EXPECT_EQ(d->lambda, c.lambda) << d->lambda.str();
      EXPECT_EQ(d->iterations, c.iterations);
      EXPECT_EQ(d->k, c.k);
      EXPECT_EQ(d->u, c.u) << d->u.str();
      EXPECT_EQ(d->cut.ranks.size(), c.cutGpus);
      EXPECT_DOUBLE_EQ(static_cast<double>(d->cut.capacity) *
                           b.graph.quantumBytesPerSec / 1e9,
                       c.cutGBps);
      expectCutMatches(b.graph, *d);
    }
    EXPECT_EQ(b.allreduceLambda,
              Fraction::make(2 * c.lambda.num, c.lambda.den));
  }
}

// c(e) = U b(e): 2 x DGX-A100 has 180 units on NVSwitch arcs, 15 on NIC/IB
// arcs; 2 x MI250 has 375 per xGMI link and 120 on IB arcs.
TEST(BoundTest, TreeUnitsPerArc) {
  {
    topo::Topology t = loadOk("tests/lit/Inputs/bound/fc-dgx-a100x2.yaml");
    BoundResult b = boundOk(t);
    std::map<double, std::set<int64_t>> units;
    for (const BoundGraph::Arc &a : b.graph.arcs)
      units[a.cap * static_cast<double>(b.graph.quantumBytesPerSec) / 1e9]
          .insert(b.allgather.arcUnits(a.cap));
    EXPECT_EQ(units[300], std::set<int64_t>{180});
    EXPECT_EQ(units[25], std::set<int64_t>{15});
    // GPU in-capacity 195 = (N - 1) k.
    EXPECT_EQ(180 + 15, 15 * b.allgather.k);
  }
  {
    topo::Topology t = loadOk("tests/lit/Inputs/bound/fc-mi250x2.yaml");
    BoundResult b = boundOk(t);
    std::map<double, std::set<int64_t>> units;
    for (const BoundGraph::Arc &a : b.graph.arcs)
      units[a.cap * static_cast<double>(b.graph.quantumBytesPerSec) / 1e9]
          .insert(b.allgather.arcUnits(a.cap));
    EXPECT_EQ(units[50], std::set<int64_t>{375});
    EXPECT_EQ(units[100], std::set<int64_t>{750});
    EXPECT_EQ(units[200], std::set<int64_t>{1500});
    EXPECT_EQ(units[16], std::set<int64_t>{120});
  }
}

// The exact optimum ("Reference fixtures"), all six fixtures exactly as defined
// there (built as graphs: the ForestColl models relay through GPUs, which
// topocc/v1 files cannot express for the meshes and the multi-box DGX models).
TEST(BoundTest, ReferenceFixturesExact) {
  struct Case {
    const char *name;
    BoundGraph g;
    int vertices, arcs;
    Fraction lambda;
    int iterations;
    int64_t k;
    Fraction u;
    size_t cutGpus;
    int64_t cutGBps;
    bool brute; ///< small enough for subset enumeration
  };
  Case cases[] = {
      {"1 x DGX-A100", forestCollDgx(1), 9, 16, {7, 300}, 1, 1, {7, 300}, 7,
       300, true},
      {"2 x DGX-A100", forestCollDgx(2), 36, 96, {3, 65}, 1, 13, {3, 5}, 15,
       325, false},
      {"4 x DGX-A100", forestCollDgx(4), 70, 192, {3, 25}, 2, 1, {3, 25}, 24,
       200, false},
      {"1 x MI250", forestCollMi250(1), 16, 56, {7, 150}, 2, 3, {7, 50}, 14,
       300, true},
      {"2 x MI250", forestCollMi250(2), 33, 176, {15, 166}, 2, 83, {15, 2}, 30,
       332, false},
      {"DGX-1", meshGraph(kDgx1, 25), 8, 32, {7, 150}, 1, 6, {7, 25}, 7, 150,
       true},
  };
  for (Case &c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(c.g.numVertices, c.vertices);
    EXPECT_EQ(static_cast<int>(c.g.arcs.size()), c.arcs);
    for (bool rev : {false, true}) {
      DirectionalBound d = dinkelbachOk(c.g, rev);
      EXPECT_EQ(d.lambda, c.lambda) << d.lambda.str();
      EXPECT_EQ(d.iterations, c.iterations);
      EXPECT_EQ(d.k, c.k);
      EXPECT_EQ(d.u, c.u) << d.u.str();
      EXPECT_EQ(d.cut.ranks.size(), c.cutGpus);
      EXPECT_EQ(d.cut.capacity, c.cutGBps);
      expectCutMatches(c.g, d);
      if (c.brute) {
        EXPECT_EQ(bruteForceBound(c.g, rev).lambdaInt, d.lambdaInt);
      }
    }
  }
}

// c(e) = U b(e) ("Reference fixtures", the exact optimum's last column).
TEST(BoundTest, TreeUnitsPerArcExact) {
  auto unitsByCap = [](const BoundGraph &g, const DirectionalBound &d) {
    std::map<int64_t, std::set<int64_t>> m;
    for (const BoundGraph::Arc &a : g.arcs)
      m[a.cap].insert(d.arcUnits(a.cap));
    return m;
  };
  {
    BoundGraph g = forestCollDgx(1);
    auto m = unitsByCap(g, dinkelbachOk(g, false));
    EXPECT_EQ(m[300], std::set<int64_t>{7});
  }
  {
    BoundGraph g = forestCollDgx(2);
    auto m = unitsByCap(g, dinkelbachOk(g, false));
    EXPECT_EQ(m[300], std::set<int64_t>{180});
    EXPECT_EQ(m[25], std::set<int64_t>{15});
  }
  {
    BoundGraph g = forestCollDgx(4);
    auto m = unitsByCap(g, dinkelbachOk(g, false));
    EXPECT_EQ(m[300], std::set<int64_t>{36});
    EXPECT_EQ(m[25], std::set<int64_t>{3});
  }
  {
    BoundGraph g = forestCollMi250(1);
    auto m = unitsByCap(g, dinkelbachOk(g, false));
    EXPECT_EQ(m[50], std::set<int64_t>{7});
    EXPECT_EQ(m[200], std::set<int64_t>{28});
  }
  {
    BoundGraph g = forestCollMi250(2);
    auto m = unitsByCap(g, dinkelbachOk(g, false));
    EXPECT_EQ(m[50], std::set<int64_t>{375});
    EXPECT_EQ(m[16], std::set<int64_t>{120});
  }
  {
    BoundGraph g = meshGraph(kDgx1, 25);
    auto m = unitsByCap(g, dinkelbachOk(g, false));
    EXPECT_EQ(m[25], std::set<int64_t>{7});
    EXPECT_EQ(m[50], std::set<int64_t>{14});
  }
}

TEST(BoundTest, BruteForceAgreesOnOneDgxA100) {
  topo::Topology t = loadOk("tests/lit/Inputs/bound/fc-dgx-a100x1.yaml");
  BoundResult b = boundOk(t);
  EXPECT_EQ(bruteForceBound(b.graph, false).lambdaInt, b.allgather.lambdaInt);
  EXPECT_EQ(bruteForceBound(b.graph, true).lambdaInt,
            b.reduceScatter.lambdaInt);
}

// docs/Algorithms-trees.md, "The bound": 1 x DGX-A100, AG of 1 GiB takes
// 3.132 ms (algbw 342.86).
TEST(BoundTest, NumbersAtASize) {
  topo::Topology t = loadOk("tests/lit/Inputs/bound/fc-dgx-a100x1.yaml");
  BoundResult b = boundOk(t);
  double gib = 1024.0 * 1024 * 1024;
  BoundNumbers ag = boundNumbers(b, ir::Collective::AllGather, gib);
  EXPECT_NEAR(ag.time, gib / 8 * 1e-9 * 7 / 300, 1e-15);
  EXPECT_NEAR(ag.time * 1e3, 3.132, 5e-4);
  EXPECT_NEAR(ag.algbw / 1e9, 2400.0 / 7, 1e-9);
  EXPECT_NEAR(ag.busbw / 1e9, 300.0, 1e-9);
  BoundNumbers ar = boundNumbers(b, ir::Collective::AllReduce, gib);
  EXPECT_NEAR(ar.algbw / 1e9, 1200.0 / 7, 1e-9);
  EXPECT_NEAR(ar.busbw / 1e9, 300.0, 1e-9);
}

// Asymmetric links: AG and RS differ, and RS is the bound of the reversed
// graph. Two GPUs: a->b 10 GB/s, b->a 30 GB/s. AG: S = {a} ratio 1/10.
TEST(BoundTest, AsymmetricDirections) {
  BoundGraph g;
  g.numVertices = 2;
  g.compute = {0, 1};
  g.arcs = {{0, 1, 10, -1, 0}, {1, 0, 30, -1, 0}};
  DirectionalBound ag = dinkelbachOk(g, false);
  DirectionalBound rs = dinkelbachOk(g, true);
  EXPECT_EQ(ag.lambda, Fraction::make(1, 10));
  EXPECT_EQ(ag.cut.ranks, std::vector<int>{0});
  EXPECT_EQ(rs.lambda, Fraction::make(1, 10));
  EXPECT_EQ(rs.cut.ranks, std::vector<int>{1}); // {b} is entered at 10
}

/// The same bound, cut and rounds (the max-flow count may differ).
void expectSameBound(const DirectionalBound &a, const DirectionalBound &b) {
  EXPECT_EQ(a.lambdaInt, b.lambdaInt);
  EXPECT_EQ(a.cut.ranks, b.cut.ranks);
  EXPECT_EQ(a.iterations, b.iterations);
}

/// Random meshes of `gpus` GPUs and `switches` switches with integer
/// bandwidths up to 12, a quarter of the links asymmetric, ids shuffled.
RandomMeshOptions meshOptions(int gpus, int switches) {
  RandomMeshOptions o;
  o.gpus = gpus;
  o.switches = switches;
  o.maxBw = 12;
  o.asymmetry = RandomMeshOptions::Asymmetry::Quarter;
  o.shuffleIds = true;
  o.extraFactor = 2;
  return o;
}

// Property: on random meshes with switches (N + switches <= 14, random
// integer and partly asymmetric bandwidths), Dinkelbach equals brute force,
// converges in at most N rounds, and the argmax cut attains lambda*.
TEST(BoundTest, RandomMeshesMatchBruteForce) {
  std::mt19937 rng(20261130);
  int checked = 0;
  for (int iter = 0; iter < 80; ++iter) {
    std::uniform_int_distribution<int> nd(2, 10);
    int n = nd(rng);
    int sw = std::uniform_int_distribution<int>(0, 14 - n)(rng);
    BoundGraph g = randomMesh(rng, meshOptions(n, sw));
    for (bool rev : {false, true}) {
      SCOPED_TRACE(testing::Message() << "iteration " << iter << " n " << n
                                      << " switches " << sw << " rev " << rev);
      DirectionalBound d = dinkelbachOk(g, rev);
      DirectionalBound brute = bruteForceBound(g, rev);
      ASSERT_EQ(d.lambdaInt, brute.lambdaInt)
          << d.lambdaInt.str() << " vs " << brute.lambdaInt.str();
      EXPECT_LE(d.iterations, n);
      EXPECT_LE(d.maxFlows, n * n);
      expectCutMatches(g, d);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 160);
}

// The rounds' max flows split over threads: any worker count gives the same
// bound, cut, rounds and flow count (the first best rank wins, as serially).
TEST(BoundTest, WorkersDoNotChangeTheResult) {
  std::mt19937 rng(20261205);
  for (int iter = 0; iter < 6; ++iter) {
    BoundGraph g = randomMesh(rng, meshOptions(9 + iter, 3));
    for (bool rev : {false, true}) {
      auto one = dinkelbachBound(g, rev, 1);
      ASSERT_TRUE(bool(one)) << llvm::toString(one.takeError());
      for (int workers : {2, 3, 7}) {
        auto many = dinkelbachBound(g, rev, workers);
        ASSERT_TRUE(bool(many)) << llvm::toString(many.takeError());
        expectSameBound(*many, *one);
        EXPECT_EQ(many->maxFlows, one->maxFlows);
      }
    }
  }
}

namespace {

/// The physical and the realizable bound graph of `t`.
std::vector<BoundGraph> boundGraphsOf(const topo::Topology &t) {
  std::vector<BoundGraph> out;
  auto physical = buildBoundGraph(t, CapacityKind::Effective);
  EXPECT_TRUE(bool(physical)) << llvm::toString(physical.takeError());
  LinkModel m(t);
  auto realizable = buildRealizableGraph(t, m);
  EXPECT_TRUE(bool(realizable)) << llvm::toString(realizable.takeError());
  if (physical && realizable) {
    out.push_back(std::move(*physical));
    out.push_back(std::move(*realizable));
  }
  return out;
}

/// rankOrbits(g) is sound: every rank's max flow from the super source
/// (every arc at its capacity, q = 1) equals its representative's, and the
/// bound with orbits equals the bound without. Returns the orbits.
std::vector<int> expectSoundOrbits(const BoundGraph &g) {
  std::vector<int> rep = rankOrbits(g);
  const int n = static_cast<int>(g.compute.size());
  MaxFlowNetwork net(g.numVertices + 1);
  for (const BoundGraph::Arc &a : g.arcs)
    net.addArc(a.from, a.to, a.cap);
  for (int v : g.compute)
    net.addArc(g.numVertices, v, 1);
  std::vector<int64_t> flow(n);
  for (int r = 0; r < n; ++r)
    flow[r] = net.maxFlowValue(g.numVertices, g.compute[r]);
  for (int r = 0; r < n; ++r)
    EXPECT_EQ(flow[r], flow[rep[r]]) << "rank " << r;
  for (bool rev : {false, true}) {
    auto with = dinkelbachBound(g, rev, 0, /*orbits=*/true);
    auto without = dinkelbachBound(g, rev, 0, /*orbits=*/false);
    EXPECT_TRUE(bool(with) && bool(without));
    if (!with || !without)
      continue;
    expectSameBound(*with, *without);
    const size_t orbits = std::set<int>(rep.begin(), rep.end()).size();
    if (n >= kOrbitMinRanks && orbits < size_t(n)) {
      EXPECT_LT(with->maxFlows, without->maxFlows);
    }
  }
  return rep;
}

} // namespace

// Rank orbits (BoundSymmetry.cpp) are sound: on the physical and the
// realizable graph of fattree-multipod (128 ranks), every rank's max flow
// from the super source equals its representative's, with the first
// round's capacities; and the bound with orbits equals the bound without
// (lambda, cut, rounds) with fewer max flows.
TEST(BoundTest, RankOrbitsKeepTheBound) {
  topo::Topology t = loadOk("topologies/fattree-multipod.yaml");
  std::vector<BoundGraph> graphs = boundGraphsOf(t);
  ASSERT_EQ(graphs.size(), 2u);
  for (const BoundGraph &g : graphs) {
    ASSERT_EQ(g.compute.size(), 128u);
    std::vector<int> rep = expectSoundOrbits(g);
    std::set<int> reps(rep.begin(), rep.end());
    EXPECT_LT(reps.size(), 16u); // the boxes of the pods are alike
    for (size_t r = 0; r < rep.size(); ++r)
      EXPECT_LE(rep[r], int(r));
  }
}

// Rails move together (NameSymmetry.h, NameMoves::All): "gpu1", "nic1" and
// "leaf1" renamed at once. Two boxes of four GPUs, GPU pairs on a PCIe
// switch with their NICs, one leaf per rail: swapping rails 0 and 1 (or 2
// and 3) maps the topology onto itself, a swap of one word alone does not,
// and neither does a swap across PCIe switches. So the ranks fall into two
// orbits, on the physical and on the realizable graph, and they are sound.
TEST(BoundTest, RankOrbitsMoveRailsTogether) {
  auto t = topo::parseTopology(R"(schema: topocc/v1
node_templates:
  box:
    gpus: [ { name: "gpu{g:0-3}" } ]
    nics: [ { name: "nic{g:0-3}" } ]
    switches: [ { name: nvs, kind: nvswitch }, { name: "plx{p:0-1}", kind: pcie-switch } ]
    links:
      - { from: "gpu{g:0-3}", to: nvs, type: nvlink, bandwidth: 100 GB/s, latency: 1 us }
      - { from: "gpu{g:0-3}", to: "plx{g/2}", type: pcie, bandwidth: 32 GB/s, latency: 1 us }
      - { from: "nic{g:0-3}", to: "plx{g/2}", type: pcie, bandwidth: 32 GB/s, latency: 1 us }
nodes:
  - { name: "b{b:0-1}", template: box }
fabric:
  switches: [ { name: "leaf{l:0-3}", kind: ib-switch } ]
  links:
    - { from: "b{b:0-1}/nic{r:0-3}", to: "leaf{r}", type: ib, bandwidth: 25 GB/s, latency: 1 us }
)",
                               "rails.yaml");
  ASSERT_TRUE(bool(t)) << llvm::toString(t.takeError());
  std::vector<BoundGraph> graphs = boundGraphsOf(*t);
  ASSERT_EQ(graphs.size(), 2u);
  for (const BoundGraph &g : graphs) {
    std::vector<int> rep = expectSoundOrbits(g);
    // Ranks: b0/gpu0-3, b1/gpu0-3.
    EXPECT_EQ(rep, (std::vector<int>{0, 0, 2, 2, 0, 0, 2, 2}));
  }
}

// A proposal that is not an automorphism is refused: one box's NIC link
// made slower keeps that box's ranks out of other boxes' orbits, and names
// that do not tell vertices apart give every rank its own orbit.
TEST(BoundTest, RankOrbitsRefuseWhatIsNotSymmetric) {
  topo::Topology t = loadOk("topologies/fattree-multipod.yaml");
  auto g = buildBoundGraph(t, CapacityKind::Effective);
  ASSERT_TRUE(bool(g));
  std::vector<int> before = rankOrbits(*g);
  // Halve every arc that touches pod1-node2/nic0.
  int nic = -1;
  for (int v = 0; v < g->numVertices; ++v)
    if (g->names[v] == "pod1-node2/nic0")
      nic = v;
  ASSERT_GE(nic, 0);
  BoundGraph slow = *g;
  for (BoundGraph::Arc &a : slow.arcs)
    if (a.from == nic || a.to == nic)
      a.cap = std::max<int64_t>(1, a.cap / 2);
  std::vector<int> after = rankOrbits(slow);
  int box = -1; // pod1-node2/gpu0
  for (size_t r = 0; r < slow.compute.size(); ++r)
    if (slow.names[slow.compute[r]] == "pod1-node2/gpu0")
      box = static_cast<int>(r);
  ASSERT_GE(box, 0);
  EXPECT_NE(before[box], box); // alike before
  for (size_t r = 0; r < slow.compute.size(); ++r) {
    if (!llvm::StringRef(slow.names[slow.compute[r]])
             .startswith("pod1-node2/")) {
      EXPECT_NE(after[r], after[box]) << r; // no other box is like it now
    }
  }
  BoundGraph unnamed = *g;
  for (std::string &name : unnamed.names)
    name = "same";
  std::vector<int> alone = rankOrbits(unnamed);
  for (size_t r = 0; r < alone.size(); ++r)
    EXPECT_EQ(alone[r], static_cast<int>(r));
}

// Tori and meshes (BoundSymmetry.cpp's rotations and reflections of the
// indexes after no word, "npu3_1_0"): a torus's translations put every
// rank in one orbit, on the physical and the realizable graph (whose
// vertex names hold two devices, "npu0_0 -> npu1_0 (in)"); a mesh has no
// translations but its reflections (9 orbits on 5 x 5: each coordinate up
// to i -> 4 - i). Every rank's max flow equals its representative's, and
// the bound is the same with and without orbits.
TEST(BoundTest, RankOrbitsOfToriAndMeshes) {
  for (auto [file, orbits] : {std::pair{"topologies/torus-8x8.yaml", 1},
                              std::pair{"topologies/mesh-5x5.yaml", 9}}) {
    SCOPED_TRACE(file);
    std::vector<BoundGraph> graphs = boundGraphsOf(loadOk(file));
    ASSERT_EQ(graphs.size(), 2u);
    for (const BoundGraph &g : graphs) {
      std::vector<int> rep = expectSoundOrbits(g);
      EXPECT_EQ(std::set<int>(rep.begin(), rep.end()).size(), size_t(orbits));
    }
  }
}

TEST(BoundTest, LibraryTopologies) {
  // Every library file has a bound; spot values checked by hand:
  // dgx-a100 GPU in-bandwidth 12 x 25 NVLink + 32 PCIe = 332 GB/s, so
  // lambda* = 7/332 (S = every device but one GPU).
  topo::Topology t = loadOk("topologies/dgx-a100.yaml");
  BoundResult b = boundOk(t);
  EXPECT_EQ(b.allgather.lambda, Fraction::make(7, 332));
  EXPECT_EQ(b.reduceScatter.lambda, Fraction::make(7, 332));
}

TEST(BoundTest, Errors) {
  auto half = topo::parseTopology(R"(schema: topocc/v1
nodes:
  - name: a
    gpus: [ "gpu{g:0-1}" ]
    switches: [ { name: sw, kind: pcie-switch } ]
    links:
      - { from: "gpu{g:0-1}", to: sw, type: pcie, bandwidth: 16 GB/s, duplex: half }
)",
                                  "half.yaml");
  ASSERT_TRUE(static_cast<bool>(half)) << llvm::toString(half.takeError());
  auto b = computeBound(*half);
  ASSERT_FALSE(static_cast<bool>(b));
  std::string text = llvm::toString(b.takeError());
  EXPECT_NE(text.find("half.yaml:7:9: error: link a/gpu0 -- a/sw is half "
                      "duplex; the cut bound needs independent bandwidth per "
                      "direction"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("link a/gpu1 -- a/sw is half duplex"), std::string::npos)
      << text;

  auto one = topo::parseTopology(R"(schema: topocc/v1
nodes:
  - name: a
    gpus: [ gpu0 ]
)",
                                 "one.yaml");
  ASSERT_TRUE(static_cast<bool>(one)) << llvm::toString(one.takeError());
  auto b1 = computeBound(*one);
  ASSERT_FALSE(static_cast<bool>(b1));
  EXPECT_EQ(llvm::toString(b1.takeError()),
            "error: the bound needs at least 2 GPUs; the topology has 1\n");
}
