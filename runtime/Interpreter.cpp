//===- runtime/Interpreter.cpp - Run one rank of a plan -------------------===//
//
// Execution model: a dependency counter per op (its deps plus, on host
// transports, the earlier ops of its rank whose memory accesses conflict
// with its own, in the schedule's happens-before order (Plan::dataPreds);
// round by round, the previous op of its threadblock). All receives are
// posted first, each into its own
// slice of a staging buffer, so a message may arrive at any time without
// touching user memory that earlier ops still read. A ready receiving op
// combines its staging slice in place (result = localCoeff*src +
// msgCoeff*msg), writes dst and forwards the staging slice (which nothing
// else touches). A plain `send` sends straight from user memory and
// completes when the transport releases the buffer.
//
// Stream-ordered transports (NCCL) cannot take every receive up front: they
// get the plan round by round (planRounds): per round, the ops of that round
// run, then one group holds the round's receives and sends, each peer's in
// message-id order, so every rank issues matching groups in the same order
// (docs/Runtime.md, "Stock NCCL point-to-point rules").
//
//===----------------------------------------------------------------------===//

#include "runtime/Interpreter.h"
#include "runtime/PlanAnalysis.h"

#include "support/Diagnostics.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>

namespace topocc::runtime {

namespace {
llvm::ArrayRef<std::vector<ir::OpId>> dataPredsOf(
    const std::shared_ptr<
        const std::vector<std::vector<std::vector<ir::OpId>>>> &all,
    int rank) {
  if (!all || rank < 0 || size_t(rank) >= all->size())
    return {};
  return (*all)[size_t(rank)];
}

/// The plan name a header carries.
llvm::StringRef planNameOf(const RunHeader &h) {
  return llvm::StringRef(h.planName, strnlen(h.planName, sizeof(h.planName)));
}

std::string describe(const RunHeader &h) {
  return llvm::formatv("plan '{0}' {1} for {2} ranks ({3}), count {4}, {5}",
                       planNameOf(h), backends::formatHash(h.planHash),
                       h.planRanks, h.inplace ? "in-place" : "out-of-place",
                       h.count, dtypeName(static_cast<DType>(h.dtype)))
      .str();
}

/// The fields in which `h` differs from `ref` (rank aside).
std::vector<std::string> differences(const RunHeader &h, const RunHeader &ref) {
  std::vector<std::string> diff;
  if (h.planHash != ref.planHash)
    diff.push_back("plan");
  if (h.count != ref.count)
    diff.push_back("count");
  if (h.dtype != ref.dtype)
    diff.push_back("dtype");
  if (h.planRanks != ref.planRanks)
    diff.push_back("ranks");
  if (h.inplace != ref.inplace)
    diff.push_back("in-place");
  return diff;
}

/// The same message on every rank that has the table (each such rank sees
/// every header). `me`: this rank's slot (never missing).
llvm::Error checkHeaders(llvm::ArrayRef<RunHeader> all, int me, int worldSize,
                         double timeoutSeconds) {
  const RunHeader &ref = all[size_t(me)];
  std::vector<int> missing;
  for (size_t r = 0; r < all.size(); ++r)
    if (all[r].missing())
      missing.push_back(int(r));
  bool same = llvm::all_of(
      all, [&](const RunHeader &h) { return sameRun(h, all[0]); });
  if (!missing.empty()) {
    std::string msg = llvm::formatv(
        "{0} {1} did not join the run of {2} within {3} s (failed before "
        "calling Plan::run, died, or {4} with checkPeers off); no rank ran "
        "it:",
        missing.size() == 1 ? "rank" : "ranks",
        llvm::join(llvm::map_range(missing,
                                   [](int r) { return std::to_string(r); }),
                   ", "),
        describe(ref), timeoutSeconds, missing.size() == 1 ? "runs" : "run");
    for (size_t r = 0; r < all.size(); ++r)
      msg += all[r].missing()
                 ? llvm::formatv("\n  rank {0}: -  <- missing", r).str()
                 : llvm::formatv("\n  rank {0}: {1}", r, describe(all[r]))
                       .str();
    return makeUserError(msg);
  }
  if (!same) {
    std::string msg = "ranks disagree on the plan or the count (every rank "
                      "must load the same plan and pass the same count and "
                      "dtype):";
    for (size_t r = 0; r < all.size(); ++r) {
      const RunHeader &h = all[r];
      std::vector<std::string> diff = differences(h, all[0]);
      msg += llvm::formatv("\n  rank {0}: {1}", r, describe(h)).str();
      if (!diff.empty())
        msg += "  <- differs from rank 0 in " + llvm::join(diff, ", ");
    }
    return makeUserError(msg);
  }
  if (all[0].planRanks != worldSize)
    return makeUserError(
        llvm::formatv("plan '{0}' is for {1} ranks but the job has {2}",
                      planNameOf(all[0]), all[0].planRanks, worldSize));
  return llvm::Error::success();
}

/// The buffer a message travels from or into at an op.
const ir::BufferRef &wireRef(const ir::Op &op) {
  switch (op.kind) {
  case ir::OpKind::Recv:
  case ir::OpKind::RecvCopySend:
    return op.dst;
  default:
    return op.src;
  }
}

std::string refText(const ir::BufferRef &r) {
  return llvm::formatv("{0}[{1}+{2}]", ir::bufferName(r.buffer), r.chunk,
                       r.count)
      .str();
}

/// Staging buffers outlive a failed run: a transport may still write into
/// them after an error, so they are parked here instead of freed.
std::mutex graveyardMutex;
std::vector<std::vector<char>> graveyard;

/// Per-thread staging, scratch and padded-copy storage of host transports,
/// reused across runs (ranks in one process run on different threads): a
/// fresh buffer per run costs a page fault per 4 KiB and zeroing by the
/// kernel, more than the plan's own work for large counts.
thread_local std::vector<char> stagingCache;
thread_local std::vector<char> scratchCache;
thread_local std::vector<char> paddedInCache;
thread_local std::vector<char> paddedOutCache;

/// `cache` grown to at least `bytes` (never shrunk).
char *cached(std::vector<char> &cache, size_t bytes) {
  if (cache.size() < bytes)
    cache.resize(bytes);
  return cache.data();
}

/// At least `bytes` of memory for one of a run's own buffers: workspace
/// `slot` of a device transport (Transport::workspace), else `cache`.
llvm::Expected<char *> runMemory(Transport &tr, int slot,
                                 std::vector<char> &cache, size_t bytes) {
  if (!tr.deviceMemory())
    return cached(cache, bytes);
  auto w = tr.workspace(slot, bytes);
  if (!w)
    return w.takeError();
  return static_cast<char *>(*w);
}

class RankRun {
public:
  /// `dataPreds`: this rank's Plan::dataPreds (empty: threadblock order
  /// only).
  RankRun(const ir::Schedule &s, const BufferLayout &l, DType t, Transport &tr,
          const RunOptions &opts,
          llvm::ArrayRef<std::vector<ir::OpId>> dataPreds = {})
      : s(s), l(l), t(t), esz(dtypeSize(t)), tr(tr), opts(opts),
        rank(tr.rank()), prog(s.ranks[rank]), dataPreds(dataPreds) {}

  /// Sizes every scratch chunk by the data moved into it (call before
  /// checkSizes and run).
  void inferScratch();
  llvm::Error checkSizes() const;
  llvm::Error run(const void *sendbuf, void *recvbuf, bool byRounds);

private:
  /// Element offset of chunk `c` of buffer `b` on rank `r`: balanced
  /// chunking for the input and output, the inferred scratch layout
  /// (inferScratch) for scratch.
  size_t offset(ir::RankId r, ir::BufferKind b, int64_t c) const {
    if (b == ir::BufferKind::Scratch && !scratchOff.empty())
      return scratchOff[r][size_t(c)];
    return l.chunkOffset(c);
  }
  size_t elems(ir::RankId r, const ir::BufferRef &ref) const {
    return offset(r, ref.buffer, int64_t(ref.chunk) + ref.count) -
           offset(r, ref.buffer, ref.chunk);
  }
  size_t elems(const ir::BufferRef &r) const { return elems(rank, r); }
  char *ptr(const ir::BufferRef &r) const {
    return base[static_cast<int>(r.buffer)] +
           offset(rank, r.buffer, r.chunk) * esz;
  }
  int64_t bufferChunks(ir::BufferKind b, const ir::RankProgram &rp) const {
    switch (b) {
    case ir::BufferKind::Input:
      return int64_t(l.inputBlocks) * l.chunksPerBlock;
    case ir::BufferKind::Output:
      return int64_t(l.outputBlocks) * l.chunksPerBlock;
    case ir::BufferKind::Scratch:
      return rp.scratchChunks;
    }
    return 0;
  }
  llvm::Error execute(ir::OpId id, std::optional<RequestId> &sendReq);
  llvm::Error runDataflow();
  llvm::Error runRounds();
  void complete(ir::OpId id);
  void buildGraph(bool relax);
  llvm::Error timeoutError(llvm::ArrayRef<ir::OpId> waitingRecv,
                           llvm::ArrayRef<ir::OpId> waitingSend,
                           size_t pendingForwards) const;
  llvm::Error fail(llvm::Error err) {
    // Receives may still land in the staging buffer: park it.
    // Sends from scratch may still be in flight: park it too.
    std::lock_guard<std::mutex> lock(graveyardMutex);
    graveyard.push_back(std::move(stagingCache));
    stagingCache = {};
    graveyard.push_back(std::move(scratchCache));
    scratchCache = {};
    return err;
  }

  const ir::Schedule &s;
  const BufferLayout &l;
  DType t;
  size_t esz;
  Transport &tr;
  const RunOptions &opts;
  int rank;
  const ir::RankProgram &prog;
  llvm::ArrayRef<std::vector<ir::OpId>> dataPreds;

  /// Per rank, the element offset of every scratch chunk (scratchChunks+1
  /// entries); empty when every chunk has the same size (count % k == 0).
  std::vector<std::vector<size_t>> scratchOff;
  char *base[3] = {nullptr, nullptr, nullptr};
  char *staging = nullptr; ///< stagingCache or the transport's workspace
  /// A send an op wants to make; round mode collects them per round.
  struct OutSend {
    const char *buf;
    size_t bytes;
    int peer;
    int64_t msg;
  };
  std::vector<OutSend> *collectSends = nullptr;
  std::vector<size_t> stagingOffset; ///< per op, bytes into stagingCache
  std::vector<int32_t> predsLeft;
  std::vector<std::vector<ir::OpId>> succs;
  std::vector<std::optional<RequestId>> recvReq;
  std::vector<bool> recvDone;
  std::deque<ir::OpId> ready;
  size_t doneCount = 0;
  bool relaxed = false; ///< buildGraph's mode

};

void RankRun::inferScratch() {
  scratchOff.clear();
  const int64_t k = l.chunksPerBlock;
  if (k <= 0 || l.count % size_t(k) == 0)
    return; // every chunk has count/k elements: balanced chunking is exact
  // A scratch chunk holds whatever chunk of data is moved into it, so it
  // gets that chunk's element count: unknown sizes are inferred from every
  // pair of refs that must match element for element (a message's two
  // ends, src and dst of an op, lincomb terms and dst), until nothing
  // changes. A chunk that carries data of two sizes keeps the first one;
  // checkSizes then reports the mismatch. Chunks no data reaches keep the
  // balanced size of their index.
  constexpr size_t kUnknown = ~size_t(0);
  std::vector<std::vector<size_t>> size(s.numRanks);
  bool anyScratch = false;
  for (ir::RankId r = 0; r < s.numRanks; ++r) {
    size[r].assign(size_t(std::max(s.ranks[r].scratchChunks, 0)), kUnknown);
    anyScratch |= !size[r].empty();
  }
  if (!anyScratch)
    return;
  struct End {
    ir::RankId rank;
    const ir::BufferRef *ref;
  };
  std::vector<std::pair<End, End>> pairs;
  for (const ir::MsgEnds &e : ir::indexMessages(s))
    if (e.sender != ir::kNone && e.receiver != ir::kNone)
      pairs.push_back({{e.sender, &wireRef(s.ranks[e.sender].ops[e.sendOp])},
                       {e.receiver,
                        &wireRef(s.ranks[e.receiver].ops[e.recvOp])}});
  for (ir::RankId r = 0; r < s.numRanks; ++r)
    for (const ir::Op &op : s.ranks[r].ops) {
      unsigned f = ir::opFlags(op.kind);
      if ((f & ir::OF_RS) && (f & ir::OF_WD))
        pairs.push_back({{r, &op.src}, {r, &op.dst}});
      for (const ir::LinTerm &term : op.terms)
        pairs.push_back({{r, &term.src}, {r, &op.dst}});
    }
  auto sizeAt = [&](const End &e, int32_t i) -> size_t * {
    int64_t c = int64_t(e.ref->chunk) + i;
    if (e.ref->buffer == ir::BufferKind::Scratch)
      return c < int64_t(size[e.rank].size()) ? &size[e.rank][size_t(c)]
                                              : nullptr;
    return nullptr;
  };
  auto known = [&](const End &e, int32_t i) -> size_t {
    if (size_t *p = sizeAt(e, i))
      return *p;
    int64_t c = int64_t(e.ref->chunk) + i;
    return l.chunkOffset(c + 1) - l.chunkOffset(c);
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (auto &[a, b] : pairs) {
      if (!a.ref->isUsed() || !b.ref->isUsed() ||
          a.ref->count != b.ref->count)
        continue; // checkSizes reports what cannot match
      for (int32_t i = 0; i < a.ref->count; ++i) {
        size_t va = known(a, i), vb = known(b, i);
        if (va == kUnknown && vb != kUnknown) {
          if (size_t *p = sizeAt(a, i)) {
            *p = vb;
            changed = true;
          }
        } else if (vb == kUnknown && va != kUnknown) {
          if (size_t *p = sizeAt(b, i)) {
            *p = va;
            changed = true;
          }
        }
      }
    }
  }
  scratchOff.resize(s.numRanks);
  for (ir::RankId r = 0; r < s.numRanks; ++r) {
    std::vector<size_t> &off = scratchOff[r];
    off.assign(size[r].size() + 1, 0);
    for (size_t j = 0; j < size[r].size(); ++j) {
      size_t n = size[r][j] != kUnknown
                     ? size[r][j]
                     : l.chunkOffset(int64_t(j) + 1) - l.chunkOffset(int64_t(j));
      off[j + 1] = off[j] + n;
    }
  }
}

llvm::Error RankRun::checkSizes() const {
  // Every rank checks the whole schedule, so all ranks fail alike.
  auto sizeError = [&](ir::RankId r, ir::OpId i, const llvm::Twine &what) {
    return makeUserError(llvm::formatv(
        "count {0} does not fit plan '{1}': rank {2} %{3}: {4}; use a count "
        "that splits every chunk alike (a multiple of {5} always works)",
        l.count, s.name, r, i, what.str(), l.chunksPerBlock));
  };
  std::vector<ir::MsgEnds> ends = ir::indexMessages(s);
  for (size_t m = 0; m < ends.size(); ++m) {
    const ir::MsgEnds &e = ends[m];
    if (e.sender == ir::kNone || e.receiver == ir::kNone)
      continue;
    const ir::BufferRef &a = wireRef(s.ranks[e.sender].ops[e.sendOp]);
    const ir::BufferRef &b = wireRef(s.ranks[e.receiver].ops[e.recvOp]);
    size_t na = elems(e.sender, a), nb = elems(e.receiver, b);
    if (na != nb)
      return sizeError(e.sender, e.sendOp,
                       llvm::formatv("message {0} is {1} ({2} elements) at "
                                     "the sender but {3} ({4} elements) at "
                                     "rank {5} %{6}",
                                     m, refText(a), na, refText(b), nb,
                                     e.receiver, e.recvOp));
  }
  for (ir::RankId r = 0; r < s.numRanks; ++r) {
    const ir::RankProgram &rp = s.ranks[r];
    for (size_t i = 0; i < rp.ops.size(); ++i) {
      const ir::Op &op = rp.ops[i];
      unsigned f = ir::opFlags(op.kind);
      for (const ir::BufferRef *ref : {&op.src, &op.dst})
        if (ref->isUsed() && int64_t(ref->chunk) + ref->count >
                                 bufferChunks(ref->buffer, rp))
          return makeUserError(llvm::formatv(
              "plan '{0}': rank {1} %{2}: {3} is outside the {4} buffer of "
              "{5} chunks",
              s.name, r, i, refText(*ref), ir::bufferName(ref->buffer),
              bufferChunks(ref->buffer, rp)));
      if ((f & ir::OF_RS) && (f & ir::OF_WD) &&
          elems(r, op.src) != elems(r, op.dst))
        return sizeError(r, i,
                         llvm::formatv("src {0} has {1} elements but dst {2} "
                                       "has {3}",
                                       refText(op.src), elems(r, op.src),
                                       refText(op.dst), elems(r, op.dst)));
      for (const ir::LinTerm &term : op.terms)
        if (elems(r, term.src) != elems(r, op.dst))
          return sizeError(r, i,
                           llvm::formatv("term {0} has {1} elements but dst "
                                         "{2} has {3}",
                                         refText(term.src), elems(r, term.src),
                                         refText(op.dst), elems(r, op.dst)));
    }
  }
  return llvm::Error::success();
}

void RankRun::complete(ir::OpId id) {
  ++doneCount;
  for (ir::OpId n : succs[id])
    if (--predsLeft[n] == 0) {
      // Sends first: the wire (and the peer) waits for them, while compute
      // that is ready can run while they travel.
      if (relaxed && ir::sends(prog.ops[n].kind))
        ready.push_front(n);
      else
        ready.push_back(n);
    }
}

void RankRun::buildGraph(bool relax) {
  relaxed = relax;
  size_t nOps = prog.ops.size();
  predsLeft.assign(nOps, 0);
  succs.assign(nOps, {});
  auto waitFor = [&](ir::OpId id, llvm::ArrayRef<ir::OpId> preds) {
    predsLeft[size_t(id)] = static_cast<int32_t>(preds.size());
    for (ir::OpId p : preds)
      succs[p].push_back(id);
  };
  // Strict: an op waits for its deps and the previous op of its
  // threadblock (MSCCL's program order). Relaxed: Plan::dataPreds.
  if (!relax) {
    forEachProgramOrderPreds(prog, waitFor);
    return;
  }
  for (size_t i = 0; i < nOps; ++i)
    waitFor(static_cast<ir::OpId>(i), dataPreds[i]);
}

llvm::Error RankRun::execute(ir::OpId id, std::optional<RequestId> &sendReq) {
  const ir::Op &op = prog.ops[id];
  unsigned f = ir::opFlags(op.kind);
  auto send = [&](const char *buf, size_t bytes) -> llvm::Error {
    if (collectSends) {
      collectSends->push_back({buf, bytes, op.sendPeer, op.sendMsg});
      return llvm::Error::success();
    }
    auto req = tr.isend(buf, bytes, op.sendPeer, op.sendMsg);
    if (!req)
      return req.takeError();
    sendReq = *req;
    return llvm::Error::success();
  };
  if (f & ir::OF_RV) {
    char *msg = staging + stagingOffset[id];
    const ir::BufferRef &w = wireRef(op);
    size_t n = elems(w);
    if ((f & ir::OF_WD) && !(f & ir::OF_SN)) {
      // Nothing reads the staging slice afterwards: combine straight into
      // dst (one pass instead of combining in place and copying), unless
      // dst overlaps src at another offset.
      char *d = ptr(op.dst);
      size_t bytes = n * esz;
      const char *src = (f & ir::OF_RE) ? ptr(op.src) : nullptr;
      if (!src || src == d || src + bytes <= d || d + bytes <= src)
        return src ? tr.axpby(d, op.localCoeff, src, op.msgCoeff, msg, n, t)
                   : tr.scaleCopy(d, op.msgCoeff, msg, n, t);
    }
    if (f & ir::OF_RE) {
      if (auto err =
              tr.axpby(msg, op.localCoeff, ptr(op.src), op.msgCoeff, msg, n, t))
        return err;
    } else if (op.msgCoeff != 1.0) {
      if (auto err = tr.scaleCopy(msg, op.msgCoeff, msg, n, t))
        return err;
    }
    if (f & ir::OF_WD)
      if (auto err = tr.scaleCopy(ptr(op.dst), 1.0, msg, n, t))
        return err;
    if (f & ir::OF_SN)
      return send(msg, n * esz);
    return llvm::Error::success();
  }
  switch (op.kind) {
  case ir::OpKind::Send:
    return send(ptr(op.src), elems(op.src) * esz);
  case ir::OpKind::Copy:
    return tr.scaleCopy(ptr(op.dst), 1.0, ptr(op.src), elems(op.dst), t);
  case ir::OpKind::Reduce:
    return tr.axpby(ptr(op.dst), 1.0, ptr(op.dst), 1.0, ptr(op.src),
                    elems(op.dst), t);
  case ir::OpKind::LinComb: {
    std::vector<double> coeffs;
    std::vector<const void *> srcs;
    for (const ir::LinTerm &term : op.terms) {
      coeffs.push_back(term.coeff);
      srcs.push_back(ptr(term.src));
    }
    return tr.linComb(ptr(op.dst), coeffs, srcs, elems(op.dst), t);
  }
  default:
    break;
  }
  return llvm::Error::success();
}

llvm::Error RankRun::timeoutError(llvm::ArrayRef<ir::OpId> waitingRecv,
                                  llvm::ArrayRef<ir::OpId> waitingSend,
                                  size_t pendingForwards) const {
  std::string msg = llvm::formatv(
      "rank {0}: plan '{1}' made no progress for {2} s; waiting for:", rank,
      s.name, opts.timeoutSeconds);
  for (ir::OpId id : waitingRecv) {
    const ir::Op &op = prog.ops[id];
    msg += llvm::formatv("\n  message {0} from rank {1} (%{2} {3})",
                         op.recvMsg, op.recvPeer, id, ir::mnemonic(op.kind));
  }
  for (ir::OpId id : waitingSend) {
    const ir::Op &op = prog.ops[id];
    msg += llvm::formatv("\n  message {0} to rank {1} to be received (%{2} "
                         "{3})",
                         op.sendMsg, op.sendPeer, id, ir::mnemonic(op.kind));
  }
  if (pendingForwards)
    msg += llvm::formatv("\n  {0} forwarded message(s) to be received",
                         pendingForwards);
  msg += llvm::formatv("\n  ({0} of {1} ops done)", doneCount, prog.ops.size());
  return makeUserError(msg);
}

llvm::Error RankRun::run(const void *sendbuf, void *recvbuf, bool byRounds) {
  size_t nOps = prog.ops.size();
  base[static_cast<int>(ir::BufferKind::Input)] =
      const_cast<char *>(static_cast<const char *>(sendbuf));
  base[static_cast<int>(ir::BufferKind::Output)] = static_cast<char *>(recvbuf);
  size_t scratchBytes =
      offset(rank, ir::BufferKind::Scratch, prog.scratchChunks) * esz;
  // Neither the host cache nor the device workspace is cleared between
  // runs: a verified plan writes a scratch chunk before it reads it.
  auto scratch = runMemory(tr, 1, scratchCache, scratchBytes);
  if (!scratch)
    return scratch.takeError();
  base[static_cast<int>(ir::BufferKind::Scratch)] = *scratch;

  // Staging slices for every receiving op, then post every receive.
  stagingOffset.assign(nOps, 0);
  size_t total = 0;
  for (size_t i = 0; i < nOps; ++i)
    if (ir::receives(prog.ops[i].kind)) {
      stagingOffset[i] = total;
      // Keep slices 64-byte aligned for the vector kernels.
      total += (elems(wireRef(prog.ops[i])) * esz + 63) / 64 * 64;
    }
  auto stagingMemory = runMemory(tr, 0, stagingCache, total);
  if (!stagingMemory)
    return stagingMemory.takeError();
  staging = *stagingMemory;
  // Host transports in dataflow mode order a threadblock's ops only where
  // they touch the same memory; rounds and device streams keep its order.
  buildGraph(/*relax=*/!byRounds && !tr.deviceMemory() && !dataPreds.empty());
  if (auto err = byRounds ? runRounds() : runDataflow())
    return err;
  return tr.finish();
}

llvm::Error RankRun::runDataflow() {
  size_t nOps = prog.ops.size();
  recvReq.assign(nOps, std::nullopt);
  recvDone.assign(nOps, false);
  for (size_t i = 0; i < nOps; ++i) {
    const ir::Op &op = prog.ops[i];
    if (!ir::receives(op.kind))
      continue;
    auto req = tr.irecv(staging + stagingOffset[i],
                        elems(wireRef(op)) * esz, op.recvPeer, op.recvMsg);
    if (!req)
      return fail(req.takeError());
    recvReq[i] = *req;
  }

  for (size_t i = 0; i < nOps; ++i)
    if (predsLeft[i] == 0)
      ready.push_back(static_cast<ir::OpId>(i));

  std::vector<ir::OpId> waitingRecv, waitingSend;
  std::vector<RequestId> sendReqOf(nOps, -1);
  std::vector<RequestId> forwards; // sends from staging: done at the end
  std::vector<RequestId> reqs;
  while (doneCount < nOps) {
    while (!ready.empty()) {
      ir::OpId id = ready.front();
      ready.pop_front();
      const ir::Op &op = prog.ops[id];
      if (ir::receives(op.kind) && !recvDone[id]) {
        auto done = tr.test(*recvReq[id]);
        if (!done)
          return fail(done.takeError());
        if (!*done) {
          waitingRecv.push_back(id);
          continue;
        }
        recvDone[id] = true;
      }
      std::optional<RequestId> sendReq;
      if (auto err = execute(id, sendReq))
        return fail(std::move(err));
      if (op.kind == ir::OpKind::Send) {
        // The user buffer is in flight: done when the transport releases it.
        sendReqOf[id] = *sendReq;
        waitingSend.push_back(id);
        continue;
      }
      if (sendReq)
        forwards.push_back(*sendReq);
      complete(id);
      // Between compute ops, let messages that arrived meanwhile make
      // their receiving ops ready (and let MPI move data: it progresses
      // only inside its calls).
      if (relaxed && !waitingRecv.empty() && !ir::receives(op.kind)) {
        for (size_t k = 0; k < waitingRecv.size();) {
          ir::OpId w = waitingRecv[k];
          auto done = tr.test(*recvReq[w]);
          if (!done)
            return fail(done.takeError());
          if (!*done) {
            ++k;
            continue;
          }
          recvDone[w] = true;
          ready.push_front(w);
          waitingRecv.erase(waitingRecv.begin() + k);
        }
      }
    }
    if (doneCount == nOps)
      break;
    reqs.clear();
    for (ir::OpId id : waitingRecv)
      reqs.push_back(*recvReq[id]);
    for (ir::OpId id : waitingSend)
      reqs.push_back(sendReqOf[id]);
    if (reqs.empty())
      return fail(makeInternalError(llvm::formatv(
          "rank {0}: plan '{1}': no op can run but {2} of {3} are not done "
          "(a dependency cycle the verifier missed)",
          rank, s.name, nOps - doneCount, nOps)));
    auto which = tr.waitAny(reqs, opts.timeoutSeconds);
    if (!which)
      return fail(which.takeError());
    if (!*which)
      return fail(timeoutError(waitingRecv, waitingSend, forwards.size()));
    size_t k = **which;
    if (k < waitingRecv.size()) {
      ir::OpId id = waitingRecv[k];
      waitingRecv.erase(waitingRecv.begin() + k);
      recvDone[id] = true;
      ready.push_back(id);
    } else {
      k -= waitingRecv.size();
      ir::OpId id = waitingSend[k];
      waitingSend.erase(waitingSend.begin() + k);
      complete(id);
    }
  }
  while (!forwards.empty()) {
    auto which = tr.waitAny(forwards, opts.timeoutSeconds);
    if (!which)
      return fail(which.takeError());
    if (!*which)
      return fail(timeoutError({}, {}, forwards.size()));
    forwards.erase(forwards.begin() + **which);
  }
  return llvm::Error::success();
}

llvm::Error RankRun::runRounds() {
  size_t nOps = prog.ops.size();
  std::vector<std::vector<int32_t>> rounds = planRounds(s);
  int32_t maxRound = 0;
  for (const auto &rr : rounds)
    for (int32_t v : rr)
      maxRound = std::max(maxRound, v);
  // This rank's ops per round, in a topological order (Kahn over the local
  // edges computed in run(); a local predecessor never has a later round).
  std::vector<std::vector<ir::OpId>> opsAt(maxRound + 1), recvsAt(maxRound + 1);
  std::vector<int32_t> left = predsLeft;
  std::vector<ir::OpId> order;
  for (size_t i = 0; i < nOps; ++i)
    if (left[i] == 0)
      order.push_back(static_cast<ir::OpId>(i));
  for (size_t q = 0; q < order.size(); ++q)
    for (ir::OpId n : succs[order[q]])
      if (--left[n] == 0)
        order.push_back(n);
  for (ir::OpId id : order)
    opsAt[rounds[rank][id]].push_back(id);
  // A receive is posted in the round of its sending op.
  std::vector<ir::MsgEnds> ends = ir::indexMessages(s);
  for (size_t i = 0; i < nOps; ++i) {
    const ir::Op &op = prog.ops[i];
    if (!ir::receives(op.kind))
      continue;
    const ir::MsgEnds &e = ends[op.recvMsg];
    recvsAt[rounds[e.sender][e.sendOp]].push_back(static_cast<ir::OpId>(i));
  }
  std::vector<OutSend> sends;
  collectSends = &sends;
  std::vector<RequestId> reqs;
  std::vector<std::string> what; // per request, for the timeout message
  for (int32_t round = 0; round <= maxRound; ++round) {
    sends.clear();
    for (ir::OpId id : opsAt[round]) {
      std::optional<RequestId> unused;
      if (auto err = execute(id, unused))
        return fail(std::move(err));
      ++doneCount;
    }
    std::vector<ir::OpId> &recvs = recvsAt[round];
    if (recvs.empty() && sends.empty())
      continue;
    // Per peer in message-id order on both ends (NCCL pairs a group's
    // messages to one peer in issue order).
    llvm::sort(recvs, [&](ir::OpId a, ir::OpId b) {
      return std::make_pair(prog.ops[a].recvPeer, prog.ops[a].recvMsg) <
             std::make_pair(prog.ops[b].recvPeer, prog.ops[b].recvMsg);
    });
    llvm::sort(sends, [](const OutSend &a, const OutSend &b) {
      return std::make_pair(a.peer, a.msg) < std::make_pair(b.peer, b.msg);
    });
    reqs.clear();
    what.clear();
    if (auto err = tr.groupStart())
      return fail(std::move(err));
    for (ir::OpId id : recvs) {
      const ir::Op &op = prog.ops[id];
      auto req = tr.irecv(staging + stagingOffset[id],
                          elems(wireRef(op)) * esz, op.recvPeer, op.recvMsg);
      if (!req)
        return fail(req.takeError());
      reqs.push_back(*req);
      what.push_back(llvm::formatv("message {0} from rank {1} (%{2} {3})",
                                   op.recvMsg, op.recvPeer, id,
                                   ir::mnemonic(op.kind)));
    }
    for (const OutSend &o : sends) {
      auto req = tr.isend(o.buf, o.bytes, o.peer, o.msg);
      if (!req)
        return fail(req.takeError());
      reqs.push_back(*req);
      what.push_back(llvm::formatv("message {0} to rank {1} to be received",
                                   o.msg, o.peer));
    }
    if (auto err = tr.groupEnd())
      return fail(std::move(err));
    while (!reqs.empty()) {
      auto which = tr.waitAny(reqs, opts.timeoutSeconds);
      if (!which)
        return fail(which.takeError());
      if (!*which) {
        std::string msg = llvm::formatv(
            "rank {0}: plan '{1}' made no progress for {2} s in round {3} of "
            "{4}; waiting for:",
            rank, s.name, opts.timeoutSeconds, round, maxRound + 1);
        for (const std::string &w : what)
          msg += "\n  " + w;
        return fail(makeUserError(msg));
      }
      reqs.erase(reqs.begin() + **which);
      what.erase(what.begin() + **which);
    }
  }
  collectSends = nullptr;
  return llvm::Error::success();
}

} // namespace

llvm::Error Plan::run(const void *sendbuf, void *recvbuf, size_t count,
                      DType t, Transport &tr, const RunOptions &opts) const {
  if (!variantList.empty()) {
    // A plan set: the variant of the call's size runs the whole call (its
    // own header check and padding included).
    auto variant = select(count, t);
    if (!variant)
      return variant.takeError();
    return (*variant)->run(sendbuf, recvbuf, count, t, tr, opts);
  }
  const ir::Schedule &s = plan.schedule;
  if (opts.checkPeers) {
    RunHeader mine;
    mine.planHash = plan.contentHash;
    mine.count = count;
    mine.rank = tr.rank();
    mine.planRanks = s.numRanks;
    mine.dtype = static_cast<int32_t>(t);
    mine.inplace = s.inplace ? 1 : 0;
    std::strncpy(mine.planName, s.name.c_str(), sizeof(mine.planName) - 1);
    auto all = tr.allgatherHeader(mine, opts.timeoutSeconds);
    if (!all)
      return makeUserError(llvm::formatv("{0} (this rank: {1})",
                                         errorMessages(all.takeError()),
                                         describe(mine))
                               .str());
    if (all->size() != size_t(tr.size()) || (*all)[size_t(tr.rank())].missing())
      return makeInternalError(llvm::formatv(
          "rank {0}: the transport returned {1} run headers for {2} ranks",
          tr.rank(), all->size(), tr.size()));
    if (auto err = checkHeaders(*all, tr.rank(), tr.size(), opts.timeoutSeconds))
      return err;
  } else if (s.numRanks != tr.size()) {
    return makeUserError(llvm::formatv(
        "plan '{0}' is for {1} ranks but the job has {2}", s.name, s.numRanks,
        tr.size()));
  }
  auto layout = layoutFor(s, count);
  if (!layout)
    return layout.takeError();
  size_t esz = dtypeSize(t);
  int rank = tr.rank();
  if (s.inplace) {
    const char *in = static_cast<const char *>(sendbuf);
    const char *out = static_cast<const char *>(recvbuf);
    const char *want = nullptr;
    llvm::StringRef rule;
    switch (s.collective) {
    case ir::Collective::AllGather:
      want = out + size_t(rank) * count * esz;
      rule = "sendbuf == recvbuf + rank*count";
      break;
    case ir::Collective::ReduceScatter:
      // The input must sit at recvbuf - rank*count.
      want = out - size_t(rank) * count * esz;
      rule = "recvbuf == sendbuf + rank*count";
      break;
    default:
      want = out;
      rule = "sendbuf == recvbuf";
      break;
    }
    if (in != want)
      return makeUserError("plan '" + s.name + "' is in-place: it needs " +
                           rule + " (elements)");
  }
  RankRun rr(s, *layout, t, tr, opts, dataPredsOf(dataPreds, tr.rank()));
  rr.inferScratch();
  llvm::Error sizes = rr.checkSizes();
  if (!sizes)
    return rr.run(sendbuf, recvbuf, opts.rounds || tr.roundBased());
  size_t k = size_t(layout->chunksPerBlock);
  if (count % k == 0)
    return sizes;
  // Chunks of unequal size do not fit this plan (a coded plan combines
  // chunks element by element): run it on zero-padded copies whose count
  // is a multiple of the chunks per block, then copy the results back.
  llvm::consumeError(std::move(sizes));
  if (s.collective == ir::Collective::AllReduce && count > k) {
    // An all-reduce is element by element: run the largest multiple of k
    // on the caller's buffers as they are, and only the tail (fewer than k
    // elements) on padded copies, instead of copying everything twice.
    size_t head = count / k * k;
    RunOptions inner = opts;
    inner.checkPeers = false; // checked above for the whole count
    if (auto err = run(sendbuf, recvbuf, head, t, tr, inner))
      return err;
    return runPadded(static_cast<const char *>(sendbuf) + head * esz,
                     static_cast<char *>(recvbuf) + head * esz, count - head,
                     t, tr, inner, *layout);
  }
  return runPadded(sendbuf, recvbuf, count, t, tr, opts, *layout);
}

llvm::Error Plan::runPadded(const void *sendbuf, void *recvbuf, size_t count,
                            DType t, Transport &tr, const RunOptions &opts,
                            const BufferLayout &user) const {
  const ir::Schedule &s = plan.schedule;
  size_t k = size_t(user.chunksPerBlock);
  size_t padded = (count + k - 1) / k * k;
  auto layout = layoutFor(s, padded);
  if (!layout)
    return layout.takeError();
  RankRun rr(s, *layout, t, tr, opts, dataPredsOf(dataPreds, tr.rank()));
  rr.inferScratch();
  if (auto err = rr.checkSizes())
    return err;
  size_t esz = dtypeSize(t);
  // In place, one region holds every block (the input and the output are
  // views of it); out of place, two.
  size_t inBlocks = size_t(user.inputBlocks), outBlocks = size_t(user.outputBlocks);
  size_t inBytes = inBlocks * padded * esz, outBytes = outBlocks * padded * esz;
  if (s.inplace)
    inBytes = 0, outBytes = std::max(inBlocks, outBlocks) * padded * esz;
  char *pin = nullptr; // stays null in place (unused)
  if (inBytes) {
    auto w = runMemory(tr, 3, paddedInCache, inBytes);
    if (!w)
      return w.takeError();
    pin = *w;
  }
  auto w = runMemory(tr, 4, paddedOutCache, outBytes);
  if (!w)
    return w.takeError();
  char *pout = *w;
  // Only the padding of the input blocks must be zero (the copies below
  // fill the rest; a plan writes its output before reading it, as it must
  // for a caller's uninitialised recvbuf): in place every block of the one
  // region, out of place the input's.
  {
    char *p = s.inplace ? pout : pin;
    size_t blocks = s.inplace ? std::max(inBlocks, outBlocks) : inBlocks;
    for (size_t b = 0; b < blocks; ++b)
      if (auto err = tr.zero(p + (b * padded + count) * esz,
                             (padded - count) * esz))
        return err;
  }
  // Block b of a user buffer (count elements each) into block b of a padded
  // one (padded elements each), or back.
  auto copyBlocks = [&](char *dst, size_t dstStride, const char *src,
                        size_t srcStride, size_t blocks) -> llvm::Error {
    for (size_t b = 0; b < blocks; ++b)
      if (auto err = tr.scaleCopy(dst + b * dstStride * esz, 1.0,
                                  src + b * srcStride * esz, count, t))
        return err;
    return llvm::Error::success();
  };
  const char *in = static_cast<const char *>(sendbuf);
  char *out = static_cast<char *>(recvbuf);
  const char *pSend = pin;
  char *pRecv = pout;
  if (s.inplace) {
    // The whole user region starts at the lower of the two pointers; the
    // higher one is `offset` blocks into it (Plan::run checked the rule).
    const char *whole = std::min<const char *>(in, out);
    size_t blocks = std::max(inBlocks, outBlocks);
    if (auto err = copyBlocks(pout, padded, whole, count, blocks))
      return err;
    pSend = pout + size_t(in - whole) / (count * esz) * padded * esz;
    pRecv = pout + size_t(out - whole) / (count * esz) * padded * esz;
  } else if (auto err = copyBlocks(pin, padded, in, count, inBlocks)) {
    return err;
  }
  if (auto err = rr.run(pSend, pRecv, opts.rounds || tr.roundBased()))
    return err;
  if (auto err = copyBlocks(out, count, pRecv, padded, outBlocks))
    return err;
  return tr.finish();
}

} // namespace topocc::runtime
