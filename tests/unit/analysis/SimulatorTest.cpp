//===- tests/unit/analysis/SimulatorTest.cpp - Event simulator tests ------===//
//
// Validation against closed forms (docs/WhatIf.md, "The simulator"): the
// pipelined ring allreduce on a ring of equal links, the single-switch
// allgather against the ring bound, agreement with the cost model on
// contention-free schedules; then the link model (parallel ports, half duplex,
// store-and-forward vs cut-through), reduction cost, the critical path, link
// statistics, traces and errors.
//
//===----------------------------------------------------------------------===//

#include "compiler/analysis/Simulator.h"
#include "compiler/Pipeline.h"
#include "compiler/analysis/CostModel.h"
#include "compiler/passes/Fuse.h"
#include "compiler/passes/LowerRing.h"
#include "compiler/topology/TopologyParser.h"
#include "tests/unit/topology/TopologyTestUtil.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace topocc;
using namespace topocc::analysis;
using topocc::topo::test::parseOk;

namespace {

/// n GPUs in a cycle of equal links; a slow hub keeps every pair connected
/// (GPUs do not forward), ring neighbours use their direct links.
std::string ringTopo(int n, const char *bw, const char *lat,
                     const char *model = "") {
  std::string s = "schema: topocc/v1\nnodes:\n  - name: a\n    gpus: [";
  for (int i = 0; i < n; ++i)
    s += std::string(i ? ", " : "") + "{ name: g" + std::to_string(i) +
         (*model ? std::string(", model: ") + model : "") + " }";
  s += "]\n    switches: [ { name: hub, kind: pcie-switch } ]\n    links:\n";
  for (int i = 0; i < n; ++i)
    s += "      - { from: g" + std::to_string(i) +
         ", to: hub, type: pcie, bandwidth: 1 GB/s, latency: 5 us }\n";
  for (int i = 0; i < n; ++i)
    s += "      - { from: g" + std::to_string(i) + ", to: g" +
         std::to_string((i + 1) % n) + ", type: nvlink, bandwidth: " + bw +
         ", latency: " + lat + " }\n";
  return s;
}

/// n GPUs on one switch, each with one link of `bw` and `lat`.
std::string switchTopo(int n, const char *bw, const char *lat) {
  std::string s = "schema: topocc/v1\nnodes:\n  - name: a\n    gpus: [";
  for (int i = 0; i < n; ++i)
    s += (i ? ", g" : "g") + std::to_string(i);
  s += "]\n    switches: [ { name: sw, kind: nvswitch } ]\n    links:\n";
  for (int i = 0; i < n; ++i)
    s += "      - { from: g" + std::to_string(i) +
         ", to: sw, type: nvlink, bandwidth: " + bw + ", latency: " + lat +
         " }\n";
  return s;
}

ir::Schedule compiled(int n, ir::Collective c, int chunks) {
  CompileRequest req;
  req.collective = c;
  req.chunks = chunks;
  PassLogger log;
  auto p = compile(n, req, log);
  if (!p) {
    ADD_FAILURE() << llvm::toString(p.takeError());
    return ir::Schedule();
  }
  return std::move(p->schedule);
}

SimResult simOk(const ir::Schedule &s, LinkModel &m, double bytes,
                SimMode mode = SimMode::StoreAndForward,
                std::optional<double> reduceBw = 0.0) {
  SimOptions o;
  o.bytes = bytes;
  o.mode = mode;
  o.reduceBandwidth = reduceBw;
  auto r = simulate(s, m, o);
  if (!r) {
    ADD_FAILURE() << llvm::toString(r.takeError());
    return SimResult();
  }
  return std::move(*r);
}

/// The message of a user error, without "error: " and the final newline.
std::string plain(std::string s) {
  if (llvm::StringRef(s).startswith("error: "))
    s = s.substr(7);
  while (!s.empty() && s.back() == '\n')
    s.pop_back();
  return s;
}

double rel(double a, double b) { return std::fabs(a - b) / std::fabs(b); }

const ir::Collective kColls[] = {ir::Collective::AllReduce,
                                 ir::Collective::AllGather,
                                 ir::Collective::ReduceScatter};

TEST(SimulatorTest, PipelinedRingAllReduceMatchesClosedForm) {
  double S = 64.0 * 1024 * 1024, a = 2e-6, B = 10e9;
  for (int n : {3, 4, 8, 16}) {
    topo::Topology t = parseOk(ringTopo(n, "10 GB/s", "2 us"));
    LinkModel m(t);
    double expect = 2 * (n - 1) * (a + S / (n * B));
    // One chunk per rank: exact.
    SimResult one = simOk(compiled(n, ir::Collective::AllReduce, 1), m, S);
    EXPECT_LT(rel(one.time, expect), 1e-9) << n;
    // Pipelined (4 chunks per rank): within 1%.
    SimResult four = simOk(compiled(n, ir::Collective::AllReduce, 4), m, S);
    EXPECT_LT(rel(four.time, expect), 0.01) << n << ": " << four.time;
    EXPECT_LT(rel(four.busbw, S / four.time * 2 * (n - 1) / n), 1e-12);
  }
}

TEST(SimulatorTest, SingleSwitchAllGatherMatchesRingBound) {
  int n = 8;
  double S = 256.0 * 1024 * 1024, B = 25e9;
  double bound = (n - 1) * S / (n * B);
  topo::Topology t = parseOk(switchTopo(n, "25 GB/s", "0.5 us"));
  LinkModel m(t);
  ir::Schedule s = compiled(n, ir::Collective::AllGather, 1);
  // Cut-through: each step crosses both hops at once, plus 2 latencies.
  SimResult ct = simOk(s, m, S, SimMode::CutThrough);
  EXPECT_LT(rel(ct.time, bound + (n - 1) * 2 * 0.5e-6), 1e-9);
  EXPECT_LT(rel(ct.time, bound), 0.01) << ct.time << " vs " << bound;
  // Store-and-forward with one chunk: every step pays both hops in turn.
  SimResult sf = simOk(s, m, S);
  EXPECT_LT(rel(sf.time, 2 * bound + (n - 1) * 2 * 0.5e-6), 1e-9);
  // ... and pipelining over chunks brings it back towards the bound.
  SimResult sf8 = simOk(compiled(n, ir::Collective::AllGather, 8), m, S);
  EXPECT_LT(sf8.time, 1.2 * bound) << sf8.time << " vs " << bound;
  EXPECT_GE(sf8.time, bound * (1 - 1e-9));
}

TEST(SimulatorTest, AgreesWithCostModelOnContentionFreeSchedules) {
  int n = 5;
  double S = 3.0 * 1024 * 1024;
  // Direct links: one hop per message, the cost model's α-β is exact.
  topo::Topology ring = parseOk(ringTopo(n, "10 GB/s", "2 us"));
  LinkModel rm(ring);
  // A switch without latency: cut-through equals the cost model's
  // infinitely pipelined route.
  topo::Topology sw = parseOk(switchTopo(n, "20 GB/s", "0 us"));
  LinkModel sm(sw);
  for (ir::Collective c : kColls) {
    ir::Schedule s = compiled(n, c, 1);
    auto cm = estimateSchedule(s, rm, S);
    ASSERT_TRUE(bool(cm)) << llvm::toString(cm.takeError());
    SimResult sim = simOk(s, rm, S);
    EXPECT_LT(rel(sim.time, cm->time), 1e-9) << ir::collectiveName(c).str();
    auto cs = estimateSchedule(s, sm, S);
    ASSERT_TRUE(bool(cs));
    SimResult simS = simOk(s, sm, S, SimMode::CutThrough);
    EXPECT_LT(rel(simS.time, cs->time), 1e-9) << ir::collectiveName(c).str();
    // Bytes per link agree with the cost model's loads.
    ASSERT_EQ(sim.links.size(), cm->links.size());
    for (size_t i = 0; i < sim.links.size(); ++i) {
      EXPECT_EQ(sim.links[i].resource, cm->links[i].resource);
      EXPECT_LT(rel(sim.links[i].bytes, cm->links[i].bytes), 1e-12);
    }
  }
}

const char *kPair = R"(schema: topocc/v1
nodes:
  - name: a
    gpus: [ g0, g1 ]
    links:
      - { from: g0, to: g1, type: custom, bandwidth: 10 GB/s, latency: 1 us%s }
)";

std::string pairTopo(const char *extra) {
  std::string s = kPair;
  s.replace(s.find("%s"), 2, extra);
  return s;
}

TEST(SimulatorTest, ParallelPortsAndHalfDuplex) {
  double S = 1e9;
  ir::Schedule ag = compiled(2, ir::Collective::AllGather, 1);
  // Each rank sends S/2 to the other at once.
  topo::Topology full = parseOk(pairTopo(""));
  LinkModel fm(full);
  EXPECT_LT(rel(simOk(ag, fm, S).time, S / 2 / 10e9 + 1e-6), 1e-12);
  topo::Topology ports = parseOk(pairTopo(", count: 4"));
  LinkModel pm(ports);
  EXPECT_LT(rel(simOk(ag, pm, S).time, S / 2 / 40e9 + 1e-6), 1e-12);
  // Half duplex: the two directions queue on one capacity.
  topo::Topology half = parseOk(pairTopo(", duplex: half"));
  LinkModel hm(half);
  SimResult h = simOk(ag, hm, S);
  EXPECT_LT(rel(h.time, S / 10e9 + 1e-6), 1e-12);
  ASSERT_EQ(h.links.size(), 1u);
  EXPECT_DOUBLE_EQ(h.links[0].bytes, S);
  EXPECT_LT(rel(h.links[0].busy, S / 10e9), 1e-12);
}

TEST(SimulatorTest, StoreAndForwardVersusCutThroughOverASwitch) {
  topo::Topology t = parseOk(switchTopo(2, "10 GB/s", "1 us"));
  LinkModel m(t);
  ir::Schedule ag = compiled(2, ir::Collective::AllGather, 1);
  double S = 2e9, b = S / 2;
  EXPECT_LT(rel(simOk(ag, m, S).time, 2 * (b / 10e9) + 2e-6), 1e-12);
  EXPECT_LT(rel(simOk(ag, m, S, SimMode::CutThrough).time, b / 10e9 + 2e-6),
            1e-12);
}

TEST(SimulatorTest, ReductionsCostBytesOverReduceBandwidth) {
  int n = 4;
  double S = 4e8, a = 1e-6, B = 10e9, R = 50e9;
  topo::Topology t = parseOk(ringTopo(n, "10 GB/s", "1 us"));
  LinkModel m(t);
  ir::Schedule s = compiled(n, ir::Collective::AllReduce, 1);
  double base = 2 * (n - 1) * (a + S / (n * B));
  SimResult free = simOk(s, m, S);
  EXPECT_LT(rel(free.time, base), 1e-9);
  // n-1 reductions of S/n on the chain of each chunk.
  SimResult costly = simOk(s, m, S, SimMode::StoreAndForward, R);
  EXPECT_LT(rel(costly.time, base + (n - 1) * S / (n * R)), 1e-9);
  // The default comes from the GPU model.
  topo::Topology a100 = parseOk(ringTopo(n, "10 GB/s", "1 us", "a100-sxm4"));
  LinkModel am(a100);
  double g = defaultReduceBandwidth("a100-sxm4");
  EXPECT_DOUBLE_EQ(g, 2039e9 / 3);
  SimResult byModel = simOk(s, am, S, SimMode::StoreAndForward, std::nullopt);
  EXPECT_LT(rel(byModel.time, base + (n - 1) * S / (n * g)), 1e-9);
  EXPECT_EQ(defaultReduceBandwidth("H100-SXM5"), 3350e9 / 3);
  EXPECT_EQ(defaultReduceBandwidth("mystery-gpu"), 0);
}

TEST(SimulatorTest, CriticalPathAndLinkStatistics) {
  int n = 6;
  double S = 6e8, B = 10e9;
  topo::Topology t = parseOk(ringTopo(n, "10 GB/s", "2 us"));
  LinkModel m(t);
  ir::Schedule s = compiled(n, ir::Collective::AllReduce, 2);
  SimResult r = simOk(s, m, S);
  ASSERT_FALSE(r.criticalPath.empty());
  EXPECT_EQ(r.criticalPath.front().start, 0);
  EXPECT_DOUBLE_EQ(r.criticalPath.back().end, r.time);
  for (size_t i = 1; i < r.criticalPath.size(); ++i)
    EXPECT_GE(r.criticalPath[i].start, r.criticalPath[i - 1].end);
  size_t viaMsg = 0;
  for (const SimStep &st : r.criticalPath)
    viaMsg += st.viaMessage >= 0;
  EXPECT_GE(viaMsg, static_cast<size_t>(2 * (n - 1)));
  ASSERT_EQ(r.rankFinish.size(), static_cast<size_t>(n));
  for (double f : r.rankFinish) {
    EXPECT_GT(f, 0);
    EXPECT_LE(f, r.time);
  }
  // Every ring link carries 2(n-1)/n S in its direction; the hub nothing.
  ASSERT_EQ(r.links.size(), static_cast<size_t>(n));
  for (const SimLinkStats &l : r.links) {
    EXPECT_EQ(m.topology().link(l.resource / 2).type, topo::LinkType::NvLink);
    EXPECT_LT(rel(l.bytes, 2.0 * (n - 1) / n * S), 1e-12);
    EXPECT_LT(rel(l.busy, l.bytes / B), 1e-12);
  }
}

TEST(SimulatorTest, TransfersAreRecordedAndRunsAreDeterministic) {
  topo::Topology t = parseOk(switchTopo(4, "10 GB/s", "1 us"));
  LinkModel m(t);
  ir::Schedule s = compiled(4, ir::Collective::AllReduce, 2);
  SimOptions o;
  o.bytes = 1 << 24;
  o.recordTransfers = true;
  auto a = simulate(s, m, o);
  ASSERT_TRUE(bool(a)) << llvm::toString(a.takeError());
  auto b = simulate(s, m, o);
  ASSERT_TRUE(bool(b));
  EXPECT_EQ(a->time, b->time);
  // Every message crosses two links (GPU -> switch -> GPU).
  size_t messages = 0;
  for (const ir::RankProgram &rp : s.ranks)
    for (const ir::Op &op : rp.ops)
      messages += ir::sends(op.kind);
  ASSERT_EQ(a->transfers.size(), 2 * messages);
  for (size_t i = 0; i < a->transfers.size(); ++i) {
    const SimTransfer &x = a->transfers[i];
    EXPECT_EQ(x.start, b->transfers[i].start);
    EXPECT_LT(x.start, x.end);
    EXPECT_GT(x.bytes, 0);
    if (i) {
      EXPECT_GE(x.start, a->transfers[i - 1].start);
    }
  }
  EXPECT_EQ(a->transferCount, a->transfers.size());
  EXPECT_FALSE(a->flows.empty());
  // A capped record keeps the first transfers, counts them all and derives
  // no flows; the timing does not change.
  o.maxTransfers = 5;
  auto capped = simulate(s, m, o);
  ASSERT_TRUE(bool(capped));
  EXPECT_EQ(capped->transfers.size(), 5u);
  EXPECT_EQ(capped->transferCount, a->transfers.size());
  EXPECT_TRUE(capped->flows.empty());
  EXPECT_EQ(capped->time, a->time);
  // Without recording, nothing is kept.
  o.recordTransfers = false;
  auto c = simulate(s, m, o);
  ASSERT_TRUE(bool(c));
  EXPECT_TRUE(c->transfers.empty());
  EXPECT_EQ(c->time, a->time);
}

// Flows (trace arrows): each two-hop message gets one flow from its first
// hop to its second; every send that an arrival released gets one from that
// message's last hop; every flow goes forward in time.
TEST(SimulatorTest, FlowsLinkHopsAndReleases) {
  topo::Topology t = parseOk(switchTopo(4, "10 GB/s", "1 us"));
  LinkModel m(t);
  ir::Schedule s = compiled(4, ir::Collective::AllReduce, 2);
  SimOptions o;
  o.bytes = 1 << 20;
  o.reduceBandwidth = 0.0;
  o.recordTransfers = true;
  auto r = simulate(s, m, o);
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  size_t messages = r->transfers.size() / 2;
  size_t hop = 0, release = 0;
  std::vector<int> releasedMsgs;
  for (const SimFlow &f : r->flows) {
    ASSERT_GE(f.from, 0);
    ASSERT_LT(static_cast<size_t>(f.to), r->transfers.size());
    const SimTransfer &a = r->transfers[f.from], &b = r->transfers[f.to];
    EXPECT_LE(a.end, b.start + 1e-15);
    if (f.sameMessage) {
      ++hop;
      EXPECT_EQ(a.message, b.message);
      EXPECT_EQ(a.stage + 1, b.stage);
    } else {
      ++release;
      EXPECT_NE(a.message, b.message);
      EXPECT_EQ(a.stage, 1); // the last hop of a two-hop route
      EXPECT_EQ(b.stage, 0);
      EXPECT_EQ(a.receiver, b.sender);
      releasedMsgs.push_back(b.message);
    }
  }
  EXPECT_EQ(hop, messages);
  // Ring allreduce, 4 ranks, 2 chunks per rank: the 4 x 2 first sends wait
  // for nothing; every later send waits for an arrival.
  EXPECT_EQ(release, messages - 8);
  llvm::sort(releasedMsgs);
  EXPECT_EQ(std::unique(releasedMsgs.begin(), releasedMsgs.end()),
            releasedMsgs.end());
  // Sorted by target, and nothing without recording.
  for (size_t i = 1; i < r->flows.size(); ++i)
    EXPECT_LE(r->flows[i - 1].to, r->flows[i].to);
  o.recordTransfers = false;
  auto c = simulate(s, m, o);
  ASSERT_TRUE(bool(c));
  EXPECT_TRUE(c->flows.empty());
}

// whatif simulates fused ring lowerings without channel/threadblock
// assignment and legalization; the timing must equal the compiled schedule's.
TEST(SimulatorTest, FusedLoweringTimesLikeTheCompiledSchedule) {
  topo::Topology ring = parseOk(ringTopo(6, "10 GB/s", "2 us", "a100-sxm4"));
  topo::Topology sw = parseOk(switchTopo(6, "20 GB/s", "1 us"));
  for (topo::Topology *t : {&ring, &sw}) {
    LinkModel m(*t);
    for (ir::Collective c : kColls)
      for (int chunks : {1, 3}) {
        passes::RingOptions o;
        o.collective = c;
        o.numRanks = 6;
        o.chunks = chunks;
        auto fused = passes::lowerRing(o);
        ASSERT_TRUE(bool(fused)) << llvm::toString(fused.takeError());
        passes::fuse(*fused);
        ir::Schedule full = compiled(6, c, chunks);
        ASSERT_EQ(full.stage, ir::Stage::Legalized);
        for (SimMode mode : {SimMode::StoreAndForward, SimMode::CutThrough}) {
          SimResult a = simOk(*fused, m, 1e8, mode, std::nullopt);
          SimResult b = simOk(full, m, 1e8, mode, std::nullopt);
          EXPECT_LT(rel(a.time, b.time), 1e-12)
              << ir::collectiveName(c).str() << " chunks " << chunks;
        }
      }
  }
}

// Route hints pin a rank pair to NICs (a ring search's choice); without one
// the bytes spread over both NICs of each host.
TEST(SimulatorTest, RouteHintsPinNics) {
  topo::Topology t = parseOk(R"(schema: topocc/v1
nodes:
  - name: "h[0-1]"
    gpus: [ g0 ]
    nics: [ nic0, nic1 ]
    switches: [ { name: plx, kind: pcie-switch } ]
    links:
      - { from: g0, to: plx, type: pcie, bandwidth: 100 GB/s, latency: 0 us }
      - { from: "nic{i:0-1}", to: plx, type: pcie, bandwidth: 100 GB/s, latency: 0 us }
fabric:
  switches: [ { name: leaf, kind: ib-switch } ]
  links:
    - { from: "h{n:0-1}/nic{i:0-1}", to: leaf, type: ib, bandwidth: 10 GB/s, latency: 0 us }
)");
  LinkModel m(t);
  passes::RingOptions ro;
  ro.collective = ir::Collective::AllGather;
  ro.numRanks = 2;
  auto s = passes::lowerRing(ro);
  ASSERT_TRUE(bool(s)) << llvm::toString(s.takeError());
  SimOptions o;
  o.bytes = 2e9; // 1e9 per message
  o.mode = SimMode::CutThrough;
  auto free = simulate(*s, m, o);
  ASSERT_TRUE(bool(free)) << llvm::toString(free.takeError());
  EXPECT_LT(rel(free->time, 1e9 / 20e9), 1e-9); // two NICs: 20 GB/s
  int nic0 = t.findDevice("h0/nic0"), in0 = t.findDevice("h1/nic0");
  o.routeHints = {{0, 1, NicPair{nic0, in0}}, {1, 0, NicPair{in0, nic0}}};
  auto pinned = simulate(*s, m, o);
  ASSERT_TRUE(bool(pinned)) << llvm::toString(pinned.takeError());
  EXPECT_LT(rel(pinned->time, 1e9 / 10e9), 1e-9); // one NIC: 10 GB/s
  for (const SimLinkStats &l : pinned->links) {
    auto [u, v] = m.resourceEnds(l.resource);
    for (int d : {u, v})
      EXPECT_EQ(llvm::StringRef(t.device(d).name).endswith("nic1"), false)
          << m.resourceName(l.resource);
  }
}

TEST(SimulatorTest, Errors) {
  topo::Topology t = parseOk(pairTopo(""));
  LinkModel m(t);
  SimOptions o;
  o.bytes = 1e6;
  auto wrong = simulate(compiled(3, ir::Collective::AllGather, 1), m, o);
  ASSERT_FALSE(bool(wrong));
  EXPECT_EQ(plain(llvm::toString(wrong.takeError())),
            "schedule has 3 ranks but topology '' has 2");

  // Each rank receives before it sends: a deadlock.
  ir::Schedule s;
  s.collective = ir::Collective::AllGather;
  s.numRanks = 2;
  s.chunksPerLoop = 2;
  s.ranks.resize(2);
  for (int r = 0; r < 2; ++r) {
    ir::Op recv;
    recv.kind = ir::OpKind::Recv;
    recv.dst = {ir::BufferKind::Output, 1 - r, 1};
    recv.recvPeer = 1 - r;
    recv.recvMsg = 1 - r;
    ir::Op send;
    send.kind = ir::OpKind::Send;
    send.src = {ir::BufferKind::Input, 0, 1};
    send.sendPeer = 1 - r;
    send.sendMsg = r;
    send.deps = {0};
    s.ranks[r].ops = {recv, send};
  }
  auto dead = simulate(s, m, o);
  ASSERT_FALSE(bool(dead));
  EXPECT_EQ(plain(llvm::toString(dead.takeError())),
            "schedule cannot run to the end: 4 ops never start (rank 0 %0, "
            "rank 0 %1, rank 1 %0, rank 1 %1); a dependency cycle or a "
            "receive before its send in one threadblock; run the verifier");

  // A send nobody receives.
  s.ranks[1].ops[0].recvMsg = 7;
  auto unmatched = simulate(s, m, o);
  ASSERT_FALSE(bool(unmatched));
  EXPECT_EQ(plain(llvm::toString(unmatched.takeError())),
            "message 0 has no receiver; run the verifier");
}

} // namespace
