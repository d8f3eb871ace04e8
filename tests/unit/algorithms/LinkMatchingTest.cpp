//===- tests/unit/algorithms/LinkMatchingTest.cpp - Link-chunk matching ---===//
//
// The matching's transfers are a valid broadcast of every chunk (each rank
// but the origin receives each chunk exactly once, from a rank that held it
// when the transfer started), every link is a FIFO server (no two transfers
// overlap on it), release times hold, the 5x5 mesh's all-gather finishes
// at its corner's bound, and bad input is a user error.
//
//===----------------------------------------------------------------------===//

#include "compiler/algorithms/LinkMatching.h"

#include "tests/support/ErrorText.h"

#include "gtest/gtest.h"

#include <limits>
#include <map>
#include <random>
#include <set>

using namespace topocc;
using namespace topocc::algorithms;

namespace {

/// Both directions of an undirected link.
void biLink(std::vector<MatchLink> &links, int32_t a, int32_t b,
            double busy = 1.0, double latency = 0.0) {
  links.push_back({a, b, busy, latency});
  links.push_back({b, a, busy, latency});
}

/// A w x h mesh, rank x + w y.
BroadcastProblem mesh(int32_t w, int32_t h, int32_t chunksPerRank) {
  BroadcastProblem p;
  p.numRanks = w * h;
  for (int32_t y = 0; y < h; ++y)
    for (int32_t x = 0; x < w; ++x) {
      if (x + 1 < w)
        biLink(p.links, x + w * y, x + 1 + w * y);
      if (y + 1 < h)
        biLink(p.links, x + w * y, x + w * (y + 1));
    }
  for (int32_t r = 0; r < p.numRanks; ++r)
    for (int32_t k = 0; k < chunksPerRank; ++k)
      p.origin.push_back(r);
  return p;
}

/// Checks that `plan` is a valid broadcast of every chunk of `p`.
void expectValid(const BroadcastProblem &p, const BroadcastPlan &plan) {
  const int32_t n = p.numRanks, C = static_cast<int32_t>(p.origin.size());
  const double never = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> arrival(n, std::vector<double>(C, never));
  for (int32_t c = 0; c < C; ++c)
    arrival[p.origin[c]][c] = p.release.empty() ? 0 : p.release[c];
  std::map<int32_t, std::vector<std::pair<double, double>>> busy;
  double last = 0;
  for (const MatchTransfer &t : plan.transfers) {
    const MatchLink &l = p.links[t.link];
    EXPECT_EQ(arrival[l.to][t.chunk], never)
        << "rank " << l.to << " receives chunk " << t.chunk << " twice";
    EXPECT_LE(arrival[l.from][t.chunk], t.start + 1e-12)
        << "rank " << l.from << " sends chunk " << t.chunk
        << " before it holds it";
    EXPECT_NEAR(t.arrive, t.start + l.busy + l.latency, 1e-12);
    EXPECT_GE(t.start, last - 1e-12) << "transfers out of time order";
    last = t.start;
    arrival[l.to][t.chunk] = t.arrive;
    busy[t.link].push_back({t.start, t.start + l.busy});
  }
  double finish = 0;
  for (int32_t v = 0; v < n; ++v)
    for (int32_t c = 0; c < C; ++c) {
      EXPECT_NE(arrival[v][c], never)
          << "rank " << v << " never gets chunk " << c;
      finish = std::max(finish, arrival[v][c]);
    }
  EXPECT_DOUBLE_EQ(plan.finish, finish);
  for (auto &[link, spans] : busy)
    for (size_t i = 1; i < spans.size(); ++i)
      EXPECT_GE(spans[i].first, spans[i - 1].second - 1e-12)
          << "link " << link << " carries two chunks at once";
}

TEST(LinkMatchingTest, BroadcastsEveryChunkOnRandomGraphs) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    SCOPED_TRACE(trial);
    BroadcastProblem p;
    p.numRanks = 2 + static_cast<int32_t>(rng() % 9);
    // A random spanning tree plus extra links, with unequal speeds.
    for (int32_t v = 1; v < p.numRanks; ++v)
      biLink(p.links, static_cast<int32_t>(rng() % v), v,
             0.5 + (rng() % 4) * 0.5, (rng() % 3) * 0.1);
    for (int32_t i = 0; i < p.numRanks; ++i) {
      int32_t a = static_cast<int32_t>(rng() % p.numRanks);
      int32_t b = static_cast<int32_t>(rng() % p.numRanks);
      if (a != b)
        biLink(p.links, a, b, 1.0 + (rng() % 3));
    }
    const int32_t k = 1 + static_cast<int32_t>(rng() % 3);
    for (int32_t r = 0; r < p.numRanks; ++r)
      for (int32_t j = 0; j < k; ++j)
        p.origin.push_back(r);
    if (trial % 2)
      for (size_t c = 0; c < p.origin.size(); ++c)
        p.release.push_back(static_cast<double>(rng() % 5));
    auto plan = matchBroadcasts(p);
    ASSERT_TRUE(bool(plan)) << topocc::testing::errorMessage(plan.takeError());
    expectValid(p, *plan);
  }
}

TEST(LinkMatchingTest, MeshAllGatherMeetsTheCornerBound) {
  // A corner of the 5x5 mesh has two links in and needs 24 chunks: 12
  // chunk times at best, which the matching reaches exactly (the number is
  // deterministic).
  BroadcastProblem p = mesh(5, 5, 1);
  auto plan = matchBroadcasts(p);
  ASSERT_TRUE(bool(plan)) << topocc::testing::errorMessage(plan.takeError());
  expectValid(p, *plan);
  EXPECT_GE(plan->finish, 12.0);
  EXPECT_LE(plan->finish, 12.0 + 1e-9);
  // 10 x 10 at two chunks per rank: within 2% of its corner's 99 chunk
  // times.
  BroadcastProblem big = mesh(10, 10, 2);
  auto bigPlan = matchBroadcasts(big);
  ASSERT_TRUE(bool(bigPlan));
  EXPECT_LE(bigPlan->finish, 99.0 * 1.02);
}

TEST(LinkMatchingTest, ReleaseTimesHold) {
  // A chunk never leaves its origin before it is released.
  BroadcastProblem p = mesh(3, 2, 1);
  p.release = {0, 4, 0, 0, 9, 0};
  auto plan = matchBroadcasts(p);
  ASSERT_TRUE(bool(plan));
  expectValid(p, *plan);
  for (const MatchTransfer &t : plan->transfers)
    EXPECT_GE(t.start, p.release[t.chunk]);
  EXPECT_GE(plan->finish, 9.0 + 2 * 1.0); // chunk 4 is two hops from rank 0
}

TEST(LinkMatchingTest, BadInputIsAUserError) {
  BroadcastProblem p;
  p.numRanks = 4;
  biLink(p.links, 0, 1);
  biLink(p.links, 2, 3);
  p.origin = {0, 1, 2, 3};
  auto plan = matchBroadcasts(p);
  ASSERT_FALSE(bool(plan));
  EXPECT_EQ(topocc::testing::errorMessage(plan.takeError()),
            "link matching: no path of direct links from rank 0 to rank 2");

  BroadcastProblem q = mesh(2, 1, 1);
  q.links.push_back({0, 5, 1.0, 0.0});
  q.links.push_back({1, 0, 0.0, 0.0});
  q.origin.push_back(7);
  q.release = {1.0};
  auto bad = matchBroadcasts(q);
  ASSERT_FALSE(bool(bad));
  EXPECT_EQ(topocc::testing::errorMessage(bad.takeError()),
            "link matching: link 2 joins ranks 0 and 5; link 3 (1 -> 0) has "
            "busy time 0 s and latency 0 s; chunk 2 starts on rank 7; 1 "
            "release times for 3 chunks");

  BroadcastProblem huge = mesh(4, 4, 8);
  huge.maxWork = 1000;
  auto tooBig = matchBroadcasts(huge);
  ASSERT_FALSE(bool(tooBig));
  EXPECT_EQ(topocc::testing::errorMessage(tooBig.takeError()),
            "link matching: 128 chunks on 16 ranks is about 245760 steps of "
            "synthesis, more than the limit of 1000; use fewer chunks");
}

} // namespace
