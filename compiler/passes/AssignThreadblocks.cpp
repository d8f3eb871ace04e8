//===- compiler/passes/AssignThreadblocks.cpp - Threadblock per op --------===//
//
// Greedy in list order: an op that sends to s (receives from r) on channel c
// goes to the threadblock that owns (c, send s) (or (c, recv r)); when none
// owns it, it joins the lowest threadblock of channel c whose matching slot is
// still free and that was opened by an op of the same sub-schedule, else a
// new one. Ops without a peer follow their latest dependency on the same
// channel, else the lowest threadblock of the channel opened by their
// sub-schedule. A sub-schedule is a class of ops joined by same-rank deps and
// messages (a ring; one tree's piece): independent sub-schedules never share
// a threadblock unless a connection forces it, because a threadblock runs its
// steps in order and would make one wait for the other (serialised trees:
// docs/benchmarks/trees.md, "Simulated time of the compiled trees"). Rings
// are one sub-schedule per channel, so the rule never applies to them. The
// limits are checked by legalizing a copy, so the step counts include the
// nops legalization will add.
//
// The coalesced shape (limits.coalesce), used when this one breaks a limit,
// is in CoalesceThreadblocks.cpp.
//
//===----------------------------------------------------------------------===//

#include "compiler/passes/AssignThreadblocks.h"
#include "compiler/passes/AssignThreadblocksImpl.h"

#include "compiler/passes/LegalizeDependencies.h"
#include "ir/CombinedGraph.h"
#include "support/Diagnostics.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cassert>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace topocc::passes {

using namespace ir;

namespace {

struct Threadblock {
  ChannelId channel = kNone;
  RankId sendPeer = kNone;
  RankId recvPeer = kNone;
  size_t component = 0; ///< sub-schedule of the op that opened it
};

/// Assigns the threadblocks of one rank.
class RankPacker {
public:
  RankPacker(RankProgram &rp, RankId rank, const std::vector<size_t> &component)
      : rp(rp), rank(rank), component(component) {}

  llvm::Error run() {
    for (size_t i = 0; i < rp.ops.size(); ++i) {
      Op &op = rp.ops[i];
      for (OpId d : op.deps)
        if (static_cast<size_t>(d) >= i)
          return makeInternalError(llvm::formatv(
              "rank {0} %{1} depends on a later op %{2}; the list must be in "
              "a topological order before threadblock assignment",
              rank, i, d));
      auto tb = place(op, component[i]);
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
  const std::vector<size_t> &component;
  std::vector<Threadblock> tbs;
  std::map<std::pair<ChannelId, RankId>, TbId> sendOwner, recvOwner;

  llvm::Expected<TbId> place(const Op &op, size_t comp) {
    ChannelId ch = op.channel;
    RankId s = sends(op.kind) ? op.sendPeer : kNone;
    RankId r = receives(op.kind) ? op.recvPeer : kNone;
    if (s == kNone && r == kNone)
      return placeLocal(op, comp);
    TbId ts = s == kNone ? kNone : lookup(sendOwner, ch, s);
    TbId tr = r == kNone ? kNone : lookup(recvOwner, ch, r);
    if (ts != kNone && tr != kNone && ts != tr)
      return conflict(op, ts, tr);
    TbId tb = ts != kNone ? ts : tr;
    if (tb == kNone) {
      // Join the lowest threadblock of the channel and the sub-schedule with
      // the needed slots free.
      for (TbId t = 0; t < static_cast<TbId>(tbs.size()) && tb == kNone; ++t)
        if (tbs[t].channel == ch && tbs[t].component == comp &&
            (s == kNone || tbs[t].sendPeer == kNone) &&
            (r == kNone || tbs[t].recvPeer == kNone))
          tb = t;
      if (tb == kNone) {
        tb = static_cast<TbId>(tbs.size());
        tbs.push_back({ch, kNone, kNone, comp});
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

  TbId placeLocal(const Op &op, size_t comp) {
    TbId best = kNone;
    for (OpId d : op.deps)
      if (rp.ops[d].channel == op.channel)
        best = std::max(best, rp.ops[d].threadblock);
    for (TbId t = 0; t < static_cast<TbId>(tbs.size()) && best == kNone; ++t)
      if (tbs[t].channel == op.channel && tbs[t].component == comp)
        best = t;
    if (best == kNone) {
      best = static_cast<TbId>(tbs.size());
      tbs.push_back({op.channel, kNone, kNone, comp});
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

} // namespace

namespace detail {

/// MSCCL stores a dependency's threadblock in 8 bits: when some target has a
/// larger id, renumbers the threadblocks of `rp` with the dependency targets
/// first (each group in its old order). Schedules whose targets fit keep
/// their ids.
void numberTargetsFirst(RankProgram &rp, TbId maxTarget) {
  TbId numTbs = 0;
  for (const Op &op : rp.ops)
    numTbs = std::max(numTbs, op.threadblock + 1);
  std::vector<char> target(numTbs, 0);
  TbId highest = kNone;
  for (const Op &op : rp.ops)
    for (OpId d : op.deps)
      if (TbId t = rp.ops[d].threadblock; t != op.threadblock) {
        target[t] = 1;
        highest = std::max(highest, t);
      }
  if (highest <= maxTarget)
    return;
  std::vector<TbId> newId(numTbs);
  TbId next = 0;
  for (int pass = 1; pass >= 0; --pass)
    for (TbId t = 0; t < numTbs; ++t)
      if (target[t] == pass)
        newId[t] = next++;
  for (Op &op : rp.ops)
    op.threadblock = newId[op.threadblock];
}

/// Checks the MSCCL limits on the legalized form of `s`, legalizing a copy
/// of one rank at a time.
llvm::Error checkLimits(const Schedule &s, const ThreadblockLimits &limits) {
  std::vector<int32_t> steps;
  std::vector<ChannelId> channel;
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    RankProgram legal = s.ranks[r];
    legalizeRank(legal);
    const auto &ops = legal.ops;
    steps.clear();
    channel.clear();
    for (const Op &op : ops) {
      if (op.threadblock < 0)
        return makeInternalError(llvm::formatv(
            "rank {0}: an op has no threadblock after assignment", r));
      if (static_cast<size_t>(op.threadblock) >= steps.size()) {
        steps.resize(op.threadblock + 1, 0);
        channel.resize(op.threadblock + 1, kNone);
      }
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
    const int64_t used = llvm::count_if(steps, [](int32_t n) { return n > 0; });
    if (used > limits.maxThreadblocks)
      return makeUserError(llvm::formatv(
          "rank {0} needs {1} threadblocks, more than the MSCCL limit of {2}; "
          "use fewer --channels",
          r, used, limits.maxThreadblocks));
    for (size_t tb = 0; tb < steps.size(); ++tb)
      if (steps[tb] > limits.maxSteps)
        return makeUserError(llvm::formatv(
            "rank {0} threadblock {1} (channel {2}) needs {3} steps, more than "
            "the limit of {4} steps per threadblock (MSCCL_MAX_NUM_STEPS); use "
            "fewer --chunks (every chunk adds one step per ring hop), or raise "
            "--max-steps if the runtime was built with a larger "
            "MSCCL_MAX_NUM_STEPS",
            r, tb, channel[tb], steps[tb], limits.maxSteps));
  }
  return llvm::Error::success();
}

/// The SM count and, when coalescing, the channel count (assign-channels
/// and split-channels check it otherwise).
llvm::Error checkResident(const Schedule &s, const ThreadblockLimits &limits) {
  if (limits.coalesce && limits.maxChannels > 0 &&
      s.numChannels > limits.maxChannels)
    return makeUserError(llvm::formatv(
        "the schedule uses {0} channels, more than the {1} of the output",
        s.numChannels, limits.maxChannels));
  if (limits.smCount <= 0)
    return llvm::Error::success();
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    std::set<TbId> blocks;
    for (const Op &op : s.ranks[r].ops)
      blocks.insert(op.threadblock);
    if (static_cast<int64_t>(blocks.size()) > limits.smCount &&
        limits.smCountIsRuntimeLimit)
      return makeUserError(llvm::formatv(
          "rank {0} would launch {1} threadblocks, more than the {2} per "
          "rank RCCL's MSCCL accepts (MSCCL_MAX_NUM_THREAD_BLOCKS, fixed when "
          "RCCL is built), so RCCL would refuse the file (use fewer "
          "--channels or --trees-per-root, or --emit plan)",
          r, blocks.size(), limits.smCount));
    if (static_cast<int64_t>(blocks.size()) > limits.smCount)
      return makeUserError(llvm::formatv(
          "rank {0} would launch {1} threadblocks, more than the {2} SMs "
          "of the target: MSCCL's blocks spin-wait on each other and must "
          "all be resident, so the schedule would hang (use --sm-count "
          "for another GPU, fewer --channels or --trees-per-root, or "
          "--emit plan)",
          r, blocks.size(), limits.smCount));
  }
  return llvm::Error::success();
}

} // namespace detail

namespace {

/// One sub-schedule per threadblock unless a connection forces a merge.
llvm::Error packSeparate(Schedule &s, const ThreadblockLimits &limits) {
  const std::vector<std::vector<size_t>> component = ir::subSchedules(s);
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    RankPacker packer(s.ranks[r], static_cast<RankId>(r), component[r]);
    if (auto err = packer.run())
      return err;
    detail::numberTargetsFirst(s.ranks[r], limits.maxDepTarget);
  }
  s.stage = Stage::ThreadblocksAssigned;
  if (auto err = detail::checkLimits(s, limits))
    return err;
  return detail::checkResident(s, limits);
}

} // namespace

ThreadblockUndo::ThreadblockUndo(const Schedule &s) : stage(s.stage) {
  threadblocks.resize(s.ranks.size());
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    threadblocks[r].reserve(s.ranks[r].ops.size());
    for (const Op &op : s.ranks[r].ops)
      threadblocks[r].push_back(op.threadblock);
  }
}

void ThreadblockUndo::restore(Schedule &s) const {
  for (size_t r = 0; r < s.ranks.size(); ++r)
    for (size_t i = 0; i < s.ranks[r].ops.size(); ++i)
      s.ranks[r].ops[i].threadblock = threadblocks[r][i];
  s.stage = stage;
}

llvm::Error assignThreadblocks(Schedule &s, const ThreadblockLimits &limits,
                               ThreadblockInfo *info) {
  assert(s.stage == Stage::ChannelsAssigned &&
         "threadblocks are assigned after channels");
  if (info)
    *info = ThreadblockInfo();
  if (!limits.coalesce)
    return packSeparate(s, limits);
  // packSeparate only sets threadblocks and the stage: undone on failure
  // (a copy of the schedule was a third of the pass's time at 9 million
  // ops).
  const ThreadblockUndo undo(s);
  llvm::Error err = packSeparate(s, limits);
  if (!err)
    return llvm::Error::success();
  undo.restore(s);
  if (err.isA<InternalError>())
    return err;
  const std::string why = errorMessages(std::move(err), "; ");
  if (auto cerr = detail::coalesceThreadblocks(s, limits, info)) {
    if (cerr.isA<InternalError>())
      return cerr;
    std::string limit =
        limits.smCountIsRuntimeLimit
            ? llvm::formatv(" (the limit of {0} threadblocks per rank is "
                            "RCCL's MSCCL_MAX_NUM_THREAD_BLOCKS; a smaller "
                            "--trees-per-root may fit)",
                            limits.smCount)
                  .str()
            : std::string();
    return makeUserError("separate threadblocks per tree piece do not fit (" +
                         why + "), and neither does the coalesced shape: " +
                         errorMessages(std::move(cerr), "; ") + limit);
  }
  if (info) {
    info->coalesced = true;
    info->whyCoalesced = why;
  }
  return llvm::Error::success();
}

} // namespace topocc::passes
