//===- runtime/cuda/nccl/NcclTransport.h - The runtime over NCCL -*- C++ -*-===//
//
// Transport over NCCL point-to-point on one communicator and stream, as
// docs/Runtime.md, "Stock NCCL point-to-point rules", describes: the
// interpreter runs the plan round by round (roundBased), each round's
// ncclRecv/ncclSend calls go into one ncclGroupStart/ncclGroupEnd (each peer's
// in message-id order on both ends), and the reduce/lincomb kernels run on the
// same stream between the groups. A transfer counts as done once issued:
// everything later on the stream sees it. Built only when CMake finds CUDA
// and NCCL (library topocc_runtime_nccl).
//
// Thread safety: not synchronised: one NcclTransport per rank (process) and
// communicator, called from one thread at a time.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_RUNTIME_CUDA_NCCL_NCCLTRANSPORT_H
#define TOPOCC_RUNTIME_CUDA_NCCL_NCCLTRANSPORT_H

#include "runtime/cuda/CudaTransport.h"

#include <nccl.h>

namespace topocc::runtime {

/// An llvm::Error for a failed NCCL call, or success.
llvm::Error ncclCheck(ncclResult_t r, const llvm::Twine &what);

class NcclTransport final : public CudaTransport {
public:
  /// Runs on `comm` (not owned) and `stream` (not owned), both on the
  /// current device. REQUIRES: every rank of `comm` runs the same plans in
  /// the same order.
  NcclTransport(ncclComm_t comm, cudaStream_t stream);
  int rank() const override { return me; }
  int size() const override { return n; }
  bool roundBased() const override { return true; }
  llvm::Error groupStart() override;
  llvm::Error groupEnd() override;
  llvm::Expected<RequestId> isend(const void *buf, size_t bytes, int peer,
                                  int64_t msg) override;
  llvm::Expected<RequestId> irecv(void *buf, size_t bytes, int peer,
                                  int64_t msg) override;
  /// Issued transfers are stream ordered: always complete.
  llvm::Expected<bool> test(RequestId req) override { return true; }
  llvm::Error wait(RequestId req) override { return llvm::Error::success(); }
  llvm::Expected<std::optional<size_t>>
  waitAny(llvm::ArrayRef<RequestId> reqs, double timeoutSeconds) override {
    return std::optional<size_t>(0);
  }
  /// ncclAllGather of the headers through a small device buffer, then the
  /// stream polled until it finishes or `timeoutSeconds` (> 0) pass (an
  /// error: NCCL cannot say which rank is missing).
  llvm::Expected<std::vector<RunHeader>>
  allgatherHeader(const RunHeader &mine, double timeoutSeconds) override;

private:
  ncclComm_t comm;
  int me = 0, n = 1;
  int groupDepth = 0;
  RequestId nextId = 0;
};

} // namespace topocc::runtime

#endif // TOPOCC_RUNTIME_CUDA_NCCL_NCCLTRANSPORT_H
