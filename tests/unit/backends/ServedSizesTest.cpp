//===- tests/unit/backends/ServedSizesTest.cpp - Sizes a file serves ------===//
//
// backends::servedSizes against the runtimes' selection rule
// (docs/MscclXmlFormat.md 1.3): count * m a multiple of nchunksperloop (m
// = ngpus for allgather and reducescatter) and nBytes inside [minBytes,
// maxBytes]; the power-of-two case, a non-power-of-two nchunksperloop, the
// window, and describeServedSizes' two wordings.
//
//===----------------------------------------------------------------------===//

#include "backends/ServedSizes.h"

#include "gtest/gtest.h"

using namespace topocc;
using namespace topocc::backends;

namespace {

/// The runtimes' test for a call of `bytes` bytes of `elem`-byte elements.
bool runtimeSelects(ir::Collective c, int64_t ngpus, int64_t nchunks,
                    int64_t bytes, int64_t elem, int64_t minB = 0,
                    int64_t maxB = 0) {
  const bool ranksMultiplier = c == ir::Collective::AllGather ||
                               c == ir::Collective::ReduceScatter;
  const int64_t m = ranksMultiplier ? ngpus : 1;
  if (bytes % (elem * m) != 0)
    return false; // not a call's size: count is whole per rank
  const int64_t count = bytes / elem / m;
  return count > 0 && (count * m) % nchunks == 0 && minB <= bytes &&
         (maxB == 0 || bytes <= maxB);
}

} // namespace

TEST(ServedSizesTest, MatchesTheRuntimeRule) {
  struct Case {
    ir::Collective c;
    int64_t ngpus, nchunks, minB, maxB;
  };
  const Case cases[] = {
      {ir::Collective::AllReduce, 8, 8, 0, 0},
      {ir::Collective::AllReduce, 8, 1328, 0, 0},
      {ir::Collective::AllGather, 16, 208, 0, 0},
      {ir::Collective::AllGather, 6, 4, 0, 0},
      {ir::Collective::ReduceScatter, 8, 64, 1024, 1 << 20},
  };
  for (const Case &k : cases) {
    ServedSizes s = servedSizes(k.c, k.ngpus, k.nchunks, k.minB, k.maxB);
    for (int64_t elem : {1, 2, 4, 8})
      for (int64_t bytes = elem; bytes <= (int64_t(1) << 22); bytes += elem) {
        if (bytes > 4096 && bytes % 4096 != 0)
          continue; // sample the large sizes
        ASSERT_EQ(s.serves(bytes, elem),
                  runtimeSelects(k.c, k.ngpus, k.nchunks, bytes, elem, k.minB,
                                 k.maxB))
            << ir::collectiveName(k.c).str() << " ngpus " << k.ngpus
            << " nchunks " << k.nchunks << " bytes " << bytes << " elem "
            << elem;
      }
  }
}

TEST(ServedSizesTest, PowersOfTwo) {
  ServedSizes s = servedSizes(ir::Collective::AllReduce, 8, 32);
  EXPECT_TRUE(s.powersOfTwo());
  EXPECT_EQ(s.elementMultiple, 32);
  EXPECT_EQ(s.smallest(4), 128);
  for (int shift = 7; shift <= 40; ++shift)
    EXPECT_TRUE(s.serves(int64_t(1) << shift, 4)) << shift;
  EXPECT_FALSE(s.serves(64, 4));
  EXPECT_EQ(describeServedSizes(s),
            "every power of two from 128 B (fp32), 64 B (fp16/bf16), 32 B "
            "(int8), 256 B (fp64) up, and every multiple of those");
}

TEST(ServedSizesTest, AllGatherNeedsWholeCountsPerRank) {
  // 6 ranks, nchunksperloop 4: L = lcm(4, 6) = 12, never a power of two.
  ServedSizes s = servedSizes(ir::Collective::AllGather, 6, 4);
  EXPECT_EQ(s.elementMultiple, 12);
  EXPECT_FALSE(s.powersOfTwo());
  EXPECT_EQ(describeServedSizes(s),
            "multiples of 48 B (fp32), 24 B (fp16/bf16), 12 B (int8), 96 B "
            "(fp64); no power of two");
}

TEST(ServedSizesTest, NoPowerOfTwo) {
  // A tree file of 8 ranks with 166 units per root: nchunksperloop 1328.
  ServedSizes s = servedSizes(ir::Collective::AllReduce, 8, 1328);
  EXPECT_FALSE(s.powersOfTwo());
  for (int shift = 0; shift <= 40; ++shift)
    EXPECT_FALSE(s.serves(int64_t(1) << shift, 4)) << shift;
  EXPECT_TRUE(s.serves(5312, 4));
  EXPECT_EQ(describeServedSizes(s),
            "multiples of 5312 B (fp32), 2656 B (fp16/bf16), 1328 B (int8), "
            "10624 B (fp64); no power of two");
}

TEST(ServedSizesTest, Window) {
  ServedSizes s =
      servedSizes(ir::Collective::AllReduce, 8, 8, 3000, int64_t(1) << 20);
  EXPECT_EQ(s.smallest(4), 3008);
  EXPECT_FALSE(s.serves(2048, 4));
  EXPECT_TRUE(s.serves(4096, 4));
  EXPECT_FALSE(s.serves(int64_t(2) << 20, 4));
  EXPECT_EQ(describeServedSizes(s),
            "every power of two from 4 KiB (fp32), 4 KiB (fp16/bf16), 4 KiB "
            "(int8), 4 KiB (fp64) up to 1 MiB, and every multiple of those");
  ServedSizes odd =
      servedSizes(ir::Collective::AllReduce, 8, 24, 1024, int64_t(1) << 20);
  EXPECT_EQ(describeServedSizes(odd),
            "multiples of 96 B (fp32), 48 B (fp16/bf16), 24 B (int8), 192 B "
            "(fp64) from 1 KiB to 1 MiB; no power of two");
  // A window that holds no power of two (compile --sizes 1M:3M's last
  // window is [3 MiB, 3 MiB]): its multiples.
  ServedSizes three =
      servedSizes(ir::Collective::AllReduce, 8, 32, 3 << 20, 3 << 20);
  EXPECT_TRUE(three.powersOfTwo());
  EXPECT_TRUE(three.serves(3 << 20, 4));
  EXPECT_EQ(describeServedSizes(three),
            "multiples of 128 B (fp32), 64 B (fp16/bf16), 32 B (int8), 256 B "
            "(fp64) from 3 MiB to 3 MiB; no power of two");
}

TEST(ServedSizesTest, FromASchedule) {
  ir::Schedule s;
  s.collective = ir::Collective::AllGather;
  s.numRanks = 16;
  s.chunksPerLoop = 208;
  ServedSizes sz = servedSizes(s);
  EXPECT_EQ(sz.elementMultiple, 208);
  EXPECT_FALSE(sz.powersOfTwo());
}
