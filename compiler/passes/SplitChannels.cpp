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
  longest = 0;
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    std::map<ChannelId, int32_t> next;
    for (const Op &op : s.ranks[r].ops) {
      int32_t p = next[op.channel]++;
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
/// threadblock (nops included), tried on a copy.
bool assignsWithin(const Schedule &s, int32_t maxSteps) {
  Schedule trial = s;
  ThreadblockLimits limits;
  limits.maxSteps = maxSteps;
  limits.maxThreadblocks = std::numeric_limits<int32_t>::max();
  if (llvm::Error err = assignThreadblocks(trial, limits)) {
    llvm::consumeError(std::move(err));
    return false;
  }
  return true;
}

/// Whether `s` fits unsplit (see the file comment).
bool fitsUnsplit(const Schedule &s, int32_t maxSteps) {
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

/// One way of splitting: the split schedule and what it costs.
struct Split {
  Schedule result;
  int32_t maxSegment = 0;
  int32_t worstSteps = 0; ///< estimated steps of the fullest threadblock
};

/// Splits `s` with segment length `len`.
Split splitWith(const Schedule &s, const std::vector<std::vector<int32_t>> &pos,
               int32_t len) {
  std::vector<MsgEnds> ends = indexMessages(s);
  auto msgSegment = [&](MsgId m) {
    const MsgEnds &e = ends[m];
    return pos[e.sender][e.sendOp] / len;
  };
  Split plan;
  plan.result = s;
  Schedule &out = plan.result;
  const int32_t base = s.numChannels;
  auto channelFor = [&](ChannelId c, int32_t seg) {
    plan.maxSegment = std::max(plan.maxSegment, seg);
    return c + base * seg;
  };
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    const RankProgram &in = s.ranks[r];
    RankProgram &rp = out.ranks[r];
    rp.ops.clear();
    std::vector<OpId> newId(in.ops.size(), kNone);
    for (size_t i = 0; i < in.ops.size(); ++i) {
      Op op = in.ops[i];
      for (OpId &d : op.deps)
        d = newId[d];
      int32_t own = pos[r][i] / len;
      int32_t recvSeg = receives(op.kind) ? msgSegment(op.recvMsg) : own;
      int32_t sendSeg = sends(op.kind) ? msgSegment(op.sendMsg) : own;
      if (!(receives(op.kind) && sends(op.kind)) || recvSeg == sendSeg) {
        op.channel = channelFor(in.ops[i].channel,
                                receives(op.kind) ? recvSeg : sendSeg);
        newId[i] = static_cast<OpId>(rp.ops.size());
        rp.ops.push_back(std::move(op));
        continue;
      }
      // recv ... -> [recv half on recvSeg] ; send(result) on sendSeg.
      Op first = op;
      first.kind = receivingHalf(op.kind);
      first.sendPeer = kNone;
      first.sendMsg = kNone;
      first.channel = channelFor(in.ops[i].channel, recvSeg);
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
        copy.channel = first.channel;
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
      second.channel = channelFor(in.ops[i].channel, sendSeg);
      second.deps = {static_cast<OpId>(rp.ops.size())};
      rp.ops.push_back(std::move(first));
      newId[i] = static_cast<OpId>(rp.ops.size());
      rp.ops.push_back(std::move(second));
    }
    // Estimated steps per channel: ops, plus one nop for every cross-channel
    // dependency beyond the first of an op.
    std::map<ChannelId, int32_t> steps;
    for (const Op &op : rp.ops) {
      int32_t cross = 0;
      for (OpId d : op.deps)
        cross += rp.ops[d].channel != op.channel;
      steps[op.channel] += 1 + std::max(0, cross - 1);
    }
    for (auto &[c, n] : steps)
      plan.worstSteps = std::max(plan.worstSteps, n);
  }
  out.numChannels = base * (plan.maxSegment + 1);
  return plan;
}

} // namespace

llvm::Error splitChannels(Schedule &s, int32_t maxSteps, int32_t maxChannels) {
  assert(s.stage == Stage::ChannelsAssigned && "runs after assignChannels");
  int32_t longest = 0;
  std::vector<std::vector<int32_t>> pos = chainPositions(s, longest);
  if (longest <= maxSteps || maxSteps < 2)
    return llvm::Error::success();
  // Each boundary adds at most a split half per segment; shrink until the
  // fullest segment fits.
  for (int32_t len = maxSteps - 1; len >= 1; len -= std::max(1, len / 16)) {
    Split plan = splitWith(s, pos, len);
    if (plan.worstSteps > maxSteps)
      continue;
    if (plan.result.numChannels > maxChannels) {
      if (fitsUnsplit(s, maxSteps))
        return llvm::Error::success();
      return makeUserError(llvm::formatv(
          "the schedule needs {0} steps per threadblock on one channel; "
          "splitting it into segments of at most {1} steps would use {2} "
          "channels, more than MSCCL's {3}; use fewer --channels or --chunks, "
          "or raise --max-steps if the runtime was built with a larger "
          "MSCCL_MAX_NUM_STEPS",
          longest, maxSteps, plan.result.numChannels, maxChannels));
    }
    // Only a schedule whose threadblock groups fit unsplit has a choice.
    if (longestGroup(s) <= maxSteps && !assignsWithin(plan.result, maxSteps) &&
        assignsWithin(s, maxSteps))
      return llvm::Error::success();
    s = std::move(plan.result);
    return llvm::Error::success();
  }
  if (fitsUnsplit(s, maxSteps))
    return llvm::Error::success();
  return makeUserError(llvm::formatv(
      "cannot split the {0}-step chains into segments of at most {1} steps",
      longest, maxSteps));
}

} // namespace topocc::passes
