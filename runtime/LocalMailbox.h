//===- runtime/LocalMailbox.h - Matching for ranks in one process -*- C++ -*-=//
//
// What the in-process transports (LocalTransport: ranks as threads on the
// CPU; LocalCudaTransport: ranks as threads on one GPU) share:
// LocalRendezvous, the fabric base with one lock and condition variable for
// all ranks, the header all-gather and the wait loop; LocalMailbox, the
// queues that match messages by (sender, receiver, message id), FIFO per
// key; and LocalEndpoint, one rank's test/wait/waitAny/allgatherHeader on
// top of its transport's own completion test.
//
// Thread safety: a fabric (a LocalRendezvous) is shared by the threads of
// all its ranks; its members, and the LocalMailboxes of the fabrics derived
// from it, are guarded by its `mu`. A LocalEndpoint (a transport) belongs to
// one rank: calls on it must not overlap, while the transports of different
// ranks are called concurrently from their threads.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_RUNTIME_LOCALMAILBOX_H
#define TOPOCC_RUNTIME_LOCALMAILBOX_H

#include "runtime/Transport.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

namespace topocc::runtime {

/// What the in-process fabrics (LocalFabric, LocalCudaFabric) share: one
/// lock and condition variable for all ranks, the header all-gather and the
/// wait loop. Thread-safe: every member function takes `mu` itself.
class LocalRendezvous {
public:
  explicit LocalRendezvous(int numRanks) : numRanks(numRanks) {}
  int size() const { return numRanks; }

  /// Rank `me`'s part of all-gather number `call` (each rank counts its
  /// calls): every rank's header in rank order, once all have arrived, or
  /// after `timeoutSeconds` (> 0) with the absent ones missing().
  std::vector<RunHeader> allgatherHeader(int64_t call, int me,
                                         const RunHeader &mine,
                                         double timeoutSeconds);

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

/// The key messages are matched by: sender, receiver, message id.
using LocalKey = std::tuple<int, int, int64_t>;

/// Items (message data, posted transfers) waiting to be matched, FIFO per
/// key, like MPI's non-overtaking rule for one (source, tag). Not
/// synchronised: the fabric holding it guards it with its `mu`.
template <typename Item> class LocalMailbox {
public:
  /// Queues `item` behind the others of `key`.
  void push(const LocalKey &key, Item item) {
    queues[key].push_back(std::move(item));
  }
  bool contains(const LocalKey &key) const { return queues.count(key) != 0; }
  /// The oldest item of `key`, or nullptr when there is none.
  Item *oldest(const LocalKey &key) {
    auto it = queues.find(key);
    return it == queues.end() ? nullptr : &it->second.front();
  }
  /// Removes the oldest item of `key`. REQUIRES: contains(key).
  void pop(const LocalKey &key) {
    auto it = queues.find(key);
    it->second.pop_front();
    if (it->second.empty())
      queues.erase(it);
  }
  /// Removes and returns the oldest item of `key`, or std::nullopt.
  std::optional<Item> take(const LocalKey &key) {
    Item *item = oldest(key);
    if (!item)
      return std::nullopt;
    std::optional<Item> taken(std::move(*item));
    pop(key);
    return taken;
  }

private:
  std::map<LocalKey, std::deque<Item>> queues; ///< none of them empty
};

/// One rank of a LocalRendezvous as a Transport (`Base`: Transport or a
/// class derived from it): rank, size, test, wait, waitAny and
/// allgatherHeader, on top of the derived transport's tryComplete. The
/// derived transport posts its requests and wakes the waiting ranks (a
/// notify_all on the fabric's `cv`) when it makes one of theirs complete.
/// One rank's calls must not overlap (see the file comment).
template <typename Base> class LocalEndpoint : public Base {
public:
  int rank() const override { return me; }
  int size() const override { return rendezvous.size(); }
  llvm::Expected<bool> test(RequestId req) override {
    std::lock_guard<std::mutex> lock(rendezvous.mu);
    return tryComplete(req);
  }
  llvm::Error wait(RequestId req) override {
    auto r = waitAny(llvm::ArrayRef<RequestId>(req), 0);
    if (!r)
      return r.takeError();
    return llvm::Error::success();
  }
  llvm::Expected<std::optional<size_t>>
  waitAny(llvm::ArrayRef<RequestId> reqs, double timeoutSeconds) override {
    return rendezvous.waitFor(
        timeoutSeconds,
        [&](bool &again) -> llvm::Expected<std::optional<size_t>> {
          for (size_t i = 0; i < reqs.size(); ++i) {
            auto done = tryComplete(reqs[i]);
            if (!done)
              return done.takeError();
            if (*done)
              return std::optional<size_t>(i);
            again |= pollAgain(reqs[i]);
          }
          return std::optional<size_t>();
        });
  }
  llvm::Expected<std::vector<RunHeader>>
  allgatherHeader(const RunHeader &mine, double timeoutSeconds) override {
    return rendezvous.allgatherHeader(gatherCalls++, me, mine, timeoutSeconds);
  }

protected:
  /// Rank `rank` of `fabric`; `baseArgs` go to Base's constructor.
  template <typename... BaseArgs>
  LocalEndpoint(LocalRendezvous &fabric, int rank, BaseArgs &&...baseArgs)
      : Base(std::forward<BaseArgs>(baseArgs)...), rendezvous(fabric),
        me(rank) {}

  /// REQUIRES: the fabric's `mu` held. True when `id` completed (and was
  /// released).
  virtual llvm::Expected<bool> tryComplete(RequestId id) = 0;
  /// REQUIRES: the fabric's `mu` held, `id` pending (tryComplete returned
  /// false). True when waitAny must poll again at once instead of waiting
  /// for a notification.
  virtual bool pollAgain(RequestId /*id*/) const { return false; }

  LocalRendezvous &rendezvous;
  const int me;

private:
  int64_t gatherCalls = 0;
};

} // namespace topocc::runtime

#endif // TOPOCC_RUNTIME_LOCALMAILBOX_H
