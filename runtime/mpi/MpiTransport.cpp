//===- runtime/mpi/MpiTransport.cpp - The runtime over OpenMPI ------------===//

#include "runtime/mpi/MpiTransport.h"

#include "support/Diagnostics.h"

#include "llvm/Support/FormatVariadic.h"

#include <mpi.h>

#include <chrono>
#include <climits>
#include <thread>
#include <vector>

namespace topocc::runtime {

struct MpiTransport::Impl {
  /// Slot per request id; released slots are reused (free list).
  std::vector<MPI_Request> reqs;
  std::vector<RequestId> freeIds;
  std::vector<MPI_Request> scratch;

  RequestId add(MPI_Request r) {
    if (!freeIds.empty()) {
      RequestId id = freeIds.back();
      freeIds.pop_back();
      reqs[id] = r;
      return id;
    }
    reqs.push_back(r);
    return static_cast<RequestId>(reqs.size() - 1);
  }
  void release(RequestId id) {
    reqs[id] = MPI_REQUEST_NULL;
    freeIds.push_back(id);
  }
};

static llvm::Error mpiError(int rc, llvm::StringRef what) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  return makeUserError(what + ": " + llvm::StringRef(text, len));
}

MpiTransport::MpiTransport() : impl(std::make_unique<Impl>()) {
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  // Errors come back as return codes, not aborts.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int *ub = nullptr, flag = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
  if (flag && ub)
    tagModulus = int64_t(*ub) + 1;
}

MpiTransport::~MpiTransport() = default;

/// Posts MPI_Isend (isSend; it only reads `buf`) or MPI_Irecv of message
/// `msg` with `tag`.
static llvm::Expected<MPI_Request> post(bool isSend, void *buf, size_t bytes,
                                        int peer, int64_t msg, int tag) {
  llvm::StringRef dir = isSend ? "to" : "from";
  if (bytes > size_t(INT_MAX))
    return makeUserError(llvm::formatv(
        "message {0} {1} rank {2} has {3} bytes; the MPI transport sends at "
        "most {4} bytes per message (use more chunks)",
        msg, dir, peer, bytes, INT_MAX));
  MPI_Request r;
  int rc =
      isSend
          ? MPI_Isend(buf, int(bytes), MPI_BYTE, peer, tag, MPI_COMM_WORLD, &r)
          : MPI_Irecv(buf, int(bytes), MPI_BYTE, peer, tag, MPI_COMM_WORLD, &r);
  if (rc != MPI_SUCCESS)
    return mpiError(rc, llvm::formatv("{0} of message {1} {2} rank {3}",
                                      isSend ? "MPI_Isend" : "MPI_Irecv", msg,
                                      dir, peer)
                            .str());
  return r;
}

llvm::Expected<RequestId> MpiTransport::isend(const void *buf, size_t bytes,
                                              int peer, int64_t msg) {
  auto r = post(/*isSend=*/true, const_cast<void *>(buf), bytes, peer, msg,
                tagOf(msg));
  if (!r)
    return r.takeError();
  return impl->add(*r);
}

llvm::Expected<RequestId> MpiTransport::irecv(void *buf, size_t bytes,
                                              int peer, int64_t msg) {
  auto r = post(/*isSend=*/false, buf, bytes, peer, msg, tagOf(msg));
  if (!r)
    return r.takeError();
  return impl->add(*r);
}

llvm::Expected<bool> MpiTransport::test(RequestId req) {
  int flag = 0;
  int rc = MPI_Test(&impl->reqs[req], &flag, MPI_STATUS_IGNORE);
  if (rc != MPI_SUCCESS)
    return mpiError(rc, "MPI_Test");
  if (flag)
    impl->release(req);
  return flag != 0;
}

llvm::Error MpiTransport::wait(RequestId req) {
  int rc = MPI_Wait(&impl->reqs[req], MPI_STATUS_IGNORE);
  if (rc != MPI_SUCCESS)
    return mpiError(rc, "MPI_Wait");
  impl->release(req);
  return llvm::Error::success();
}

llvm::Expected<std::optional<size_t>>
MpiTransport::waitAny(llvm::ArrayRef<RequestId> reqs, double timeoutSeconds) {
  std::vector<MPI_Request> &v = impl->scratch;
  v.clear();
  for (RequestId id : reqs)
    v.push_back(impl->reqs[id]);
  int index = MPI_UNDEFINED;
  if (timeoutSeconds <= 0) {
    int rc = MPI_Waitany(int(v.size()), v.data(), &index, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS)
      return mpiError(rc, "MPI_Waitany");
  } else {
    using Clock = std::chrono::steady_clock;
    auto deadline = Clock::now() + std::chrono::duration<double>(timeoutSeconds);
    int flag = 0;
    for (unsigned spin = 0;; ++spin) {
      int rc = MPI_Testany(int(v.size()), v.data(), &index, &flag,
                           MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS)
        return mpiError(rc, "MPI_Testany");
      if (flag)
        break;
      if ((spin & 1023) == 1023) {
        if (Clock::now() >= deadline)
          return std::optional<size_t>();
        // Oversubscribed ranks must let the peers they wait for run.
        std::this_thread::yield();
      }
    }
  }
  if (index == MPI_UNDEFINED)
    return makeInternalError("MPI_Waitany: no active request");
  impl->release(reqs[index]);
  return std::optional<size_t>(size_t(index));
}

llvm::Expected<std::vector<RunHeader>>
MpiTransport::allgatherHeader(const RunHeader &mine) {
  std::vector<RunHeader> all(n);
  int rc = MPI_Allgather(&mine, int(sizeof(RunHeader)), MPI_BYTE, all.data(),
                         int(sizeof(RunHeader)), MPI_BYTE, MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS)
    return mpiError(rc, "MPI_Allgather of the run header");
  return all;
}

} // namespace topocc::runtime
