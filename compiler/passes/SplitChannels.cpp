//===- compiler/passes/SplitChannels.cpp - Fit long chains in steps -------===//
//
// Segment of a message = (position of its sending op in the sender's
// (rank, channel) chain) / L. Every op then lands in the segment of the
// messages it handles; local ops stay in the segment of their own position.
// Because segments only subdivide each original channel and keep list order,
// the FIFO order per (sender, receiver, channel) and acyclicity are kept.
// L starts just under the step limit and shrinks until the estimated steps
// per segment (ops plus the nops legalization adds) fit.
//
// A channel's ops on one rank need not share a threadblock: assign-
// threadblocks gives one to each send peer and each receive peer (an op
// that sends and receives joins its two peers' into one). Where the
// segments would need more channels than the output has, or could not be
// placed (a relay's receive from its parent and send to a child landing in
// segments whose threadblocks differ), but every such group of a chain
// fits (a tree relay's receives from three children, one threadblock
// each), the schedule is tried through assign-threadblocks as it is, and
// left unsplit when its threadblocks fit. Segments that fit and place are
// still preferred: they run on threadblocks of their own, in parallel
// (hier-cerar's phases simulate 1.8x slower unsplit).
//
//===----------------------------------------------------------------------===//

#include "compiler/passes/SplitChannels.h"

#include "compiler/passes/AssignThreadblocks.h"

#include "support/Diagnostics.h"
#include "support/UnionFind.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <map>

namespace topocc::passes {

using namespace ir;

namespace {

/// Position of every op in its (rank, channel) chain, in list order.
std::vector<std::vector<int32_t>> chainPositions(const Schedule &s,
                                                 int32_t &longest) {
  std::vector<std::vector<int32_t>> pos(s.ranks.size());
  std::vector<int32_t> next; // by channel + 1 (kNone first)
  longest = 0;
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    next.assign(next.size(), 0);
    pos[r].reserve(s.ranks[r].ops.size());
    for (const Op &op : s.ranks[r].ops) {
      const size_t c = static_cast<size_t>(op.channel + 1);
      if (c >= next.size())
        next.resize(c + 1, 0);
      const int32_t p = next[c]++;
      pos[r].push_back(p);
      longest = std::max(longest, p + 1);
    }
  }
  return pos;
}

/// The most ops of one rank, channel and threadblock group (see the file
/// comment): ops of a (rank, channel) that share a send or a receive peer
/// are one group; an op without a peer joins its latest dependency's on the
/// channel. A cheap filter before trying assign-threadblocks: a ring's
/// channel is one group, as long as its chain, and is not tried.
/// (Assign-threadblocks may still split a group by sub-schedule or merge
/// groups into free slots; the trial decides.)
int32_t longestGroup(const Schedule &s) {
  int32_t longest = 0;
  for (const RankProgram &rp : s.ranks) {
    const size_t n = rp.ops.size();
    UnionFind groups(n);
    std::map<std::pair<ChannelId, RankId>, size_t> bySend, byRecv;
    std::map<ChannelId, size_t> local; ///< a channel's first peerless op
    for (size_t i = 0; i < n; ++i) {
      const Op &op = rp.ops[i];
      auto joinFirst = [&](auto &firsts, auto key) {
        auto [it, fresh] = firsts.try_emplace(key, i);
        if (!fresh)
          groups.join(i, it->second);
      };
      if (sends(op.kind))
        joinFirst(bySend, std::pair{op.channel, op.sendPeer});
      if (receives(op.kind))
        joinFirst(byRecv, std::pair{op.channel, op.recvPeer});
      if (sends(op.kind) || receives(op.kind))
        continue;
      OpId latest = kNone;
      for (OpId d : op.deps)
        if (rp.ops[d].channel == op.channel)
          latest = std::max(latest, d);
      if (latest != kNone)
        groups.join(i, static_cast<size_t>(latest));
      else
        joinFirst(local, op.channel);
    }
    std::map<size_t, int32_t> size;
    for (size_t i = 0; i < n; ++i)
      longest = std::max(longest, ++size[groups.find(i)]);
  }
  return longest;
}

/// Whether assign-threadblocks places `s` as it is within `maxSteps` per
/// threadblock (nops included), tried in place and undone.
bool assignsWithin(Schedule &s, int32_t maxSteps) {
  const ThreadblockUndo undo(s);
  ThreadblockLimits limits;
  limits.maxSteps = maxSteps;
  limits.maxThreadblocks = std::numeric_limits<int32_t>::max();
  llvm::Error err = assignThreadblocks(s, limits);
  undo.restore(s);
  if (err) {
    llvm::consumeError(std::move(err));
    return false;
  }
  return true;
}

/// Whether `s` fits unsplit (see the file comment).
bool fitsUnsplit(Schedule &s, int32_t maxSteps) {
  return longestGroup(s) <= maxSteps && assignsWithin(s, maxSteps);
}

/// The receiving half of a split op: keeps the receive, writes its result.
OpKind receivingHalf(OpKind k) {
  switch (k) {
  case OpKind::RecvCopySend:
    return OpKind::Recv;
  case OpKind::RecvReduceSend:
  case OpKind::RecvReduceCopySend:
    return OpKind::RecvReduceCopy;
  default:
    llvm_unreachable("only recv-and-send ops are split");
  }
}

/// What the search over segment lengths reads of an op, gathered once: its
/// chain position, those of the sending ops of the messages it receives
/// and sends (-1 when it does not), its channel and its dependencies.
/// Every trial length then walks flat arrays instead of the schedule.
struct ChainOp {
  int32_t own = 0, recvPos = -1, sendPos = -1;
  ChannelId channel = 0;
  bool rrs = false; ///< a recv-reduce-send: its split adds a copy
};
struct Chains {
  std::vector<std::vector<ChainOp>> ops;      ///< per rank
  std::vector<std::vector<uint32_t>> depFrom; ///< per rank, CSR into deps
  std::vector<std::vector<OpId>> deps;
  int32_t longest = 0;
};

Chains gatherChains(const Schedule &s,
                    const std::vector<std::vector<int32_t>> &pos,
                    int32_t longest) {
  Chains ch;
  ch.longest = longest;
  std::vector<MsgEnds> ends = indexMessages(s);
  auto senderPos = [&](MsgId m) {
    const MsgEnds &e = ends[m];
    return pos[e.sender][e.sendOp];
  };
  ch.ops.resize(s.ranks.size());
  ch.depFrom.resize(s.ranks.size());
  ch.deps.resize(s.ranks.size());
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    const std::vector<Op> &ops = s.ranks[r].ops;
    ch.depFrom[r].push_back(0);
    for (size_t i = 0; i < ops.size(); ++i) {
      const Op &op = ops[i];
      ChainOp c;
      c.own = pos[r][i];
      if (receives(op.kind))
        c.recvPos = senderPos(op.recvMsg);
      if (sends(op.kind))
        c.sendPos = senderPos(op.sendMsg);
      c.channel = op.channel;
      c.rrs = op.kind == OpKind::RecvReduceSend;
      ch.ops[r].push_back(c);
      ch.deps[r].insert(ch.deps[r].end(), op.deps.begin(), op.deps.end());
      ch.depFrom[r].push_back(static_cast<uint32_t>(ch.deps[r].size()));
    }
  }
  return ch;
}

/// Where splitting with one segment length puts an op: the channel of its
/// receiving half (the op itself when it is not split) and of the op that
/// carries its result (its send half when split).
struct Placement {
  ChannelId first = 0, result = 0;
};

/// A segment length's cost: the last segment used and the estimated steps
/// of the fullest (rank, channel): ops, plus one nop for every cross-channel
/// dependency beyond the first of an op. With `where`, every op's
/// placement too.
struct SplitCost {
  int32_t maxSegment = 0;
  int32_t worstSteps = 0;
};
SplitCost measureSplit(const Chains &ch, int32_t base, int32_t len,
                       std::vector<std::vector<Placement>> *where) {
  SplitCost cost;
  // Channels are c + base * segment, segment <= (longest chain - 1) / len.
  std::vector<int32_t> steps(
      static_cast<size_t>(base) * (std::max(ch.longest - 1, 0) / len + 1), 0);
  std::vector<Placement> placed;
  auto channelFor = [&](ChannelId c, int32_t pos) {
    return c + base * (pos / len);
  };
  auto use = [&](ChannelId c) { // the last segment is the one used
    cost.maxSegment = std::max(cost.maxSegment, c / base);
    return c;
  };
  for (size_t r = 0; r < ch.ops.size(); ++r) {
    const std::vector<ChainOp> &ops = ch.ops[r];
    const std::vector<uint32_t> &from = ch.depFrom[r];
    const std::vector<OpId> &deps = ch.deps[r];
    std::fill(steps.begin(), steps.end(), 0);
    placed.assign(ops.size(), Placement{kNone, kNone});
    auto count = [&](ChannelId c, size_t i) {
      int32_t cross = 0;
      for (uint32_t e = from[i]; e < from[i + 1]; ++e)
        cross += placed[deps[e]].result != c;
      steps[c] += 1 + std::max(0, cross - 1);
    };
    for (size_t i = 0; i < ops.size(); ++i) {
      const ChainOp &op = ops[i];
      ChannelId recvCh =
          channelFor(op.channel, op.recvPos >= 0 ? op.recvPos : op.own);
      ChannelId sendCh =
          channelFor(op.channel, op.sendPos >= 0 ? op.sendPos : op.own);
      if (op.recvPos < 0 || op.sendPos < 0 || recvCh == sendCh) {
        ChannelId c = use(op.recvPos >= 0 ? recvCh : sendCh);
        count(c, i);
        placed[i] = {c, c};
        continue;
      }
      // The copy of rrs (or the receiving half) after the op's deps, the
      // receiving half after the copy, the send after the receiving half.
      count(use(recvCh), i);
      use(sendCh);
      if (op.rrs)
        steps[recvCh] += 1;
      steps[sendCh] += 1;
      placed[i] = {recvCh, sendCh};
    }
    for (int32_t n : steps)
      cost.worstSteps = std::max(cost.worstSteps, n);
    if (where)
      (*where)[r] = placed;
  }
  return cost;
}

/// `s` split as `where` places its ops (measureSplit), on `channels`
/// channels. With `consume`, the ops of `s` are moved out and each rank's
/// list freed as its split one is built (the caller then discards `s`): the
/// two schedules are not held whole at once.
Schedule buildSplit(Schedule &s,
                    const std::vector<std::vector<Placement>> &where,
                    int32_t channels, bool consume) {
  // Everything of `s` but its ops, which are rebuilt.
  std::vector<std::vector<Op>> ops(s.ranks.size());
  for (size_t r = 0; r < s.ranks.size(); ++r)
    ops[r] = std::move(s.ranks[r].ops);
  Schedule out = s;
  for (size_t r = 0; r < s.ranks.size(); ++r)
    s.ranks[r].ops = std::move(ops[r]);
  out.numChannels = channels;
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    RankProgram &in = s.ranks[r];
    RankProgram &rp = out.ranks[r];
    // The exact size: a split op becomes its receiving half and a send,
    // and an rrs a copy besides.
    size_t size = 0;
    for (size_t i = 0; i < in.ops.size(); ++i) {
      const Placement &at = where[r][i];
      size += at.first == at.result
                  ? 1
                  : (in.ops[i].kind == OpKind::RecvReduceSend ? 3 : 2);
    }
    rp.ops.reserve(size);
    std::vector<OpId> newId(in.ops.size(), kNone);
    for (size_t i = 0; i < in.ops.size(); ++i) {
      Op op = consume ? std::move(in.ops[i]) : in.ops[i];
      for (OpId &d : op.deps)
        d = newId[d];
      const Placement &at = where[r][i];
      if (at.first == at.result) {
        op.channel = at.result;
        newId[i] = static_cast<OpId>(rp.ops.size());
        rp.ops.push_back(std::move(op));
        continue;
      }
      // recv ... -> [recv half on its segment] ; send(result) on the send's.
      Op first = op;
      first.kind = receivingHalf(op.kind);
      first.sendPeer = kNone;
      first.sendMsg = kNone;
      first.channel = at.first;
      if (op.kind == OpKind::RecvReduceSend) {
        // rrs(x) -> copy(t <- x) ; rrc(t <- t + msg) ; send(t), with t a fresh
        // scratch slot: rrs writes nothing, and the reduction keeps its local
        // operand equal to its destination (the form every MSCCL producer
        // writes).
        BufferRef t{BufferKind::Scratch, rp.scratchChunks, op.src.count};
        rp.scratchChunks += op.src.count;
        Op copy;
        copy.kind = OpKind::Copy;
        copy.src = op.src;
        copy.dst = t;
        copy.deps = op.deps;
        copy.channel = at.first;
        first.src = t;
        first.dst = t;
        first.deps = {static_cast<OpId>(rp.ops.size())};
        rp.ops.push_back(std::move(copy));
      }
      Op second;
      second.kind = OpKind::Send;
      second.src = first.dst;
      second.sendPeer = op.sendPeer;
      second.sendMsg = op.sendMsg;
      second.channel = at.result;
      second.deps = {static_cast<OpId>(rp.ops.size())};
      rp.ops.push_back(std::move(first));
      newId[i] = static_cast<OpId>(rp.ops.size());
      rp.ops.push_back(std::move(second));
    }
    assert(rp.ops.size() == size && "the split's size was counted");
    if (consume)
      std::vector<Op>().swap(in.ops);
  }
  return out;
}

} // namespace

llvm::Error splitChannels(Schedule &s, int32_t maxSteps, int32_t maxChannels) {
  assert(s.stage == Stage::ChannelsAssigned && "runs after assignChannels");
  int32_t longest = 0;
  std::vector<std::vector<int32_t>> pos = chainPositions(s, longest);
  if (longest <= maxSteps || maxSteps < 2)
    return llvm::Error::success();
  const Chains chains = gatherChains(s, pos, longest);
  pos = {};
  // Each boundary adds at most a split half per segment; shrink until the
  // fullest segment fits.
  for (int32_t len = maxSteps - 1; len >= 1; len -= std::max(1, len / 16)) {
    if (measureSplit(chains, s.numChannels, len, nullptr).worstSteps > maxSteps)
      continue;
    std::vector<std::vector<Placement>> where(s.ranks.size());
    const int32_t channels =
        s.numChannels *
        (measureSplit(chains, s.numChannels, len, &where).maxSegment + 1);
    if (channels > maxChannels) {
      if (fitsUnsplit(s, maxSteps))
        return llvm::Error::success();
      return makeUserError(llvm::formatv(
          "the schedule needs {0} steps per threadblock on one channel; "
          "splitting it into segments of at most {1} steps would use {2} "
          "channels, more than MSCCL's {3}; use fewer --channels or --chunks, "
          "or raise --max-steps if the runtime was built with a larger "
          "MSCCL_MAX_NUM_STEPS",
          longest, maxSteps, channels, maxChannels));
    }
    // Only a schedule whose threadblock groups fit unsplit has a choice;
    // otherwise the split replaces it, built from its ops.
    const bool choice = longestGroup(s) <= maxSteps;
    Schedule split = buildSplit(s, where, channels, !choice);
    if (choice && !assignsWithin(split, maxSteps) && assignsWithin(s, maxSteps))
      return llvm::Error::success();
    s = std::move(split);
    return llvm::Error::success();
  }
  if (fitsUnsplit(s, maxSteps))
    return llvm::Error::success();
  return makeUserError(llvm::formatv(
      "cannot split the {0}-step chains into segments of at most {1} steps",
      longest, maxSteps));
}

} // namespace topocc::passes
