//===- tests/unit/passes/LowerDbTreeTest.cpp - Double binary tree ---------===//

#include "compiler/passes/LowerDbTree.h"

#include "compiler/passes/AssignChannels.h"
#include "compiler/passes/AssignThreadblocks.h"
#include "compiler/passes/Fuse.h"
#include "compiler/passes/LegalizeDependencies.h"
#include "compiler/passes/SplitChannels.h"
#include "ir/Verifier.h"

#include "tests/support/ErrorText.h"

#include "gtest/gtest.h"

#include <map>
#include <set>

using namespace topocc;
using namespace topocc::ir;
using topocc::passes::DbTreeOptions;
using topocc::passes::dbTreePair;
using topocc::passes::lowerDbTree;
using topocc::passes::RankTree;

namespace {

/// N nodes of G GPUs; node b's local GPU l is rank b * G + l.
DbTreeOptions layout(int32_t N, int32_t G, int32_t channels = 1,
                     int32_t chunks = 1, bool inplace = false) {
  DbTreeOptions o;
  o.numRanks = N * G;
  o.nodes.resize(N);
  for (int32_t b = 0; b < N; ++b)
    for (int32_t l = 0; l < G; ++l)
      o.nodes[b].push_back(b * G + l);
  o.channels = channels;
  o.chunks = chunks;
  o.inplace = inplace;
  return o;
}

/// Depth of every rank (root 0); -1 where the parents do not reach the
/// root (a cycle or a detached rank).
std::vector<int32_t> depths(const RankTree &t) {
  const int32_t n = static_cast<int32_t>(t.parent.size());
  std::vector<int32_t> d(n, -1);
  for (RankId r = 0; r < n; ++r) {
    int32_t steps = 0;
    RankId x = r;
    while (x != kNone && x != t.root && steps <= n) {
      x = t.parent[x];
      ++steps;
    }
    d[r] = x == t.root ? steps : -1;
  }
  return d;
}

TEST(LowerDbTreeTest, DefaultUnitsFillTheTargetsSteps) {
  EXPECT_EQ(passes::dbTreeDefaultUnits(ir::TargetLimits::kNoLimit), 64);
  EXPECT_EQ(passes::dbTreeDefaultUnits(256), 64);
  EXPECT_EQ(passes::dbTreeDefaultUnits(64), 64);
  EXPECT_EQ(passes::dbTreeDefaultUnits(63), 32);
  EXPECT_EQ(passes::dbTreeDefaultUnits(5), 4);
  EXPECT_EQ(passes::dbTreeDefaultUnits(1), 1);
  EXPECT_EQ(passes::dbTreeDefaultUnits(0), 1);
}

TEST(LowerDbTreeTest, VerifiesAsAllReduce) {
  // The verifier's symbolic semantics prove every rank ends with the sum,
  // and its deadlock and race checks pass, in and out of place.
  for (auto [N, G] : std::vector<std::pair<int32_t, int32_t>>{
           {1, 1}, {1, 4}, {2, 1}, {2, 4}, {3, 2}, {5, 3}, {8, 2}, {7, 1}})
    for (int32_t channels : {1, 2})
      for (int32_t chunks : {1, 3})
        for (bool inplace : {false, true}) {
          SCOPED_TRACE(::testing::Message()
                       << N << " x " << G << " c" << channels << " k" << chunks
                       << (inplace ? " inplace" : ""));
          auto s = lowerDbTree(layout(N, G, channels, chunks, inplace));
          ASSERT_TRUE(bool(s)) << topocc::testing::errorMessage(s.takeError());
          EXPECT_EQ(s->chunksPerLoop, 2 * channels * chunks);
          llvm::Error problems = verifySchedule(*s);
          EXPECT_FALSE(bool(problems))
              << topocc::testing::errorMessage(std::move(problems));
        }
}

TEST(LowerDbTreeTest, OneStepPerUnitAndThreadblock) {
  // Fuse turns every child's receive and reduction into one rrc (a scratch
  // slot per child), so each threadblock has one step per unit, nops
  // included: 16 units fit 16 steps per threadblock. A head's channel holds
  // 3 ops per unit, too long for split-channels' segments within the 8
  // channels allowed here, so it stays unsplit because its threadblocks
  // fit (fattree-multipod: 64 units in MSCCL's 64 steps and 32 channels).
  auto s = lowerDbTree(layout(4, 4, 2, 16));
  ASSERT_TRUE(bool(s)) << topocc::testing::errorMessage(s.takeError());
  passes::fuse(*s);
  for (const RankProgram &rp : s->ranks)
    for (const Op &op : rp.ops)
      ASSERT_NE(op.kind, OpKind::Reduce) << "an unfused reduction";
  ASSERT_FALSE(bool(passes::assignChannels(*s, 8)));
  llvm::Error err = passes::splitChannels(*s, 16, 8);
  ASSERT_FALSE(bool(err)) << topocc::testing::errorMessage(std::move(err));
  EXPECT_EQ(s->numChannels, 8);
  passes::ThreadblockLimits limits;
  limits.maxSteps = 16;
  err = passes::assignThreadblocks(*s, limits);
  ASSERT_FALSE(bool(err)) << topocc::testing::errorMessage(std::move(err));
  passes::legalizeDependencies(*s);
  int32_t most = 0;
  for (const RankProgram &rp : s->ranks) {
    std::map<TbId, int32_t> steps;
    for (const Op &op : rp.ops)
      most = std::max(most, ++steps[op.threadblock]);
  }
  EXPECT_EQ(most, 16);
  err = verifySchedule(*s);
  EXPECT_FALSE(bool(err)) << topocc::testing::errorMessage(std::move(err));
}

TEST(LowerDbTreeTest, TreesSpanTheRanksWithLogDepthAcrossNodes) {
  // Each tree reaches every rank from its root; a rank's depth is at most
  // the chain (G - 1) plus the depth of the tree over the nodes
  // (ceil(log2 N)); messages leave a node only between the heads, which
  // the two trees of a pair share (one NIC carries both, as in NCCL).
  for (auto [N, G] : std::vector<std::pair<int32_t, int32_t>>{
           {2, 8}, {16, 8}, {7, 4}, {32, 1}, {5, 2}}) {
    SCOPED_TRACE(::testing::Message() << N << " x " << G);
    DbTreeOptions o = layout(N, G);
    std::vector<RankTree> pair = dbTreePair(o, 0);
    ASSERT_EQ(pair.size(), 2u);
    int32_t log2N = 0;
    while ((1 << log2N) < N)
      ++log2N;
    std::set<RankId> heads[2];
    for (int t = 0; t < 2; ++t) {
      std::vector<int32_t> d = depths(pair[t]);
      for (RankId r = 0; r < N * G; ++r) {
        EXPECT_GE(d[r], 0) << "rank " << r << " of tree " << t;
        EXPECT_LE(d[r], G - 1 + log2N) << "rank " << r;
        const RankId p = pair[t].parent[r];
        if (p != kNone && p / G != r / G) {
          heads[t].insert(p);
          heads[t].insert(r);
        }
      }
      EXPECT_EQ(static_cast<int32_t>(heads[t].size()), N > 1 ? N : 0);
    }
    EXPECT_EQ(heads[0], heads[1]);
  }
}

TEST(LowerDbTreeTest, EveryNodeReceivesFromAtMostTwoNodes) {
  // The point of the second tree: a node that is interior in one is
  // (nearly always) a leaf in the other, so its network link receives from
  // at most two child nodes in the pair together, half the data each,
  // whatever the node count.
  for (int32_t N = 2; N <= 300; ++N) {
    std::vector<RankTree> pair = dbTreePair(layout(N, 1), 0);
    for (RankId r = 0; r < N; ++r)
      ASSERT_LE(pair[0].children[r].size() + pair[1].children[r].size(), 2u)
          << "node " << r << " of " << N;
  }
}

TEST(LowerDbTreeTest, ChannelsRotateTheHeads) {
  // Tree pair c starts its chains c * G / channels GPUs on: with G
  // channels every GPU of a node heads tree 0 once.
  DbTreeOptions o = layout(4, 4, 4);
  std::set<RankId> heads;
  for (int32_t c = 0; c < 4; ++c) {
    std::vector<RankTree> pair = dbTreePair(o, c);
    heads.insert(pair[0].root % 4);
  }
  EXPECT_EQ(heads.size(), 4u);
  auto s = lowerDbTree(o);
  ASSERT_TRUE(bool(s)) << topocc::testing::errorMessage(s.takeError());
  std::set<ChannelId> channels;
  for (const RankProgram &rp : s->ranks)
    for (const Op &op : rp.ops)
      channels.insert(op.channel);
  EXPECT_EQ(channels.size(), 16u); // 4 pairs x 2 trees x (up, down)
}

TEST(LowerDbTreeTest, BadOptionsAreUserErrors) {
  DbTreeOptions o = layout(2, 2);
  o.nodes[1].pop_back();
  std::string msg = topocc::testing::errorMessage(lowerDbTree(o).takeError());
  EXPECT_NE(msg.find("same number of GPUs"), std::string::npos) << msg;
  EXPECT_NE(msg.find("rank 3 is on no node"), std::string::npos) << msg;
  o = layout(2, 2, 17);
  msg = topocc::testing::errorMessage(lowerDbTree(o).takeError());
  EXPECT_NE(msg.find("--channels must be between 1 and 16"), std::string::npos)
      << msg;
  o = layout(2, 2, 1, 0);
  msg = topocc::testing::errorMessage(lowerDbTree(o).takeError());
  EXPECT_NE(msg.find("--chunks must be at least 1"), std::string::npos) << msg;
  o = layout(2, 2, 16, 1100);
  msg = topocc::testing::errorMessage(lowerDbTree(o).takeError());
  EXPECT_EQ(msg, "2 trees * channels * chunks = 35200 units exceeds 32767 "
                 "(MSCCL stores offsets in 16 bits); use fewer channels or "
                 "chunks");
  o = layout(2, 2);
  o.localOrder = {1, 1};
  msg = topocc::testing::errorMessage(lowerDbTree(o).takeError());
  EXPECT_NE(msg.find("permutation"), std::string::npos) << msg;
}

} // namespace
