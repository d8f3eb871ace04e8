//===- runtime/cuda/nccl/NcclTransport.cpp - The runtime over NCCL --------===//

#include "runtime/cuda/nccl/NcclTransport.h"

#include "support/Diagnostics.h"

#include "llvm/Support/FormatVariadic.h"

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
NcclTransport::allgatherHeader(const RunHeader &mine) {
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
