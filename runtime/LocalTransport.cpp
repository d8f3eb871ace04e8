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
    f.mailbox.push({me, peer, msg},
                   std::vector<char>(static_cast<const char *>(buf),
                                     static_cast<const char *>(buf) + bytes));
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
  LocalKey key{r.peer, me, r.msg};
  std::vector<char> *data = f.mailbox.oldest(key);
  if (!data)
    return false;
  if (r.pollsLeft > 0) {
    --r.pollsLeft;
    return false;
  }
  if (data->size() != r.bytes)
    return makeUserError(llvm::formatv(
        "rank {0}: message {1} from rank {2} has {3} bytes, expected {4}", me,
        r.msg, r.peer, data->size(), r.bytes));
  if (r.bytes)
    std::memcpy(r.buf, data->data(), r.bytes);
  f.mailbox.pop(key);
  requests.erase(it);
  return true;
}

bool LocalTransport::pollAgain(RequestId id) const {
  auto it = requests.find(id);
  return it != requests.end() && it->second.pollsLeft >= 0 &&
         f.mailbox.contains({it->second.peer, me, it->second.msg});
}

} // namespace topocc::runtime
