//===- ir/Verifier.cpp - Structure, matching and deadlock freedom ---------===//
//
// The checks run in phases; a phase runs only when the ones it relies on
// found nothing:
//
//   1. header and per-op structure (operands, ranges, peers, deps) and
//      message matching: every later phase indexes with these values;
//   2. stage invariants (channels, threadblocks, legalized dependencies) and
//      FIFO order: reported, but they do not stop the graph checks;
//   3. deadlock freedom: Kahn's algorithm on the combined graph
//      (ir/CombinedGraph.h); a leftover node leads to one cycle, printed;
//   4. data races, over the topological order of phase 3 (see checkRaces);
//   5. semantics: the postcondition (only when nothing else was found,
//      since a race makes the result order-specific), on fingerprints for
//      exact schedules (ir/Fingerprint.h), else by symbolic execution.
//
// Decisions documented in docs/ScheduleIR.md: before ThreadblocksAssigned
// channel and threadblock fields are not checked; from Legalized on a
// dependency on an earlier op of the same threadblock is rejected as
// redundant (program order already orders it, and MSCCL forbids a block
// depending on itself), and the MSCCL nop rules apply.
//
//===----------------------------------------------------------------------===//

#include "ir/Verifier.h"

#include "ir/CombinedGraph.h"
#include "ir/Fingerprint.h"
#include "ir/Printer.h"
#include "ir/PrinterUtil.h"
#include "ir/Semantics.h"
#include "support/Diagnostics.h"
#include "support/Progress.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

namespace topocc::ir {

int64_t verifiedSlots(const Schedule &s) {
  int64_t nominal =
      std::max<int64_t>(s.nominalInputChunks(), s.nominalOutputChunks());
  int64_t slots = 0;
  for (const RankProgram &rp : s.ranks)
    slots += std::max<int64_t>(rp.inputChunks, nominal) +
             std::max<int64_t>(rp.outputChunks, nominal) +
             std::max<int64_t>(rp.scratchChunks, 0);
  return slots;
}

namespace {

std::string refString(const BufferRef &b) {
  std::string out;
  llvm::raw_string_ostream os(out);
  printBufferRef(b, os);
  os.flush();
  return out;
}

llvm::StringRef bufferLongName(BufferKind b) {
  switch (b) {
  case BufferKind::Input:
    return "input";
  case BufferKind::Output:
    return "output";
  case BufferKind::Scratch:
    return "scratch";
  }
  return "invalid";
}

class Verifier {
public:
  Verifier(const Schedule &s, const VerifyOptions &opts) : s(s), opts(opts) {}
  std::vector<VerifyProblem> run();

private:
  const Schedule &s;
  const VerifyOptions &opts;
  std::vector<VerifyProblem> problems;
  /// Set when more problems were found than maxProblems allows.
  bool truncated = false;

  void report(RankId r, OpId op, std::string msg) {
    if (problems.size() >= opts.maxProblems) {
      truncated = true;
      return;
    }
    problems.push_back({r, op, std::move(msg)});
  }
  bool full() const { return problems.size() >= opts.maxProblems; }

  bool checkHeader();
  void checkOp(RankId r, OpId i);
  void checkOperand(RankId r, OpId i, const BufferRef &b, bool writes,
                    llvm::StringRef role);
  void checkMessages();
  void checkStage();
  void checkFifo();
  /// Returns the topological order, or nothing after reporting a cycle.
  bool checkDeadlock(const CombinedGraph &g, std::vector<uint32_t> &order);
  void checkRaces(const CombinedGraph &g, const std::vector<uint32_t> &order);
  void checkSemantics(const CombinedGraph &g,
                      const std::vector<uint32_t> &order);

  int32_t bufferSize(RankId r, BufferKind b) const {
    const RankProgram &rp = s.ranks[r];
    switch (b) {
    case BufferKind::Input:
      return rp.inputChunks;
    case BufferKind::Output:
      return rp.outputChunks;
    case BufferKind::Scratch:
      return rp.scratchChunks;
    }
    return 0;
  }
};

bool Verifier::checkHeader() {
  if (s.numRanks < 1) {
    report(kNone, kNone, "schedule has no ranks");
    return false;
  }
  if (static_cast<size_t>(s.numRanks) != s.ranks.size()) {
    report(kNone, kNone,
           llvm::formatv("ranks={0} but the schedule has {1} rank programs",
                         s.numRanks, s.ranks.size()));
    return false;
  }
  if (s.chunksPerLoop < 1) {
    report(kNone, kNone, "chunks must be at least 1");
    return false;
  }
  bool perRank = s.collective == Collective::AllGather ||
                 s.collective == Collective::ReduceScatter ||
                 s.collective == Collective::AllToAll;
  if (perRank && s.chunksPerLoop % s.numRanks != 0)
    report(kNone, kNone,
           llvm::formatv("chunks={0} is not a multiple of ranks={1}, as {2} "
                         "requires",
                         s.chunksPerLoop, s.numRanks,
                         collectiveName(s.collective)));
  bool rooted = s.collective == Collective::Broadcast ||
                s.collective == Collective::Reduce;
  if (rooted && (s.root < 0 || s.root >= s.numRanks))
    report(kNone, kNone,
           llvm::formatv("{0} needs a root in [0, {1}), got {2}",
                         collectiveName(s.collective), s.numRanks, s.root));
  if (!rooted && s.root != kNone)
    report(kNone, kNone,
           llvm::formatv("{0} has no root, but root={1}",
                         collectiveName(s.collective), s.root));
  if (s.stage >= Stage::ChannelsAssigned && s.numChannels < 1)
    report(kNone, kNone,
           llvm::formatv("stage {0} needs channels >= 1", stageName(s.stage)));
  for (RankId r = 0; r < s.numRanks; ++r) {
    const RankProgram &rp = s.ranks[r];
    for (BufferKind b :
         {BufferKind::Input, BufferKind::Output, BufferKind::Scratch})
      if (bufferSize(r, b) < 0)
        report(r, kNone,
               llvm::formatv("negative {0} buffer size", bufferLongName(b)));
    if (s.stage >= Stage::Legalized) {
      // MSCCL rule 10: i_chunks/o_chunks are nominal, or 0 when unused.
      if (rp.inputChunks != 0 && rp.inputChunks != s.nominalInputChunks())
        report(r, kNone,
               llvm::formatv("input buffer has {0} chunks; {1} requires {2} "
                             "(or 0 when unused)",
                             rp.inputChunks, collectiveName(s.collective),
                             s.nominalInputChunks()));
      if (rp.outputChunks != 0 && rp.outputChunks != s.nominalOutputChunks())
        report(r, kNone,
               llvm::formatv("output buffer has {0} chunks; {1} requires {2} "
                             "(or 0 when unused)",
                             rp.outputChunks, collectiveName(s.collective),
                             s.nominalOutputChunks()));
    }
  }
  if (!problems.empty())
    return false;
  // The race check and the semantics keep state per chunk slot (inputs and
  // outputs at least nominal): a damaged or hostile header must get an error,
  // not an allocation of its size. (The other checks keep none.)
  int64_t slots = verifiedSlots(s);
  if ((opts.checkRaces || opts.checkSemantics) && slots > kMaxVerifiedSlots) {
    report(kNone, kNone,
           llvm::formatv("the buffers declare {0} chunks over all ranks; the "
                         "verifier checks schedules of at most {1}",
                         slots, kMaxVerifiedSlots));
    return false;
  }
  return true;
}

void Verifier::checkOperand(RankId r, OpId i, const BufferRef &b, bool writes,
                            llvm::StringRef role) {
  llvm::StringRef verb = writes ? "writes" : "reads";
  if (static_cast<unsigned>(b.buffer) > 2) {
    report(r, i, llvm::formatv("{0} operand has an invalid buffer", role));
    return;
  }
  if (b.count < 1) {
    report(r, i,
           llvm::formatv("{0} {1} {2}: a used operand needs at least one "
                         "chunk",
                         mnemonic(s.ranks[r].ops[i].kind), role, refString(b)));
    return;
  }
  int32_t size = bufferSize(r, b.buffer);
  if (b.chunk < 0)
    report(r, i,
           llvm::formatv("{0} {1} before the start of the {2} buffer", verb,
                         refString(b), bufferLongName(b.buffer)));
  else if (int64_t(b.chunk) + b.count > size)
    report(r, i,
           llvm::formatv("{0} {1} past the {2} buffer ({3} chunks)", verb,
                         refString(b), bufferLongName(b.buffer), size));
}

void Verifier::checkOp(RankId r, OpId i) {
  const std::vector<Op> &ops = s.ranks[r].ops;
  const Op &op = ops[i];
  if (static_cast<unsigned>(op.kind) >= kNumOpKinds) {
    report(
        r, i,
        llvm::formatv("invalid op kind {0}", static_cast<unsigned>(op.kind)));
    return;
  }
  unsigned f = opFlags(op.kind);
  llvm::StringRef m = mnemonic(op.kind);
  bool srcUsed = (f & OF_RS) && !(f & OF_LC);
  if (srcUsed)
    checkOperand(r, i, op.src, false, "source");
  else if (op.src != BufferRef())
    report(r, i,
           llvm::formatv("{0} reads no source, but has src={1}", m,
                         refString(op.src)));
  if (f & OF_WD)
    checkOperand(r, i, op.dst, true, "destination");
  else if (op.dst != BufferRef())
    report(r, i,
           llvm::formatv("{0} writes no destination, but has dst={1}", m,
                         refString(op.dst)));
  if (f & OF_LC) {
    if (op.terms.empty())
      report(r, i, "lincomb has no terms");
    for (const LinTerm &t : op.terms) {
      checkOperand(r, i, t.src, false, "term");
      if (!std::isfinite(t.coeff))
        report(r, i,
               "lincomb coefficient " + formatDouble(t.coeff) +
                   " is not finite");
      if (t.src.count != op.dst.count)
        report(r, i,
               llvm::formatv("lincomb term {0} has {1} chunks but the "
                             "destination has {2}",
                             refString(t.src), t.src.count, op.dst.count));
    }
  } else if (!op.terms.empty()) {
    report(r, i, llvm::formatv("{0} takes no lincomb terms", m));
  }
  if (srcUsed && (f & OF_WD) && op.src.count != op.dst.count)
    report(r, i,
           llvm::formatv("source {0} and destination {1} have different "
                         "counts",
                         refString(op.src), refString(op.dst)));

  auto checkPeer = [&](bool uses, RankId peer, MsgId msg, llvm::StringRef dir,
                       llvm::StringRef verb) {
    if (!uses) {
      if (peer != kNone || msg != kNone)
        report(r, i,
               llvm::formatv("{0} does not {1}, but has a {2} peer or message",
                             m, verb, dir));
      return;
    }
    if (peer < 0 || peer >= s.numRanks)
      report(r, i,
             llvm::formatv("{0} peer r{1} is out of range ({2} ranks)", dir,
                           peer, s.numRanks));
    else if (peer == r)
      report(r, i, llvm::formatv("{0} peer is the op's own rank", dir));
    if (msg < 0)
      report(r, i, llvm::formatv("{0} has no {1} message id", m, dir));
  };
  checkPeer(f & OF_SN, op.sendPeer, op.sendMsg, "send", "send");
  checkPeer(f & OF_RV, op.recvPeer, op.recvMsg, "receive", "receive");

  if (!std::isfinite(op.localCoeff) || !std::isfinite(op.msgCoeff))
    report(r, i, "coefficient is not finite");
  if (op.localCoeff != 1.0 && !(f & OF_RE))
    report(r, i,
           llvm::formatv("{0} combines nothing locally, but has lc={1}", m,
                         formatDouble(op.localCoeff)));
  if (op.msgCoeff != 1.0 && !(f & OF_RV))
    report(r, i,
           llvm::formatv("{0} receives nothing, but has mc={1}", m,
                         formatDouble(op.msgCoeff)));

  llvm::SmallDenseSet<OpId, 8> seen;
  for (OpId d : op.deps) {
    if (d < 0 || static_cast<size_t>(d) >= ops.size())
      report(r, i,
             llvm::formatv("depends on %{0}, which does not exist ({1} ops)", d,
                           ops.size()));
    else if (d == i)
      report(r, i, "depends on itself");
    else if (!seen.insert(d).second)
      report(r, i, llvm::formatv("lists dependency %{0} twice", d));
  }
}

void Verifier::checkMessages() {
  size_t totalOps = 0;
  for (const RankProgram &rp : s.ranks)
    totalOps += rp.ops.size();
  MsgId n = s.numMessages();
  if (static_cast<size_t>(n) > 2 * totalOps + 16) {
    report(kNone, kNone,
           llvm::formatv("message id {0} is far beyond the {1} ops of the "
                         "schedule; message ids must be dense",
                         n - 1, totalOps));
    return;
  }
  struct End {
    RankId rank = kNone;
    OpId op = kNone;
  };
  std::vector<End> senders(n), receivers(n);
  for (RankId r = 0; r < s.numRanks; ++r) {
    const std::vector<Op> &ops = s.ranks[r].ops;
    for (OpId i = 0; i < static_cast<OpId>(ops.size()); ++i) {
      const Op &op = ops[i];
      if (op.sendMsg >= 0) {
        End &e = senders[op.sendMsg];
        if (e.rank != kNone)
          report(r, i,
                 llvm::formatv("message {0} is also sent by rank {1} %{2}",
                               op.sendMsg, e.rank, e.op));
        else
          e = {r, i};
      }
      if (op.recvMsg >= 0) {
        End &e = receivers[op.recvMsg];
        if (e.rank != kNone)
          report(r, i,
                 llvm::formatv("message {0} is also received by rank {1} "
                               "%{2}",
                               op.recvMsg, e.rank, e.op));
        else
          e = {r, i};
      }
    }
  }
  for (MsgId m = 0; m < n; ++m) {
    End snd = senders[m], rcv = receivers[m];
    if (snd.rank == kNone && rcv.rank == kNone)
      continue; // an unused id
    if (rcv.rank == kNone) {
      report(snd.rank, snd.op,
             llvm::formatv("message {0} has no receiving op", m));
      continue;
    }
    if (snd.rank == kNone) {
      report(rcv.rank, rcv.op,
             llvm::formatv("message {0} has no sending op", m));
      continue;
    }
    const Op &so = s.ranks[snd.rank].ops[snd.op];
    const Op &ro = s.ranks[rcv.rank].ops[rcv.op];
    if (so.sendPeer != rcv.rank)
      report(snd.rank, snd.op,
             llvm::formatv("sends message {0} to r{1}, but rank {2} %{3} "
                           "receives it",
                           m, so.sendPeer, rcv.rank, rcv.op));
    if (ro.recvPeer != snd.rank)
      report(rcv.rank, rcv.op,
             llvm::formatv("receives message {0} from r{1}, but rank {2} "
                           "%{3} sends it",
                           m, ro.recvPeer, snd.rank, snd.op));
    if (so.wireCount() != ro.wireCount())
      report(rcv.rank, rcv.op,
             llvm::formatv("receives {0} chunks in message {1}, but rank {2} "
                           "%{3} sends {4}",
                           ro.wireCount(), m, snd.rank, snd.op,
                           so.wireCount()));
    auto validChannel = [&](ChannelId c) {
      return c >= 0 && c < s.numChannels;
    };
    if (s.stage >= Stage::ChannelsAssigned && so.channel != ro.channel &&
        validChannel(so.channel) && validChannel(ro.channel))
      report(rcv.rank, rcv.op,
             llvm::formatv("receives message {0} on channel {1}, but rank {2} "
                           "%{3} sends it on channel {4}",
                           m, ro.channel, snd.rank, snd.op, so.channel));
  }
}

void Verifier::checkStage() {
  if (s.stage < Stage::ChannelsAssigned)
    return;
  for (RankId r = 0; r < s.numRanks; ++r) {
    const std::vector<Op> &ops = s.ranks[r].ops;
    for (OpId i = 0; i < static_cast<OpId>(ops.size()); ++i) {
      const Op &op = ops[i];
      bool wire = opFlags(op.kind) & (OF_SN | OF_RV);
      if (wire && op.channel == kNone)
        report(r, i, "has no channel");
      else if (op.channel != kNone &&
               (op.channel < 0 || op.channel >= s.numChannels))
        report(r, i,
               llvm::formatv("channel {0} is out of range ({1} channels)",
                             op.channel, s.numChannels));
    }
  }
  if (s.stage < Stage::ThreadblocksAssigned)
    return;

  for (RankId r = 0; r < s.numRanks; ++r) {
    const std::vector<Op> &ops = s.ranks[r].ops;
    struct TbInfo {
      OpId channelOp = kNone, sendOp = kNone, recvOp = kNone;
    };
    std::map<TbId, TbInfo> tbs;
    // (channel, peer) -> the threadblock that owns that connection.
    std::map<std::pair<ChannelId, RankId>, std::pair<TbId, OpId>> sendConn,
        recvConn;
    for (OpId i = 0; i < static_cast<OpId>(ops.size()); ++i) {
      const Op &op = ops[i];
      if (op.threadblock < 0) {
        report(r, i, "has no threadblock");
        continue;
      }
      TbInfo &tb = tbs[op.threadblock];
      if (op.channel != kNone) {
        if (tb.channelOp == kNone)
          tb.channelOp = i;
        else if (ops[tb.channelOp].channel != op.channel)
          report(r, i,
                 llvm::formatv("threadblock {0} uses channel {1} here but "
                               "channel {2} at %{3}",
                               op.threadblock, op.channel,
                               ops[tb.channelOp].channel, tb.channelOp));
      }
      unsigned f = opFlags(op.kind);
      if ((f & OF_SN) && op.sendPeer != kNone) {
        if (tb.sendOp == kNone)
          tb.sendOp = i;
        else if (ops[tb.sendOp].sendPeer != op.sendPeer)
          report(r, i,
                 llvm::formatv("threadblock {0} sends to r{1} here but to "
                               "r{2} at %{3} (one send peer per threadblock)",
                               op.threadblock, op.sendPeer,
                               ops[tb.sendOp].sendPeer, tb.sendOp));
        auto [it, inserted] =
            sendConn.try_emplace({op.channel, op.sendPeer}, op.threadblock, i);
        if (!inserted && it->second.first != op.threadblock)
          report(r, i,
                 llvm::formatv("threadblocks {0} and {1} both send to r{2} "
                               "on channel {3} (see %{4})",
                               it->second.first, op.threadblock, op.sendPeer,
                               op.channel, it->second.second));
      }
      if ((f & OF_RV) && op.recvPeer != kNone) {
        if (tb.recvOp == kNone)
          tb.recvOp = i;
        else if (ops[tb.recvOp].recvPeer != op.recvPeer)
          report(r, i,
                 llvm::formatv("threadblock {0} receives from r{1} here but "
                               "from r{2} at %{3} (one receive peer per "
                               "threadblock)",
                               op.threadblock, op.recvPeer,
                               ops[tb.recvOp].recvPeer, tb.recvOp));
        auto [it, inserted] =
            recvConn.try_emplace({op.channel, op.recvPeer}, op.threadblock, i);
        if (!inserted && it->second.first != op.threadblock)
          report(r, i,
                 llvm::formatv("threadblocks {0} and {1} both receive from "
                               "r{2} on channel {3} (see %{4})",
                               it->second.first, op.threadblock, op.recvPeer,
                               op.channel, it->second.second));
      }
    }
    if (s.stage < Stage::Legalized)
      continue;

    // Threadblock ids are dense from 0 (MSCCL: "thread block %d is missing").
    TbId expect = 0;
    for (auto &[tb, info] : tbs) {
      if (tb != expect) {
        report(r, kNone,
               llvm::formatv("threadblock ids are not dense: {0} is unused "
                             "but {1} is used",
                             expect, tb));
        break;
      }
      ++expect;
    }

    // Legalized dependencies.
    std::vector<int32_t> posInTb(ops.size(), 0);
    for (OpId i = 0; i < static_cast<OpId>(ops.size()); ++i) {
      const Op &op = ops[i];
      if (op.threadblock < 0)
        continue;
      int cross = 0;
      for (OpId d : op.deps) {
        if (d < 0 || static_cast<size_t>(d) >= ops.size())
          continue;
        const Op &dop = ops[d];
        if (dop.threadblock == op.threadblock) {
          if (d < i)
            report(r, i,
                   llvm::formatv("redundant dependency on %{0} of the same "
                                 "threadblock {1}",
                                 d, op.threadblock));
          continue;
        }
        ++cross;
        if (dop.kind == OpKind::Nop)
          report(r, i,
                 llvm::formatv("depends on %{0}, a nop (a nop never "
                               "publishes progress)",
                               d));
      }
      if (cross > 1)
        report(r, i,
               llvm::formatv("has {0} dependencies on other threadblocks; "
                             "after legalization at most one (carry the "
                             "others on preceding nops)",
                             cross));
      if (op.kind == OpKind::Nop && op.deps.size() != 1)
        report(r, i,
               llvm::formatv("nop must carry exactly one dependency, has {0}",
                             op.deps.size()));
    }
    // The nop chain rule: the op after a run of nops carries a dependency
    // itself, and a run of nops may not end a threadblock.
    std::map<TbId, OpId> pendingNop; // tb -> first nop of the current run
    for (OpId i = 0; i < static_cast<OpId>(ops.size()); ++i) {
      const Op &op = ops[i];
      if (op.threadblock < 0)
        continue;
      if (op.kind == OpKind::Nop) {
        pendingNop.try_emplace(op.threadblock, i);
        continue;
      }
      auto it = pendingNop.find(op.threadblock);
      if (it == pendingNop.end())
        continue;
      bool hasCross = llvm::any_of(op.deps, [&](OpId d) {
        return d >= 0 && static_cast<size_t>(d) < ops.size() &&
               ops[d].threadblock != op.threadblock;
      });
      if (!hasCross)
        report(r, i,
               llvm::formatv("follows nop %{0} but carries no dependency "
                             "itself (MSCCL folds the nops' waits into this "
                             "op only when it has one)",
                             it->second));
      pendingNop.erase(it);
    }
    for (auto &[tb, nop] : pendingNop)
      report(r, nop,
             llvm::formatv("nop at the end of threadblock {0}: MSCCL drops "
                           "it with its wait",
                           tb));
  }
}

void Verifier::checkFifo() {
  if (s.stage < Stage::ThreadblocksAssigned)
    return;
  struct End {
    MsgId msg;
    RankId rank;
    OpId op;
  };
  using Key = std::tuple<RankId, RankId, ChannelId>; // sender, receiver, chan
  std::map<Key, std::vector<End>> sends, recvs;
  for (RankId r = 0; r < s.numRanks; ++r) {
    const std::vector<Op> &ops = s.ranks[r].ops;
    for (OpId i = 0; i < static_cast<OpId>(ops.size()); ++i) {
      const Op &op = ops[i];
      unsigned f = opFlags(op.kind);
      if ((f & OF_SN) && op.sendPeer >= 0)
        sends[{r, op.sendPeer, op.channel}].push_back({op.sendMsg, r, i});
      if ((f & OF_RV) && op.recvPeer >= 0)
        recvs[{op.recvPeer, r, op.channel}].push_back({op.recvMsg, r, i});
    }
  }
  for (auto &[key, rv] : recvs) {
    auto it = sends.find(key);
    if (it == sends.end())
      continue; // unmatched: reported by checkMessages
    const std::vector<End> &sv = it->second;
    for (size_t k = 0; k < rv.size() && k < sv.size(); ++k) {
      if (rv[k].msg == sv[k].msg)
        continue;
      report(rv[k].rank, rv[k].op,
             llvm::formatv("FIFO order: receives message {0} as number {1} "
                           "from r{2} on channel {3}, but rank {2} sends "
                           "message {4} (%{5}) as number {1}",
                           rv[k].msg, k, std::get<0>(key), std::get<2>(key),
                           sv[k].msg, sv[k].op));
      break;
    }
  }
}

bool Verifier::checkDeadlock(const CombinedGraph &g,
                             std::vector<uint32_t> &order) {
  if (topologicalOrder(g, order))
    return true;
  std::vector<uint32_t> cycle = findCycle(g, order);
  std::string text = "dependency cycle (deadlock):";
  llvm::raw_string_ostream os(text);
  for (uint32_t v : cycle) {
    RankId r = g.rankOf(v);
    OpId i = g.opOf(v);
    os << "\n    rank " << r << ": ";
    printOp(s.ranks[r].ops[i], i, os);
  }
  os.flush();
  RankId r0 = cycle.empty() ? kNone : g.rankOf(cycle.front());
  OpId i0 = cycle.empty() ? kNone : g.opOf(cycle.front());
  report(r0, i0, text);
  return false;
}

namespace {
/// Threadblock clocks of one rank (Verifier::checkRaces): for each of the
/// rank's ops v and each of its threadblocks t, 1 + the position in t's
/// program of the latest op of t from which a path along the rank's own
/// edges (program order and dependencies) reaches v; 0 when none does.
/// Op u of threadblock t then reaches v when clock(v, t) > position(u): u
/// precedes that op in t's program. Ops without a threadblock belong to no
/// clock (their queries take the search).
class RankClocks {
public:
  /// Clocks take rank ops x threadblocks entries; a rank above this takes
  /// the search for every pair instead (no schedule topocc builds comes
  /// near: 1024-rank tori hold 1560 ops and 50 threadblocks per rank).
  static constexpr size_t kMaxEntries = size_t(1) << 24;
  static constexpr uint32_t kNo = UINT32_MAX;

  /// Clocks of rank `r`, whose nodes `rankOrder` lists in topological
  /// order; none (every query false) unless the schedule is in program
  /// order.
  void build(const Schedule &s, const CombinedGraph &g, RankId r,
             llvm::ArrayRef<uint32_t> rankOrder) {
    base = g.rankBase[r];
    width = 0;
    const std::vector<Op> &ops = s.ranks[r].ops;
    if (s.stage < Stage::ThreadblocksAssigned)
      return;
    chainOf.assign(ops.size(), kNo);
    posOf.assign(ops.size(), 0);
    llvm::DenseMap<TbId, uint32_t> chainIndex;
    std::vector<uint32_t> length;
    for (size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].threadblock == kNone)
        continue;
      auto [it, inserted] = chainIndex.try_emplace(
          ops[i].threadblock, static_cast<uint32_t>(length.size()));
      if (inserted)
        length.push_back(0);
      chainOf[i] = it->second;
      posOf[i] = length[it->second]++;
    }
    if (length.empty() || ops.size() > kMaxEntries / length.size())
      return;
    width = static_cast<uint32_t>(length.size());
    clock.assign(ops.size() * width, 0);
    const uint32_t hi = base + static_cast<uint32_t>(ops.size());
    for (uint32_t v : rankOrder) {
      uint32_t *row = &clock[size_t(v - base) * width];
      for (uint32_t e = g.predStart[v]; e < g.predStart[v + 1]; ++e) {
        uint32_t p = g.pred[e];
        if (p < base || p >= hi)
          continue;
        const uint32_t *prow = &clock[size_t(p - base) * width];
        for (uint32_t t = 0; t < width; ++t)
          row[t] = std::max(row[t], prow[t]);
        if (uint32_t c = chainOf[p - base]; c != kNo)
          row[c] = std::max(row[c], posOf[p - base] + 1);
      }
    }
  }

  /// Whether the clocks show that node `u` reaches node `v` (both of this
  /// rank, u != v); false also when they cannot tell.
  bool reaches(uint32_t u, uint32_t v) const {
    if (width == 0 || u < base || v < base)
      return false;
    uint32_t c = chainOf[u - base];
    return c != kNo && clock[size_t(v - base) * width + c] > posOf[u - base];
  }

private:
  uint32_t base = 0, width = 0;
  std::vector<uint32_t> chainOf, posOf, clock;
};
} // namespace

// Data races. Rank r's ops access only rank r's slots, so the ranks are
// checked one after another, each rank's ops in topological order (every
// slot sees the same sequence of accesses as in the global order). Per
// canonical slot the verifier keeps the last writer and the readers since.
// A read must be ordered after the last writer, a write after the last
// writer and after every reader since (transitivity covers the rest).
// "Ordered" is reachability in the combined graph, answered by, in turn:
// the rank's threadblock clocks (paths along the rank's own program order
// and dependencies, RankClocks), a direct dependency, a memo, and a backward
// search from the later op that only visits nodes placed after the earlier
// op in the topological order (anything placed before it cannot lie on a
// path from it). In generated schedules almost every pair is decided by the
// clocks, so the check is near-linear in the number of accessed chunks and
// the rank's threadblocks (on a 1024-chip torus the clocks took the search
// from 7.8 million pairs to none).
void Verifier::checkRaces(const CombinedGraph &g,
                          const std::vector<uint32_t> &order) {
  uint32_t n = g.numNodes();
  std::vector<uint32_t> topoPos(n);
  for (uint32_t k = 0; k < n; ++k)
    topoPos[order[k]] = k;
  bool programOrder = s.stage >= Stage::ThreadblocksAssigned;
  std::vector<uint32_t> stamp(n, 0);
  uint32_t curStamp = 0;
  std::vector<uint32_t> stack;
  llvm::DenseMap<uint64_t, bool> memo;
  RankClocks clocks;

  auto reaches = [&](uint32_t u, uint32_t v) -> bool {
    if (u == v)
      return true;
    if (topoPos[u] > topoPos[v])
      return false;
    if (clocks.reaches(u, v))
      return true;
    RankId ru = g.rankOf(u), rv = g.rankOf(v);
    OpId iu = OpId(u - g.rankBase[ru]), iv = OpId(v - g.rankBase[rv]);
    if (ru == rv) {
      const Op &ou = s.ranks[ru].ops[iu], &ov = s.ranks[rv].ops[iv];
      if (programOrder && ou.threadblock != kNone &&
          ou.threadblock == ov.threadblock)
        return iu < iv;
      if (llvm::is_contained(ov.deps, iu))
        return true;
    }
    uint64_t key = (uint64_t(u) << 32) | v;
    auto it = memo.find(key);
    if (it != memo.end())
      return it->second;
    // Backwards from v over predecessors between u and v in topological
    // order; first only through ops of u's rank (u and v are one rank's
    // accesses to one slot, almost always ordered by that rank's own
    // dependencies: the search stays within one rank's ops), then through
    // every rank.
    const uint32_t lo = g.rankBase[ru], hi = g.rankBase[ru + 1]; // ru's ops
    auto search = [&](bool sameRank) {
      ++curStamp;
      stack.assign(1, v);
      stamp[v] = curStamp;
      while (!stack.empty()) {
        uint32_t x = stack.back();
        stack.pop_back();
        for (uint32_t e = g.predStart[x]; e < g.predStart[x + 1]; ++e) {
          uint32_t p = g.pred[e];
          if (p == u)
            return true;
          if (stamp[p] == curStamp || topoPos[p] < topoPos[u] ||
              (sameRank && (p < lo || p >= hi)))
            continue;
          stamp[p] = curStamp;
          stack.push_back(p);
        }
      }
      return false;
    };
    bool found =
        (ru == rv && search(/*sameRank=*/true)) || search(/*sameRank=*/false);
    memo[key] = found;
    return found;
  };

  // Per slot, 8 bytes (tens of millions of slots at 1024 ranks): the last
  // writer and the one reader since it; a slot read by several ops since
  // its last write keeps them in `manyReaders`.
  constexpr uint32_t kNo = UINT32_MAX, kMany = UINT32_MAX - 1;
  struct SlotState {
    uint32_t lastWriter = kNo;
    uint32_t reader = kNo; ///< kMany: the readers are in manyReaders
  };
  SlotIndex index(s);
  std::vector<SlotState> flat(static_cast<size_t>(index.numSlots()));
  llvm::DenseMap<uint64_t, SlotState> overflow; // slots outside the index
  llvm::DenseMap<uint64_t, llvm::SmallVector<uint32_t, 4>> manyReaders;
  llvm::DenseSet<uint64_t> reported;
  struct Access {
    uint64_t key;
    int64_t index;
    BufferRef where; // one chunk, for the message
    bool read, write;
  };
  std::vector<Access> acc;

  auto raceMsg = [&](uint32_t later, uint32_t earlier, bool laterWrites,
                     bool earlierWrites, const BufferRef &where) {
    uint64_t pairKey = (uint64_t(earlier) << 32) | later;
    if (!reported.insert(pairKey).second)
      return;
    RankId r = g.rankOf(later);
    report(r, g.opOf(later),
           llvm::formatv("data race: {0} {1}, which %{2} {3}, and the two "
                         "ops are not ordered",
                         laterWrites ? "writes" : "reads", refString(where),
                         g.opOf(earlier), earlierWrites ? "writes" : "reads"));
  };

  // One op's accesses: the slots' states, races against earlier ops.
  auto checkOpAccesses = [&](uint32_t v, RankId r, const Op &op) {
    unsigned f = opFlags(op.kind);
    acc.clear();
    auto add = [&](const BufferRef &b, bool read, bool write) {
      if (b.count < 1)
        return;
      // Consecutive chunks, consecutive canonical slots (canonicalSlot).
      const CanonicalSlot first = canonicalSlot(s, r, b.buffer, b.chunk);
      for (int32_t c = 0; c < b.count; ++c) {
        BufferRef one{b.buffer, b.chunk + c, 1};
        CanonicalSlot slot{first.buffer, first.chunk + c};
        acc.push_back(
            {slotKey(r, slot), index.index(r, slot), one, read, write});
      }
    };
    if ((f & OF_RS) && !(f & OF_LC))
      add(op.src, true, false);
    for (const LinTerm &t : op.terms)
      if (f & OF_LC)
        add(t.src, true, false);
    if (f & OF_WD)
      add(op.dst, (f & OF_RD) != 0, true);
    // Merge the accesses of one op to one slot.
    std::sort(acc.begin(), acc.end(),
              [](const Access &a, const Access &b) { return a.key < b.key; });
    for (size_t k = 0; k < acc.size(); ++k) {
      if (k + 1 < acc.size() && acc[k + 1].key == acc[k].key) {
        acc[k + 1].read |= acc[k].read;
        acc[k + 1].write |= acc[k].write;
        if (!acc[k + 1].write || acc[k].write)
          acc[k + 1].where = acc[k].where;
        continue;
      }
      const Access &a = acc[k];
      SlotState &st = a.index >= 0 ? flat[a.index] : overflow[a.key];
      // A write after readers is ordered after the last writer through them.
      bool checkWriter = !a.write || st.reader == kNo;
      if (checkWriter && st.lastWriter != kNo && !reaches(st.lastWriter, v))
        raceMsg(v, st.lastWriter, a.write, true, a.where);
      if (a.write) {
        auto checkReader = [&](uint32_t rd) {
          if (rd != v && !reaches(rd, v))
            raceMsg(v, rd, true, false, a.where);
        };
        if (st.reader == kMany) {
          auto it = manyReaders.find(a.key);
          for (uint32_t rd : it->second)
            checkReader(rd);
          manyReaders.erase(it);
        } else if (st.reader != kNo) {
          checkReader(st.reader);
        }
        st.reader = kNo;
        st.lastWriter = v;
      } else if (st.reader == kNo) {
        st.reader = v;
      } else if (st.reader != kMany) {
        manyReaders[a.key] = {st.reader, v};
        st.reader = kMany;
      } else {
        manyReaders[a.key].push_back(v);
      }
    }
  };

  // The nodes grouped by rank, each rank's in topological order.
  std::vector<uint32_t> byRank(n);
  {
    std::vector<uint32_t> cursor(g.rankBase.begin(), g.rankBase.end() - 1);
    for (uint32_t v : order)
      byRank[cursor[g.rankOf(v)]++] = v;
  }
  for (RankId r = 0; r < s.numRanks; ++r) {
    llvm::ArrayRef<uint32_t> rankOrder(byRank.data() + g.rankBase[r],
                                       g.rankBase[r + 1] - g.rankBase[r]);
    clocks.build(s, g, r, rankOrder);
    for (uint32_t v : rankOrder) {
      if (full())
        return;
      const Op &op = s.ranks[r].ops[v - g.rankBase[r]];
      checkOpAccesses(v, r, op);
    }
  }
}

void Verifier::checkSemantics(const CombinedGraph &g,
                              const std::vector<uint32_t> &order) {
  // An exact schedule is checked on fingerprints (ir/Fingerprint.h); the
  // symbolic sums then only name the values of the wrong outputs found,
  // executed for those outputs' input chunks alone.
  std::vector<ChunkBatch> batches;
  std::vector<OutputSlot> wrongSlots;
  if (isExactSchedule(s)) {
    auto wrong = findWrongOutputsByFingerprint(s, g, order);
    if (!wrong) {
      report(kNone, kNone, llvm::toString(wrong.takeError()));
      return;
    }
    if (wrong->empty())
      return;
    wrongSlots = std::move(*wrong);
    std::vector<int32_t> chunks;
    for (const OutputSlot &w : wrongSlots) {
      if (chunks.size() >= opts.maxProblems)
        break;
      ExpectedForm f = expectedForm(s, w.rank, w.chunk);
      chunks.push_back(f.kind == ExpectedForm::Undefined ? 0 : f.chunk);
    }
    std::sort(chunks.begin(), chunks.end());
    chunks.erase(std::unique(chunks.begin(), chunks.end()), chunks.end());
    for (int32_t c : chunks)
      batches.push_back(ChunkBatch{c, c + 1});
  } else {
    batches.push_back(ChunkBatch{}); // coded: one execution, every chunk
  }
  const size_t before = problems.size();
  llvm::Error err = executeBatches(
      s, batches, g, order, [&](ChunkBatch batch, const SymbolicResult &res) {
        for (const WrongOutput &w : findWrongOutputs(s, res, 1e-9, batch)) {
          if (full()) {
            truncated = true;
            return false;
          }
          report(w.rank, kNone,
                 llvm::formatv("out[{0}]: got {1}, expected {2}", w.chunk,
                               formatValue(w.got), formatValue(w.expected)));
        }
        return true;
      });
  if (err)
    report(kNone, kNone, llvm::toString(std::move(err)));
  else if (problems.size() == before && !wrongSlots.empty())
    report(wrongSlots.front().rank, kNone,
           llvm::formatv("out[{0}]: its fingerprint differs from the "
                         "postcondition's, but its symbolic value matches "
                         "(a bug in topocc's verifier)",
                         wrongSlots.front().chunk));
}

std::vector<VerifyProblem> Verifier::run() {
  if (!checkHeader())
    return problems;
  if (opts.checkStructure) {
    for (RankId r = 0; r < s.numRanks; ++r)
      for (OpId i = 0; i < static_cast<OpId>(s.ranks[r].ops.size()); ++i)
        checkOp(r, i);
    if (!problems.empty())
      return problems;
    checkMessages();
    bool matched = problems.empty();
    checkStage();
    if (!matched)
      return problems;
    checkFifo();
  }
  if (!opts.checkDeadlock && !opts.checkRaces && !opts.checkSemantics)
    return problems;
  CombinedGraph g = buildCombinedGraph(s);
  std::vector<uint32_t> order;
  if (!checkDeadlock(g, order))
    return problems; // also needed by races and semantics
  if (opts.checkRaces)
    checkRaces(g, order);
  if (opts.checkSemantics && problems.empty())
    checkSemantics(g, order);
  return problems;
}

} // namespace

std::vector<VerifyProblem> findProblems(const Schedule &s,
                                        const VerifyOptions &opts) {
  return Verifier(s, opts).run();
}

std::string formatProblem(const VerifyProblem &p) {
  std::string out;
  if (p.rank != kNone) {
    out += "rank " + std::to_string(p.rank);
    if (p.op != kNone)
      out += " %" + std::to_string(p.op);
    out += ": ";
  }
  return out + p.message;
}

llvm::Error verifySchedule(const Schedule &s, const VerifyOptions &opts) {
  ProgressTask progress("verify");
  std::vector<VerifyProblem> problems = findProblems(s, opts);
  if (problems.empty())
    return llvm::Error::success();
  std::string msg = "schedule @" + s.name + " (stage " +
                    stageName(s.stage).str() + ") is invalid:";
  for (const VerifyProblem &p : problems)
    msg += "\n  " + formatProblem(p);
  if (problems.size() >= opts.maxProblems)
    msg +=
        "\n  (stopped after " + std::to_string(opts.maxProblems) + " problems)";
  return makeUserError(msg);
}

} // namespace topocc::ir
