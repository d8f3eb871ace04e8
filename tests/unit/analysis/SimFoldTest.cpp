//===- tests/unit/analysis/SimFoldTest.cpp - Folding symmetric ranks -----===//
//
// The simulator runs one rank per orbit of a symmetry (SimFold.h). A folded
// run must give what simulating every rank gives, to the last bit of the
// time, every rank's finish, every link's load and a critical path that
// exists in the full schedule; and no fold may be found where the
// topology or the schedule is not symmetric.
//
//===----------------------------------------------------------------------===//

#include "compiler/analysis/SimFold.h"
#include "compiler/Pipeline.h"
#include "compiler/analysis/ComputeModel.h"
#include "compiler/analysis/Simulator.h"
#include "compiler/topology/TopologyParser.h"
#include "tests/unit/topology/TopologyTestUtil.h"

#include "gtest/gtest.h"

using namespace topocc;
using namespace topocc::analysis;
using topocc::topo::test::parseOk;

namespace {

/// `boxes` boxes of 4 GPUs on an NVSwitch, a NIC per GPU, one rail switch
/// per local GPU index; `slowNic` (when >= 0) gives box 0's NIC of that
/// index half the bandwidth. With `halfDuplex` a NIC's link carries both
/// directions on one capacity: a box's sends then queue behind what the
/// previous box sends it, which only the fold's resource orbits see.
std::string railTopo(int boxes, int slowNic = -1, bool halfDuplex = false) {
  std::string s = R"(schema: topocc/v1
link_classes:
  nvl:  { type: nvlink, bandwidth: 100 GB/s, latency: 1 us }
  pcie: { type: pcie, bandwidth: 32 GB/s, latency: 1 us }
  ib:   { type: ib, bandwidth: 200 Gb/s, latency: 2 us)" +
                  std::string(halfDuplex ? ", duplex: half" : "") + R"( }
  slow: { type: ib, bandwidth: 100 Gb/s, latency: 2 us }
node_templates:
  box:
    gpus: [ { name: "gpu{g:0-3}", model: a100-sxm4 } ]
    nics: [ { name: "nic{g:0-3}" } ]
    switches: [ { name: nvs, kind: nvswitch } ]
    links:
      - { from: "gpu{g:0-3}", to: nvs, class: nvl }
      - { from: "gpu{g:0-3}", to: "nic{g}", class: pcie }
nodes:
  - { name: "box{b:0-)" +
                  std::to_string(boxes - 1) +
                  R"(}", template: box }
fabric:
  switches: [ { name: "rail{r:0-3}", kind: ib-switch } ]
  links:
)";
  for (int b = 0; b < boxes; ++b)
    for (int r = 0; r < 4; ++r)
      s += "    - { from: box" + std::to_string(b) + "/nic" +
           std::to_string(r) + ", to: rail" + std::to_string(r) +
           ", class: " + (b == 0 && r == slowNic ? "slow" : "ib") + " }\n";
  return s;
}

ir::Schedule compiled(const topo::Topology &t, llvm::StringRef algorithm,
                      ir::Collective c) {
  CompileRequest req;
  req.collective = c;
  auto a = parseAlgorithm(algorithm);
  if (!a) {
    ADD_FAILURE() << llvm::toString(a.takeError());
    return ir::Schedule();
  }
  req.algorithm = *a;
  req.bytes = 1 << 30;
  PassLogger log;
  auto p = compile(t, req, log);
  if (!p) {
    ADD_FAILURE() << algorithm.str() << ": " << llvm::toString(p.takeError());
    return ir::Schedule();
  }
  return std::move(p->schedule);
}

SimResult run(const ir::Schedule &s, const topo::Topology &t, bool fold,
              double bytes) {
  LinkModel m(t);
  SimOptions o;
  o.bytes = bytes;
  o.mode = SimMode::Runtime;
  o.fold = fold;
  auto r = simulate(s, m, o);
  if (!r) {
    ADD_FAILURE() << llvm::toString(r.takeError());
    return SimResult();
  }
  return std::move(*r);
}

/// The critical path `path` is one in `s`: a step released by a message
/// follows the step that sent it to its rank.
void expectRealPath(const ir::Schedule &s, const std::vector<SimStep> &path) {
  ASSERT_FALSE(path.empty());
  for (size_t i = 0; i < path.size(); ++i) {
    const SimStep &st = path[i];
    ASSERT_GE(st.rank, 0);
    ASSERT_LT(st.rank, s.numRanks);
    ASSERT_LT(st.op, static_cast<int>(s.ranks[st.rank].ops.size()));
    if (i == 0 || st.viaMessage < 0)
      continue;
    const SimStep &prev = path[i - 1];
    const ir::Op &send = s.ranks[prev.rank].ops[prev.op];
    const ir::Op &recv = s.ranks[st.rank].ops[st.op];
    EXPECT_EQ(send.sendPeer, st.rank) << "step " << i;
    EXPECT_EQ(recv.recvPeer, prev.rank) << "step " << i;
  }
}

void expectSameRun(const ir::Schedule &s, const topo::Topology &t,
                   int wantOrder, const std::string &what) {
  for (double bytes : {1 << 20, 1 << 30}) {
    SimResult full = run(s, t, false, bytes);
    SimResult folded = run(s, t, true, bytes);
    EXPECT_EQ(full.foldOrder, 1) << what;
    EXPECT_EQ(folded.foldOrder, wantOrder) << what;
    EXPECT_EQ(folded.time, full.time) << what << " at " << bytes;
    EXPECT_EQ(folded.rankFinish, full.rankFinish) << what;
    ASSERT_EQ(folded.links.size(), full.links.size()) << what;
    for (size_t i = 0; i < full.links.size(); ++i) {
      EXPECT_EQ(folded.links[i].resource, full.links[i].resource) << what;
      EXPECT_DOUBLE_EQ(folded.links[i].busy, full.links[i].busy) << what;
      EXPECT_DOUBLE_EQ(folded.links[i].bytes, full.links[i].bytes) << what;
    }
    if (wantOrder > 1) {
      EXPECT_LT(folded.events * (wantOrder - 1), full.events * wantOrder)
          << what;
    }
    expectRealPath(s, folded.criticalPath);
    ASSERT_FALSE(folded.criticalPath.empty());
    EXPECT_EQ(folded.criticalPath.back().end, full.criticalPath.back().end);
  }
}

} // namespace

TEST(SimFoldTest, CyclicOrbits) {
  // (0 2 4) (1 3 5) and 6 left alone.
  std::vector<int> perm{2, 3, 4, 5, 0, 1, 6};
  std::vector<bool> moves{true, true, true, true, true, true, false};
  auto o = CyclicOrbits::of(perm, 3, moves);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->rep(4), 0);
  EXPECT_EQ(o->shift(4), 2);
  EXPECT_EQ(o->image(0, 2), 4);
  EXPECT_EQ(o->image(4, 1), 0);
  EXPECT_EQ(o->image(3, -1), 1);
  EXPECT_EQ(o->image(6, 5), 6);
  EXPECT_FALSE(CyclicOrbits::of(perm, 2, moves));
  // A cycle of another length.
  EXPECT_FALSE(
      CyclicOrbits::of({1, 0, 3, 4, 2}, 2, std::vector<bool>(5, true)));
}

TEST(SimFoldTest, FoldedRunsEqualFullRuns) {
  topo::Topology t = parseOk(railTopo(4));
  // The ring search's rings snake through two boxes at a time, so they
  // repeat every second box; the hierarchical ring's node ring every box;
  // NCCL's double binary trees have no such symmetry.
  for (auto [algorithm, order] :
       {std::pair("ring", 2), {"hier-ring", 4}, {"dbtree", 1}})
    for (ir::Collective c :
         {ir::Collective::AllReduce, ir::Collective::AllGather}) {
      if (llvm::StringRef(algorithm) == "dbtree" &&
          c != ir::Collective::AllReduce)
        continue;
      ir::Schedule s = compiled(t, algorithm, c);
      expectSameRun(s, t, order,
                    std::string(algorithm) + " " +
                        std::string(ir::collectiveName(c)));
    }
}

TEST(SimFoldTest, SharedLinksStandForTheirOrbit) {
  topo::Topology t = parseOk(railTopo(4, -1, true));
  for (const char *algorithm : {"hier-ring", "ring"}) {
    ir::Schedule s = compiled(t, algorithm, ir::Collective::AllReduce);
    if (llvm::StringRef(algorithm) == "hier-ring") {
      // The shared NIC links do cost time, and the fold still sees it.
      SimResult full = run(s, t, false, 1 << 30);
      SimResult duplex = run(s, parseOk(railTopo(4)), false, 1 << 30);
      EXPECT_GT(full.time, duplex.time * 1.2);
    }
    expectSameRun(s, t, llvm::StringRef(algorithm) == "ring" ? 2 : 4,
                  std::string(algorithm) + " on half-duplex NICs");
  }
}

TEST(SimFoldTest, NoFoldWithoutSymmetry) {
  // Box 0's NIC 2 is slower: no box rotation maps the links onto
  // themselves.
  topo::Topology t = parseOk(railTopo(4, 2));
  ir::Schedule s = compiled(t, "hier-ring", ir::Collective::AllReduce);
  LinkModel m(t);
  EXPECT_FALSE(findSimFold(s, m, rankMemoryBandwidths(t)));
  expectSameRun(s, t, 1, "slow NIC");

  // A symmetric fabric, but one rank's program differs from its images.
  topo::Topology even = parseOk(railTopo(4));
  ir::Schedule ring = compiled(even, "ring", ir::Collective::AllReduce);
  LinkModel em(even);
  ASSERT_TRUE(findSimFold(ring, em, rankMemoryBandwidths(even)));
  ir::Schedule unpeered = ring;
  ir::Op &op = ring.ranks[5].ops.back();
  op.channel = op.channel == 0 ? 1 : 0;
  EXPECT_FALSE(findSimFold(ring, em, rankMemoryBandwidths(even)));

  // A send without its peer, or naming another peer than the rank that
  // receives its message, cannot be routed to its real receiver.
  ir::Schedule mispeered = unpeered;
  for (ir::Op &send : unpeered.ranks[0].ops)
    if (send.sendMsg >= 0) {
      send.sendPeer = ir::kNone;
      break;
    }
  EXPECT_FALSE(findSimFold(unpeered, em, rankMemoryBandwidths(even)));
  for (ir::RankProgram &rank : mispeered.ranks)
    for (ir::Op &send : rank.ops)
      if (send.sendMsg >= 0)
        send.sendPeer = (send.sendPeer + 4) % mispeered.numRanks;
  EXPECT_FALSE(findSimFold(mispeered, em, rankMemoryBandwidths(even)));
}
