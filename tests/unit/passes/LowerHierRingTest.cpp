//===- tests/unit/passes/LowerHierRingTest.cpp - Two-level ring ---===//

#include "compiler/passes/LowerHierRing.h"

#include "compiler/Pipeline.h"
#include "ir/Verifier.h"

#include "tests/support/ErrorText.h"

#include "gtest/gtest.h"

#include <set>

using namespace topocc;
using namespace topocc::ir;
using topocc::passes::HierRingOptions;
using topocc::passes::lowerHierRing;

namespace {

/// N nodes of G GPUs; node i holds ranks i*G .. i*G+G-1.
HierRingOptions opts(int nodes, int g, int channels = 1, int chunks = 1,
                     bool inplace = false) {
  HierRingOptions o;
  o.numRanks = nodes * g;
  for (int i = 0; i < nodes; ++i) {
    o.nodes.emplace_back();
    for (int l = 0; l < g; ++l)
      o.nodes.back().push_back(i * g + l);
  }
  o.channels = channels;
  o.chunks = chunks;
  o.inplace = inplace;
  return o;
}

TEST(LowerHierRingTest, VerifiesAsAllReduce) {
  // The verifier's symbolic semantics prove every rank ends with the sum.
  struct Case {
    int nodes, g, channels, chunks;
  };
  for (Case c : {Case{2, 1, 1, 1}, Case{2, 2, 1, 1}, Case{2, 4, 1, 2},
                 Case{3, 2, 2, 1}, Case{3, 3, 1, 1}, Case{4, 2, 1, 3}})
    for (bool inplace : {false, true}) {
      SCOPED_TRACE(::testing::Message()
                   << c.nodes << "x" << c.g << " c" << c.channels << " k"
                   << c.chunks << (inplace ? " inplace" : ""));
      auto s = lowerHierRing(
          opts(c.nodes, c.g, c.channels, c.chunks, inplace));
      ASSERT_TRUE(bool(s)) << topocc::testing::errorMessage(s.takeError());
      EXPECT_EQ(s->chunksPerLoop, c.channels * c.g * c.nodes * c.chunks);
      EXPECT_EQ(s->stage, Stage::Lowered);
      llvm::Error problems = verifySchedule(*s);
      EXPECT_FALSE(bool(problems)) << topocc::testing::errorMessage(std::move(problems));
    }
}

TEST(LowerHierRingTest, GatherAndScatterVerify) {
  // All-gather (rails, then intra-node rings per source node) and
  // reduce-scatter (intra-node rings per destination node, then rails):
  // the symbolic semantics prove every rank's result, in and out of place.
  struct Case {
    int nodes, g, channels, chunks;
  };
  for (Collective coll : {Collective::AllGather, Collective::ReduceScatter})
    for (Case c : {Case{2, 1, 1, 1}, Case{2, 4, 1, 2}, Case{3, 2, 2, 1},
                   Case{4, 3, 1, 3}})
      for (bool inplace : {false, true}) {
        SCOPED_TRACE(::testing::Message()
                     << collectiveName(coll).str() << " " << c.nodes << "x" << c.g
                     << " c" << c.channels << " k" << c.chunks
                     << (inplace ? " inplace" : ""));
        HierRingOptions o = opts(c.nodes, c.g, c.channels, c.chunks, inplace);
        o.collective = coll;
        auto s = lowerHierRing(o);
        ASSERT_TRUE(bool(s)) << topocc::testing::errorMessage(s.takeError());
        EXPECT_EQ(s->chunksPerLoop,
                  c.nodes * c.g * c.channels * c.chunks);
        EXPECT_EQ(s->collective, coll);
        llvm::Error problems = verifySchedule(*s);
        EXPECT_FALSE(bool(problems))
            << topocc::testing::errorMessage(std::move(problems));
        // Inter-node messages stay on rails.
        for (RankId r = 0; r < s->numRanks; ++r)
          for (const Op &op : s->ranks[r].ops) {
            if (sends(op.kind) && op.sendPeer / c.g != r / c.g) {
              EXPECT_EQ(op.sendPeer % c.g, r % c.g);
            }
          }
      }
}

TEST(LowerHierRingTest, InterNodeTrafficStaysOnRails) {
  // 3 nodes x 4 GPUs: every message between nodes joins equal local
  // indices; inside a node it follows the local ring 0,2,1,3.
  HierRingOptions o = opts(3, 4);
  o.localOrder = {0, 2, 1, 3};
  auto s = lowerHierRing(o);
  ASSERT_TRUE(bool(s)) << topocc::testing::errorMessage(s.takeError());
  std::set<std::pair<int, int>> intra;
  for (RankId r = 0; r < s->numRanks; ++r)
    for (const Op &op : s->ranks[r].ops) {
      if (op.kind != OpKind::Send)
        continue;
      if (op.sendPeer / 4 != r / 4)
        EXPECT_EQ(op.sendPeer % 4, r % 4) << r << " -> " << op.sendPeer;
      else
        intra.insert({r % 4, op.sendPeer % 4});
    }
  EXPECT_EQ(intra, (std::set<std::pair<int, int>>{
                       {0, 2}, {2, 1}, {1, 3}, {3, 0}}));
  EXPECT_FALSE(bool(verifySchedule(*s)));
}

TEST(LowerHierRingTest, SubChunksPipelineThroughThePhases) {
  // 2 nodes x 4 GPUs, 4 sub-chunks: rank 0's first inter-node send (sub-
  // chunk 0 of the rail ring) waits for sub-chunk 0's reduce-scatter only,
  // not for the whole intra-node phase, so the phases overlap.
  auto s = lowerHierRing(opts(2, 4, 1, 4));
  ASSERT_TRUE(bool(s)) << topocc::testing::errorMessage(s.takeError());
  const std::vector<Op> &ops = s->ranks[0].ops;
  size_t first = ops.size();
  for (size_t i = 0; i < ops.size() && first == ops.size(); ++i)
    if (sends(ops[i].kind) && ops[i].sendPeer / 4 != 0)
      first = i;
  ASSERT_LT(first, ops.size());
  // Ops listed before it are the reduce-scatter of the 4 sub-chunks.
  std::set<OpId> ancestors;
  std::vector<OpId> todo(ops[first].deps.begin(), ops[first].deps.end());
  while (!todo.empty()) {
    OpId d = todo.back();
    todo.pop_back();
    if (!ancestors.insert(d).second)
      continue;
    for (OpId e : ops[d].deps)
      todo.push_back(e);
  }
  EXPECT_EQ(ancestors.size() * 4, first);
  EXPECT_FALSE(bool(verifySchedule(*s)));
}

TEST(LowerHierRingTest, ChannelsRunTheirOwnIntraNodeRings) {
  // Three channels over two rings of 4 local GPUs (the second repeated):
  // every collective still verifies, and each channel's intra-node sends
  // follow its own ring.
  const std::vector<std::vector<int32_t>> rings{{0, 1, 2, 3}, {0, 2, 1, 3}};
  for (Collective coll : {Collective::AllReduce, Collective::AllGather,
                          Collective::ReduceScatter})
    for (bool inplace : {false, true}) {
      SCOPED_TRACE(::testing::Message() << collectiveName(coll).str()
                                        << (inplace ? " inplace" : ""));
      HierRingOptions o = opts(2, 4, 3, 2, inplace);
      o.collective = coll;
      o.channelOrders = {rings[0], rings[1], rings[1]};
      auto s = lowerHierRing(o);
      ASSERT_TRUE(bool(s)) << topocc::testing::errorMessage(s.takeError());
      llvm::Error problems = verifySchedule(*s);
      EXPECT_FALSE(bool(problems))
          << topocc::testing::errorMessage(std::move(problems));
      // Intra-node sends of channel c go to the next GPU of its ring (the
      // rails take channels of their own for all-gather and
      // reduce-scatter: channels + c).
      std::set<std::pair<int, int>> seen[3];
      for (RankId r = 0; r < s->numRanks; ++r)
        for (const Op &op : s->ranks[r].ops)
          if (sends(op.kind) && op.sendPeer / 4 == r / 4 && op.channel < 3)
            seen[op.channel].emplace(r % 4, op.sendPeer % 4);
      for (int c = 0; c < 3; ++c) {
        const std::vector<int32_t> &ring = o.channelOrders[c];
        std::set<std::pair<int, int>> expected;
        for (size_t q = 0; q < ring.size(); ++q)
          expected.emplace(ring[q], ring[(q + 1) % ring.size()]);
        EXPECT_EQ(seen[c], expected) << "channel " << c;
      }
    }
  // A channel order that is not a permutation is refused.
  HierRingOptions o = opts(2, 4, 2);
  o.channelOrders = {{0, 1, 2, 3}, {0, 1, 1, 3}};
  auto s = lowerHierRing(o);
  ASSERT_FALSE(bool(s));
  EXPECT_EQ(topocc::testing::errorMessage(s.takeError()),
            "the intra-node order must be a permutation of 0..3");
}

TEST(LowerHierRingTest, Errors) {
  HierRingOptions o = opts(1, 4);
  o.collective = Collective::AllGather;
  auto s = lowerHierRing(o);
  ASSERT_FALSE(bool(s));
  EXPECT_EQ(topocc::testing::errorMessage(s.takeError()),
            "the hierarchical ring needs at least 2 nodes with GPUs, the "
            "topology has 1");
  o = opts(2, 2);
  o.nodes[1] = {2};
  o.localOrder = {1, 1};
  s = lowerHierRing(o);
  ASSERT_FALSE(bool(s));
  EXPECT_EQ(topocc::testing::errorMessage(s.takeError()),
            "the hierarchical ring needs the same number of GPUs on every "
            "node: node 1 has 1, node 0 has 2\n"
            "rank 3 is on no node\n"
            "the intra-node order must be a permutation of 0..1");
}

TEST(LowerHierRingTest, PipelineCompilesAndChecksRequests) {
  PassLogger log;
  CompileRequest req;
  req.algorithm = Algorithm::HierRing;
  // Without a topology there are no nodes.
  auto plan = compile(8, req, log);
  ASSERT_FALSE(bool(plan));
  EXPECT_EQ(topocc::testing::errorMessage(plan.takeError()),
            "--algorithm hier-ring needs the topology's nodes");
}

} // namespace
