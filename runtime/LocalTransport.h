//===- runtime/LocalTransport.h - Ranks as threads of one process -*- C++ -*-=//
//
// An in-process transport: every rank is a thread sharing one LocalFabric.
// Sends are buffered (copied at isend, complete at once); receives complete
// when the matching (sender, receiver, message) arrives. With a seed, the
// fabric delays each receive's completion by a pseudo-random number of
// polls so that tests see many completion orders. For tests and examples.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_RUNTIME_LOCALTRANSPORT_H
#define TOPOCC_RUNTIME_LOCALTRANSPORT_H

#include "runtime/Transport.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

namespace topocc::runtime {

/// What the in-process fabrics (LocalFabric, LocalCudaFabric) share: one
/// lock and condition variable for all ranks, the header all-gather and the
/// wait loop.
class LocalRendezvous {
public:
  explicit LocalRendezvous(int numRanks) : numRanks(numRanks) {}
  int size() const { return numRanks; }

  /// Rank `me`'s part of all-gather number `call` (each rank counts its
  /// calls): every rank's header in rank order, once all have arrived.
  std::vector<RunHeader> allgatherHeader(int64_t call, int me,
                                         const RunHeader &mine);

  /// Calls `poll(again)` with `mu` held until it returns an index, waiting
  /// for a notification between calls (or calling again at once when it
  /// set `again`); std::nullopt when `timeoutSeconds` (> 0) passed first.
  /// `poll` returns llvm::Expected<std::optional<size_t>>.
  template <typename Poll>
  llvm::Expected<std::optional<size_t>> waitFor(double timeoutSeconds,
                                                Poll poll) {
    using Clock = std::chrono::steady_clock;
    auto deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(timeoutSeconds));
    std::unique_lock<std::mutex> lock(mu);
    while (true) {
      bool again = false;
      llvm::Expected<std::optional<size_t>> done = poll(again);
      if (!done || done->has_value())
        return done;
      if (again)
        continue;
      if (timeoutSeconds > 0) {
        if (cv.wait_until(lock, deadline) == std::cv_status::timeout &&
            Clock::now() >= deadline)
          return std::optional<size_t>();
      } else {
        cv.wait(lock);
      }
    }
  }

  std::mutex mu;
  std::condition_variable cv;

private:
  int numRanks;
  std::map<int64_t, std::vector<RunHeader>> gathers; ///< per call number
  std::map<int64_t, int> gatherReads;
};

class LocalFabric : public LocalRendezvous {
public:
  explicit LocalFabric(int numRanks, uint64_t delaySeed = 0)
      : LocalRendezvous(numRanks), seed(delaySeed) {}

private:
  friend class LocalTransport;
  using Key = std::tuple<int, int, int64_t>; ///< sender, receiver, msg
  uint64_t seed;
  /// FIFO per key, like MPI's non-overtaking rule for one (source, tag).
  std::map<Key, std::deque<std::vector<char>>> mailbox;
};

class LocalTransport final : public Transport {
public:
  LocalTransport(LocalFabric &fabric, int rank) : f(fabric), me(rank) {}
  int rank() const override { return me; }
  int size() const override { return f.size(); }
  llvm::Expected<RequestId> isend(const void *buf, size_t bytes, int peer,
                                  int64_t msg) override;
  llvm::Expected<RequestId> irecv(void *buf, size_t bytes, int peer,
                                  int64_t msg) override;
  llvm::Expected<bool> test(RequestId req) override;
  llvm::Error wait(RequestId req) override;
  llvm::Expected<std::optional<size_t>>
  waitAny(llvm::ArrayRef<RequestId> reqs, double timeoutSeconds) override;
  llvm::Expected<std::vector<RunHeader>>
  allgatherHeader(const RunHeader &mine) override;

private:
  struct Request {
    bool isSend = false;
    void *buf = nullptr;
    size_t bytes = 0;
    int peer = 0;
    int64_t msg = 0;
    int pollsLeft = 0;
  };
  /// REQUIRES: f.mu held. True when `id` completed (and was released).
  llvm::Expected<bool> tryComplete(RequestId id);

  LocalFabric &f;
  int me;
  RequestId nextId = 0;
  std::map<RequestId, Request> requests;
  int64_t gatherCalls = 0;
  uint64_t rng = 0;
};

} // namespace topocc::runtime

#endif // TOPOCC_RUNTIME_LOCALTRANSPORT_H
