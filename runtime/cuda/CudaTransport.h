//===- runtime/cuda/CudaTransport.h - Device-memory transport base -*- C++ -*-//
//
// What LocalCudaTransport and NcclTransport share: buffers are device
// memory, arithmetic runs as CudaKernels on the transport's stream, the
// interpreter's staging and scratch are device workspaces owned here, and
// finish() synchronises the stream. Derived classes do the transfers.
//
// Thread safety: not synchronised: calls on one CudaTransport (its stream,
// its workspaces) must not overlap; transports of different ranks, each on
// its own stream, may be used from different threads.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_RUNTIME_CUDA_CUDATRANSPORT_H
#define TOPOCC_RUNTIME_CUDA_CUDATRANSPORT_H

#include "runtime/Transport.h"

#include <cuda_runtime_api.h>

#include "llvm/ADT/Twine.h"

namespace topocc::runtime {

/// An llvm::Error for a failed CUDA call, or success.
llvm::Error cudaCheck(cudaError_t e, const llvm::Twine &what);

class CudaTransport : public Transport {
public:
  /// Uses `stream` on the current device (0 = legacy default stream); with
  /// `ownsStream` the destructor destroys it.
  explicit CudaTransport(cudaStream_t stream, bool ownsStream = false)
      : strm(stream), ownsStream(ownsStream) {}
  ~CudaTransport() override;
  cudaStream_t stream() const { return strm; }

  bool deviceMemory() const override { return true; }
  llvm::Expected<void *> workspace(int slot, size_t bytes) override;
  llvm::Error axpby(void *dst, double a, const void *x, double b,
                    const void *y, size_t n, DType t) override;
  llvm::Error scaleCopy(void *dst, double a, const void *x, size_t n,
                        DType t) override;
  llvm::Error linComb(void *dst, llvm::ArrayRef<double> coeffs,
                      llvm::ArrayRef<const void *> srcs, size_t n,
                      DType t) override;
  llvm::Error zero(void *dst, size_t bytes) override;
  llvm::Error finish() override;

protected:
  cudaStream_t strm;
  bool ownsStream;

private:
  /// staging, scratch, lincomb, padded input, padded output
  void *ws[5] = {nullptr, nullptr, nullptr, nullptr, nullptr};
  size_t wsBytes[5] = {0, 0, 0, 0, 0};
};

} // namespace topocc::runtime

#endif // TOPOCC_RUNTIME_CUDA_CUDATRANSPORT_H
