//===- tests/gpu/GpuKernelsTest.cpp - CUDA kernels vs the CPU reference ---===//
//
// reduce, axpby, scaled copy, lincomb (2 to 11 sources, so also the
// multi-pass path) and CERAR-style encode/decode (matrix application, more
// outputs than one pass holds) for fp32, fp16 and bf16, on counts that leave
// a tail (1, 7, 1001, 65539) and on pointers that are not 16-byte aligned
// (the element-wise path). Inputs are small integers and coefficients are
// dyadic, so fp32 results are exact; fp16/bf16 are compared with the
// rounding the CPU reference applies.
//
//===----------------------------------------------------------------------===//

#include "tests/gpu/GpuTest.h"

#include "runtime/DType.h"
#include "runtime/cuda/CudaKernels.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

using namespace topocc::runtime;
using namespace topocc::gputest;
namespace k = topocc::runtime::cuda;

namespace {

float value(int buf, size_t i) { return float(int((buf * 5 + i * 7) % 13) - 6); }

/// A device buffer of n elements (plus one element of slack) filled with
/// value(buf, i); `shift` elements past a 256-byte aligned start.
struct DevBuf {
  char *base = nullptr;
  char *p = nullptr;
  DevBuf(size_t n, DType t, int buf, int shift) {
    size_t esz = dtypeSize(t);
    CUDA_OK(cudaMalloc(reinterpret_cast<void **>(&base), (n + 1) * esz + 256));
    p = base + shift * esz;
    std::vector<char> h(n * esz);
    for (size_t i = 0; i < n; ++i)
      storeElement(h.data(), i, t, value(buf, i));
    CUDA_OK(cudaMemcpy(p, h.data(), n * esz, cudaMemcpyHostToDevice));
  }
  ~DevBuf() { cudaFree(base); }
  std::vector<float> read(size_t n, DType t) const {
    std::vector<char> h(n * dtypeSize(t));
    CUDA_OK(cudaMemcpy(h.data(), p, h.size(), cudaMemcpyDeviceToHost));
    std::vector<float> out(n);
    for (size_t i = 0; i < n; ++i)
      out[i] = loadElement(h.data(), i, t);
    return out;
  }
};

float roundTo(float v, DType t) {
  uint16_t h;
  switch (t) {
  case DType::F16:
    h = floatToHalf(v);
    return halfToFloat(h);
  case DType::BF16:
    h = floatToBf16(v);
    return bf16ToFloat(h);
  default:
    return v;
  }
}

k::KernelType kt(DType t) { return static_cast<k::KernelType>(int(t)); }

/// outs[o] = sum_k m[o][k] * ins[k] checked against the host.
void checkMatrix(const char *what, int numOut, int numIn,
                 const std::vector<float> &m, size_t n, DType t, int shift,
                 bool useLinComb) {
  std::vector<std::unique_ptr<DevBuf>> ins, outs;
  std::vector<const void *> inPtrs;
  std::vector<void *> outPtrs;
  for (int i = 0; i < numIn; ++i) {
    ins.push_back(std::make_unique<DevBuf>(n, t, i, shift));
    inPtrs.push_back(ins.back()->p);
  }
  for (int o = 0; o < numOut; ++o) {
    outs.push_back(std::make_unique<DevBuf>(n, t, 100 + o, shift));
    outPtrs.push_back(outs.back()->p);
  }
  cudaError_t e =
      useLinComb ? k::linCombMulti(outPtrs.data(), numOut, inPtrs.data(),
                                   numIn, m.data(), n, kt(t), nullptr)
                 : k::applyMatrix(outPtrs.data(), numOut, inPtrs.data(),
                                  numIn, m.data(), n, kt(t), nullptr);
  GPU_CHECK(e == cudaSuccess, "%s: launch: %s", what, cudaGetErrorString(e));
  CUDA_OK(cudaDeviceSynchronize());
  int bad = 0;
  for (int o = 0; o < numOut; ++o) {
    std::vector<float> got = outs[o]->read(n, t);
    for (size_t i = 0; i < n && bad < 5; ++i) {
      double want = 0;
      for (int q = 0; q < numIn; ++q)
        want += double(m[size_t(o) * numIn + q]) *
                roundTo(value(q, i), t); // inputs are exact in every type
      // More than kMaxSources inputs round once per pass.
      float w = roundTo(float(want), t);
      float tol = t == DType::F32 ? 0.f
                                  : (numIn > k::kMaxSources ? 0.02f : 0.f) *
                                        std::max(1.f, std::fabs(w));
      if (std::fabs(got[i] - w) > tol) {
        ++bad;
        GPU_CHECK(false, "%s %s n=%zu shift=%d out %d [%zu]: got %g want %g",
                  what, dtypeName(t).data(), n, shift, o, i, got[i], w);
      }
    }
  }
}

void checkAxpby(size_t n, DType t, int shift, float a, float b, bool alias) {
  DevBuf x(n, t, 1, shift), y(n, t, 2, shift), d(n, t, 3, shift);
  void *dst = alias ? static_cast<void *>(x.p) : d.p;
  cudaError_t e = a == 1 && b == 1
                      ? [&] {
                          const void *s[2] = {x.p, y.p};
                          return k::reduceSum(dst, s, 2, n, kt(t), nullptr);
                        }()
                      : k::axpby(dst, a, x.p, b, y.p, n, kt(t), nullptr);
  GPU_CHECK(e == cudaSuccess, "axpby launch: %s", cudaGetErrorString(e));
  CUDA_OK(cudaDeviceSynchronize());
  std::vector<float> got = (alias ? x : d).read(n, t);
  // The CPU kernel of the runtime is the reference.
  size_t esz = dtypeSize(t);
  std::vector<char> hx(n * esz), hy(n * esz), hd(n * esz);
  for (size_t i = 0; i < n; ++i) {
    storeElement(hx.data(), i, t, value(1, i));
    storeElement(hy.data(), i, t, value(2, i));
  }
  axpby(hd.data(), a, hx.data(), b, hy.data(), n, t);
  int bad = 0;
  for (size_t i = 0; i < n && bad < 5; ++i) {
    float w = loadElement(hd.data(), i, t);
    if (got[i] != w) {
      ++bad;
      GPU_CHECK(false, "axpby(%g,%g) %s n=%zu shift=%d alias=%d [%zu]: got %g "
                "want %g", a, b, dtypeName(t).data(), n, shift, alias, i,
                got[i], w);
    }
  }
}

void checkScaleCopy(size_t n, DType t, int shift, float a) {
  DevBuf x(n, t, 4, shift), d(n, t, 5, shift);
  cudaError_t e = k::scaleCopy(d.p, a, x.p, n, kt(t), nullptr);
  GPU_CHECK(e == cudaSuccess, "scaleCopy launch: %s", cudaGetErrorString(e));
  CUDA_OK(cudaDeviceSynchronize());
  std::vector<float> got = d.read(n, t);
  for (size_t i = 0; i < n; ++i)
    if (got[i] != roundTo(a * roundTo(value(4, i), t), t)) {
      GPU_CHECK(false, "scaleCopy(%g) %s n=%zu [%zu]: got %g", a,
                dtypeName(t).data(), n, i, got[i]);
      break;
    }
}

} // namespace

int main() {
  if (noDevice("gpu-kernels"))
    return kSkipCode;
  int cases = 0;
  for (DType t : {DType::F32, DType::F16, DType::BF16})
    for (size_t n : {size_t(0), size_t(1), size_t(7), size_t(1001),
                     size_t(65539)})
      for (int shift : {0, 1}) {
        checkAxpby(n, t, shift, 1, 1, false);
        checkAxpby(n, t, shift, 1, 1, true);
        checkAxpby(n, t, shift, 0.5f, -2, false);
        checkScaleCopy(n, t, shift, 1);
        checkScaleCopy(n, t, shift, -0.25f);
        // lincomb: one output, 3 / 8 sources in one pass, 11 in two.
        for (int ns : {3, 8, 11}) {
          std::vector<float> c(ns);
          for (int q = 0; q < ns; ++q)
            c[q] = float((q % 5) - 2) * 0.5f;
          checkMatrix(ns > k::kMaxSources ? "lincomb (2 passes)" : "lincomb",
                      1, ns, c, n, t, shift, ns <= k::kMaxSources);
        }
        // CERAR-style code: 4 data blocks, 6 coded (systematic + 2 parity),
        // encode in two output passes; decode 4 data blocks back from
        // coded blocks 0, 1, 4, 5 (the inverse of the chosen rows).
        std::vector<float> gen = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0,
                                  0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 0.5f, -1};
        checkMatrix("cerar encode", 6, 4, gen, n, t, shift, false);
        cases += 11;
      }
  // Encode then decode: the round trip gives the data back exactly (fp32).
  {
    size_t n = 4099;
    DType t = DType::F32;
    std::vector<std::unique_ptr<DevBuf>> data, coded, back;
    std::vector<const void *> dp;
    std::vector<void *> cp, bp;
    for (int i = 0; i < 4; ++i) {
      data.push_back(std::make_unique<DevBuf>(n, t, i, 0));
      dp.push_back(data.back()->p);
      back.push_back(std::make_unique<DevBuf>(n, t, 50 + i, 0));
      bp.push_back(back.back()->p);
    }
    for (int i = 0; i < 6; ++i) {
      coded.push_back(std::make_unique<DevBuf>(n, t, 20 + i, 0));
      cp.push_back(coded.back()->p);
    }
    std::vector<float> gen = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0,
                              0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 0.5f, -1};
    CUDA_OK(k::cerarEncode(cp.data(), 6, dp.data(), 4, gen.data(), n,
                           k::KernelType::F32, nullptr));
    // From coded 0, 1 (= d0, d1), 4 (= d0+d1+d2+d3), 5 (= d0+2d1+d2/2-d3):
    // d2 = (2/3)(c4 + c5 - 2c0 - 3c1), d3 = c4 - c0 - c1 - d2.
    const void *use[4] = {cp[0], cp[1], cp[4], cp[5]};
    float f = 2.f / 3.f;
    std::vector<float> dec = {1, 0, 0, 0,
                              0, 1, 0, 0,
                              -2 * f, -3 * f, f, f,
                              -1 + 2 * f, -1 + 3 * f, 1 - f, -f};
    CUDA_OK(k::cerarDecode(bp.data(), 4, use, 4, dec.data(), n,
                           k::KernelType::F32, nullptr));
    CUDA_OK(cudaDeviceSynchronize());
    for (int i = 0; i < 4; ++i) {
      std::vector<float> got = back[i]->read(n, t);
      for (size_t j = 0; j < n; ++j)
        if (std::fabs(got[j] - value(i, j)) > 1e-5f) {
          GPU_CHECK(false, "decode block %d [%zu]: got %g want %g", i, j,
                    got[j], value(i, j));
          break;
        }
    }
    ++cases;
  }
  std::printf("gpu-kernels: %d case groups, %d failures\n", cases, failures);
  return failures ? 1 : 0;
}
