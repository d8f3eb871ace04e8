//===- runtime/Interpreter.h - Run one rank of a plan -----------*- C++ -*-===//
//
// Plan::load reads and re-verifies a plan (backends/PlanJson.h); Plan::run
// executes the calling rank's ops on a Transport for `count` elements:
// every receive is posted up front into a private staging buffer, ops start
// as soon as their dependencies are done (on host transports: deps and the
// earlier conflicting memory accesses, Plan::dataflowPreds; otherwise deps
// and the previous op of their threadblock), sends are nonblocking, and the
// run blocks only when nothing is runnable. Chunks are "balanced": see
// chunkOffset and docs/Runtime.md. Plan::load and fromSchedule are in
// PlanLoad.cpp, planRounds, layoutFor and the dataflow order in
// PlanAnalysis.cpp, the rank executor (Plan::run) in Interpreter.cpp.
//
// Thread safety: the free functions here are pure. A Plan does not change
// once made: its const members, run included, may be called concurrently
// from any number of threads on one shared Plan (the ranks of LocalTransport
// and LocalCudaTransport do), each call with its own Transport (see
// Transport.h). Plan::run keeps its host staging, scratch and zero-padded
// copies in thread_local buffers that the thread's later runs reuse (any
// plan's; they are freed when the thread ends), so one thread runs one plan
// at a time; a failed run parks its buffers in a process-wide list guarded
// by a mutex. Assigning to or destroying a Plan while another thread uses it
// is a race.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_RUNTIME_INTERPRETER_H
#define TOPOCC_RUNTIME_INTERPRETER_H

#include "backends/PlanJson.h"
#include "runtime/DType.h"
#include "runtime/Transport.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace topocc::runtime {

struct RunOptions {
  /// Exchange a RunHeader with every rank first and fail (on every rank,
  /// with the same message) when plan hash, rank count, count, dtype or
  /// in-place flag differ. Every rank must pass the same value.
  bool checkPeers = true;
  /// > 0: fail with the list of pending messages when no progress is made
  /// for this many seconds (and name the ranks that did not join the header
  /// exchange within it); <= 0: wait without limit. The default is
  /// PyTorch's for NCCL process groups: a run that waits this long on a
  /// peer has lost it.
  double timeoutSeconds = 600;
  /// Run round by round (as stream-ordered transports like NCCL require,
  /// see planRounds) even on a transport that does not need it. Every rank
  /// must pass the same value. Used to test the NCCL ordering on CPUs.
  bool rounds = false;
};

/// The round of every op of a schedule (per rank, per op): the longest path
/// to it where a message edge (sender op -> receiver op) and an edge leaving
/// a sending op (to a later op of the same rank) add 1, and other edges
/// (deps, threadblock order) add 0. A message travels in the round of its
/// sending op; an op runs after every transfer of the rounds before its own.
/// REQUIRES: `s` passes verifySchedule (acyclic).
std::vector<std::vector<int32_t>> planRounds(const ir::Schedule &s);

/// Element layout of a collective's buffers for one count (nccl-tests
/// conventions: allreduce `count` in and out; allgather `count` in and
/// ranks*count out; reducescatter ranks*count in and `count` out).
struct BufferLayout {
  /// k: chunksPerLoop / max(inputBlocks, outputBlocks).
  int32_t chunksPerBlock = 0;
  int32_t inputBlocks = 1;    ///< blocks of `count` elements in the input
  int32_t outputBlocks = 1;
  size_t count = 0;

  /// First element of chunk `c`: block c/k holds `count` elements, and its
  /// chunk j = c%k starts at floor(j*count/k), so chunks get floor or ceil
  /// of count/k elements and the remainder is spread over the block.
  size_t chunkOffset(int64_t c) const {
    int64_t k = chunksPerBlock;
    return size_t(c / k) * count + size_t((c % k) * int64_t(count) / k);
  }
  size_t inputElements() const { return inputBlocks * count; }
  size_t outputElements() const { return outputBlocks * count; }
};

/// The layout of `s` for `count`, or an error when the collective's chunk
/// count is not a multiple of its block count.
llvm::Expected<BufferLayout> layoutFor(const ir::Schedule &s, size_t count);

/// The error contract of a coded plan run in `t` (docs/Algorithms-cerar.md
/// section 8): every rank's ||out - exact||_2 is at most this times
/// ||x||_2, x all ranks' inputs together; its exact-arithmetic errorBound
/// plus the unit roundoff of `t` times its roundoffGain for `t`
/// (backends::PlanMeta), which holds under the probabilistic model of
/// rounding, or with `worstCase` times roundoffGainWorst, for every
/// rounding. 0 for exact plans.
inline double valueErrorBound(const backends::PlanMeta &m, DType t,
                              bool worstCase = false) {
  return m.errorBound > 0
             ? m.errorBound +
                   unitRoundoff(t) *
                       (worstCase ? m.roundoffGainWorst : m.roundoffGain)
                           [size_t(t)] // DType's order is kRoundoffDtypes'
             : 0;
}

/// A loaded, verified plan and its dataflow order: immutable, shareable
/// between threads (see the file comment).
class Plan {
public:
  /// Reads, validates and re-verifies a plan file or a plan set
  /// (backends::parsePlanSetJson).
  static llvm::Expected<Plan> load(llvm::StringRef path);
  /// The same from plan JSON text already in memory; `name` is the file
  /// name its errors carry (file:line:col).
  static llvm::Expected<Plan> loadText(llvm::StringRef text,
                                       llvm::StringRef name);
  /// A plan from a verified schedule (REQUIRES: it passes verifySchedule).
  static llvm::Expected<Plan> fromSchedule(ir::Schedule s,
                                           backends::PlanMeta meta = {});

  /// One window of a plan set (compile --emit plan --sizes) and its plan.
  struct Variant {
    backends::PlanWindow window;
    std::shared_ptr<const Plan> plan;
  };
  /// A plan set: windows[i] served by plans[i] (each a plan of one
  /// schedule). User errors as backends::checkPlanWindows, and for plans
  /// of different collectives, rank counts or in-place modes.
  static llvm::Expected<Plan>
  fromVariants(std::vector<backends::PlanWindow> windows,
               std::vector<Plan> plans);
  /// A plan set's variants, in window order; empty for a plan of one
  /// schedule.
  llvm::ArrayRef<Variant> variants() const { return variantList; }
  /// The plan that runs a call of `count` elements of `t`: this plan, or
  /// for a set the variant whose window holds the call's message size
  /// (callBytes). User error naming the windows when none holds it.
  llvm::Expected<const Plan *> select(size_t count, DType t) const;
  /// As select, but a call outside every window gets the variant of the
  /// window nearest to its size (the first below them, the last above):
  /// every variant runs any count, the windows only say where each is the
  /// fastest choice. For callers that must serve every size (the PyTorch
  /// hook's gradient buckets).
  const Plan &nearest(size_t count, DType t) const;
  /// The message size of a call in the nccl-tests convention the windows
  /// use: allreduce the buffer (count elements), allgather the whole output
  /// and reducescatter the whole input (ranks * count elements).
  int64_t callBytes(size_t count, DType t) const;

  /// For a plan set, schedule(), dataflowPreds(), meta() and hash() are
  /// its first variant's (select() gives the one a call runs).
  const ir::Schedule &schedule() const { return base().plan.schedule; }
  /// The ops op `op` of rank `r` waits for when a host transport runs the
  /// plan as dataflow (see dataPreds below); empty when the plan could not
  /// be ordered (then threadblock order is used).
  llvm::ArrayRef<ir::OpId> dataflowPreds(ir::RankId r, ir::OpId op) const {
    const Plan &b = base();
    if (!b.dataPreds)
      return {};
    return (*b.dataPreds)[size_t(r)][size_t(op)];
  }
  const backends::PlanMeta &meta() const { return base().plan.meta; }
  uint64_t hash() const { return base().plan.contentHash; }

  /// Runs this rank's (t.rank()) program. `sendbuf` holds the input and
  /// `recvbuf` receives the output (sizes: BufferLayout). In-place plans
  /// REQUIRE the nccl aliasing: allreduce sendbuf == recvbuf, allgather
  /// sendbuf == recvbuf + rank*count, reducescatter recvbuf == sendbuf +
  /// rank*count (elements). Any count works: when the plan's chunks must
  /// all have the same size (coded plans) and `count` is not a multiple of
  /// the chunks per block, the plan runs on zero-padded copies (one extra
  /// copy of the buffers). Errors: mismatch between ranks, bad pointers,
  /// transport errors, timeout.
  llvm::Error run(const void *sendbuf, void *recvbuf, size_t count, DType t,
                  Transport &tr, const RunOptions &opts = {}) const;

private:
  /// run() on zero-padded copies of the buffers (count rounded up to a
  /// multiple of the chunks per block), for plans whose chunks must all
  /// have the same size.
  llvm::Error runPadded(const void *sendbuf, void *recvbuf, size_t count,
                        DType t, Transport &tr, const RunOptions &opts,
                        const BufferLayout &user) const;

  /// load and loadText: a plan of one schedule or a set.
  static llvm::Expected<Plan> fromLoaded(backends::PlanSetFile loaded);
  /// Computes `dataPreds` (load and fromSchedule call it).
  void buildDataflow();
  /// This plan, or a set's first variant.
  const Plan &base() const {
    return variantList.empty() ? *this : *variantList.front().plan;
  }
  /// A plan set's variants (then `plan` is empty).
  std::vector<Variant> variantList;

  backends::PlanFile plan;
  /// Per rank, per op: the ops it must wait for when a host transport runs
  /// the plan as dataflow: its deps plus, for every buffer slot it reads or
  /// writes, the earlier conflicting accesses of its rank (last writer;
  /// for a write also the readers since), "earlier" meaning the order of
  /// the schedule's happens-before graph (threadblock order, deps and
  /// messages; ir/CombinedGraph.h). Every conflicting pair keeps the order
  /// the verified schedule gives it, so results are bit for bit those of
  /// threadblock order, but an op no longer waits for unrelated ops listed
  /// before it (a send for the encodes of other chunks).
  std::shared_ptr<const std::vector<std::vector<std::vector<ir::OpId>>>>
      dataPreds;
};

} // namespace topocc::runtime

#endif // TOPOCC_RUNTIME_INTERPRETER_H
