//===- runtime/LocalTransport.h - Ranks as threads of one process -*- C++ -*-=//
//
// An in-process transport: every rank is a thread sharing one LocalFabric.
// Sends are buffered (copied at isend, complete at once); receives complete
// when the matching (sender, receiver, message) arrives. With a seed, the
// fabric delays each receive's completion by a pseudo-random number of
// polls so that tests see many completion orders. For tests and examples.
// The matching and the waiting are LocalMailbox.h's.
//
// Thread safety: one LocalFabric is shared by the threads of all ranks (its
// state is guarded by its mutex); a LocalTransport is one rank's and is
// called from one thread at a time. Ranks call their transports
// concurrently.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_RUNTIME_LOCALTRANSPORT_H
#define TOPOCC_RUNTIME_LOCALTRANSPORT_H

#include "runtime/LocalMailbox.h"
#include "runtime/Transport.h"

#include <map>
#include <vector>

namespace topocc::runtime {

class LocalFabric : public LocalRendezvous {
public:
  explicit LocalFabric(int numRanks, uint64_t delaySeed = 0)
      : LocalRendezvous(numRanks), seed(delaySeed) {}

private:
  friend class LocalTransport;
  uint64_t seed;
  /// The data of sent messages not yet received.
  LocalMailbox<std::vector<char>> mailbox;
};

class LocalTransport final : public LocalEndpoint<Transport> {
public:
  LocalTransport(LocalFabric &fabric, int rank)
      : LocalEndpoint(fabric, rank), f(fabric) {}
  llvm::Expected<RequestId> isend(const void *buf, size_t bytes, int peer,
                                  int64_t msg) override;
  llvm::Expected<RequestId> irecv(void *buf, size_t bytes, int peer,
                                  int64_t msg) override;

private:
  struct Request {
    bool isSend = false;
    void *buf = nullptr;
    size_t bytes = 0;
    int peer = 0;
    int64_t msg = 0;
    int pollsLeft = 0;
  };
  llvm::Expected<bool> tryComplete(RequestId id) override;
  /// A receive whose message is there and only waits out its artificial
  /// delay.
  bool pollAgain(RequestId id) const override;

  LocalFabric &f;
  RequestId nextId = 0;
  std::map<RequestId, Request> requests;
  uint64_t rng = 0;
};

} // namespace topocc::runtime

#endif // TOPOCC_RUNTIME_LOCALTRANSPORT_H
