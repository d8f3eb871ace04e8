//===- runtime/mpi/MpiTransport.h - The runtime over OpenMPI ----*- C++ -*-===//
//
// Transport over MPI point-to-point on one communicator: MPI_Isend/MPI_Irecv
// of bytes, tag = message id mod (MPI_TAG_UB + 1), MPI_Test/MPI_Waitany for
// completion (polling with MPI_Testany when a timeout is set), and for the
// run header, point-to-point messages to and from rank 0 on a duplicate of
// MPI_COMM_WORLD, polled against the timeout. mpi.h stays out of this header. Built only with
// TOPOCC_WITH_MPI and OpenMPI found (library topocc_runtime_mpi).
//
// Thread safety: none. One MpiTransport per process, called from the thread
// that initialised MPI (MPI_Init: MPI_THREAD_SINGLE), one call at a time.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_RUNTIME_MPI_MPITRANSPORT_H
#define TOPOCC_RUNTIME_MPI_MPITRANSPORT_H

#include "runtime/Transport.h"

#include <map>
#include <memory>

namespace topocc::runtime {

class MpiTransport final : public Transport {
public:
  /// Uses MPI_COMM_WORLD. Collective (duplicates it for the run headers):
  /// every rank constructs one. REQUIRES: MPI is initialised.
  MpiTransport();
  ~MpiTransport() override;
  int rank() const override { return me; }
  int size() const override { return n; }
  llvm::Expected<RequestId> isend(const void *buf, size_t bytes, int peer,
                                  int64_t msg) override;
  llvm::Expected<RequestId> irecv(void *buf, size_t bytes, int peer,
                                  int64_t msg) override;
  llvm::Expected<bool> test(RequestId req) override;
  llvm::Error wait(RequestId req) override;
  llvm::Expected<std::optional<size_t>>
  waitAny(llvm::ArrayRef<RequestId> reqs, double timeoutSeconds) override;
  llvm::Expected<std::vector<RunHeader>>
  allgatherHeader(const RunHeader &mine, double timeoutSeconds) override;

  /// The tag used for message `msg`.
  int tagOf(int64_t msg) const { return static_cast<int>(msg % tagModulus); }

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
  int me = 0, n = 1;
  int64_t tagModulus = 32768;
};

} // namespace topocc::runtime

#endif // TOPOCC_RUNTIME_MPI_MPITRANSPORT_H
