//===- runtime/cuda/bench/GpuKernelBench.cpp - Kernel bandwidth benchmark -===//
//
// topocc-gpu-bench: bandwidth of the runtime's CUDA kernels (reduce, axpby,
// lincomb of 4 sources, CERAR encode 4 -> 6 and decode 4 -> 4) as a
// fraction of the device's memory bandwidth: the theoretical peak from the
// memory clock and bus width (2 * clock * width / 8, the figure NVIDIA
// quotes) and, for reference, a measured cudaMemcpy device-to-device. Bytes
// moved = (sources + outputs) * n * element size; time = CUDA events over
// -n iterations after -w warm-ups. Target (issue 7): 0.8 of the peak.
//
//   topocc-gpu-bench [-s 256M] [-n 20] [-w 5] [-d float|half|bfloat16|all]
//                    [--target 0.8] [--require]
//
// Exit: 0, or 1 with --require when a kernel is below the target; 77 when
// there is no CUDA device (a message says so).
//
//===----------------------------------------------------------------------===//

#include "runtime/DType.h"
#include "runtime/cuda/CudaKernels.h"
#include "support/ByteSize.h"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

using namespace topocc::runtime;
namespace k = topocc::runtime::cuda;

namespace {

#define OK(call)                                                              \
  do {                                                                        \
    cudaError_t e_ = (call);                                                  \
    if (e_ != cudaSuccess) {                                                  \
      std::fprintf(stderr, "topocc-gpu-bench: %s: %s\n", #call,              \
                   cudaGetErrorString(e_));                                   \
      std::exit(2);                                                           \
    }                                                                         \
  } while (0)

/// Mean seconds per call of `f` over `iters` after `warm` warm-ups.
double timeIt(const std::function<cudaError_t()> &f, int iters, int warm) {
  for (int i = 0; i < warm; ++i)
    OK(f());
  cudaEvent_t a, b;
  OK(cudaEventCreate(&a));
  OK(cudaEventCreate(&b));
  OK(cudaEventRecord(a, nullptr));
  for (int i = 0; i < iters; ++i)
    OK(f());
  OK(cudaEventRecord(b, nullptr));
  OK(cudaEventSynchronize(b));
  float ms = 0;
  OK(cudaEventElapsedTime(&ms, a, b));
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms / 1e3 / iters;
}

} // namespace

int main(int argc, char **argv) {
  size_t bytes = 256u << 20;
  int iters = 20, warm = 5;
  double target = 0.8;
  bool require = false;
  std::string types = "all";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() { return i + 1 < argc ? argv[++i] : (char *)"0"; };
    if (a == "-s") {
      const char *text = next();
      std::optional<uint64_t> b = topocc::readByteCount(text);
      if (!b) {
        std::fprintf(stderr,
                     "topocc-gpu-bench: invalid -s '%s' (expected a whole "
                     "byte count such as 256M; docs/CLI.md, Sizes)\n",
                     text);
        return 2;
      }
      bytes = *b;
    } else if (a == "-n")
      iters = std::atoi(next());
    else if (a == "-w")
      warm = std::atoi(next());
    else if (a == "-d")
      types = next();
    else if (a == "--target")
      target = std::atof(next());
    else if (a == "--require")
      require = true;
    else {
      std::fprintf(stderr, "usage: topocc-gpu-bench [-s 256M] [-n 20] [-w 5] "
                           "[-d float|half|bfloat16|all] [--target 0.8] "
                           "[--require]\n");
      return 2;
    }
  }
  int devices = 0;
  cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0) {
    std::printf("topocc-gpu-bench: no CUDA device (%s); nothing measured\n",
                e == cudaSuccess ? "0 devices" : cudaGetErrorName(e));
    return 77;
  }
  cudaDeviceProp prop;
  OK(cudaGetDeviceProperties(&prop, 0));
  int clockKHz = 0, busBits = 0;
  OK(cudaDeviceGetAttribute(&clockKHz, cudaDevAttrMemoryClockRate, 0));
  OK(cudaDeviceGetAttribute(&busBits, cudaDevAttrGlobalMemoryBusWidth, 0));
  double peak = 2.0 * clockKHz * 1e3 * busBits / 8;

  // Buffers: 6 inputs and 6 outputs of `bytes` each (encode reads 4,
  // writes 6).
  const int kBufs = 12;
  std::vector<void *> buf(kBufs);
  for (void *&p : buf) {
    OK(cudaMalloc(&p, bytes));
    OK(cudaMemset(p, 0, bytes));
  }
  double memcpyBw =
      2.0 * bytes / timeIt([&] {
        return cudaMemcpyAsync(buf[6], buf[0], bytes, cudaMemcpyDeviceToDevice,
                               nullptr);
      }, iters, warm);

  std::printf("# topocc-gpu-bench: %s, %d SMs, memory clock %d MHz x %d bits: "
              "peak %.0f GB/s; cudaMemcpy D2D %.0f GB/s (%.2f of peak)\n",
              prop.name, prop.multiProcessorCount, clockKHz / 1000, busBits,
              peak / 1e9, memcpyBw / 1e9, memcpyBw / peak);
  std::printf("# buffers %zu MiB each, %d iterations, %d warm-ups, target "
              "%.2f of peak\n", bytes >> 20, iters, warm, target);
  std::printf("# %-16s %-9s %8s %10s %9s %8s %9s %s\n", "kernel", "type",
              "in/out", "time(us)", "GB/s", "xpeak", "xmemcpy", "");
  bool below = false;
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    std::string name = t == DType::F32 ? "float" : t == DType::F16 ? "half"
                                                                   : "bfloat16";
    if (types != "all" && types != name && types != dtypeName(t).str())
      continue;
    size_t n = bytes / dtypeSize(t);
    k::KernelType kt = static_cast<k::KernelType>(int(t));
    const void *in[6] = {buf[0], buf[1], buf[2], buf[3], buf[4], buf[5]};
    void *out[6] = {buf[6], buf[7], buf[8], buf[9], buf[10], buf[11]};
    std::vector<float> gen = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0,
                              0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 0.5f, -1};
    std::vector<float> dec(16, 0.25f);
    std::vector<float> lc = {1, -1, 0.5f, 2};
    struct Row {
      const char *name;
      int ins, outs;
      std::function<cudaError_t()> f;
    } rows[] = {
        {"reduce (sum)", 2, 1,
         [&] { return k::reduceSum(out[0], in, 2, n, kt, nullptr); }},
        {"reduce in place", 2, 1,
         [&] {
           const void *s[2] = {out[0], in[1]};
           return k::reduceSum(out[0], s, 2, n, kt, nullptr);
         }},
        {"axpby", 2, 1,
         [&] { return k::axpby(out[0], 0.5f, in[0], 2.f, in[1], n, kt,
                               nullptr); }},
        {"lincomb 4 src", 4, 1,
         [&] { return k::linCombMulti(out, 1, in, 4, lc.data(), n, kt,
                                      nullptr); }},
        {"cerar encode 4>6", 4, 6,
         [&] { return k::cerarEncode(out, 6, in, 4, gen.data(), n, kt,
                                     nullptr); }},
        {"cerar decode 4>4", 4, 4,
         [&] { return k::cerarDecode(out, 4, in, 4, dec.data(), n, kt,
                                     nullptr); }},
    };
    for (Row &r : rows) {
      double s = timeIt(r.f, iters, warm);
      double moved = double(r.ins + r.outs) * bytes;
      double bw = moved / s;
      bool ok = bw >= target * peak;
      below |= !ok;
      std::printf("  %-16s %-9s %4d/%-3d %10.1f %9.0f %8.2f %9.2f %s\n",
                  r.name, name.c_str(), r.ins, r.outs, s * 1e6, bw / 1e9,
                  bw / peak, bw / memcpyBw, ok ? "ok" : "BELOW TARGET");
    }
  }
  for (void *p : buf)
    cudaFree(p);
  if (below)
    std::printf("# some kernels are below %.2f of peak\n", target);
  return require && below ? 1 : 0;
}
