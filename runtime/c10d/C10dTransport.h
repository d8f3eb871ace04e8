//===- runtime/c10d/C10dTransport.h - The runtime over torch.distributed -*- C++ -*-===//
//
// Transport over a PyTorch c10d process group (the object behind
// torch.distributed): every message is a point-to-point send or receive of
// a uint8 tensor viewing the interpreter's bytes (no copy), tag = message
// id mod 2^31; the run header is one all-gather. Built when libtorch is
// found (Debian: libtorch-dev), as library topocc_runtime_c10d; the Python
// module topocc._torch (python/TopoccTorch.cpp) runs plans with it for
// topocc.torch (docs/PyTorch.md).
//
// Round based: c10d's Work objects of gloo's send and receive do not report
// completion until waited on, and a wait that times out closes every
// connection of the group, so nothing can poll them. The interpreter
// therefore issues each round's transfers together (roundBased(), as for
// NCCL, docs/Runtime.md "Rounds") and then waits for each; every rank has
// posted its transfers of a round before it waits, so the waits complete in
// any order. Groups whose backend has no CPU send and receive (NCCL, which
// takes CUDA tensors) are refused by create().
//
// Thread safety: one C10dTransport is one rank's endpoint, used by one
// thread at a time, like the process group's own point-to-point calls. A
// timeout or transport error leaves the group unusable (gloo closes its
// pairs), as it does for torch.distributed itself.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_RUNTIME_C10D_C10DTRANSPORT_H
#define TOPOCC_RUNTIME_C10D_C10DTRANSPORT_H

#include "runtime/Transport.h"

#include <c10/util/intrusive_ptr.h>

#include <map>
#include <memory>
#include <string>

namespace c10d {
class ProcessGroup;
}

namespace topocc::runtime {

class C10dTransport final : public Transport {
public:
  /// A transport on `group`. User error when the group's backend cannot
  /// move CPU tensors point to point (the message names the backend).
  static llvm::Expected<std::unique_ptr<C10dTransport>>
  create(c10::intrusive_ptr<c10d::ProcessGroup> group);
  ~C10dTransport() override;

  int rank() const override { return me; }
  int size() const override { return n; }
  bool roundBased() const override { return true; }
  llvm::Expected<RequestId> isend(const void *buf, size_t bytes, int peer,
                                  int64_t msg) override;
  llvm::Expected<RequestId> irecv(void *buf, size_t bytes, int peer,
                                  int64_t msg) override;
  /// Whether the backend already reports the request complete (gloo's do
  /// only once waited on; the interpreter waits, as the transport is round
  /// based).
  llvm::Expected<bool> test(RequestId req) override;
  llvm::Error wait(RequestId req) override;
  /// Waits for the first of `reqs` (a request the backend reports complete
  /// first, if any): in a round, every request completes once all ranks
  /// posted theirs, so the order of the waits does not matter.
  llvm::Expected<std::optional<size_t>>
  waitAny(llvm::ArrayRef<RequestId> reqs, double timeoutSeconds) override;
  /// One all-gather of the headers. c10d does not say which rank failed to
  /// join: a timeout is an error naming none.
  llvm::Expected<std::vector<RunHeader>>
  allgatherHeader(const RunHeader &mine, double timeoutSeconds) override;

  /// The tag used for message `msg`.
  static int tagOf(int64_t msg) { return static_cast<int>(msg & 0x7fffffff); }
  /// The group's backend name ("gloo", "mpi", ...).
  const std::string &backend() const { return backendName; }

private:
  struct Impl;
  explicit C10dTransport(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
  std::string backendName;
  int me = 0, n = 1;
};

} // namespace topocc::runtime

#endif // TOPOCC_RUNTIME_C10D_C10DTRANSPORT_H
