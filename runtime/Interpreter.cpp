//===- runtime/Interpreter.cpp - Run one rank of a plan -------------------===//
//
// Execution model: a dependency counter per op (its deps plus the previous op
// of its threadblock). All receives are posted first, each into its own
// slice of a staging buffer, so a message may arrive at any time without
// touching user memory that earlier ops still read. A ready receiving op
// combines its staging slice in place (result = localCoeff*src +
// msgCoeff*msg), writes dst and forwards the staging slice (which nothing
// else touches). A plain `send` sends straight from user memory and
// completes when the transport releases the buffer.
//
//===----------------------------------------------------------------------===//

#include "runtime/Interpreter.h"

#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "support/Diagnostics.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <map>
#include <cstring>
#include <deque>
#include <mutex>

namespace topocc::runtime {

Transport::~Transport() = default;

llvm::Expected<BufferLayout> layoutFor(const ir::Schedule &s, size_t count) {
  BufferLayout l;
  l.count = count;
  switch (s.collective) {
  case ir::Collective::AllGather:
    l.outputBlocks = s.numRanks;
    break;
  case ir::Collective::ReduceScatter:
    l.inputBlocks = s.numRanks;
    break;
  case ir::Collective::AllToAll:
    l.inputBlocks = l.outputBlocks = s.numRanks;
    break;
  default:
    break;
  }
  int32_t blocks = std::max(l.inputBlocks, l.outputBlocks);
  if (blocks <= 0 || s.chunksPerLoop <= 0 || s.chunksPerLoop % blocks != 0)
    return makeUserError(llvm::formatv(
        "plan '{0}': a {1} over {2} ranks needs chunksPerLoop to be a "
        "multiple of {2}, got {3}",
        s.name, ir::collectiveName(s.collective), blocks, s.chunksPerLoop));
  l.chunksPerBlock = s.chunksPerLoop / blocks;
  return l;
}

llvm::Expected<Plan> Plan::load(llvm::StringRef path) {
  auto loaded = backends::loadPlanFile(path);
  if (!loaded)
    return loaded.takeError();
  Plan p;
  p.plan = std::move(*loaded);
  return p;
}

llvm::Expected<Plan> Plan::fromSchedule(ir::Schedule s,
                                        backends::PlanMeta meta) {
  if (auto err = ir::verifySchedule(s))
    return err;
  Plan p;
  p.plan.contentHash = backends::planContentHash(s);
  p.plan.schedule = std::move(s);
  p.plan.meta = std::move(meta);
  return p;
}

namespace {

std::string describe(const RunHeader &h) {
  return llvm::formatv("plan '{0}' {1} for {2} ranks ({3}), count {4}, {5}",
                       llvm::StringRef(h.planName,
                                       strnlen(h.planName, sizeof(h.planName))),
                       backends::formatHash(h.planHash), h.planRanks,
                       h.inplace ? "in-place" : "out-of-place", h.count,
                       dtypeName(static_cast<DType>(h.dtype)))
      .str();
}

/// The same message on every rank (each rank sees every header).
llvm::Error checkHeaders(llvm::ArrayRef<RunHeader> all, int worldSize) {
  bool same = true;
  for (const RunHeader &h : all)
    same &= h.planHash == all[0].planHash && h.count == all[0].count &&
            h.planRanks == all[0].planRanks && h.dtype == all[0].dtype &&
            h.inplace == all[0].inplace;
  if (!same) {
    std::string msg = "ranks disagree on the plan or the count (every rank "
                      "must load the same plan and pass the same count and "
                      "dtype):";
    for (size_t r = 0; r < all.size(); ++r) {
      const RunHeader &h = all[r];
      std::vector<std::string> diff;
      if (h.planHash != all[0].planHash)
        diff.push_back("plan");
      if (h.count != all[0].count)
        diff.push_back("count");
      if (h.dtype != all[0].dtype)
        diff.push_back("dtype");
      if (h.planRanks != all[0].planRanks)
        diff.push_back("ranks");
      if (h.inplace != all[0].inplace)
        diff.push_back("in-place");
      msg += llvm::formatv("\n  rank {0}: {1}", r, describe(h)).str();
      if (!diff.empty())
        msg += "  <- differs from rank 0 in " + llvm::join(diff, ", ");
    }
    return makeUserError(msg);
  }
  if (all[0].planRanks != worldSize)
    return makeUserError(llvm::formatv(
        "plan '{0}' is for {1} ranks but the job has {2}",
        llvm::StringRef(all[0].planName,
                        strnlen(all[0].planName, sizeof(all[0].planName))),
        all[0].planRanks, worldSize));
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

/// Per-thread staging storage, reused across runs (ranks in one process run
/// on different threads).
thread_local std::vector<char> stagingCache;

class RankRun {
public:
  RankRun(const ir::Schedule &s, const BufferLayout &l, DType t, Transport &tr,
          const RunOptions &opts)
      : s(s), l(l), t(t), esz(dtypeSize(t)), tr(tr), opts(opts),
        rank(tr.rank()), prog(s.ranks[rank]) {}

  llvm::Error checkSizes() const;
  llvm::Error run(const void *sendbuf, void *recvbuf);

private:
  size_t elems(const ir::BufferRef &r) const {
    return l.chunkOffset(int64_t(r.chunk) + r.count) - l.chunkOffset(r.chunk);
  }
  char *ptr(const ir::BufferRef &r) const {
    return base[static_cast<int>(r.buffer)] + l.chunkOffset(r.chunk) * esz;
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
  void complete(ir::OpId id);
  llvm::Error timeoutError(llvm::ArrayRef<ir::OpId> waitingRecv,
                           llvm::ArrayRef<ir::OpId> waitingSend,
                           size_t pendingForwards) const;
  llvm::Error fail(llvm::Error err) {
    // Receives may still land in the staging buffer: park it.
    std::lock_guard<std::mutex> lock(graveyardMutex);
    graveyard.push_back(std::move(stagingCache));
    stagingCache = {};
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

  char *base[3] = {nullptr, nullptr, nullptr};
  std::vector<char> scratch;
  std::vector<size_t> stagingOffset; ///< per op, bytes into stagingCache
  std::vector<int32_t> predsLeft;
  std::vector<std::vector<ir::OpId>> succs;
  std::vector<std::optional<RequestId>> recvReq;
  std::vector<bool> recvDone;
  std::deque<ir::OpId> ready;
  size_t doneCount = 0;
};

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
    if (elems(a) != elems(b))
      return sizeError(e.sender, e.sendOp,
                       llvm::formatv("message {0} is {1} ({2} elements) at "
                                     "the sender but {3} ({4} elements) at "
                                     "rank {5} %{6}",
                                     m, refText(a), elems(a), refText(b),
                                     elems(b), e.receiver, e.recvOp));
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
      if ((f & ir::OF_RS) && (f & ir::OF_WD) && elems(op.src) != elems(op.dst))
        return sizeError(r, i,
                         llvm::formatv("src {0} has {1} elements but dst {2} "
                                       "has {3}",
                                       refText(op.src), elems(op.src),
                                       refText(op.dst), elems(op.dst)));
      for (const ir::LinTerm &term : op.terms)
        if (elems(term.src) != elems(op.dst))
          return sizeError(r, i,
                           llvm::formatv("term {0} has {1} elements but dst "
                                         "{2} has {3}",
                                         refText(term.src), elems(term.src),
                                         refText(op.dst), elems(op.dst)));
    }
  }
  return llvm::Error::success();
}

void RankRun::complete(ir::OpId id) {
  ++doneCount;
  for (ir::OpId n : succs[id])
    if (--predsLeft[n] == 0)
      ready.push_back(n);
}

llvm::Error RankRun::execute(ir::OpId id, std::optional<RequestId> &sendReq) {
  const ir::Op &op = prog.ops[id];
  unsigned f = ir::opFlags(op.kind);
  if (f & ir::OF_RV) {
    char *msg = stagingCache.data() + stagingOffset[id];
    const ir::BufferRef &w = wireRef(op);
    size_t n = elems(w);
    if (f & ir::OF_RE)
      axpby(msg, op.localCoeff, ptr(op.src), op.msgCoeff, msg, n, t);
    else if (op.msgCoeff != 1.0)
      scaleCopy(msg, op.msgCoeff, msg, n, t);
    if (f & ir::OF_WD)
      scaleCopy(ptr(op.dst), 1.0, msg, n, t);
    if (f & ir::OF_SN) {
      auto req = tr.isend(msg, n * esz, op.sendPeer, op.sendMsg);
      if (!req)
        return req.takeError();
      sendReq = *req;
    }
    return llvm::Error::success();
  }
  switch (op.kind) {
  case ir::OpKind::Send: {
    auto req =
        tr.isend(ptr(op.src), elems(op.src) * esz, op.sendPeer, op.sendMsg);
    if (!req)
      return req.takeError();
    sendReq = *req;
    break;
  }
  case ir::OpKind::Copy:
    scaleCopy(ptr(op.dst), 1.0, ptr(op.src), elems(op.dst), t);
    break;
  case ir::OpKind::Reduce:
    axpby(ptr(op.dst), 1.0, ptr(op.dst), 1.0, ptr(op.src), elems(op.dst), t);
    break;
  case ir::OpKind::LinComb: {
    // Sources may overlap dst: accumulate into a temporary first.
    size_t n = elems(op.dst);
    std::vector<char> acc(n * esz);
    scaleCopy(acc.data(), op.terms[0].coeff, ptr(op.terms[0].src), n, t);
    for (size_t i = 1; i < op.terms.size(); ++i)
      axpby(acc.data(), 1.0, acc.data(), op.terms[i].coeff,
            ptr(op.terms[i].src), n, t);
    scaleCopy(ptr(op.dst), 1.0, acc.data(), n, t);
    break;
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

llvm::Error RankRun::run(const void *sendbuf, void *recvbuf) {
  size_t nOps = prog.ops.size();
  // Dependencies: deps plus program order inside a threadblock.
  predsLeft.assign(nOps, 0);
  succs.assign(nOps, {});
  std::map<ir::TbId, ir::OpId> lastOfTb;
  for (size_t i = 0; i < nOps; ++i) {
    const ir::Op &op = prog.ops[i];
    std::vector<ir::OpId> preds = op.deps;
    if (op.threadblock != ir::kNone) {
      auto it = lastOfTb.find(op.threadblock);
      if (it != lastOfTb.end())
        preds.push_back(it->second);
      lastOfTb[op.threadblock] = static_cast<ir::OpId>(i);
    }
    llvm::sort(preds);
    preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
    predsLeft[i] = static_cast<int32_t>(preds.size());
    for (ir::OpId p : preds)
      succs[p].push_back(static_cast<ir::OpId>(i));
  }

  base[static_cast<int>(ir::BufferKind::Input)] =
      const_cast<char *>(static_cast<const char *>(sendbuf));
  base[static_cast<int>(ir::BufferKind::Output)] = static_cast<char *>(recvbuf);
  scratch.assign(size_t(l.chunkOffset(prog.scratchChunks)) * esz, 0);
  base[static_cast<int>(ir::BufferKind::Scratch)] = scratch.data();

  // Staging slices for every receiving op, then post every receive.
  stagingOffset.assign(nOps, 0);
  size_t total = 0;
  for (size_t i = 0; i < nOps; ++i)
    if (ir::receives(prog.ops[i].kind)) {
      stagingOffset[i] = total;
      // Keep slices 64-byte aligned for the vector kernels.
      total += (elems(wireRef(prog.ops[i])) * esz + 63) / 64 * 64;
    }
  if (stagingCache.size() < total)
    stagingCache.resize(total);
  recvReq.assign(nOps, std::nullopt);
  recvDone.assign(nOps, false);
  for (size_t i = 0; i < nOps; ++i) {
    const ir::Op &op = prog.ops[i];
    if (!ir::receives(op.kind))
      continue;
    auto req = tr.irecv(stagingCache.data() + stagingOffset[i],
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

} // namespace

llvm::Error Plan::run(const void *sendbuf, void *recvbuf, size_t count,
                      DType t, Transport &tr, const RunOptions &opts) const {
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
    auto all = tr.allgatherHeader(mine);
    if (!all)
      return all.takeError();
    if (auto err = checkHeaders(*all, tr.size()))
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
  RankRun rr(s, *layout, t, tr, opts);
  if (auto err = rr.checkSizes())
    return err;
  return rr.run(sendbuf, recvbuf);
}

} // namespace topocc::runtime
