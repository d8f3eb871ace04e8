//===- runtime/cuda/nccl/NcclSession.h - NCCL setup and baseline -*- C++ -*-===//
//
// What the NCCL command-line tools share (topocc-nccl-run, topocc-bench
// --transport nccl / --baseline nccl): finding a CUDA device, one NCCL
// communicator and stream per process (NcclSession), device buffers, and
// NCCL's own collective on a plan's buffers (the baseline a plan is timed
// against). Built with topocc_runtime_nccl, when CMake finds CUDA and NCCL.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_RUNTIME_CUDA_NCCL_NCCLSESSION_H
#define TOPOCC_RUNTIME_CUDA_NCCL_NCCLSESSION_H

#include "ir/Schedule.h"
#include "runtime/DType.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <memory>

namespace topocc::runtime {

/// The number of CUDA devices, or an error when there is none:
/// "no CUDA device (cudaGetDeviceCount: 0, cudaErrorNoDevice)".
llvm::Expected<int> cudaDeviceCount();

/// ncclFloat32, ncclFloat16 or ncclBfloat16.
ncclDataType_t ncclTypeOf(DType t);

/// NCCL's own collective for `c` on a plan's buffers (the Plan::run
/// conventions, which are NCCL's, in-place aliasing included):
/// ncclAllReduce, ncclAllGather or ncclReduceScatter (sum) of `count`
/// elements per rank, enqueued on `stream`.
llvm::Error runNcclCollective(ir::Collective c, const void *sendbuf,
                              void *recvbuf, size_t count, DType t,
                              ncclComm_t comm, cudaStream_t stream);

/// One process's NCCL communicator and stream, on device
/// localRank % (device count).
class NcclSession {
public:
  /// Selects the device, creates rank 0's unique id, has `shareId` copy
  /// it to every rank (every rank calls it; e.g. MPI_Bcast from rank 0),
  /// then ncclCommInitRank and a non-blocking stream. REQUIRES: every rank
  /// has a device (check cudaDeviceCount on all ranks first; a rank that
  /// fails here leaves the others waiting in shareId or ncclCommInitRank).
  static llvm::Expected<std::unique_ptr<NcclSession>>
  create(int rank, int world, int localRank,
         llvm::function_ref<void(void *id, size_t bytes)> shareId);
  ~NcclSession();
  NcclSession(const NcclSession &) = delete;
  NcclSession &operator=(const NcclSession &) = delete;

  ncclComm_t comm() const { return c; }
  cudaStream_t stream() const { return s; }
  int device() const { return dev; }

private:
  NcclSession() = default;
  ncclComm_t c = nullptr;
  cudaStream_t s = nullptr;
  int dev = 0;
};

/// A cudaMalloc'ed buffer, freed on destruction.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  /// Frees the old buffer and allocates `bytes` (at least 1) zeroed bytes.
  llvm::Error allocate(size_t bytes);
  char *data() const { return p; }
  size_t size() const { return n; }

private:
  char *p = nullptr;
  size_t n = 0;
};

} // namespace topocc::runtime

#endif // TOPOCC_RUNTIME_CUDA_NCCL_NCCLSESSION_H
