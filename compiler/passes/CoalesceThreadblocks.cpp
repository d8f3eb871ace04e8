//===- compiler/passes/CoalesceThreadblocks.cpp - Coalescing --------------===//
//
// The coalesced shape of assign-threadblocks (AssignThreadblocks.cpp packs
// the separate one and calls coalesceThreadblocks when it breaks a limit).
//
// Coalescing (limits.coalesce: tree schedules written as MSCCL XML;
// docs/Algorithms-trees.md, "Coalescing"), only when that shape breaks a limit (SM count, channels, steps, ids).
// A *chain* is a class of ops joined by messages (an op that receives and
// sends joins both): one tree chain in one piece; it needs one channel at
// all its ops. Chains with the same channel in the separate shape and the same
// roles (rank, send peer, receive peer) are the same tree chain in other
// segments and pieces: a *group*, given one channel. Local ops follow their
// latest dependency (else their first user). Groups, most steps first, take
// the channel in 0..maxChannels-1 that keeps, on every rank and channel, one
// threadblock per send peer and per receive peer (a role joins the
// threadblock that owns its send or receive slot; one that would bind a slot
// owned by another threadblock cannot go there), at most maxSteps estimated
// steps per threadblock (ops plus one nop per dependency beyond the first),
// at most smCount threadblocks per rank and 32 sending and receiving
// threadblocks per channel; among those, first the fewest new threadblocks
// beyond the rank's pace (smCount times the fraction of the rank's steps
// placed so far), then the fewest merged roles, then the shortest fullest
// threadblock, then the lowest channel. If some group fits nowhere, the
// greedy runs again preferring merges (fewest new threadblocks first).
// Order: the chains form a DAG (an op of one depends on an op of another); a
// chain's level is its longest path from a source. Every rank's ops are
// sorted by (level, chain, list position), and each threadblock runs its ops
// in that order. The key is the chain's, equal at both ends of a message, so
// every (link, channel) FIFO sees one order at both ends; every wait (program
// order, dependency, message) goes to a smaller (level, chain, position in
// the chain's acyclic data flow), so there is no deadlock. (The lowering's
// list order, piece and segment first, also avoids deadlock but makes a
// merged threadblock run a broadcast step before the next segment's reduce
// steps: 10x slower allreduce in the simulator.)
//
//===----------------------------------------------------------------------===//

#include "compiler/passes/AssignThreadblocksImpl.h"

#include "ir/Schedule.h"
#include "support/Diagnostics.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cassert>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace topocc::passes {

using namespace ir;

namespace {

/// The coalesced shape (file comment).
class Coalescer {
public:
  Coalescer(Schedule &s, const ThreadblockLimits &limits)
      : s(s), lim(limits), n(static_cast<int32_t>(s.ranks.size())),
        numChannels(limits.maxChannels > 0 ? limits.maxChannels
                                           : kMaxCoalescedChannels),
        // Every threadblock may become a dependency target: at most
        // maxDepTarget + 1 of them per rank.
        maxTbs(std::min({limits.smCount > 0 ? limits.smCount
                                            : limits.maxThreadblocks,
                         limits.maxThreadblocks, limits.maxDepTarget + 1})) {}

  llvm::Error run(ThreadblockInfo *info);

private:
  /// Channels coalescing uses when the output sets no limit.
  static constexpr int32_t kMaxCoalescedChannels = ir::kMscclMaxChannels;
  /// MSCCL: at most 32 sending and 32 receiving threadblocks per channel.
  static constexpr int32_t kMaxPerChannel = 32;

  struct Role {
    RankId rank, send, recv;
    int32_t steps;
  };
  struct Group {
    std::vector<Role> roles;
    int64_t total = 0;
  };
  struct Tb {
    ChannelId channel;
    RankId send = kNone, recv = kNone;
    int32_t steps = 0;
  };
  enum class Why { Conflict, Steps, Threadblocks, PerChannel };
  struct Undo {
    enum Kind { PushTb, Owner, Dir, Steps, SetSend, SetRecv } kind;
    RankId rank;
    int32_t index, amount;
  };
  struct Score {
    int64_t over = 0, fresh = 0, merges = 0;
    int32_t fullest = 0;
  };

  Schedule &s;
  const ThreadblockLimits &lim;
  int32_t n;
  int32_t numChannels;
  int32_t maxTbs;
  std::vector<uint32_t> base;        ///< global op index of each rank's op 0
  std::vector<int32_t> chainOf;      ///< per global op: chain, or -1
  std::vector<OpId> anchor;          ///< per global op: peer op it follows
  std::vector<Group> groups;
  std::vector<int32_t> groupOfChain;
  std::vector<int32_t> level; ///< per chain; empty: the chain DAG has a cycle
  std::vector<int64_t> rankTotal, rankPlaced;
  // Placement state.
  std::vector<std::vector<Tb>> tbs;          ///< per rank
  std::vector<std::vector<int32_t>> owner;   ///< [rank][(c*2+dir)*n+peer]
  std::vector<std::vector<int32_t>> dirCount; ///< [rank][c*2+dir]
  std::vector<Undo> log;

  uint32_t global(RankId r, OpId i) const { return base[r] + i; }
  size_t slot(ChannelId c, int dir, RankId peer) const {
    return (static_cast<size_t>(c) * 2 + dir) * n + peer;
  }
  bool hasPeer(const Op &op) const {
    return sends(op.kind) || receives(op.kind);
  }

  void findChains(size_t &numChains);
  void findAnchors();
  void makeGroups(size_t numChains);
  void computeLevels(size_t numChains);
  void reset();
  void undo(size_t mark);
  /// Places group g on channel c (recorded in `log`); false with the reason
  /// when a role does not fit.
  bool place(const Group &g, ChannelId c, Score &score, Why &why,
             const Role *&failed);
  llvm::Error greedy(bool compact, std::vector<ChannelId> &channelOf);
  void write(const std::vector<ChannelId> &channelOf);
  void reorder();
};

void Coalescer::findChains(size_t &numChains) {
  base.assign(n + 1, 0);
  for (RankId r = 0; r < n; ++r)
    base[r + 1] = base[r] + static_cast<uint32_t>(s.ranks[r].ops.size());
  std::vector<uint32_t> parent(base[n]);
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](uint32_t x) {
    while (parent[x] != x)
      x = parent[x] = parent[parent[x]];
    return x;
  };
  for (const MsgEnds &e : indexMessages(s))
    if (e.sender != kNone && e.receiver != kNone)
      parent[find(global(e.sender, e.sendOp))] =
          find(global(e.receiver, e.recvOp));
  chainOf.assign(base[n], -1);
  std::vector<int32_t> id(base[n], -1);
  numChains = 0;
  for (RankId r = 0; r < n; ++r)
    for (size_t i = 0; i < s.ranks[r].ops.size(); ++i) {
      if (!hasPeer(s.ranks[r].ops[i]))
        continue;
      uint32_t root = find(global(r, static_cast<OpId>(i)));
      if (id[root] < 0)
        id[root] = static_cast<int32_t>(numChains++);
      chainOf[global(r, static_cast<OpId>(i))] = id[root];
    }
}

void Coalescer::findAnchors() {
  anchor.assign(base[n], kNone);
  for (RankId r = 0; r < n; ++r) {
    const auto &ops = s.ranks[r].ops;
    auto at = [&](size_t i) -> OpId & { return anchor[base[r] + i]; };
    std::vector<std::vector<OpId>> users(ops.size());
    for (size_t i = 0; i < ops.size(); ++i) {
      if (hasPeer(ops[i]))
        at(i) = static_cast<OpId>(i);
      for (OpId d : ops[i].deps)
        users[d].push_back(static_cast<OpId>(i));
    }
    // Latest anchored dependency, else first anchored user; repeat while
    // something changes (chains of local ops).
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t i = 0; i < ops.size(); ++i) {
        if (at(i) != kNone)
          continue;
        OpId best = kNone;
        for (OpId d : ops[i].deps)
          if (at(d) != kNone && d > best)
            best = d;
        if (best != kNone) {
          at(i) = at(best);
          changed = true;
        }
      }
      for (size_t i = ops.size(); i-- > 0;) {
        if (at(i) != kNone)
          continue;
        for (OpId u : users[i])
          if (at(u) != kNone) {
            at(i) = at(u);
            changed = true;
            break;
          }
      }
    }
  }
}

void Coalescer::makeGroups(size_t numChains) {
  // Roles of every chain with their estimated steps.
  std::vector<std::map<std::tuple<RankId, RankId, RankId>, int32_t>> roles(
      numChains);
  std::vector<ChannelId> channel(numChains, kNone);
  for (RankId r = 0; r < n; ++r) {
    const auto &ops = s.ranks[r].ops;
    for (size_t i = 0; i < ops.size(); ++i) {
      OpId a = anchor[base[r] + i];
      if (a == kNone)
        continue;
      const Op &host = ops[a];
      int32_t chain = chainOf[base[r] + a];
      channel[chain] = host.channel;
      int32_t steps =
          1 + std::max<int32_t>(0, static_cast<int32_t>(ops[i].deps.size()) - 1);
      roles[chain][{r, sends(host.kind) ? host.sendPeer : kNone,
                    receives(host.kind) ? host.recvPeer : kNone}] += steps;
    }
  }
  std::map<std::vector<int32_t>, int32_t> groupOfKey;
  groupOfChain.assign(numChains, -1);
  rankTotal.assign(n, 0);
  for (size_t c = 0; c < numChains; ++c) {
    std::vector<int32_t> key = {channel[c]};
    for (const auto &[role, steps] : roles[c]) {
      key.push_back(std::get<0>(role));
      key.push_back(std::get<1>(role));
      key.push_back(std::get<2>(role));
    }
    auto [it, isNew] =
        groupOfKey.emplace(std::move(key), static_cast<int32_t>(groups.size()));
    if (isNew) {
      groups.emplace_back();
      for (const auto &[role, steps] : roles[c])
        groups.back().roles.push_back(
            {std::get<0>(role), std::get<1>(role), std::get<2>(role), 0});
    }
    Group &g = groups[it->second];
    size_t k = 0;
    for (const auto &[role, steps] : roles[c]) {
      g.roles[k++].steps += steps;
      g.total += steps;
      rankTotal[std::get<0>(role)] += steps;
    }
    groupOfChain[c] = it->second;
  }
}

void Coalescer::reset() {
  tbs.assign(n, {});
  owner.assign(n, std::vector<int32_t>(
                      static_cast<size_t>(numChannels) * 2 * n, -1));
  dirCount.assign(n, std::vector<int32_t>(numChannels * 2, 0));
  rankPlaced.assign(n, 0);
  log.clear();
}

void Coalescer::undo(size_t mark) {
  while (log.size() > mark) {
    const Undo u = log.back();
    log.pop_back();
    switch (u.kind) {
    case Undo::PushTb:
      tbs[u.rank].pop_back();
      break;
    case Undo::Owner:
      owner[u.rank][u.index] = -1;
      break;
    case Undo::Dir:
      --dirCount[u.rank][u.index];
      break;
    case Undo::Steps:
      tbs[u.rank][u.index].steps -= u.amount;
      rankPlaced[u.rank] -= u.amount;
      break;
    case Undo::SetSend:
      tbs[u.rank][u.index].send = kNone;
      break;
    case Undo::SetRecv:
      tbs[u.rank][u.index].recv = kNone;
      break;
    }
  }
}

bool Coalescer::place(const Group &g, ChannelId c, Score &score, Why &why,
                      const Role *&failed) {
  for (const Role &role : g.roles) {
    const RankId x = role.rank;
    failed = &role;
    std::vector<int32_t> &own = owner[x];
    int32_t ts = role.send == kNone ? -1 : own[slot(c, 0, role.send)];
    int32_t tr = role.recv == kNone ? -1 : own[slot(c, 1, role.recv)];
    if (ts >= 0 && tr >= 0 && ts != tr) {
      why = Why::Conflict;
      return false;
    }
    int32_t tb = ts >= 0 ? ts : tr;
    if (tb >= 0) {
      const Tb &t = tbs[x][tb];
      if ((role.send != kNone && t.send != kNone && t.send != role.send) ||
          (role.recv != kNone && t.recv != kNone && t.recv != role.recv)) {
        why = Why::Conflict;
        return false;
      }
      ++score.merges;
    } else {
      if (static_cast<int32_t>(tbs[x].size()) >= maxTbs) {
        why = Why::Threadblocks;
        return false;
      }
      tb = static_cast<int32_t>(tbs[x].size());
      tbs[x].push_back({c, kNone, kNone, 0});
      log.push_back({Undo::PushTb, x, tb, 0});
      // New threadblocks beyond the rank's pace count against the choice.
      double pace = static_cast<double>(maxTbs) *
                    static_cast<double>(rankPlaced[x] + role.steps) /
                    static_cast<double>(std::max<int64_t>(rankTotal[x], 1));
      if (static_cast<double>(tbs[x].size()) > pace)
        ++score.over;
      ++score.fresh;
    }
    Tb &t = tbs[x][tb];
    for (int dir = 0; dir < 2; ++dir) {
      RankId peer = dir == 0 ? role.send : role.recv;
      RankId &mine = dir == 0 ? t.send : t.recv;
      if (peer == kNone || mine != kNone)
        continue;
      int32_t &count = dirCount[x][c * 2 + dir];
      if (count >= kMaxPerChannel) {
        why = Why::PerChannel;
        return false;
      }
      mine = peer;
      log.push_back({dir == 0 ? Undo::SetSend : Undo::SetRecv, x, tb, 0});
      own[slot(c, dir, peer)] = tb;
      log.push_back({Undo::Owner, x, static_cast<int32_t>(slot(c, dir, peer)),
                     0});
      ++count;
      log.push_back({Undo::Dir, x, c * 2 + dir, 0});
    }
    if (t.steps + role.steps > lim.maxSteps) {
      why = Why::Steps;
      return false;
    }
    t.steps += role.steps;
    rankPlaced[x] += role.steps;
    log.push_back({Undo::Steps, x, tb, role.steps});
    score.fullest = std::max(score.fullest, t.steps);
  }
  return true;
}

llvm::Error Coalescer::greedy(bool compact,
                              std::vector<ChannelId> &channelOf) {
  reset();
  std::vector<int32_t> order(groups.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return groups[a].total > groups[b].total;
  });
  channelOf.assign(groups.size(), kNone);
  for (int32_t gi : order) {
    const Group &g = groups[gi];
    ChannelId best = kNone;
    Score bestScore;
    auto better = [&](const Score &a, const Score &b) {
      if (compact)
        return std::make_tuple(a.fresh, a.fullest) <
               std::make_tuple(b.fresh, b.fullest);
      return std::make_tuple(a.over, a.merges, a.fullest) <
             std::make_tuple(b.over, b.merges, b.fullest);
    };
    // Why each channel refused the group, for the error.
    std::map<Why, int32_t> refused;
    const Role *lastFailed = nullptr;
    for (ChannelId c = 0; c < numChannels; ++c) {
      Score sc;
      Why why = Why::Conflict;
      const Role *failed = nullptr;
      size_t mark = log.size();
      bool ok = place(g, c, sc, why, failed);
      undo(mark);
      if (!ok) {
        ++refused[why];
        lastFailed = failed;
        continue;
      }
      if (best == kNone || better(sc, bestScore)) {
        best = c;
        bestScore = sc;
      }
    }
    if (best == kNone) {
      const Role &r = *lastFailed;
      std::vector<std::string> whys;
      auto say = [&](Why w, llvm::StringRef text) {
        if (auto it = refused.find(w); it != refused.end())
          whys.push_back(llvm::formatv("{0} {1}", it->second, text).str());
      };
      say(Why::Conflict, "bind a peer whose connection another threadblock "
                         "of the channel owns");
      say(Why::Steps, llvm::formatv("exceed {0} steps in a threadblock",
                                    lim.maxSteps)
                          .str());
      say(Why::Threadblocks,
          llvm::formatv("need a new threadblock on a rank that has {0}",
                        maxTbs)
              .str());
      say(Why::PerChannel, "exceed 32 sending or receiving threadblocks on "
                           "the channel");
      auto peer = [](llvm::StringRef what, RankId p) {
        return p == kNone ? ("no " + what + " peer").str()
                          : llvm::formatv("{0} peer {1}", what, p).str();
      };
      return makeUserError(llvm::formatv(
          "coalescing cannot place a chain of {0} roles ({1} steps; on rank "
          "{2}: {3}, {4}, {5} steps) on any of the {6} channels: on {7}",
          g.roles.size(), g.total, r.rank, peer("send", r.send),
          peer("receive", r.recv), r.steps, numChannels,
          llvm::join(whys, ", on ")));
    }
    Score sc;
    Why why;
    const Role *failed = nullptr;
    bool ok = place(g, best, sc, why, failed);
    assert(ok && "the chosen channel fits");
    (void)ok;
    log.clear();
    channelOf[gi] = best;
  }
  return llvm::Error::success();
}

void Coalescer::write(const std::vector<ChannelId> &channelOf) {
  ChannelId used = 0;
  for (RankId r = 0; r < n; ++r) {
    auto &ops = s.ranks[r].ops;
    std::vector<TbId> finalId(tbs[r].size(), kNone);
    TbId next = 0, loose = kNone;
    for (size_t i = 0; i < ops.size(); ++i) {
      Op &op = ops[i];
      OpId a = anchor[base[r] + i];
      if (a == kNone) {
        // A local op with no dependency path to a peer op: its own
        // threadblock on channel 0.
        if (loose == kNone)
          loose = next++;
        op.channel = 0;
        op.threadblock = loose;
        continue;
      }
      const Op &host = ops[a];
      ChannelId c = channelOf[groupOfChain[chainOf[base[r] + a]]];
      int32_t tb = sends(host.kind) ? owner[r][slot(c, 0, host.sendPeer)]
                                    : owner[r][slot(c, 1, host.recvPeer)];
      assert(tb >= 0 && "every role was placed");
      if (finalId[tb] == kNone)
        finalId[tb] = next++;
      op.channel = c;
      op.threadblock = finalId[tb];
      used = std::max(used, c + 1);
    }
    detail::numberTargetsFirst(s.ranks[r], lim.maxDepTarget);
  }
  s.numChannels = std::max<int32_t>(used, 1);
  s.stage = Stage::ThreadblocksAssigned;
}

void Coalescer::computeLevels(size_t numChains) {
  // Chain DAG: a dependency between ops of different chains (local ops count
  // for the chain they follow). Level = longest path from a source chain.
  std::vector<std::vector<int32_t>> succ(numChains);
  std::vector<int32_t> indeg(numChains, 0);
  auto chainAt = [&](RankId r, OpId i) {
    OpId a = anchor[base[r] + i];
    return a == kNone ? -1 : chainOf[base[r] + a];
  };
  for (RankId r = 0; r < n; ++r) {
    const auto &ops = s.ranks[r].ops;
    for (size_t i = 0; i < ops.size(); ++i) {
      int32_t to = chainAt(r, static_cast<OpId>(i));
      for (OpId d : ops[i].deps) {
        int32_t from = chainAt(r, d);
        if (from >= 0 && to >= 0 && from != to) {
          succ[from].push_back(to);
          ++indeg[to];
        }
      }
    }
  }
  level.assign(numChains, 0);
  std::vector<int32_t> ready;
  for (size_t c = 0; c < numChains; ++c)
    if (indeg[c] == 0)
      ready.push_back(static_cast<int32_t>(c));
  size_t seen = 0;
  while (!ready.empty()) {
    int32_t c = ready.back();
    ready.pop_back();
    ++seen;
    for (int32_t d : succ[c]) {
      level[d] = std::max(level[d], level[c] + 1);
      if (--indeg[d] == 0)
        ready.push_back(d);
    }
  }
  if (seen != numChains)
    level.clear(); // a cycle through local ops: keep the list order
}

void Coalescer::reorder() {
  if (level.empty())
    return;
  auto chainAt = [&](RankId r, OpId i) {
    OpId a = anchor[base[r] + i];
    return a == kNone ? -1 : chainOf[base[r] + a];
  };
  // Per rank: ops by (level, chain, list position); deps stay backwards
  // because a dependency between chains raises the level.
  for (RankId r = 0; r < n; ++r) {
    auto &ops = s.ranks[r].ops;
    std::vector<OpId> order(ops.size());
    std::iota(order.begin(), order.end(), 0);
    auto key = [&](OpId i) {
      int32_t c = chainAt(r, i);
      return std::make_tuple(c < 0 ? -1 : level[c], c, i);
    };
    llvm::sort(order, [&](OpId a, OpId b) { return key(a) < key(b); });
    std::vector<OpId> newId(ops.size());
    for (size_t k = 0; k < order.size(); ++k)
      newId[order[k]] = static_cast<OpId>(k);
    std::vector<Op> out;
    out.reserve(ops.size());
    for (OpId i : order) {
      Op op = std::move(ops[i]);
      for (OpId &d : op.deps)
        d = newId[d];
      out.push_back(std::move(op));
    }
    ops = std::move(out);
  }
}

llvm::Error Coalescer::run(ThreadblockInfo *info) {
  size_t numChains = 0;
  findChains(numChains);
  findAnchors();
  makeGroups(numChains);
  computeLevels(numChains);
  // A threadblock has one send and one receive peer: a rank needs at least
  // one threadblock per distinct (send peer, receive peer) pair of its ops.
  RankId worst = 0;
  size_t most = 0;
  for (RankId r = 0; r < n; ++r) {
    std::set<std::pair<RankId, RankId>> pairs;
    for (const Op &op : s.ranks[r].ops)
      if (sends(op.kind) && receives(op.kind))
        pairs.insert({op.sendPeer, op.recvPeer});
    if (pairs.size() > most) {
      most = pairs.size();
      worst = r;
    }
  }
  if (static_cast<int64_t>(most) > maxTbs)
    return makeUserError(llvm::formatv(
        "rank {0} forwards between {1} distinct (receive peer, send peer) "
        "pairs, and a threadblock serves one pair, so it needs more than the "
        "{2} threadblocks it may launch; use --trees-per-root with a smaller "
        "K or --emit plan",
        worst, most, maxTbs));
  std::vector<ChannelId> channelOf;
  llvm::Error err = greedy(/*compact=*/false, channelOf);
  if (err) {
    llvm::consumeError(std::move(err));
    if (auto again = greedy(/*compact=*/true, channelOf))
      return again;
  }
  write(channelOf);
  reorder();
  if (info) {
    info->chains = static_cast<int32_t>(numChains);
    info->groups = static_cast<int32_t>(groups.size());
  }
  if (auto err = detail::checkLimits(s, lim))
    return err;
  return detail::checkResident(s, lim);
}

} // namespace

namespace detail {

llvm::Error coalesceThreadblocks(Schedule &s, const ThreadblockLimits &limits,
                                 ThreadblockInfo *info) {
  Coalescer c(s, limits);
  return c.run(info);
}

} // namespace detail

} // namespace topocc::passes
