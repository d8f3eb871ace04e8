//===- tests/unit/passes/LowerDimsTest.cpp - Dimension-by-dimension rings -===//

#include "compiler/passes/LowerDims.h"

#include "ir/Verifier.h"

#include "tests/support/ErrorText.h"

#include "gtest/gtest.h"

#include <map>
#include <numeric>
#include <set>

using namespace topocc;
using namespace topocc::ir;
using topocc::passes::DimsOptions;
using topocc::passes::lowerDims;

namespace {

DimsOptions opts(std::vector<int32_t> sizes, int32_t chunks = 1,
                 bool inplace = false) {
  DimsOptions o;
  o.sizes = std::move(sizes);
  o.numRanks = 1;
  for (int32_t s : o.sizes)
    o.numRanks *= s;
  o.ranks.resize(o.numRanks);
  std::iota(o.ranks.begin(), o.ranks.end(), 0);
  o.chunks = chunks;
  o.inplace = inplace;
  return o;
}

/// Coordinates of linear index i (dimension 0 fastest).
std::vector<int32_t> coords(const std::vector<int32_t> &sizes, int32_t i) {
  std::vector<int32_t> c;
  for (int32_t s : sizes) {
    c.push_back(i % s);
    i /= s;
  }
  return c;
}

TEST(LowerDimsTest, VerifiesAsAllReduceInAndOutOfPlace) {
  // The verifier's symbolic semantics prove every rank ends with the sum.
  for (std::vector<int32_t> sizes : std::vector<std::vector<int32_t>>{
           {2}, {3}, {4, 4}, {2, 3}, {3, 1, 2}, {4, 4, 4}, {1}})
    for (int32_t chunks : {1, 2})
      for (bool inplace : {false, true}) {
        SCOPED_TRACE(::testing::Message()
                     << sizes.size() << " dims, first " << sizes[0] << " k"
                     << chunks << (inplace ? " inplace" : ""));
        auto s = lowerDims(opts(sizes, chunks, inplace));
        ASSERT_TRUE(bool(s)) << topocc::testing::errorMessage(s.takeError());
        int32_t active = 0;
        for (int32_t sz : sizes)
          active += sz >= 2;
        EXPECT_EQ(s->chunksPerLoop,
                  2 * std::max(active, 1) * s->numRanks * chunks);
        llvm::Error problems = verifySchedule(*s);
        EXPECT_FALSE(bool(problems))
            << topocc::testing::errorMessage(std::move(problems));
      }
}

TEST(LowerDimsTest, MessagesStayOnTheirDimensionsNeighbours) {
  // Every message joins two ranks that differ in one coordinate by one
  // step around that dimension's ring, and lane L's first phase uses the
  // dimension it starts with: all dimensions carry data at once.
  const std::vector<int32_t> sizes{4, 3, 2};
  DimsOptions o = opts(sizes, 1);
  // A permuted grid: rank r sits at linear index perm[r].
  std::vector<RankId> ranks(o.numRanks);
  for (int32_t i = 0; i < o.numRanks; ++i)
    ranks[i] = (i * 5) % o.numRanks; // 5 is prime to 24
  o.ranks = ranks;
  auto s = lowerDims(o);
  ASSERT_TRUE(bool(s)) << topocc::testing::errorMessage(s.takeError());
  EXPECT_FALSE(bool(verifySchedule(*s)));
  std::vector<std::vector<int32_t>> at(o.numRanks);
  for (int32_t i = 0; i < o.numRanks; ++i)
    at[ranks[i]] = coords(sizes, i);
  std::map<ChannelId, std::set<int>> dimsOfLane;
  std::map<ChannelId, int> firstDim;
  for (RankId r = 0; r < s->numRanks; ++r)
    for (const Op &op : s->ranks[r].ops) {
      if (!sends(op.kind))
        continue;
      const std::vector<int32_t> &a = at[r], &b = at[op.sendPeer];
      int differ = -1, count = 0;
      for (size_t d = 0; d < sizes.size(); ++d)
        if (a[d] != b[d]) {
          differ = static_cast<int>(d);
          ++count;
        }
      ASSERT_EQ(count, 1) << "rank " << r << " -> " << op.sendPeer;
      int step = (b[differ] - a[differ] + sizes[differ]) % sizes[differ];
      EXPECT_TRUE(step == 1 || step == sizes[differ] - 1)
          << "rank " << r << " -> " << op.sendPeer;
      dimsOfLane[op.channel].insert(differ);
      if (!firstDim.count(op.channel))
        firstDim[op.channel] = differ;
    }
  ASSERT_EQ(dimsOfLane.size(), 6u); // 3 dimensions x 2 directions
  std::set<int> starts;
  for (auto &[lane, dims] : dimsOfLane) {
    EXPECT_EQ(dims.size(), 3u) << "lane " << lane;
    starts.insert(firstDim[lane]);
  }
  EXPECT_EQ(starts, (std::set<int>{0, 1, 2}));
}

TEST(LowerDimsTest, LanesTakeTheirOwnChunkCounts) {
  // Unequal sub-chunks per starting dimension (and an empty lane) still
  // verify, in and out of place; units and channels follow the counts.
  for (bool inplace : {false, true}) {
    DimsOptions o = opts({4, 2, 3}, 1, inplace);
    o.laneChunks = {3, 0, 2};
    auto s = lowerDims(o);
    ASSERT_TRUE(bool(s)) << topocc::testing::errorMessage(s.takeError());
    EXPECT_EQ(s->chunksPerLoop, 2 * (3 + 0 + 2) * 24);
    llvm::Error problems = verifySchedule(*s);
    EXPECT_FALSE(bool(problems))
        << topocc::testing::errorMessage(std::move(problems));
    std::set<ChannelId> used;
    for (RankId r = 0; r < s->numRanks; ++r)
      for (const Op &op : s->ranks[r].ops)
        used.insert(op.channel);
    // Lanes 1 and 4 (starting with dimension 1, both directions) are empty.
    EXPECT_EQ(used, (std::set<ChannelId>{0, 2, 3, 5}));
  }
  DimsOptions o = opts({4, 4});
  o.laneChunks = {1};
  auto s = lowerDims(o);
  ASSERT_FALSE(bool(s));
  EXPECT_EQ(topocc::testing::errorMessage(s.takeError()),
            "1 lane chunk counts for 2 dimensions of size 2 or more");
  o.laneChunks = {0, 0};
  s = lowerDims(o);
  ASSERT_FALSE(bool(s));
  EXPECT_EQ(topocc::testing::errorMessage(s.takeError()),
            "every lane is empty");
}

TEST(LowerDimsTest, Errors) {
  DimsOptions o = opts({4, 4});
  o.collective = Collective::AllGather;
  auto s = lowerDims(o);
  ASSERT_FALSE(bool(s));
  EXPECT_EQ(topocc::testing::errorMessage(s.takeError()),
            "--algorithm dims lowers allreduce only, not allgather (use "
            "trees for allgather and reducescatter on a grid)");
  o = opts({4, 4});
  o.numRanks = 15;
  o.ranks[3] = 2;
  s = lowerDims(o);
  ASSERT_FALSE(bool(s));
  EXPECT_EQ(topocc::testing::errorMessage(s.takeError()),
            "the dimensions' sizes multiply to 16, not the 15 ranks\n"
            "16 grid ranks for 15 ranks\n"
            "rank 2 appears twice in the grid\n"
            "grid rank 15 is out of range");
  o = opts({4, 4}, 600); // 4 lanes x 16 ranks x 600 units
  s = lowerDims(o);
  ASSERT_FALSE(bool(s));
  EXPECT_NE(topocc::testing::errorMessage(s.takeError()).find("exceeds 32767"),
            std::string::npos);
}

} // namespace
