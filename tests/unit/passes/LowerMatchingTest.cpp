//===- tests/unit/passes/LowerMatchingTest.cpp - Link-matched collectives -===//
//
// The lowered schedules compute their collective (the verifier's symbolic
// semantics, in and out of place), send only over the given links, keep
// every threadblock to one peer (a channel of a rank sends to one peer or
// receives from one), respect the step limit per channel, survive the
// whole pipeline, and reject what they cannot lower.
//
//===----------------------------------------------------------------------===//

#include "compiler/passes/LowerMatching.h"

#include "compiler/Pipeline.h"
#include "ir/Verifier.h"

#include "tests/support/ErrorText.h"

#include "gtest/gtest.h"

#include <map>
#include <set>

using namespace topocc;
using namespace topocc::ir;
using topocc::algorithms::MatchLink;
using topocc::passes::lowerMatching;
using topocc::passes::MatchingOptions;

namespace {

/// A w x h mesh's links (both directions), rank x + w y, link speeds
/// varying with the position so the matching sees unequal links.
std::vector<MatchLink> meshLinks(int32_t w, int32_t h) {
  std::vector<MatchLink> links;
  auto both = [&](int32_t a, int32_t b) {
    const double busy = 1.0 + (a + b) % 3;
    links.push_back({a, b, busy, 0.1});
    links.push_back({b, a, busy, 0.1});
  };
  for (int32_t y = 0; y < h; ++y)
    for (int32_t x = 0; x < w; ++x) {
      if (x + 1 < w)
        both(x + w * y, x + 1 + w * y);
      if (y + 1 < h)
        both(x + w * y, x + w * (y + 1));
    }
  return links;
}

MatchingOptions opts(Collective c, int32_t w, int32_t h, int32_t chunks,
                     bool inplace) {
  MatchingOptions o;
  o.collective = c;
  o.numRanks = w * h;
  o.chunks = chunks;
  o.links = meshLinks(w, h);
  o.inplace = inplace;
  return o;
}

TEST(LowerMatchingTest, VerifiesAsItsCollectiveInAndOutOfPlace) {
  for (Collective c : {Collective::AllGather, Collective::ReduceScatter,
                       Collective::AllReduce})
    for (auto [w, h] : std::vector<std::pair<int32_t, int32_t>>{
             {2, 1}, {3, 1}, {3, 3}, {4, 2}})
      for (int32_t chunks : {1, 2})
        for (bool inplace : {false, true}) {
          SCOPED_TRACE(::testing::Message()
                       << collectiveName(c).str() << " " << w << "x" << h
                       << " k" << chunks << (inplace ? " inplace" : ""));
          MatchingOptions o = opts(c, w, h, chunks, inplace);
          passes::MatchingInfo info;
          auto s = lowerMatching(o, &info);
          ASSERT_TRUE(bool(s)) << topocc::testing::errorMessage(s.takeError());
          EXPECT_EQ(s->chunksPerLoop, w * h * chunks);
          llvm::Error problems = verifySchedule(*s);
          EXPECT_FALSE(bool(problems))
              << topocc::testing::errorMessage(std::move(problems));
          EXPECT_GT(info.synthesizedTime, 0);
          // Every rank receives every unit it lacks once per phase.
          const int64_t phases = c == Collective::AllReduce ? 2 : 1;
          EXPECT_EQ(info.transfers,
                    phases * int64_t(w * h) * (w * h - 1) * chunks);
        }
}

TEST(LowerMatchingTest, OneLinkPerChannelOfARank) {
  // Messages use the given links only, and at every rank each channel
  // carries one link's direction: sends to one peer or receives from one.
  MatchingOptions o = opts(Collective::AllReduce, 4, 3, 2, false);
  std::set<std::pair<int32_t, int32_t>> links;
  for (const MatchLink &l : o.links)
    links.insert({l.from, l.to});
  auto s = lowerMatching(o);
  ASSERT_TRUE(bool(s)) << topocc::testing::errorMessage(s.takeError());
  for (RankId r = 0; r < s->numRanks; ++r) {
    std::map<ChannelId, std::set<std::pair<char, RankId>>> peers;
    for (const Op &op : s->ranks[r].ops) {
      if (sends(op.kind)) {
        EXPECT_TRUE(links.count({r, op.sendPeer}))
            << "rank " << r << " sends to " << op.sendPeer;
        peers[op.channel].insert({'s', op.sendPeer});
      }
      if (receives(op.kind))
        peers[op.channel].insert({'r', op.recvPeer});
    }
    for (auto &[ch, set] : peers)
      EXPECT_EQ(set.size(), 1u) << "rank " << r << " channel " << ch;
  }
}

TEST(LowerMatchingTest, StepLimitOpensChannelLayers) {
  // At most 3 transfers per (link, channel): a link's later transfers go
  // to further layers, and the schedule still verifies.
  MatchingOptions o = opts(Collective::AllGather, 4, 1, 2, false);
  o.maxStepsPerChannel = 3;
  passes::MatchingInfo info;
  auto s = lowerMatching(o, &info);
  ASSERT_TRUE(bool(s)) << topocc::testing::errorMessage(s.takeError());
  EXPECT_FALSE(bool(verifySchedule(*s)));
  EXPECT_GT(info.layers, 1);
  for (RankId r = 0; r < s->numRanks; ++r) {
    std::map<std::pair<ChannelId, RankId>, int> count;
    for (const Op &op : s->ranks[r].ops)
      if (sends(op.kind))
        ++count[{op.channel, op.sendPeer}];
    for (auto &[key, k] : count)
      EXPECT_LE(k, 3) << "rank " << r << " channel " << key.first;
  }
}

TEST(LowerMatchingTest, ThroughThePipeline) {
  // The lowered schedule survives fusion, channels, threadblocks and
  // legalization, each pass verified (the front end, which needs a
  // topology's links, is tested in lit and RelayPropertyTest).
  for (Collective c : {Collective::AllGather, Collective::ReduceScatter,
                       Collective::AllReduce}) {
    auto s = lowerMatching(opts(c, 3, 3, 1, false));
    ASSERT_TRUE(bool(s));
    CompileRequest req;
    req.collective = c;
    PassLogger log;
    Schedule cur = std::move(*s);
    for (llvm::StringRef pass : passNames()) {
      auto next = runSinglePass(pass, std::move(cur), req, log);
      ASSERT_TRUE(bool(next))
          << pass.str() << ": "
          << topocc::testing::errorMessage(next.takeError());
      cur = std::move(*next);
    }
    EXPECT_EQ(cur.stage, Stage::Legalized);
    EXPECT_FALSE(bool(verifySchedule(cur)));
  }
}

TEST(LowerMatchingTest, RejectsWhatItCannotLower) {
  MatchingOptions o = opts(Collective::Broadcast, 2, 2, 0, false);
  auto s = lowerMatching(o);
  ASSERT_FALSE(bool(s));
  EXPECT_EQ(topocc::testing::errorMessage(s.takeError()),
            "--algorithm matching lowers allgather, reducescatter and "
            "allreduce, not broadcast\n--chunks must be at least 1, got 0");
  MatchingOptions split = opts(Collective::AllGather, 4, 1, 1, false);
  split.links.resize(2); // ranks 2 and 3 unreachable
  auto e = lowerMatching(split);
  ASSERT_FALSE(bool(e));
  EXPECT_EQ(topocc::testing::errorMessage(e.takeError()),
            "link matching: no path of direct links from rank 0 to rank 2");
}

} // namespace
