//===- runtime/LocalTransport.cpp - Ranks as threads of one process -------===//

#include "runtime/LocalTransport.h"

#include "support/Diagnostics.h"

#include "llvm/Support/FormatVariadic.h"

#include <cstring>

namespace topocc::runtime {

llvm::Expected<RequestId> LocalTransport::isend(const void *buf, size_t bytes,
                                                int peer, int64_t msg) {
  if (peer < 0 || peer >= f.size())
    return makeUserError(llvm::formatv("rank {0}: send to rank {1} of {2}", me,
                                       peer, f.size()));
  {
    std::lock_guard<std::mutex> lock(f.mu);
    f.mailbox[LocalFabric::Key{me, peer, msg}].emplace_back(
        static_cast<const char *>(buf), static_cast<const char *>(buf) + bytes);
  }
  f.cv.notify_all();
  RequestId id = nextId++;
  requests[id] = Request{true, nullptr, bytes, peer, msg, 0};
  return id;
}

llvm::Expected<RequestId> LocalTransport::irecv(void *buf, size_t bytes,
                                                int peer, int64_t msg) {
  if (peer < 0 || peer >= f.size())
    return makeUserError(llvm::formatv("rank {0}: receive from rank {1} of {2}",
                                       me, peer, f.size()));
  int polls = 0;
  if (f.seed) {
    // splitmix64 per transport, seeded by the fabric seed and the rank.
    if (!rng)
      rng = f.seed * 0x9e3779b97f4a7c15ULL + uint64_t(me) + 1;
    uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    polls = int((z ^ (z >> 31)) % 4);
  }
  RequestId id = nextId++;
  requests[id] = Request{false, buf, bytes, peer, msg, polls};
  return id;
}

llvm::Expected<bool> LocalTransport::tryComplete(RequestId id) {
  auto it = requests.find(id);
  if (it == requests.end())
    return makeInternalError(llvm::formatv("rank {0}: unknown request {1}",
                                           me, id));
  Request &r = it->second;
  if (r.isSend) {
    requests.erase(it);
    return true;
  }
  auto m = f.mailbox.find(LocalFabric::Key{r.peer, me, r.msg});
  if (m == f.mailbox.end())
    return false;
  if (r.pollsLeft > 0) {
    --r.pollsLeft;
    return false;
  }
  std::vector<char> &data = m->second.front();
  if (data.size() != r.bytes)
    return makeUserError(llvm::formatv(
        "rank {0}: message {1} from rank {2} has {3} bytes, expected {4}", me,
        r.msg, r.peer, data.size(), r.bytes));
  if (r.bytes)
    std::memcpy(r.buf, data.data(), r.bytes);
  m->second.pop_front();
  if (m->second.empty())
    f.mailbox.erase(m);
  requests.erase(it);
  return true;
}

llvm::Expected<bool> LocalTransport::test(RequestId req) {
  std::lock_guard<std::mutex> lock(f.mu);
  return tryComplete(req);
}

llvm::Error LocalTransport::wait(RequestId req) {
  auto r = waitAny(llvm::ArrayRef<RequestId>(req), 0);
  if (!r)
    return r.takeError();
  return llvm::Error::success();
}

llvm::Expected<std::optional<size_t>>
LocalTransport::waitAny(llvm::ArrayRef<RequestId> reqs, double timeoutSeconds) {
  return f.waitFor(timeoutSeconds, [&](bool &again)
                                       -> llvm::Expected<std::optional<size_t>> {
    for (size_t i = 0; i < reqs.size(); ++i) {
      auto done = tryComplete(reqs[i]);
      if (!done)
        return done.takeError();
      if (*done)
        return std::optional<size_t>(i);
      // A message that is there and only waits out its artificial delay:
      // poll again without waiting for a notification.
      auto it = requests.find(reqs[i]);
      again |= it != requests.end() && it->second.pollsLeft >= 0 &&
               f.mailbox.count(
                   LocalFabric::Key{it->second.peer, me, it->second.msg});
    }
    return std::optional<size_t>();
  });
}

llvm::Expected<std::vector<RunHeader>>
LocalTransport::allgatherHeader(const RunHeader &mine) {
  return f.allgatherHeader(gatherCalls++, me, mine);
}

std::vector<RunHeader> LocalRendezvous::allgatherHeader(int64_t call, int me,
                                                        const RunHeader &mine) {
  std::unique_lock<std::mutex> lock(mu);
  std::vector<RunHeader> &slot = gathers[call];
  if (slot.empty())
    slot.resize(size());
  slot[me] = mine;
  slot[me].rank = me + 1; // 0 marks "not arrived" until all are there
  cv.notify_all();
  cv.wait(lock, [&] {
    for (const RunHeader &h : gathers[call])
      if (h.rank == 0)
        return false;
    return true;
  });
  std::vector<RunHeader> all = gathers[call];
  for (RunHeader &h : all)
    --h.rank;
  if (++gatherReads[call] == size()) {
    gathers.erase(call);
    gatherReads.erase(call);
  }
  return all;
}

} // namespace topocc::runtime
