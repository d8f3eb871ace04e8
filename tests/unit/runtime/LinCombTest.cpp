//===- tests/unit/runtime/LinCombTest.cpp ---------------------------------===//
//
// The fused CPU linear combination (runtime::linComb, the CPU path of every
// lincomb op and so of CERAR encode/decode): fp32 results equal the unfused
// form (scaleCopy, then one axpby per term) bit for bit, for every block
// boundary and source count; dst may be a source; a source overlapping dst
// at another offset still gives the right answer; fp16/bf16 round once.
//
//===----------------------------------------------------------------------===//

#include "runtime/DType.h"

#include "gtest/gtest.h"

#include <cmath>
#include <vector>

using namespace topocc::runtime;

namespace {

/// The unfused reference: what Transport::linComb computed before.
std::vector<float> unfused(const std::vector<double> &c,
                           const std::vector<const float *> &s, size_t n) {
  std::vector<float> acc(n);
  scaleCopy(acc.data(), c[0], s[0], n, DType::F32);
  for (size_t j = 1; j < s.size(); ++j)
    axpby(acc.data(), 1.0, acc.data(), c[j], s[j], n, DType::F32);
  return acc;
}

float value(size_t j, size_t i) {
  return float(int((j * 131 + i * 17) % 97) - 48) / 7.0f;
}

} // namespace

TEST(LinComb, Fp32MatchesTheUnfusedFormBitForBit) {
  // Counts around the 1024-element block; coefficients 1 (the add path)
  // and others; 1 to 11 sources.
  for (size_t n : {size_t(0), size_t(1), size_t(7), size_t(1023),
                   size_t(1024), size_t(1025), size_t(5000)})
    for (size_t k : {size_t(1), size_t(2), size_t(3), size_t(8), size_t(11)}) {
      std::vector<std::vector<float>> src(k, std::vector<float>(n));
      std::vector<const float *> sp;
      std::vector<const void *> vp;
      std::vector<double> c;
      for (size_t j = 0; j < k; ++j) {
        for (size_t i = 0; i < n; ++i)
          src[j][i] = value(j, i);
        sp.push_back(src[j].data());
        vp.push_back(src[j].data());
        c.push_back(j % 3 == 1 ? 1.0 : -2e2 / double(j + 1) + 0.1);
      }
      std::vector<float> want = unfused(c, sp, n);
      std::vector<float> got(n, 12345.0f);
      linComb(got.data(), c, vp, n, DType::F32);
      for (size_t i = 0; i < n; ++i)
        ASSERT_EQ(got[i], want[i]) << "n " << n << " k " << k << " i " << i;
    }
}

TEST(LinComb, DstMayBeASource) {
  // out = out + 3*sc and out = 0.5*x + 0.25*out (CERAR decode steps).
  size_t n = 3001;
  std::vector<float> out(n), sc(n), x(n);
  for (size_t i = 0; i < n; ++i) {
    out[i] = value(0, i);
    sc[i] = value(1, i);
    x[i] = value(2, i);
  }
  std::vector<float> want(n);
  for (size_t i = 0; i < n; ++i)
    want[i] = 0.5f * x[i] + 0.25f * (out[i] + 3.0f * sc[i]);
  linComb(out.data(), {1.0, 3.0}, {out.data(), sc.data()}, n, DType::F32);
  linComb(out.data(), {0.5, 0.25}, {x.data(), out.data()}, n, DType::F32);
  for (size_t i = 0; i < n; ++i)
    ASSERT_EQ(out[i], want[i]) << i;
}

TEST(LinComb, PartialOverlapWithDstIsComputedFromTheOldValues) {
  // dst = buf[100..], source = buf[0..]: a blockwise in-place pass would
  // read elements it already overwrote.
  size_t n = 4000, shift = 100;
  std::vector<float> buf(n + shift);
  for (size_t i = 0; i < buf.size(); ++i)
    buf[i] = value(3, i);
  std::vector<float> old = buf;
  linComb(buf.data() + shift, {2.0}, {buf.data()}, n, DType::F32);
  for (size_t i = 0; i < n; ++i)
    ASSERT_EQ(buf[shift + i], 2.0f * old[i]) << i;
  // And the other direction.
  buf = old;
  linComb(buf.data(), {1.0, 1.0}, {buf.data() + shift, buf.data()}, n,
          DType::F32);
  for (size_t i = 0; i < n; ++i)
    ASSERT_EQ(buf[i], old[shift + i] + old[i]) << i;
}

TEST(LinComb, HalfAndBfloat16RoundOncePerElement) {
  // 1 + 2^-11 + 2^-11 = 1 + 2^-10 is a half; rounding after each term
  // would give 1 (ties to even twice).
  for (DType t : {DType::F16, DType::BF16}) {
    float tiny = t == DType::F16 ? std::ldexp(1.0f, -11) : std::ldexp(1.0f, -8);
    size_t n = 1500;
    std::vector<uint16_t> a(n), b(n), d(n);
    for (size_t i = 0; i < n; ++i) {
      storeElement(a.data(), i, t, 1.0f);
      storeElement(b.data(), i, t, tiny);
    }
    linComb(d.data(), {1.0, 1.0, 1.0}, {a.data(), b.data(), b.data()}, n, t);
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(loadElement(d.data(), i, t), 1.0f + 2 * tiny)
          << dtypeName(t).str() << " " << i;
  }
}
