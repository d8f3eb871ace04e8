//===- runtime/mpi/MpiTransport.cpp - The runtime over OpenMPI ------------===//

#include "runtime/mpi/MpiTransport.h"

#include "support/Diagnostics.h"

#include "llvm/Support/FormatVariadic.h"

#include <mpi.h>

#include <chrono>
#include <climits>
#include <optional>
#include <thread>
#include <vector>

namespace topocc::runtime {

struct MpiTransport::Impl {
  /// Slot per request id; released slots are reused (free list).
  std::vector<MPI_Request> reqs;
  std::vector<RequestId> freeIds;
  std::vector<MPI_Request> scratch;
  /// The run-header exchange: its own communicator (so its tags never meet
  /// a plan's), and buffers that outlive a call whose peer is gone.
  MPI_Comm headerComm = MPI_COMM_NULL;
  RunHeader mine;
  std::vector<RunHeader> headerTable, reply;

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
  MPI_Comm_dup(MPI_COMM_WORLD, &impl->headerComm);
  MPI_Comm_set_errhandler(impl->headerComm, MPI_ERRORS_RETURN);
}

MpiTransport::~MpiTransport() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && impl->headerComm != MPI_COMM_NULL)
    MPI_Comm_free(&impl->headerComm);
}

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

namespace {
using Clock = std::chrono::steady_clock;

/// Tags on the header communicator.
constexpr int kHeaderTag = 1, kReplyTag = 2;

/// Polls `reqs` until every one has completed (MPI_Testsome sets them to
/// MPI_REQUEST_NULL) or `deadline` (when set) has passed. Returns whether
/// all completed.
llvm::Expected<bool> pollAll(std::vector<MPI_Request> &reqs,
                             std::optional<Clock::time_point> deadline) {
  std::vector<int> done(reqs.size());
  for (unsigned spin = 0;; ++spin) {
    int outcount = 0;
    int rc = MPI_Testsome(int(reqs.size()), reqs.data(), &outcount,
                          done.data(), MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS)
      return mpiError(rc, "MPI_Testsome of the run headers");
    if (outcount == MPI_UNDEFINED)
      return true; // no active request left
    if ((spin & 1023) == 1023) {
      if (deadline && Clock::now() >= *deadline)
        return false;
      std::this_thread::yield();
    }
  }
}

/// Cancels a pending receive; returns true when it completed anyway (its
/// message had arrived).
llvm::Expected<bool> cancelRecv(MPI_Request &r) {
  if (r == MPI_REQUEST_NULL)
    return true;
  MPI_Cancel(&r);
  MPI_Status st;
  int rc = MPI_Wait(&r, &st);
  if (rc != MPI_SUCCESS)
    return mpiError(rc, "MPI_Wait of a cancelled run-header receive");
  int cancelled = 0;
  MPI_Test_cancelled(&st, &cancelled);
  return cancelled == 0;
}

std::optional<Clock::time_point> deadlineAfter(double seconds) {
  if (seconds <= 0)
    return std::nullopt;
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(seconds));
}
} // namespace

// Rank 0 collects every header and answers each rank that sent one: with
// nothing when all agree (each rank then knows the table: its own header n
// times), else with the whole table, missing ranks marked. 2(n-1) messages
// and O(n) bytes per call instead of an all-gather's O(n^2), and a rank that
// never calls (failed to load the plan, died) is named instead of hanging
// every other rank in a collective.
llvm::Expected<std::vector<RunHeader>>
MpiTransport::allgatherHeader(const RunHeader &mine, double timeoutSeconds) {
  std::vector<RunHeader> &table = impl->headerTable;
  table.assign(size_t(n), mine);
  for (int r = 0; r < n; ++r)
    table[r].rank = r;
  if (n == 1)
    return table;
  const size_t one = sizeof(RunHeader);
  MPI_Comm comm = impl->headerComm;
  if (me == 0) {
    std::vector<MPI_Request> recvs(size_t(n - 1));
    for (int r = 1; r < n; ++r) {
      int rc = MPI_Irecv(&table[r], int(one), MPI_BYTE, r, kHeaderTag, comm,
                         &recvs[r - 1]);
      if (rc != MPI_SUCCESS)
        return mpiError(rc, "MPI_Irecv of a run header");
    }
    auto all = pollAll(recvs, deadlineAfter(timeoutSeconds));
    if (!all)
      return all.takeError();
    bool agree = true;
    for (int r = 1; r < n; ++r) {
      auto arrived = cancelRecv(recvs[r - 1]);
      if (!arrived)
        return arrived.takeError();
      if (!*arrived)
        table[r].rank = RunHeader::kMissing;
      agree = agree && sameRun(table[r], table[0]);
    }
    // The answer outlives this call: a rank that died after its header
    // may never take it.
    impl->reply = agree ? std::vector<RunHeader>() : table;
    std::vector<MPI_Request> sends;
    for (int r = 1; r < n; ++r) {
      if (table[r].missing())
        continue;
      sends.emplace_back();
      int rc = MPI_Isend(impl->reply.data(), int(impl->reply.size() * one),
                         MPI_BYTE, r, kReplyTag, comm, &sends.back());
      if (rc != MPI_SUCCESS)
        return mpiError(rc, "MPI_Isend of the run headers");
    }
    // Undelivered answers (a peer gone) must not keep this rank from
    // reporting what it found.
    auto sent = pollAll(sends, deadlineAfter(timeoutSeconds));
    if (!sent)
      return sent.takeError();
    for (MPI_Request &r : sends)
      if (r != MPI_REQUEST_NULL)
        MPI_Request_free(&r);
    return table;
  }
  impl->mine = mine;
  impl->reply.assign(size_t(n), RunHeader());
  std::vector<MPI_Request> reqs(2);
  int rc = MPI_Isend(&impl->mine, int(one), MPI_BYTE, 0, kHeaderTag, comm,
                     &reqs[0]);
  if (rc != MPI_SUCCESS)
    return mpiError(rc, "MPI_Isend of the run header");
  rc = MPI_Irecv(impl->reply.data(), int(one * size_t(n)), MPI_BYTE, 0,
                 kReplyTag, comm, &reqs[1]);
  if (rc != MPI_SUCCESS)
    return mpiError(rc, "MPI_Irecv of the run headers");
  // Rank 0 may start up to `timeoutSeconds` late and then wait as long for
  // the last rank.
  MPI_Request reply = reqs[1];
  MPI_Status st;
  int flag = 0;
  std::optional<Clock::time_point> deadline =
      deadlineAfter(timeoutSeconds > 0 ? 2 * timeoutSeconds + 1 : 0);
  for (unsigned spin = 0; !flag; ++spin) {
    rc = MPI_Test(&reply, &flag, &st);
    if (rc != MPI_SUCCESS)
      return mpiError(rc, "MPI_Test of the run headers");
    if (!flag && (spin & 1023) == 1023) {
      if (deadline && Clock::now() >= *deadline) {
        auto arrived = cancelRecv(reply);
        if (!arrived)
          return arrived.takeError();
        if (*arrived)
          break; // it came in while cancelling
        if (reqs[0] != MPI_REQUEST_NULL)
          MPI_Request_free(&reqs[0]);
        return makeUserError(llvm::formatv(
            "rank {0}: rank 0, which collects the run headers, did not answer "
            "within {1} s (it failed before calling Plan::run, died, or runs "
            "with checkPeers off)",
            me, 2 * timeoutSeconds + 1));
      }
      std::this_thread::yield();
    }
  }
  // The answer came, so rank 0 has this rank's header.
  if (int rc2 = MPI_Wait(&reqs[0], MPI_STATUS_IGNORE); rc2 != MPI_SUCCESS)
    return mpiError(rc2, "MPI_Wait of the run header");
  int bytes = 0;
  MPI_Get_count(&st, MPI_BYTE, &bytes);
  if (bytes == 0)
    return table;
  if (size_t(bytes) != one * size_t(n))
    return makeInternalError(llvm::formatv(
        "rank 0 answered the run headers with {0} bytes, not {1}", bytes,
        one * size_t(n)));
  return impl->reply;
}

} // namespace topocc::runtime
