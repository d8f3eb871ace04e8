//===- runtime/cuda/nccl/NcclSession.cpp - NCCL setup and baseline --------===//

#include "runtime/cuda/nccl/NcclSession.h"

#include "runtime/cuda/CudaTransport.h"
#include "runtime/cuda/nccl/NcclTransport.h"
#include "support/Diagnostics.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cstring>

namespace topocc::runtime {

llvm::Expected<int> cudaDeviceCount() {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0)
    return makeUserError(llvm::formatv(
        "no CUDA device (cudaGetDeviceCount: {0}, {1})",
        e == cudaSuccess ? n : 0,
        e == cudaSuccess ? "cudaSuccess" : cudaGetErrorName(e)));
  return n;
}

ncclDataType_t ncclTypeOf(DType t) {
  switch (t) {
  case DType::F16:
    return ncclFloat16;
  case DType::BF16:
    return ncclBfloat16;
  case DType::F32:
    break;
  }
  return ncclFloat32;
}

llvm::Error runNcclCollective(ir::Collective c, const void *sendbuf,
                              void *recvbuf, size_t count, DType t,
                              ncclComm_t comm, cudaStream_t stream) {
  ncclDataType_t nt = ncclTypeOf(t);
  switch (c) {
  case ir::Collective::AllGather:
    return ncclCheck(ncclAllGather(sendbuf, recvbuf, count, nt, comm, stream),
                     "ncclAllGather");
  case ir::Collective::ReduceScatter:
    return ncclCheck(
        ncclReduceScatter(sendbuf, recvbuf, count, nt, ncclSum, comm, stream),
        "ncclReduceScatter");
  default:
    return ncclCheck(
        ncclAllReduce(sendbuf, recvbuf, count, nt, ncclSum, comm, stream),
        "ncclAllReduce");
  }
}

llvm::Expected<std::unique_ptr<NcclSession>>
NcclSession::create(int rank, int world, int localRank,
                    llvm::function_ref<void(void *id, size_t bytes)> shareId) {
  auto devices = cudaDeviceCount();
  if (!devices)
    return devices.takeError();
  std::unique_ptr<NcclSession> s(new NcclSession);
  s->dev = localRank % *devices;
  if (auto err = cudaCheck(cudaSetDevice(s->dev), "cudaSetDevice"))
    return err;
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  // Rank 0 shares its id even when creating it failed, so no rank waits
  // in shareId; the others then fail in ncclCommInitRank.
  llvm::Error idErr = llvm::Error::success();
  if (rank == 0)
    idErr = ncclCheck(ncclGetUniqueId(&id), "ncclGetUniqueId");
  shareId(&id, sizeof(id));
  if (idErr)
    return idErr;
  if (auto err = ncclCheck(ncclCommInitRank(&s->c, world, id, rank),
                           "ncclCommInitRank"))
    return err;
  if (auto err = cudaCheck(
          cudaStreamCreateWithFlags(&s->s, cudaStreamNonBlocking),
          "cudaStreamCreateWithFlags"))
    return err;
  return s;
}

NcclSession::~NcclSession() {
  if (c)
    ncclCommDestroy(c);
  if (s)
    cudaStreamDestroy(s);
}

DeviceBuffer::~DeviceBuffer() {
  if (p)
    cudaFree(p);
}

llvm::Error DeviceBuffer::allocate(size_t bytes) {
  if (p)
    cudaFree(p);
  p = nullptr;
  n = 0;
  bytes = std::max<size_t>(bytes, 1);
  if (auto err = cudaCheck(cudaMalloc(reinterpret_cast<void **>(&p), bytes),
                           llvm::formatv("cudaMalloc of {0} bytes", bytes)))
    return err;
  n = bytes;
  return cudaCheck(cudaMemset(p, 0, bytes), "cudaMemset");
}

} // namespace topocc::runtime
