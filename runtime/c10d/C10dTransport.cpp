//===- runtime/c10d/C10dTransport.cpp - The runtime over torch.distributed ===//
//
// See C10dTransport.h. Every c10d call may throw (c10::Error, gloo's
// exceptions): each is caught here and becomes an llvm::Error whose text
// says which call failed and on which peer.
//
//===----------------------------------------------------------------------===//

#include "runtime/c10d/C10dTransport.h"

#include "support/Diagnostics.h"

#include "llvm/Support/FormatVariadic.h"

#include <ATen/Functions.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <chrono>
#include <cstring>
#include <exception>

namespace topocc::runtime {

namespace {

/// The c10d timeout for `seconds` (<= 0: the group's own).
std::chrono::milliseconds timeoutOf(double seconds) {
  if (seconds <= 0)
    return ::kNoTimeout;
  return std::chrono::milliseconds(
      std::max<int64_t>(1, static_cast<int64_t>(seconds * 1000.0)));
}

/// A uint8 tensor viewing `bytes` bytes at `p` (at least one element: c10d
/// refuses empty tensors on some backends, and a zero-byte transfer is not
/// posted at all, see isend).
at::Tensor bytesAt(const void *p, size_t bytes) {
  return at::from_blob(const_cast<void *>(p), {static_cast<int64_t>(bytes)},
                       at::TensorOptions().dtype(at::kByte));
}

} // namespace

struct C10dTransport::Impl {
  c10::intrusive_ptr<c10d::ProcessGroup> group;
  struct Request {
    c10::intrusive_ptr<c10d::Work> work; ///< null for a zero-byte transfer
    bool isSend = false;
    int peer = 0;
    int64_t msg = 0;

    /// "send of message 3 to rank 1", for errors only (not formatted on
    /// the hot path).
    std::string what() const {
      return llvm::formatv("{0} of message {1} {2} rank {3}",
                           isSend ? "send" : "receive", msg,
                           isSend ? "to" : "from", peer);
    }
  };
  std::map<RequestId, Request> requests;
  RequestId nextId = 0;

  llvm::Expected<RequestId> post(bool isSend, const void *buf, size_t bytes,
                                 int peer, int64_t msg, int me, int n) {
    Request r{c10::intrusive_ptr<c10d::Work>(), isSend, peer, msg};
    if (peer < 0 || peer >= n || peer == me)
      return makeUserError(llvm::formatv(
          "c10d transport of rank {0}: {1}: no such peer in a group of {2}",
          me, r.what(), n));
    if (bytes > 0) {
      try {
        std::vector<at::Tensor> t{bytesAt(buf, bytes)};
        r.work = isSend ? group->send(t, peer, tagOf(msg))
                        : group->recv(t, peer, tagOf(msg));
      } catch (const std::exception &e) {
        return failed(r.what(), e, me);
      }
    }
    RequestId id = nextId++;
    requests.emplace(id, std::move(r));
    return id;
  }

  static llvm::Error failed(llvm::StringRef what, const std::exception &e,
                            int me) {
    // c10::Error's what() carries a C++ backtrace after the first line.
    llvm::StringRef text(e.what());
    text = text.take_until([](char c) { return c == '\n'; });
    return makeUserError(llvm::formatv("c10d transport of rank {0}: {1}: {2}",
                                       me, what, text));
  }

  /// Waits for request `id` for up to `timeout`; true when it completed,
  /// false when the timeout passed (the group is then unusable).
  llvm::Expected<bool> waitFor(RequestId id, std::chrono::milliseconds timeout,
                               int me) {
    auto it = requests.find(id);
    if (it == requests.end())
      return makeInternalError(llvm::formatv("c10d: unknown request {0}", id));
    Request &r = it->second;
    if (r.work) {
      auto start = std::chrono::steady_clock::now();
      try {
        r.work->wait(timeout);
      } catch (const std::exception &e) {
        auto spent = std::chrono::steady_clock::now() - start;
        // gloo reports its timeout as an exception.
        if (timeout != ::kNoTimeout && spent >= timeout * 0.95)
          return false;
        llvm::Error err = failed(r.what(), e, me);
        requests.erase(it);
        return err;
      }
    }
    requests.erase(it);
    return true;
  }
};

C10dTransport::C10dTransport(std::unique_ptr<Impl> i) : impl(std::move(i)) {
  me = impl->group->getRank();
  n = impl->group->getSize();
}

C10dTransport::~C10dTransport() {
  // Requests still pending after a failed run: wake whoever might wait on
  // them. Their buffers are the interpreter's parked staging or the
  // caller's, as after any failed run (docs/Runtime.md).
  for (auto &[id, r] : impl->requests)
    if (r.work) {
      try {
        r.work->abort();
      } catch (const std::exception &) {
      }
    }
}

llvm::Expected<std::unique_ptr<C10dTransport>>
C10dTransport::create(c10::intrusive_ptr<c10d::ProcessGroup> group) {
  if (!group)
    return makeUserError("c10d transport: no process group (call "
                         "torch.distributed.init_process_group first)");
  std::string backend;
  try {
    backend = group->getBackendName();
  } catch (const std::exception &) {
    backend = "unknown";
  }
  if (backend == "nccl")
    return makeUserError(
        "c10d transport: the process group's backend is nccl, which moves "
        "CUDA tensors only; topocc runs plans over torch.distributed on CPU "
        "tensors (gloo, mpi). On GPUs run plans with the NCCL runtime "
        "(docs/Runtime.md)");
  auto impl = std::make_unique<Impl>();
  impl->group = std::move(group);
  std::unique_ptr<C10dTransport> t(new C10dTransport(std::move(impl)));
  t->backendName = std::move(backend);
  return t;
}

llvm::Expected<RequestId> C10dTransport::isend(const void *buf, size_t bytes,
                                               int peer, int64_t msg) {
  return impl->post(true, buf, bytes, peer, msg, me, n);
}

llvm::Expected<RequestId> C10dTransport::irecv(void *buf, size_t bytes,
                                               int peer, int64_t msg) {
  return impl->post(false, buf, bytes, peer, msg, me, n);
}

llvm::Expected<bool> C10dTransport::test(RequestId req) {
  auto it = impl->requests.find(req);
  if (it == impl->requests.end())
    return makeInternalError(llvm::formatv("c10d: unknown request {0}", req));
  bool done = true;
  if (it->second.work) {
    try {
      done = it->second.work->isCompleted();
    } catch (const std::exception &e) {
      return Impl::failed(it->second.what(), e, me);
    }
  }
  if (done)
    return impl->waitFor(req, ::kNoTimeout, me);
  return false;
}

llvm::Error C10dTransport::wait(RequestId req) {
  auto done = impl->waitFor(req, ::kNoTimeout, me);
  if (!done)
    return done.takeError();
  return llvm::Error::success();
}

llvm::Expected<std::optional<size_t>>
C10dTransport::waitAny(llvm::ArrayRef<RequestId> reqs, double timeoutSeconds) {
  if (reqs.empty())
    return makeInternalError("c10d: waitAny of no requests");
  for (size_t i = 0; i < reqs.size(); ++i) {
    auto it = impl->requests.find(reqs[i]);
    if (it != impl->requests.end() &&
        (!it->second.work || it->second.work->isCompleted())) {
      auto done = impl->waitFor(reqs[i], ::kNoTimeout, me);
      if (!done)
        return done.takeError();
      return std::optional<size_t>(i);
    }
  }
  auto done = impl->waitFor(reqs[0], timeoutOf(timeoutSeconds), me);
  if (!done)
    return done.takeError();
  if (!*done)
    return std::optional<size_t>();
  return std::optional<size_t>(0);
}

llvm::Expected<std::vector<RunHeader>>
C10dTransport::allgatherHeader(const RunHeader &mine, double timeoutSeconds) {
  std::vector<RunHeader> table(n);
  RunHeader in = mine;
  std::vector<at::Tensor> input{bytesAt(&in, sizeof in)};
  std::vector<std::vector<at::Tensor>> output(1);
  for (int r = 0; r < n; ++r)
    output[0].push_back(bytesAt(&table[r], sizeof(RunHeader)));
  std::chrono::milliseconds timeout = timeoutOf(timeoutSeconds);
  auto start = std::chrono::steady_clock::now();
  try {
    c10::intrusive_ptr<c10d::Work> w = impl->group->allgather(output, input);
    w->wait(timeout);
  } catch (const std::exception &e) {
    auto spent = std::chrono::steady_clock::now() - start;
    if (timeout != ::kNoTimeout && spent >= timeout * 0.95)
      return makeUserError(llvm::formatv(
          "rank {0}: the run headers of {1} ranks were not all-gathered "
          "within {2:F2} s over the {3} process group: a rank did not start "
          "the same plan call (c10d does not say which); the group is no "
          "longer usable",
          me, n, timeoutSeconds, backendName));
    return Impl::failed("all-gather of the run headers", e, me);
  }
  return table;
}

} // namespace topocc::runtime
