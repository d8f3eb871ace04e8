//===- tests/gpu/GpuTest.h - Skip and check helpers for GPU tests -*- C++ -*-=//
//
// GPU tests are plain executables registered with ctest (label gpu,
// SKIP_RETURN_CODE 77): without a CUDA device they print why and exit 77,
// which ctest reports as "Skipped". CHECK-style failures are counted and the
// test exits 1 when any failed.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_TESTS_GPU_GPUTEST_H
#define TOPOCC_TESTS_GPU_GPUTEST_H

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>

namespace topocc::gputest {

constexpr int kSkipCode = 77;

/// True (after printing the reason) when no CUDA device can be used.
inline bool noDevice(const char *test) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    std::printf("%s: SKIPPED: no CUDA device (cudaGetDeviceCount: %d, %s)\n",
                test, n, e == cudaSuccess ? "cudaSuccess" : cudaGetErrorName(e));
    return true;
  }
  cudaDeviceProp p;
  if (cudaGetDeviceProperties(&p, 0) == cudaSuccess)
    std::printf("%s: device 0: %s, %d SMs, %.1f GiB\n", test, p.name,
                p.multiProcessorCount, p.totalGlobalMem / 1073741824.0);
  return false;
}

inline int failures = 0;

#define GPU_CHECK(cond, ...)                                                  \
  do {                                                                        \
    if (!(cond)) {                                                            \
      ++::topocc::gputest::failures;                                          \
      std::printf("FAILED %s:%d: %s: ", __FILE__, __LINE__, #cond);           \
      std::printf(__VA_ARGS__);                                               \
      std::printf("\n");                                                      \
    }                                                                         \
  } while (0)

#define CUDA_OK(call)                                                         \
  do {                                                                        \
    cudaError_t e_ = (call);                                                  \
    if (e_ != cudaSuccess) {                                                  \
      std::printf("FATAL %s:%d: %s: %s\n", __FILE__, __LINE__, #call,         \
                  cudaGetErrorString(e_));                                    \
      std::exit(1);                                                           \
    }                                                                         \
  } while (0)

} // namespace topocc::gputest

#endif // TOPOCC_TESTS_GPU_GPUTEST_H
