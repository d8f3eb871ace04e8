//===- runtime/Transport.h - Point-to-point transport interface -*- C++ -*-===//
//
// What the interpreter needs from a communication engine: nonblocking
// send/receive of byte ranges matched by (peer, message id), completion
// tests, and one small all-gather used to check that every rank runs the
// same plan with the same count. Implementations: LocalTransport (threads in
// one process, for tests), MpiTransport (OpenMPI), LocalCudaTransport and
// NcclTransport (runtime/cuda). Device transports also do the arithmetic
// (the hooks below default to the CPU kernels of DType.h) and are stream
// ordered: the interpreter then runs the plan round by round. The host
// defaults of those hooks are in Transport.cpp.
//
// Thread safety: a Transport is one rank's endpoint and is not synchronised:
// calls on one Transport must not overlap (one rank's thread runs its plans
// on it). Transports of different ranks may be used concurrently where
// their implementation says so (the in-process ones are made for it).
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_RUNTIME_TRANSPORT_H
#define TOPOCC_RUNTIME_TRANSPORT_H

#include "llvm/ADT/ArrayRef.h"
#include "runtime/DType.h"

#include "llvm/Support/Error.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace topocc::runtime {

/// A transport's handle for one posted send or receive.
using RequestId = int64_t;

/// What each rank announces before running a plan; every field must agree
/// (except `rank`). Plain data, sent as bytes.
struct RunHeader {
  /// `rank` of a slot whose rank did not announce itself in time.
  static constexpr int32_t kMissing = -1;

  uint64_t planHash = 0;  ///< backends::planContentHash of the schedule
  uint64_t count = 0;     ///< element count passed to Plan::run
  int32_t rank = 0;       ///< the sender's transport rank, or kMissing
  int32_t planRanks = 0;  ///< ranks the plan was compiled for
  int32_t dtype = 0;      ///< DType as an integer
  int32_t inplace = 0;    ///< the plan's in-place flag
  char planName[64] = {}; ///< NUL-terminated, truncated schedule name

  bool missing() const { return rank == kMissing; }
};

/// True when `a` and `b` announce the same run: plan hash, count, rank
/// count, dtype and in-place flag agree (not `rank`, not the name, which the
/// hash covers), and neither is missing.
bool sameRun(const RunHeader &a, const RunHeader &b);

class Transport {
public:
  virtual ~Transport();
  virtual int rank() const = 0;
  virtual int size() const = 0;

  /// Posts a send of `bytes` bytes to `peer` for message `msg`. REQUIRES:
  /// `buf` stays valid and unchanged until the request completes.
  virtual llvm::Expected<RequestId> isend(const void *buf, size_t bytes,
                                          int peer, int64_t msg) = 0;
  /// Posts a receive of exactly `bytes` bytes from `peer` for message `msg`.
  virtual llvm::Expected<RequestId> irecv(void *buf, size_t bytes, int peer,
                                          int64_t msg) = 0;
  /// True when the request completed (it is then released).
  virtual llvm::Expected<bool> test(RequestId req) = 0;
  /// Blocks until the request completes (it is then released).
  virtual llvm::Error wait(RequestId req) = 0;
  /// Blocks until one of `reqs` completes (releasing it) and returns its
  /// index, or std::nullopt when `timeoutSeconds` (> 0) passed first;
  /// timeoutSeconds <= 0 waits without limit. REQUIRES: `reqs` not empty.
  virtual llvm::Expected<std::optional<size_t>>
  waitAny(llvm::ArrayRef<RequestId> reqs, double timeoutSeconds) = 0;
  /// Collective: every rank passes its header and gets all headers, in rank
  /// order. A rank whose header did not arrive within `timeoutSeconds` (> 0;
  /// <= 0 waits without limit) has a slot with `missing()` set. Errors:
  /// transport failures, and (naming the rank waited for) a rank that could
  /// not learn the others' headers in time. After a missing rank or an
  /// error the transport is not reusable (late headers stay queued).
  virtual llvm::Expected<std::vector<RunHeader>>
  allgatherHeader(const RunHeader &mine, double timeoutSeconds) = 0;

  // --- Device transports (CUDA/NCCL). The defaults describe a host
  // transport: buffers are host memory and the CPU kernels do the math. ---

  /// True when the buffers given to Plan::run, the workspace and every
  /// pointer passed to the hooks below are device memory.
  virtual bool deviceMemory() const { return false; }
  /// True when transfers complete in issue order on a stream (NCCL): a
  /// transfer counts as done once issued, and the interpreter must issue
  /// them in rounds bracketed by groupStart/groupEnd that every rank issues
  /// in the same order (docs/Runtime.md, "Rounds").
  virtual bool roundBased() const { return false; }
  virtual llvm::Error groupStart() { return llvm::Error::success(); }
  virtual llvm::Error groupEnd() { return llvm::Error::success(); }
  /// Transport-owned memory of at least `bytes` for workspace `slot` (0:
  /// receive staging, 1: scratch), valid until the next call for the same
  /// slot. Slots 3 and 4 hold zero-padded copies of the input and output
  /// when a count does not split into equal chunks (Plan::run). Only called
  /// when deviceMemory().
  virtual llvm::Expected<void *> workspace(int slot, size_t bytes);
  /// dst[i] = a*x[i] + b*y[i]; dst may alias x or y (same element index).
  virtual llvm::Error axpby(void *dst, double a, const void *x, double b,
                            const void *y, size_t n, DType t);
  /// dst[i] = a*x[i]; dst may alias x.
  virtual llvm::Error scaleCopy(void *dst, double a, const void *x, size_t n,
                                DType t);
  /// dst[i] = sum_k coeffs[k]*srcs[k][i]. Sources may overlap dst anywhere.
  /// REQUIRES: coeffs.size() == srcs.size() >= 1.
  virtual llvm::Error linComb(void *dst, llvm::ArrayRef<double> coeffs,
                              llvm::ArrayRef<const void *> srcs, size_t n,
                              DType t);
  /// Sets `bytes` bytes at `dst` to zero.
  virtual llvm::Error zero(void *dst, size_t bytes);
  /// Called once at the end of a successful run: blocks until the results
  /// are in the caller's buffers (a stream synchronize on GPUs).
  virtual llvm::Error finish() { return llvm::Error::success(); }
};

} // namespace topocc::runtime

#endif // TOPOCC_RUNTIME_TRANSPORT_H
