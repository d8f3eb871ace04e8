//===- runtime/cuda/LocalCudaTransport.h - Every rank on one GPU -*- C++ -*-===//
//
// Ranks are threads of one process sharing one GPU (and a LocalCudaFabric);
// each rank has its own stream. A transfer is a device-to-device copy on the
// receiver's stream, ordered after the data was produced (an event recorded
// on the sender's stream at isend) and before the sender may reuse its
// buffer (the sender's stream waits for the copy when the send completes).
// A request completes on the host when it is matched, the GPU work stays
// stream ordered. With roundBased = true it takes the plan round by round
// like NcclTransport, so the NCCL ordering and the kernels are tested with
// one device. The matching and the waiting are runtime/LocalMailbox.h's.
//
// Thread safety: one LocalCudaFabric is shared by the threads of all ranks
// (its state is guarded by its mutex); a LocalCudaTransport is one rank's
// and is called from one thread at a time (its stream and workspaces are
// its own). Ranks call their transports concurrently.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_RUNTIME_CUDA_LOCALCUDATRANSPORT_H
#define TOPOCC_RUNTIME_CUDA_LOCALCUDATRANSPORT_H

#include "runtime/LocalMailbox.h"
#include "runtime/cuda/CudaTransport.h"

#include <map>
#include <memory>
#include <vector>

namespace topocc::runtime {

class LocalCudaFabric : public LocalRendezvous {
public:
  explicit LocalCudaFabric(int numRanks)
      : LocalRendezvous(numRanks), streams(numRanks, nullptr) {}

private:
  friend class LocalCudaTransport;
  struct Transfer {
    const void *src = nullptr;
    void *dst = nullptr;
    size_t srcBytes = 0, dstBytes = 0;
    cudaEvent_t ready = nullptr; ///< data produced (sender's stream)
    cudaEvent_t done = nullptr;  ///< copy finished (receiver's stream)
    bool matched = false;
    bool sizeMismatch = false;
  };
  using Queues = LocalMailbox<std::shared_ptr<Transfer>>;
  std::vector<cudaStream_t> streams;
  /// Unmatched sends and receives.
  Queues sends, recvs;
};

class LocalCudaTransport final : public LocalEndpoint<CudaTransport> {
public:
  /// Creates this rank's stream on the current device.
  LocalCudaTransport(LocalCudaFabric &fabric, int rank, bool roundBased = true);
  ~LocalCudaTransport() override;
  bool roundBased() const override { return rounds; }
  llvm::Expected<RequestId> isend(const void *buf, size_t bytes, int peer,
                                  int64_t msg) override;
  llvm::Expected<RequestId> irecv(void *buf, size_t bytes, int peer,
                                  int64_t msg) override;

private:
  struct Request {
    bool isSend = false;
    int peer = 0;
    int64_t msg = 0;
    std::shared_ptr<LocalCudaFabric::Transfer> x;
  };
  /// REQUIRES: f.mu held. The oldest transfer the other side posted for
  /// `key` in `theirs` (matched = true), else a new one queued in `mine`
  /// for the other side to find (matched = false). isend and irecv are this
  /// with the queues swapped.
  std::shared_ptr<LocalCudaFabric::Transfer>
  matchOrQueue(LocalCudaFabric::Queues &theirs, LocalCudaFabric::Queues &mine,
               const LocalKey &key, bool &matched);
  /// REQUIRES: f.mu held. Starts the copy of a matched transfer on
  /// `receiver`'s stream, then registers the request.
  llvm::Expected<RequestId>
  post(std::shared_ptr<LocalCudaFabric::Transfer> x, bool matched,
       int receiver, bool isSend, int peer, int64_t msg);
  /// REQUIRES: f.mu held. Enqueues the copy of a matched transfer.
  llvm::Error startCopy(LocalCudaFabric::Transfer &x, int receiver);
  llvm::Expected<bool> tryComplete(RequestId id) override;

  LocalCudaFabric &f;
  bool rounds;
  RequestId nextId = 0;
  std::map<RequestId, Request> requests;
};

} // namespace topocc::runtime

#endif // TOPOCC_RUNTIME_CUDA_LOCALCUDATRANSPORT_H
