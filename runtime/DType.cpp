//===- runtime/DType.cpp - Element types and CPU kernels ------------------===//

#include "runtime/DType.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace topocc::runtime {

llvm::StringRef dtypeName(DType t) {
  switch (t) {
  case DType::F32:
    return "fp32";
  case DType::F16:
    return "fp16";
  case DType::BF16:
    return "bf16";
  }
  return "?";
}

std::optional<DType> dtypeFromName(llvm::StringRef s) {
  if (s == "fp32" || s == "float" || s == "float32")
    return DType::F32;
  if (s == "fp16" || s == "half" || s == "float16")
    return DType::F16;
  if (s == "bf16" || s == "bfloat16")
    return DType::BF16;
  return std::nullopt;
}

size_t dtypeSize(DType t) { return t == DType::F32 ? 4 : 2; }

static uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
static float floatOf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t man = h & 0x3ff;
  if (exp == 0x1f) // inf / nan
    return floatOf(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    if (man == 0)
      return floatOf(sign);
    // Subnormal: value = man * 2^-24.
    float v = float(man) * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  return floatOf(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t floatToHalf(float f) {
  uint32_t u = bitsOf(f);
  uint16_t sign = uint16_t((u >> 16) & 0x8000);
  uint32_t absu = u & 0x7fffffffu;
  if (absu >= 0x7f800000u) // inf / nan
    return sign | 0x7c00 | (absu > 0x7f800000u ? 0x200 : 0);
  if (absu >= 0x477ff000u) // rounds to >= 65520: overflow to inf
    return sign | 0x7c00;
  if (absu < 0x38800000u) { // below the smallest normal half (2^-14)
    // Subnormal or zero: round absf / 2^-24 to nearest even.
    float a = floatOf(absu) * 16777216.0f;
    uint32_t m = uint32_t(a);
    float rem = a - float(m);
    if (rem > 0.5f || (rem == 0.5f && (m & 1)))
      ++m;
    return sign | uint16_t(m);
  }
  // Normal: rebias exponent, round mantissa to 10 bits, nearest even.
  uint32_t e = ((absu >> 23) - 112) << 10;
  uint32_t m = absu & 0x7fffff;
  uint32_t h = e | (m >> 13);
  uint32_t rest = m & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
    ++h; // may carry into the exponent, which is right
  return sign | uint16_t(h);
}

float bf16ToFloat(uint16_t h) { return floatOf(uint32_t(h) << 16); }

uint16_t floatToBf16(float f) {
  uint32_t u = bitsOf(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) // nan stays nan
    return uint16_t((u >> 16) | 0x40);
  uint32_t rounding = 0x7fff + ((u >> 16) & 1);
  return uint16_t((u + rounding) >> 16);
}

float loadElement(const void *buf, size_t i, DType t) {
  switch (t) {
  case DType::F32:
    return static_cast<const float *>(buf)[i];
  case DType::F16:
    return halfToFloat(static_cast<const uint16_t *>(buf)[i]);
  case DType::BF16:
    return bf16ToFloat(static_cast<const uint16_t *>(buf)[i]);
  }
  return 0;
}

void storeElement(void *buf, size_t i, DType t, float v) {
  switch (t) {
  case DType::F32:
    static_cast<float *>(buf)[i] = v;
    return;
  case DType::F16:
    static_cast<uint16_t *>(buf)[i] = floatToHalf(v);
    return;
  case DType::BF16:
    static_cast<uint16_t *>(buf)[i] = floatToBf16(v);
    return;
  }
}

namespace {

// Plain loops over restrict-free pointers; GCC and clang vectorise them at
// -O2/-O3 (aliasing is allowed: each element is read before it is written).
void axpbyF32(float *d, float a, const float *x, float b, const float *y,
              size_t n) {
  if (a == 1.0f && b == 1.0f) {
    for (size_t i = 0; i < n; ++i)
      d[i] = x[i] + y[i];
    return;
  }
  for (size_t i = 0; i < n; ++i)
    d[i] = a * x[i] + b * y[i];
}

template <float (*Load)(uint16_t), uint16_t (*Store)(float)>
void axpby16(uint16_t *d, float a, const uint16_t *x, float b,
             const uint16_t *y, size_t n) {
  constexpr size_t kBlock = 512;
  float fx[kBlock], fy[kBlock];
  for (size_t base = 0; base < n; base += kBlock) {
    size_t m = std::min(kBlock, n - base);
    for (size_t i = 0; i < m; ++i) {
      fx[i] = Load(x[base + i]);
      fy[i] = Load(y[base + i]);
    }
    axpbyF32(fx, a, fx, b, fy, m);
    for (size_t i = 0; i < m; ++i)
      d[base + i] = Store(fx[i]);
  }
}

} // namespace

void axpby(void *dst, double a, const void *x, double b, const void *y,
           size_t n, DType t) {
  switch (t) {
  case DType::F32:
    axpbyF32(static_cast<float *>(dst), float(a),
             static_cast<const float *>(x), float(b),
             static_cast<const float *>(y), n);
    return;
  case DType::F16:
  case DType::BF16: {
    // The 16-bit types differ only in their conversions.
    auto *kernel = t == DType::F16 ? axpby16<halfToFloat, floatToHalf>
                                   : axpby16<bf16ToFloat, floatToBf16>;
    kernel(static_cast<uint16_t *>(dst), float(a),
           static_cast<const uint16_t *>(x), float(b),
           static_cast<const uint16_t *>(y), n);
    return;
  }
  }
}

double unitRoundoff(DType t) {
  switch (t) {
  case DType::F32:
    return std::ldexp(1.0, -24);
  case DType::F16:
    return std::ldexp(1.0, -11);
  case DType::BF16:
    return std::ldexp(1.0, -8);
  }
  return 0;
}

void scaleCopy(void *dst, double a, const void *x, size_t n, DType t) {
  if (a == 1.0) {
    if (dst != x && n)
      std::memmove(dst, x, n * dtypeSize(t));
    return;
  }
  // a*x + 0*x: one code path for every type.
  axpby(dst, a, x, 0.0, x, n, t);
}

namespace {

float loadF32(float v) { return v; }
float storeF32(float v) { return v; }

/// One block of a fused linear combination: every source element is read
/// once, the sum stays in registers/L1 (acc), every output element is
/// written once. Per element the order of operations is that of scaleCopy
/// then axpby per term (a*x with a == 1 is exact), so fp32 results are
/// bitwise those of the unfused form.
template <typename T, float (*Load)(T), T (*Store)(float)>
void linCombTyped(T *d, const float *c, const T *const *s, size_t k,
                  size_t n) {
  constexpr size_t kBlock = 1024;
  float acc[kBlock];
  for (size_t base = 0; base < n; base += kBlock) {
    size_t m = std::min(kBlock, n - base);
    const T *s0 = s[0] + base;
    if (c[0] == 1.0f)
      for (size_t i = 0; i < m; ++i)
        acc[i] = Load(s0[i]);
    else
      for (size_t i = 0; i < m; ++i)
        acc[i] = c[0] * Load(s0[i]);
    for (size_t j = 1; j < k; ++j) {
      const T *sj = s[j] + base;
      float cj = c[j];
      if (cj == 1.0f)
        for (size_t i = 0; i < m; ++i)
          acc[i] += Load(sj[i]);
      else
        for (size_t i = 0; i < m; ++i)
          acc[i] += cj * Load(sj[i]);
    }
    T *dd = d + base;
    for (size_t i = 0; i < m; ++i)
      dd[i] = Store(acc[i]);
  }
}

template <typename T, float (*Load)(T), T (*Store)(float)>
void linCombAs(void *dst, llvm::ArrayRef<float> c,
               llvm::ArrayRef<const void *> srcs, size_t n) {
  std::vector<const T *> s(srcs.size());
  for (size_t j = 0; j < srcs.size(); ++j)
    s[j] = static_cast<const T *>(srcs[j]);
  linCombTyped<T, Load, Store>(static_cast<T *>(dst), c.data(), s.data(),
                               s.size(), n);
}

} // namespace

void linComb(void *dst, llvm::ArrayRef<double> coeffs,
             llvm::ArrayRef<const void *> srcs, size_t n, DType t) {
  if (n == 0)
    return;
  size_t bytes = n * dtypeSize(t);
  // A block is read completely before it is written, so dst may equal a
  // source; a source that overlaps dst at another offset would be read
  // after part of it was overwritten: compute into a temporary instead.
  auto *d = static_cast<char *>(dst);
  for (const void *src : srcs) {
    auto *p = static_cast<const char *>(src);
    if (p != d && p < d + bytes && d < p + bytes) {
      std::vector<char> tmp(bytes);
      linComb(tmp.data(), coeffs, srcs, n, t);
      std::memcpy(dst, tmp.data(), bytes);
      return;
    }
  }
  std::vector<float> c(coeffs.begin(), coeffs.end());
  switch (t) {
  case DType::F32:
    linCombAs<float, loadF32, storeF32>(dst, c, srcs, n);
    return;
  case DType::F16:
    linCombAs<uint16_t, halfToFloat, floatToHalf>(dst, c, srcs, n);
    return;
  case DType::BF16:
    linCombAs<uint16_t, bf16ToFloat, floatToBf16>(dst, c, srcs, n);
    return;
  }
}

} // namespace topocc::runtime
