//===- runtime/cuda/LocalCudaTransport.cpp - Every rank on one GPU --------===//

#include "runtime/cuda/LocalCudaTransport.h"

#include "support/Diagnostics.h"

#include "llvm/Support/FormatVariadic.h"


namespace topocc::runtime {

namespace {
cudaStream_t newStream() {
  cudaStream_t s = nullptr;
  // On failure the stream stays null (the legacy default stream) and the
  // first CUDA call reports the error.
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess)
    s = nullptr;
  return s;
}
} // namespace

LocalCudaTransport::LocalCudaTransport(LocalCudaFabric &fabric, int rank,
                                       bool roundBased)
    : LocalEndpoint(fabric, rank, newStream(), /*ownsStream=*/true),
      f(fabric), rounds(roundBased) {
  std::lock_guard<std::mutex> lock(f.mu);
  f.streams[me] = strm;
}

LocalCudaTransport::~LocalCudaTransport() {
  std::lock_guard<std::mutex> lock(f.mu);
  f.streams[me] = nullptr;
}

llvm::Error LocalCudaTransport::startCopy(LocalCudaFabric::Transfer &x,
                                          int receiver) {
  x.matched = true;
  f.cv.notify_all();
  if (x.srcBytes != x.dstBytes) {
    x.sizeMismatch = true;
    return llvm::Error::success(); // reported when a request completes
  }
  cudaStream_t s = f.streams[receiver];
  if (auto err = cudaCheck(cudaStreamWaitEvent(s, x.ready, 0),
                           "cudaStreamWaitEvent"))
    return err;
  cudaEventDestroy(x.ready); // released once the device is past it
  x.ready = nullptr;
  if (auto err = cudaCheck(cudaMemcpyAsync(x.dst, x.src, x.srcBytes,
                                           cudaMemcpyDeviceToDevice, s),
                           "cudaMemcpyAsync"))
    return err;
  return cudaCheck(cudaEventRecord(x.done, s), "cudaEventRecord");
}

llvm::Expected<RequestId> LocalCudaTransport::isend(const void *buf,
                                                    size_t bytes, int peer,
                                                    int64_t msg) {
  if (peer < 0 || peer >= f.size())
    return makeInternalError(llvm::formatv("send to bad peer {0}", peer));
  cudaEvent_t ready = nullptr, done = nullptr;
  if (auto err = cudaCheck(
          cudaEventCreateWithFlags(&ready, cudaEventDisableTiming),
          "cudaEventCreate"))
    return err;
  if (auto err = cudaCheck(
          cudaEventCreateWithFlags(&done, cudaEventDisableTiming),
          "cudaEventCreate"))
    return err;
  if (auto err = cudaCheck(cudaEventRecord(ready, strm), "cudaEventRecord"))
    return err;
  std::lock_guard<std::mutex> lock(f.mu);
  bool matched = false;
  auto x = matchOrQueue(f.recvs, f.sends, {me, peer, msg}, matched);
  x->src = buf;
  x->srcBytes = bytes;
  x->ready = ready;
  x->done = done;
  return post(std::move(x), matched, /*receiver=*/peer, /*isSend=*/true,
              peer, msg);
}

llvm::Expected<RequestId> LocalCudaTransport::irecv(void *buf, size_t bytes,
                                                    int peer, int64_t msg) {
  if (peer < 0 || peer >= f.size())
    return makeInternalError(llvm::formatv("receive from bad peer {0}", peer));
  std::lock_guard<std::mutex> lock(f.mu);
  bool matched = false;
  auto x = matchOrQueue(f.sends, f.recvs, {peer, me, msg}, matched);
  x->dst = buf;
  x->dstBytes = bytes;
  return post(std::move(x), matched, /*receiver=*/me, /*isSend=*/false, peer,
              msg);
}

std::shared_ptr<LocalCudaFabric::Transfer>
LocalCudaTransport::matchOrQueue(LocalCudaFabric::Queues &theirs,
                                 LocalCudaFabric::Queues &mine,
                                 const LocalKey &key, bool &matched) {
  std::optional<std::shared_ptr<LocalCudaFabric::Transfer>> waiting =
      theirs.take(key);
  matched = waiting.has_value();
  if (matched)
    return std::move(*waiting);
  auto x = std::make_shared<LocalCudaFabric::Transfer>();
  mine.push(key, x);
  return x;
}

llvm::Expected<RequestId>
LocalCudaTransport::post(std::shared_ptr<LocalCudaFabric::Transfer> x,
                         bool matched, int receiver, bool isSend, int peer,
                         int64_t msg) {
  if (matched)
    if (auto err = startCopy(*x, receiver))
      return err;
  RequestId id = nextId++;
  requests[id] = Request{isSend, peer, msg, std::move(x)};
  return id;
}

llvm::Expected<bool> LocalCudaTransport::tryComplete(RequestId id) {
  auto it = requests.find(id);
  if (it == requests.end())
    return makeInternalError(llvm::formatv("unknown request {0}", id));
  Request &r = it->second;
  if (!r.x->matched)
    return false;
  if (r.x->sizeMismatch)
    return makeUserError(llvm::formatv(
        "message {0} between ranks {1} and {2}: {3} bytes sent but {4} "
        "expected",
        r.msg, r.isSend ? me : r.peer, r.isSend ? r.peer : me, r.x->srcBytes,
        r.x->dstBytes));
  if (r.isSend) {
    // The sender may reuse its buffer only after the copy.
    if (auto err = cudaCheck(cudaStreamWaitEvent(strm, r.x->done, 0),
                             "cudaStreamWaitEvent"))
      return err;
    cudaEventDestroy(r.x->done);
    r.x->done = nullptr;
  }
  requests.erase(it);
  return true;
}

} // namespace topocc::runtime
