//===- runtime/cuda/nccl/NcclTransport.cpp - The runtime over NCCL --------===//

#include "runtime/cuda/nccl/NcclTransport.h"

#include "support/Diagnostics.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace topocc::runtime {

llvm::Error ncclCheck(ncclResult_t r, const llvm::Twine &what) {
  if (r == ncclSuccess)
    return llvm::Error::success();
  return makeUserError(llvm::formatv("NCCL error in {0}: {1}", what.str(),
                                     ncclGetErrorString(r)));
}

NcclTransport::NcclTransport(ncclComm_t comm, cudaStream_t stream)
    : CudaTransport(stream), comm(comm) {
  // Errors surface on the first call that uses the communicator.
  if (ncclCommUserRank(comm, &me) != ncclSuccess)
    me = 0;
  if (ncclCommCount(comm, &n) != ncclSuccess)
    n = 1;
}

llvm::Error NcclTransport::groupStart() {
  ++groupDepth;
  return ncclCheck(ncclGroupStart(), "ncclGroupStart");
}

llvm::Error NcclTransport::groupEnd() {
  --groupDepth;
  return ncclCheck(ncclGroupEnd(), "ncclGroupEnd");
}

llvm::Expected<RequestId> NcclTransport::isend(const void *buf, size_t bytes,
                                               int peer, int64_t msg) {
  if (groupDepth == 0)
    return makeInternalError("NcclTransport: a send outside a group (the "
                             "interpreter must run NCCL plans by rounds)");
  if (auto err = ncclCheck(ncclSend(buf, bytes, ncclUint8, peer, comm, strm),
                           llvm::formatv("ncclSend of message {0} to rank {1}",
                                         msg, peer)))
    return err;
  return nextId++;
}

llvm::Expected<RequestId> NcclTransport::irecv(void *buf, size_t bytes,
                                               int peer, int64_t msg) {
  if (groupDepth == 0)
    return makeInternalError("NcclTransport: a receive outside a group (the "
                             "interpreter must run NCCL plans by rounds)");
  if (auto err = ncclCheck(
          ncclRecv(buf, bytes, ncclUint8, peer, comm, strm),
          llvm::formatv("ncclRecv of message {0} from rank {1}", msg, peer)))
    return err;
  return nextId++;
}

llvm::Expected<std::vector<RunHeader>>
NcclTransport::allgatherHeader(const RunHeader &mine, double timeoutSeconds) {
  size_t one = sizeof(RunHeader);
  auto w = workspace(2, one * size_t(n));
  if (!w)
    return w.takeError();
  char *dev = static_cast<char *>(*w);
  if (auto err = cudaCheck(cudaMemcpyAsync(dev + one * size_t(me), &mine, one,
                                           cudaMemcpyHostToDevice, strm),
                           "cudaMemcpyAsync"))
    return err;
  if (auto err = ncclCheck(ncclAllGather(dev + one * size_t(me), dev, one,
                                         ncclUint8, comm, strm),
                           "ncclAllGather of the run headers"))
    return err;
  // Poll rather than synchronize: a rank that never calls Plan::run must
  // not hang this one without limit. The copy back comes after: a copy to
  // pageable host memory would block until the all-gather ends, and on a
  // timeout nothing may still be writing into this function's buffer.
  using Clock = std::chrono::steady_clock;
  auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(
                                         std::max(timeoutSeconds, 0.0)));
  for (;;) {
    cudaError_t q = cudaStreamQuery(strm);
    if (q == cudaSuccess)
      break;
    if (q != cudaErrorNotReady)
      return cudaCheck(q, "cudaStreamQuery after the run-header all-gather");
    if (timeoutSeconds > 0 && Clock::now() >= deadline)
      return makeUserError(llvm::formatv(
          "rank {0}: the NCCL all-gather of the run headers did not finish "
          "within {1} s: some rank did not call Plan::run (it failed before, "
          "died, or runs with checkPeers off); the communicator is unusable "
          "now (ncclCommAbort it)",
          me, timeoutSeconds));
    std::this_thread::yield();
  }
  std::vector<RunHeader> all(n);
  if (auto err = cudaCheck(cudaMemcpyAsync(all.data(), dev, one * size_t(n),
                                           cudaMemcpyDeviceToHost, strm),
                           "cudaMemcpyAsync"))
    return err;
  if (auto err = cudaCheck(cudaStreamSynchronize(strm), "cudaStreamSynchronize"))
    return err;
  return all;
}

} // namespace topocc::runtime
