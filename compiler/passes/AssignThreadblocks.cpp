//===- compiler/passes/AssignThreadblocks.cpp - Threadblock per op --------===//
//
// Greedy in list order: an op that sends to s (receives from r) on channel c
// goes to the threadblock that owns (c, send s) (or (c, recv r)); when none
// owns it, it joins the lowest threadblock of channel c whose matching slot is
// still free, else a new one. Ops without a peer follow their latest
// dependency on the same channel. The limits are checked by legalizing a copy,
// so the step counts include the nops legalization will add.
//
//===----------------------------------------------------------------------===//

#include "compiler/passes/AssignThreadblocks.h"

#include "compiler/passes/LegalizeDependencies.h"
#include "support/Diagnostics.h"

#include "llvm/Support/FormatVariadic.h"

#include <cassert>
#include <map>

namespace topocc::passes {

using namespace ir;

namespace {

struct Threadblock {
  ChannelId channel = kNone;
  RankId sendPeer = kNone;
  RankId recvPeer = kNone;
};

/// Assigns the threadblocks of one rank.
class RankPacker {
public:
  RankPacker(RankProgram &rp, RankId rank) : rp(rp), rank(rank) {}

  llvm::Error run() {
    for (size_t i = 0; i < rp.ops.size(); ++i) {
      Op &op = rp.ops[i];
      for (OpId d : op.deps)
        if (static_cast<size_t>(d) >= i)
          return makeInternalError(llvm::formatv(
              "rank {0} %{1} depends on a later op %{2}; the list must be in "
              "a topological order before threadblock assignment",
              rank, i, d));
      auto tb = place(op);
      if (!tb)
        return tb.takeError();
      op.threadblock = *tb;
    }
    return llvm::Error::success();
  }

  size_t numThreadblocks() const { return tbs.size(); }

private:
  RankProgram &rp;
  RankId rank;
  std::vector<Threadblock> tbs;
  std::map<std::pair<ChannelId, RankId>, TbId> sendOwner, recvOwner;

  llvm::Expected<TbId> place(const Op &op) {
    ChannelId ch = op.channel;
    RankId s = sends(op.kind) ? op.sendPeer : kNone;
    RankId r = receives(op.kind) ? op.recvPeer : kNone;
    if (s == kNone && r == kNone)
      return placeLocal(op);
    TbId ts = s == kNone ? kNone : lookup(sendOwner, ch, s);
    TbId tr = r == kNone ? kNone : lookup(recvOwner, ch, r);
    if (ts != kNone && tr != kNone && ts != tr)
      return conflict(op, ts, tr);
    TbId tb = ts != kNone ? ts : tr;
    if (tb == kNone) {
      // Join the lowest threadblock of the channel with the needed slots free.
      for (TbId t = 0; t < static_cast<TbId>(tbs.size()) && tb == kNone; ++t)
        if (tbs[t].channel == ch && (s == kNone || tbs[t].sendPeer == kNone) &&
            (r == kNone || tbs[t].recvPeer == kNone))
          tb = t;
      if (tb == kNone) {
        tb = static_cast<TbId>(tbs.size());
        tbs.push_back({ch, kNone, kNone});
      }
    }
    Threadblock &t = tbs[tb];
    if ((s != kNone && t.sendPeer != kNone && t.sendPeer != s) ||
        (r != kNone && t.recvPeer != kNone && t.recvPeer != r))
      return conflict(op, ts, tr);
    if (s != kNone && t.sendPeer == kNone) {
      t.sendPeer = s;
      sendOwner[{ch, s}] = tb;
    }
    if (r != kNone && t.recvPeer == kNone) {
      t.recvPeer = r;
      recvOwner[{ch, r}] = tb;
    }
    return tb;
  }

  TbId placeLocal(const Op &op) {
    TbId best = kNone;
    for (OpId d : op.deps)
      if (rp.ops[d].channel == op.channel)
        best = std::max(best, rp.ops[d].threadblock);
    for (TbId t = 0; t < static_cast<TbId>(tbs.size()) && best == kNone; ++t)
      if (tbs[t].channel == op.channel)
        best = t;
    if (best == kNone) {
      best = static_cast<TbId>(tbs.size());
      tbs.push_back({op.channel, kNone, kNone});
    }
    return best;
  }

  static TbId lookup(const std::map<std::pair<ChannelId, RankId>, TbId> &m,
                     ChannelId ch, RankId peer) {
    auto it = m.find({ch, peer});
    return it == m.end() ? kNone : it->second;
  }

  llvm::Error conflict(const Op &op, TbId ts, TbId tr) {
    return makeUserError(llvm::formatv(
        "rank {0}: an op that sends to rank {1} and receives from rank {2} on "
        "channel {3} cannot be placed: MSCCL allows one threadblock per "
        "(channel, send peer) and per (channel, receive peer), and these "
        "belong to different threadblocks ({4} and {5}); split the exchange "
        "over more channels",
        rank, op.sendPeer, op.recvPeer, op.channel, ts, tr));
  }
};

/// Checks the MSCCL limits on the legalized form of `s`.
llvm::Error checkLimits(const Schedule &s, const ThreadblockLimits &limits) {
  Schedule legal = s;
  legal.stage = Stage::ThreadblocksAssigned;
  legalizeDependencies(legal);
  for (size_t r = 0; r < legal.ranks.size(); ++r) {
    const auto &ops = legal.ranks[r].ops;
    std::map<TbId, int32_t> steps;
    std::map<TbId, ChannelId> channel;
    for (const Op &op : ops) {
      ++steps[op.threadblock];
      channel[op.threadblock] = op.channel;
      for (OpId d : op.deps)
        if (ops[d].threadblock > limits.maxDepTarget)
          return makeUserError(llvm::formatv(
              "rank {0}: threadblock {1} is the target of a dependency but "
              "MSCCL stores dependency targets in 8 bits (ids 0..{2}); use "
              "fewer --channels",
              r, ops[d].threadblock, limits.maxDepTarget));
    }
    if (static_cast<int32_t>(steps.size()) > limits.maxThreadblocks)
      return makeUserError(llvm::formatv(
          "rank {0} needs {1} threadblocks, more than the MSCCL limit of {2}; "
          "use fewer --channels",
          r, steps.size(), limits.maxThreadblocks));
    for (auto [tb, n] : steps)
      if (n > limits.maxSteps)
        return makeUserError(llvm::formatv(
            "rank {0} threadblock {1} (channel {2}) needs {3} steps, more than "
            "the limit of {4} steps per threadblock (MSCCL_MAX_NUM_STEPS); use "
            "fewer --chunks (every chunk adds one step per ring hop), or raise "
            "--max-steps if the runtime was built with a larger "
            "MSCCL_MAX_NUM_STEPS",
            r, tb, channel[tb], n, limits.maxSteps));
  }
  return llvm::Error::success();
}

} // namespace

llvm::Error assignThreadblocks(Schedule &s, const ThreadblockLimits &limits) {
  assert(s.stage == Stage::ChannelsAssigned &&
         "threadblocks are assigned after channels");
  for (size_t r = 0; r < s.ranks.size(); ++r)
    if (auto err = RankPacker(s.ranks[r], static_cast<RankId>(r)).run())
      return err;
  s.stage = Stage::ThreadblocksAssigned;
  return checkLimits(s, limits);
}

} // namespace topocc::passes
