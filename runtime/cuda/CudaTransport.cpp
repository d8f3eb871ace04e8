//===- runtime/cuda/CudaTransport.cpp - Device-memory transport base ------===//

#include "runtime/cuda/CudaTransport.h"

#include "runtime/cuda/CudaKernels.h"
#include "support/Diagnostics.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <vector>

namespace topocc::runtime {

static_assert(int(DType::F32) == int(cuda::KernelType::F32) &&
                  int(DType::F16) == int(cuda::KernelType::F16) &&
                  int(DType::BF16) == int(cuda::KernelType::BF16),
              "KernelType mirrors DType");

llvm::Error cudaCheck(cudaError_t e, const llvm::Twine &what) {
  if (e == cudaSuccess)
    return llvm::Error::success();
  return makeUserError(llvm::formatv("CUDA error in {0}: {1} ({2})",
                                     what.str(), cudaGetErrorString(e),
                                     cudaGetErrorName(e)));
}

CudaTransport::~CudaTransport() {
  // Pending work may still use the workspaces.
  cudaStreamSynchronize(strm);
  for (void *p : ws)
    if (p)
      cudaFree(p);
  if (ownsStream)
    cudaStreamDestroy(strm);
}

llvm::Expected<void *> CudaTransport::workspace(int slot, size_t bytes) {
  if (slot < 0 || slot > 4)
    return makeInternalError(llvm::formatv("no workspace slot {0}", slot));
  if (wsBytes[slot] >= bytes && ws[slot])
    return ws[slot];
  // Earlier work on the stream may still use the old allocation.
  if (auto err = cudaCheck(cudaStreamSynchronize(strm), "cudaStreamSynchronize"))
    return err;
  if (ws[slot])
    cudaFree(ws[slot]);
  ws[slot] = nullptr;
  wsBytes[slot] = 0;
  size_t want = std::max<size_t>(bytes, 256);
  if (auto err = cudaCheck(cudaMalloc(&ws[slot], want),
                           llvm::formatv("cudaMalloc of {0} bytes", want)))
    return err;
  wsBytes[slot] = want;
  return ws[slot];
}

static cuda::KernelType kt(DType t) {
  return static_cast<cuda::KernelType>(static_cast<int32_t>(t));
}

llvm::Error CudaTransport::axpby(void *dst, double a, const void *x, double b,
                                 const void *y, size_t n, DType t) {
  return cudaCheck(cuda::axpby(dst, float(a), x, float(b), y, n, kt(t), strm),
                   "the axpby kernel");
}

llvm::Error CudaTransport::scaleCopy(void *dst, double a, const void *x,
                                     size_t n, DType t) {
  if (dst == x && a == 1.0)
    return llvm::Error::success();
  return cudaCheck(cuda::scaleCopy(dst, float(a), x, n, kt(t), strm),
                   "the scaled copy kernel");
}

llvm::Error CudaTransport::linComb(void *dst, llvm::ArrayRef<double> coeffs,
                                   llvm::ArrayRef<const void *> srcs, size_t n,
                                   DType t) {
  size_t bytes = n * dtypeSize(t);
  const char *d = static_cast<const char *>(dst);
  // A source that overlaps dst at another offset would be overwritten
  // while it is read: go through a temporary then.
  bool overlap = false;
  for (const void *sp : srcs) {
    const char *s = static_cast<const char *>(sp);
    overlap |= s != d && s < d + bytes && d < s + bytes;
  }
  void *out = dst;
  if (overlap || srcs.size() > size_t(cuda::kMaxSources)) {
    auto w = workspace(2, bytes);
    if (!w)
      return w.takeError();
    out = *w;
  }
  std::vector<float> c(coeffs.begin(), coeffs.end());
  std::vector<const void *> s(srcs.begin(), srcs.end());
  if (auto err = cudaCheck(cuda::applyMatrix(&out, 1, s.data(), int(s.size()),
                                             c.data(), n, kt(t), strm),
                           "the lincomb kernel"))
    return err;
  if (out != dst)
    return cudaCheck(cudaMemcpyAsync(dst, out, bytes, cudaMemcpyDeviceToDevice,
                                     strm),
                     "cudaMemcpyAsync");
  return llvm::Error::success();
}

llvm::Error CudaTransport::zero(void *dst, size_t bytes) {
  return cudaCheck(cudaMemsetAsync(dst, 0, bytes, strm), "cudaMemsetAsync");
}

llvm::Error CudaTransport::finish() {
  return cudaCheck(cudaStreamSynchronize(strm), "cudaStreamSynchronize");
}

} // namespace topocc::runtime
