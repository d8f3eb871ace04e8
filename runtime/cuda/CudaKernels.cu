//===- runtime/cuda/CudaKernels.cu - Reduce and lincomb kernels -----------===//
//
// One kernel template per element type: each thread handles 16-byte vectors
// (4 fp32 or 8 fp16/bf16 elements) in a grid-stride loop, loads every
// source's vector first (memory-level parallelism), accumulates in fp32
// registers for every output and stores 16 bytes per output; the tail (and
// every element when a pointer is not 16-byte aligned) goes element by
// element. The grid is one full wave of resident blocks.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaKernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace topocc::runtime::cuda {
namespace {

struct Params {
  void *dst[kMaxOutputs];
  const void *src[kMaxSources];
  float c[kMaxOutputs][kMaxSources];
  int nd;
  int ns;
  int accumulate; ///< start from dst's values instead of 0
};

__device__ __forceinline__ float toF(float x) { return x; }
__device__ __forceinline__ float toF(__half x) { return __half2float(x); }
__device__ __forceinline__ float toF(__nv_bfloat16 x) {
  return __bfloat162float(x);
}
template <typename T> __device__ __forceinline__ T fromF(float x);
template <> __device__ __forceinline__ float fromF<float>(float x) {
  return x;
}
template <> __device__ __forceinline__ __half fromF<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 fromF<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

constexpr int kThreads = 512;

template <typename T>
__global__ void __launch_bounds__(kThreads)
    linCombKernel(Params p, size_t n, size_t nVec) {
  constexpr int V = 16 / sizeof(T);
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  const size_t tid = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (size_t v = tid; v < nVec; v += stride) {
    uint4 raw[kMaxSources];
#pragma unroll
    for (int k = 0; k < kMaxSources; ++k)
      if (k < p.ns)
        raw[k] = reinterpret_cast<const uint4 *>(p.src[k])[v];
    float acc[kMaxOutputs][V];
#pragma unroll
    for (int o = 0; o < kMaxOutputs; ++o) {
      if (o < p.nd && p.accumulate) {
        uint4 d = reinterpret_cast<const uint4 *>(p.dst[o])[v];
        const T *de = reinterpret_cast<const T *>(&d);
#pragma unroll
        for (int e = 0; e < V; ++e)
          acc[o][e] = toF(de[e]);
      } else {
#pragma unroll
        for (int e = 0; e < V; ++e)
          acc[o][e] = 0.f;
      }
    }
#pragma unroll
    for (int k = 0; k < kMaxSources; ++k) {
      if (k >= p.ns)
        break;
      const T *se = reinterpret_cast<const T *>(&raw[k]);
#pragma unroll
      for (int o = 0; o < kMaxOutputs; ++o)
        if (o < p.nd) {
          float c = p.c[o][k];
#pragma unroll
          for (int e = 0; e < V; ++e)
            acc[o][e] = fmaf(c, toF(se[e]), acc[o][e]);
        }
    }
#pragma unroll
    for (int o = 0; o < kMaxOutputs; ++o)
      if (o < p.nd) {
        uint4 out;
        T *oe = reinterpret_cast<T *>(&out);
#pragma unroll
        for (int e = 0; e < V; ++e)
          oe[e] = fromF<T>(acc[o][e]);
        reinterpret_cast<uint4 *>(p.dst[o])[v] = out;
      }
  }
  for (size_t i = nVec * V + tid; i < n; i += stride) {
    float x[kMaxSources];
#pragma unroll
    for (int k = 0; k < kMaxSources; ++k)
      x[k] = k < p.ns ? toF(static_cast<const T *>(p.src[k])[i]) : 0.f;
#pragma unroll
    for (int o = 0; o < kMaxOutputs; ++o)
      if (o < p.nd) {
        T *d = static_cast<T *>(p.dst[o]);
        float acc = p.accumulate ? toF(d[i]) : 0.f;
#pragma unroll
        for (int k = 0; k < kMaxSources; ++k)
          if (k < p.ns)
            acc = fmaf(p.c[o][k], x[k], acc);
        d[i] = fromF<T>(acc);
      }
  }
}

int blocksPerWave() {
  static int cached[64] = {};
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64)
    return 128;
  if (cached[dev] == 0) {
    int sms = 0, perSm = 0;
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) !=
            cudaSuccess ||
        cudaDeviceGetAttribute(&perSm, cudaDevAttrMaxThreadsPerMultiProcessor,
                               dev) != cudaSuccess)
      return 128;
    cached[dev] = sms * (perSm / kThreads > 0 ? perSm / kThreads : 1);
  }
  return cached[dev];
}

bool aligned16(const void *p) {
  return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}

cudaError_t launch(const Params &p, size_t n, KernelType t,
                   cudaStream_t stream) {
  if (n == 0)
    return cudaSuccess;
  size_t esz = t == KernelType::F32 ? 4 : 2;
  size_t perVec = 16 / esz;
  bool vec = true;
  for (int o = 0; o < p.nd; ++o)
    vec &= aligned16(p.dst[o]);
  for (int k = 0; k < p.ns; ++k)
    vec &= aligned16(p.src[k]);
  size_t nVec = vec ? n / perVec : 0;
  size_t work = nVec + (n - nVec * perVec);
  size_t blocks = (work + kThreads - 1) / kThreads;
  size_t wave = size_t(blocksPerWave());
  if (blocks > wave)
    blocks = wave;
  switch (t) {
  case KernelType::F32:
    linCombKernel<float><<<unsigned(blocks), kThreads, 0, stream>>>(p, n, nVec);
    break;
  case KernelType::F16:
    linCombKernel<__half><<<unsigned(blocks), kThreads, 0, stream>>>(p, n, nVec);
    break;
  case KernelType::BF16:
    linCombKernel<__nv_bfloat16>
        <<<unsigned(blocks), kThreads, 0, stream>>>(p, n, nVec);
    break;
  default:
    return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

} // namespace

cudaError_t linCombMulti(void *const *dsts, int numDsts,
                         const void *const *srcs, int numSrcs,
                         const float *coeffs, size_t n, KernelType t,
                         cudaStream_t stream) {
  if (numDsts < 1 || numDsts > kMaxOutputs || numSrcs < 1 ||
      numSrcs > kMaxSources)
    return cudaErrorInvalidValue;
  Params p = {};
  p.nd = numDsts;
  p.ns = numSrcs;
  for (int o = 0; o < numDsts; ++o) {
    p.dst[o] = dsts[o];
    for (int k = 0; k < numSrcs; ++k)
      p.c[o][k] = coeffs[o * numSrcs + k];
  }
  for (int k = 0; k < numSrcs; ++k)
    p.src[k] = srcs[k];
  return launch(p, n, t, stream);
}

cudaError_t axpby(void *dst, float a, const void *x, float b, const void *y,
                  size_t n, KernelType t, cudaStream_t stream) {
  const void *srcs[2] = {x, y};
  float c[2] = {a, b};
  return linCombMulti(&dst, 1, srcs, 2, c, n, t, stream);
}

cudaError_t reduceSum(void *dst, const void *const *srcs, int numSrcs,
                      size_t n, KernelType t, cudaStream_t stream) {
  float c[kMaxSources];
  for (int k = 0; k < kMaxSources; ++k)
    c[k] = 1.f;
  return linCombMulti(&dst, 1, srcs, numSrcs, c, n, t, stream);
}

cudaError_t scaleCopy(void *dst, float a, const void *x, size_t n,
                      KernelType t, cudaStream_t stream) {
  if (a == 1.f)
    return cudaMemcpyAsync(dst, x, n * (t == KernelType::F32 ? 4 : 2),
                           cudaMemcpyDeviceToDevice, stream);
  return linCombMulti(&dst, 1, &x, 1, &a, n, t, stream);
}

cudaError_t applyMatrix(void *const *out, int numOut, const void *const *in,
                        int numIn, const float *m, size_t n, KernelType t,
                        cudaStream_t stream) {
  if (numOut < 1 || numIn < 1)
    return cudaErrorInvalidValue;
  for (int o0 = 0; o0 < numOut; o0 += kMaxOutputs) {
    int no = numOut - o0 < kMaxOutputs ? numOut - o0 : kMaxOutputs;
    for (int k0 = 0; k0 < numIn; k0 += kMaxSources) {
      int nk = numIn - k0 < kMaxSources ? numIn - k0 : kMaxSources;
      Params p = {};
      p.nd = no;
      p.ns = nk;
      p.accumulate = k0 > 0;
      for (int o = 0; o < no; ++o) {
        p.dst[o] = out[o0 + o];
        for (int k = 0; k < nk; ++k)
          p.c[o][k] = m[size_t(o0 + o) * numIn + k0 + k];
      }
      for (int k = 0; k < nk; ++k)
        p.src[k] = in[k0 + k];
      if (cudaError_t e = launch(p, n, t, stream); e != cudaSuccess)
        return e;
    }
  }
  return cudaSuccess;
}

} // namespace topocc::runtime::cuda
