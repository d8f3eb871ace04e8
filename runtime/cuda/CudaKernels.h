//===- runtime/cuda/CudaKernels.h - Reduce and lincomb kernels --*- C++ -*-===//
//
// The CUDA kernels of the GPU runtime, callable from host C++: one
// vectorised (16-byte loads and stores when every pointer is 16-byte
// aligned), grid-stride kernel computes up to kMaxOutputs linear
// combinations of up to kMaxSources sources in one pass, in fp32 registers
// for fp32, fp16 and bf16 data (rounded to nearest even once per output
// and pass; applyMatrix needs several passes beyond 4 outputs/8 sources).
// Reduce (sum), axpby, scaled copy, lincomb and CERAR encode/decode are all
// that kernel. No llvm or CUDA-only headers here: nvcc compiles the .cu.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_RUNTIME_CUDA_CUDAKERNELS_H
#define TOPOCC_RUNTIME_CUDA_CUDAKERNELS_H

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace topocc::runtime::cuda {

/// Same values as runtime::DType (checked in CudaTransport.cpp).
enum class KernelType : int32_t { F32 = 0, F16 = 1, BF16 = 2 };

constexpr int kMaxSources = 8;
constexpr int kMaxOutputs = 4;

/// dsts[o][i] = sum_k coeffs[o*numSrcs + k] * srcs[k][i] for i < n, on
/// `stream`. A destination may alias a source at the same element index
/// (each element is read before it is written by the same thread); other
/// overlaps are the caller's problem. REQUIRES: 1 <= numDsts <= kMaxOutputs,
/// 1 <= numSrcs <= kMaxSources. Returns the launch error, if any.
cudaError_t linCombMulti(void *const *dsts, int numDsts,
                         const void *const *srcs, int numSrcs,
                         const float *coeffs, size_t n, KernelType t,
                         cudaStream_t stream);

/// dst = a*x + b*y.
cudaError_t axpby(void *dst, float a, const void *x, float b, const void *y,
                  size_t n, KernelType t, cudaStream_t stream);
/// dst = sum of srcs (numSrcs <= kMaxSources).
cudaError_t reduceSum(void *dst, const void *const *srcs, int numSrcs,
                      size_t n, KernelType t, cudaStream_t stream);
/// dst = a*x.
cudaError_t scaleCopy(void *dst, float a, const void *x, size_t n,
                      KernelType t, cudaStream_t stream);

/// CERAR encode and decode are matrix applications:
/// out[o] = sum_k m[o*numIn + k] * in[k] (row-major numOut x numIn), done in
/// passes of kMaxOutputs rows and kMaxSources columns (a pass after the
/// first accumulates into `out`). REQUIRES: `out` does not overlap `in`.
cudaError_t applyMatrix(void *const *out, int numOut, const void *const *in,
                        int numIn, const float *m, size_t n, KernelType t,
                        cudaStream_t stream);
inline cudaError_t cerarEncode(void *const *coded, int numCoded,
                               const void *const *data, int numData,
                               const float *generator, size_t n, KernelType t,
                               cudaStream_t stream) {
  return applyMatrix(coded, numCoded, data, numData, generator, n, t, stream);
}
inline cudaError_t cerarDecode(void *const *data, int numData,
                               const void *const *coded, int numCoded,
                               const float *decoder, size_t n, KernelType t,
                               cudaStream_t stream) {
  return applyMatrix(data, numData, coded, numCoded, decoder, n, t, stream);
}

} // namespace topocc::runtime::cuda

#endif // TOPOCC_RUNTIME_CUDA_CUDAKERNELS_H
