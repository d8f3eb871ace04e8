//===- compiler/passes/LowerTrees.cpp - Spanning trees to schedule IR -----===//
//
// Layout (N ranks, K units per root, P chunks per tree; nchunksperloop =
// N*K*P): root r's shard is chunks [r*K*P, (r+1)*K*P) of the full buffer
// (allgather output, reduce-scatter input, allreduce both), and
// [0, K*P) of the per-rank buffer (allgather input, reduce-scatter output).
// A segment is one root's unit range [a, a+L) carried by one tree per phase
// (allreduce: the intersection of a reduce tree's and a broadcast tree's
// ranges, with both phases' units scaled to K = lcm of their k); piece p of
// it is the L chunks a*P + p*L .. of the shard, contiguous. Ops are emitted
// piece-major (every segment of piece 0, then piece 1, ...), and per segment
// the reduce phase before the broadcast phase, so on every rank the list
// order follows one global order that every message also follows: chains
// that share a threadblock cannot deadlock.
//
// Roles per segment and piece (unfused; fuse turns them into MSCCL ops):
//   broadcast root      send to every child (children in chain order)
//   broadcast interior  recv from parent; send to main child, then the others
//   broadcast leaf      recv
//   reduce leaf         send own to parent
//   reduce interior     extra children: acc = own (copy), then per child
//                       recv(t); acc += t (-> rrc); main child: recv(t);
//                       t += acc; send t (-> rrs)
//   reduce root         every child: recv into the result, += own or += t
//                       (-> rrc); the main child last
// Chains: the main child of a vertex is its child with the deepest subtree
// (lowest rank on ties); a chain starts at every edge whose child is not its
// parent's main child and at every edge of the root, and follows main
// children down to a leaf. Channel per chain: the smallest one that none of
// its link directions uses yet (reduce trees first, then broadcast trees;
// longest chains first); when that needs more than maxChannels, the same rule
// in DSatur order (the chain with the most distinct channels among the chains
// it conflicts with first).
//
//===----------------------------------------------------------------------===//

#include "compiler/passes/LowerTrees.h"

#include "support/Diagnostics.h"

#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <map>
#include <numeric>
#include <set>

namespace topocc::passes {

using namespace ir;

namespace {

constexpr int32_t kMaxCount = kTreeMaxUnitsPerStep;
constexpr int64_t kMaxChunks = kTreeMaxChunksPerLoop;

/// A tree with what the lowering derives from it.
struct Prepared {
  const LoweringTree *tree = nullptr;
  std::vector<std::vector<RankId>> children; ///< chain order: main first
  std::vector<RankId> main;                  ///< main child or kNone
  /// Channel of the edge (parent[v], v), by v; kNone for the root.
  std::vector<ChannelId> edgeChannel;
  int scale = 1; ///< K / k of its phase
};

/// One root's unit range and the trees that carry it.
struct Segment {
  RankId root = 0;
  int32_t first = 0, len = 0; ///< in units of K
  int reduceTree = -1, broadcastTree = -1;
};

class TreeLowering {
public:
  TreeLowering(const TreeLoweringOptions &o) : o(o), n(o.numRanks) {}

  llvm::Error prepare();
  Schedule run();
  TreeLoweringInfo info;

private:
  const TreeLoweringOptions &o;
  int32_t n;
  int32_t K = 1, P = 1;
  std::vector<Prepared> reduce, broadcast;
  std::vector<Segment> segments;
  Schedule s;
  MsgId nextMsg = 0;
  std::vector<int32_t> nextScratch, accNext;

  bool hasReduce() const { return o.collective != Collective::AllGather; }
  bool hasBroadcast() const {
    return o.collective != Collective::ReduceScatter;
  }

  llvm::Error checkSet(const TreeSet &set, llvm::StringRef phase,
                       std::vector<std::string> &problems);
  void prepareTree(Prepared &p, const LoweringTree &t);
  llvm::Error assignChannels();
  void makeSegments();

  OpId emit(RankId r, Op op, ChannelId ch, llvm::ArrayRef<OpId> deps) {
    op.channel = ch;
    for (OpId d : deps)
      if (d != kNone)
        op.deps.push_back(d);
    auto &ops = s.ranks[r].ops;
    ops.push_back(std::move(op));
    return static_cast<OpId>(ops.size() - 1);
  }
  BufferRef temp(RankId r, int32_t len) {
    BufferRef b{BufferKind::Scratch, nextScratch[r], len};
    nextScratch[r] += len;
    return b;
  }

  void lowerPiece(const Segment &seg, int32_t p);
};

llvm::Error TreeLowering::checkSet(const TreeSet &set, llvm::StringRef phase,
                                   std::vector<std::string> &problems) {
  if (set.unitsPerRoot < 1) {
    problems.push_back(llvm::formatv("the {0} trees split each root's data "
                                     "into {1} units; expected at least 1",
                                     phase, set.unitsPerRoot));
    return llvm::Error::success();
  }
  std::vector<std::vector<std::pair<int32_t, int32_t>>> ranges(n);
  for (size_t i = 0; i < set.trees.size(); ++i) {
    const LoweringTree &t = set.trees[i];
    std::string where = llvm::formatv("{0} tree {1}", phase, i).str();
    if (t.root < 0 || t.root >= n) {
      problems.push_back(where + llvm::formatv(": root {0} is not a rank",
                                               t.root)
                                     .str());
      continue;
    }
    if (static_cast<int32_t>(t.parent.size()) != n) {
      problems.push_back(where + llvm::formatv(": {0} parents for {1} ranks",
                                               t.parent.size(), n)
                                     .str());
      continue;
    }
    bool ok = true;
    for (RankId v = 0; v < n && ok; ++v) {
      RankId p = t.parent[v];
      if (v == t.root ? p != kNone : (p < 0 || p >= n || p == v)) {
        problems.push_back(
            where + llvm::formatv(": rank {0} has parent {1}", v, p).str());
        ok = false;
        break;
      }
      // Every rank reaches the root within n - 1 steps.
      RankId x = v;
      for (int32_t step = 0; step < n && x != t.root; ++step)
        x = t.parent[x];
      if (x != t.root) {
        problems.push_back(where +
                           llvm::formatv(": rank {0} does not reach the root "
                                         "{1} (a cycle)",
                                         v, t.root)
                               .str());
        ok = false;
      }
    }
    if (t.units < 1 || t.firstUnit < 0 ||
        t.firstUnit + t.units > set.unitsPerRoot) {
      problems.push_back(where + llvm::formatv(": units [{0}, {1}) are "
                                               "outside 0..{2}",
                                               t.firstUnit,
                                               t.firstUnit + t.units,
                                               set.unitsPerRoot)
                                     .str());
      continue;
    }
    ranges[t.root].push_back({t.firstUnit, t.units});
  }
  for (RankId r = 0; r < n; ++r) {
    llvm::sort(ranges[r]);
    int32_t at = 0;
    for (auto [first, len] : ranges[r]) {
      if (first != at)
        break;
      at += len;
    }
    if (at != set.unitsPerRoot)
      problems.push_back(llvm::formatv("the {0} trees of root {1} do not "
                                       "partition its {2} units",
                                       phase, r, set.unitsPerRoot));
  }
  return llvm::Error::success();
}

void TreeLowering::prepareTree(Prepared &p, const LoweringTree &t) {
  p.tree = &t;
  p.children.assign(n, {});
  for (RankId v = 0; v < n; ++v)
    if (v != t.root)
      p.children[t.parent[v]].push_back(v);
  // Subtree heights, by repeated relaxation from the leaves (n <= a few
  // thousand; each rank walks to the root once).
  std::vector<int32_t> height(n, 0);
  for (RankId v = 0; v < n; ++v) {
    int32_t h = 0;
    for (RankId x = v; x != t.root; x = t.parent[x]) {
      ++h;
      RankId up = t.parent[x];
      if (height[up] >= h)
        break;
      height[up] = h;
    }
  }
  p.main.assign(n, kNone);
  for (RankId v = 0; v < n; ++v) {
    auto &ch = p.children[v];
    if (ch.empty())
      continue;
    RankId best = ch[0];
    for (RankId c : ch)
      if (height[c] > height[best])
        best = c;
    p.main[v] = best;
    // Main child first, the others by rank.
    std::stable_partition(ch.begin(), ch.end(),
                          [&](RankId c) { return c == best; });
  }
  p.edgeChannel.assign(n, kNone);
}

llvm::Error TreeLowering::assignChannels() {
  // Chains of every tree: (phase, tree, ranks from the head's child down).
  struct Chain {
    bool isReduce;
    int tree;
    std::vector<RankId> verts; ///< children of the chain's edges, top down
  };
  std::vector<Chain> chains;
  auto collect = [&](std::vector<Prepared> &set, bool isReduce) {
    for (size_t ti = 0; ti < set.size(); ++ti) {
      Prepared &p = set[ti];
      const LoweringTree &t = *p.tree;
      std::vector<Chain> mine;
      for (RankId v = 0; v < n; ++v) {
        if (v == t.root)
          continue;
        RankId up = t.parent[v];
        if (up != t.root && p.main[up] == v)
          continue; // continues its parent's chain
        Chain c{isReduce, static_cast<int>(ti), {}};
        for (RankId x = v; x != kNone; x = p.main[x])
          c.verts.push_back(x);
        mine.push_back(std::move(c));
      }
      std::stable_sort(mine.begin(), mine.end(),
                       [](const Chain &a, const Chain &b) {
                         return a.verts.size() > b.verts.size();
                       });
      for (Chain &c : mine)
        chains.push_back(std::move(c));
    }
  };
  if (hasReduce())
    collect(reduce, true);
  if (hasBroadcast())
    collect(broadcast, false);
  info.chains = static_cast<int32_t>(chains.size());
  const size_t numChains = chains.size();

  auto arcOf = [&](const Chain &c, RankId v) {
    const LoweringTree &t =
        *(c.isReduce ? reduce : broadcast)[c.tree].tree;
    RankId up = t.parent[v];
    return c.isReduce ? static_cast<size_t>(v) * n + up
                      : static_cast<size_t>(up) * n + v;
  };
  // Chains per link direction (rank pair), in chain order.
  std::vector<std::vector<int32_t>> onArc(static_cast<size_t>(n) * n);
  for (size_t i = 0; i < numChains; ++i)
    for (RankId v : chains[i].verts)
      onArc[arcOf(chains[i], v)].push_back(static_cast<int32_t>(i));
  size_t busiest = 0;
  for (size_t a = 0; a < onArc.size(); ++a)
    if (onArc[a].size() > onArc[busiest].size())
      busiest = a;
  const int32_t limit =
      o.maxChannels > 0 ? o.maxChannels : std::numeric_limits<int32_t>::max();
  // Allreduce: when a root's segments pair its reduce trees and broadcast
  // trees in more than one way (two packings with different unit ranges),
  // the root's last receive must not fuse with a broadcast send (the fused
  // op would tie a reduce chain to a broadcast chain in one threadblock, and
  // another segment ties them differently). Fusion needs equal channels, so
  // broadcast chains that start at such a root take other channels than the
  // reduce edges into it: those pairs conflict as if they shared a link.
  std::vector<char> mixedRoot(n, 0);
  if (hasReduce() && hasBroadcast()) {
    std::map<int, std::set<int>> pairsOfReduce, pairsOfBroadcast;
    for (const Segment &seg : segments) {
      pairsOfReduce[seg.reduceTree].insert(seg.broadcastTree);
      pairsOfBroadcast[seg.broadcastTree].insert(seg.reduceTree);
    }
    for (const Segment &seg : segments)
      if (pairsOfReduce[seg.reduceTree].size() > 1 ||
          pairsOfBroadcast[seg.broadcastTree].size() > 1)
        mixedRoot[seg.root] = 1;
  }
  // Per mixed root: the broadcast chains that start there, the reduce chains
  // with an edge into it.
  std::vector<std::vector<int32_t>> startsAt(n), entersRoot(n);
  for (size_t i = 0; i < numChains; ++i) {
    const Chain &c = chains[i];
    const LoweringTree &t = *(c.isReduce ? reduce : broadcast)[c.tree].tree;
    if (!mixedRoot[t.root])
      continue;
    if (!c.isReduce && t.parent[c.verts.front()] == t.root)
      startsAt[t.root].push_back(static_cast<int32_t>(i));
    if (c.isReduce &&
        llvm::any_of(c.verts, [&](RankId v) { return t.parent[v] == t.root; }))
      entersRoot[t.root].push_back(static_cast<int32_t>(i));
  }
  auto rootOf = [&](const Chain &c) {
    return (c.isReduce ? reduce : broadcast)[c.tree].tree->root;
  };

  // Colours the chains in `order` greedily with the smallest channel that no
  // conflicting chain has; returns the channels used.
  std::vector<ChannelId> channelOf(numChains, kNone);
  auto colour = [&](size_t i, const llvm::BitVector &taken) {
    ChannelId ch = static_cast<ChannelId>(taken.find_first_unset());
    if (ch < 0)
      ch = static_cast<ChannelId>(taken.size());
    channelOf[i] = ch;
    return ch;
  };
  auto takenBy = [&](size_t i, llvm::BitVector &taken) {
    taken.reset();
    auto add = [&](int32_t j) {
      if (channelOf[j] == kNone)
        return;
      if (static_cast<size_t>(channelOf[j]) >= taken.size())
        taken.resize(channelOf[j] + 1);
      taken.set(channelOf[j]);
    };
    const Chain &c = chains[i];
    for (RankId v : c.verts)
      for (int32_t j : onArc[arcOf(c, v)])
        add(j);
    RankId root = rootOf(c);
    if (mixedRoot[root]) {
      if (llvm::is_contained(startsAt[root], static_cast<int32_t>(i)))
        for (int32_t j : entersRoot[root])
          add(j);
      if (llvm::is_contained(entersRoot[root], static_cast<int32_t>(i)))
        for (int32_t j : startsAt[root])
          add(j);
    }
  };
  // First: chain order (reduce trees, then broadcast trees; each tree's
  // chains longest first).
  int32_t used = 0;
  llvm::BitVector taken;
  for (size_t i = 0; i < numChains; ++i) {
    takenBy(i, taken);
    used = std::max(used, colour(i, taken) + 1);
  }
  if (used > limit) {
    // Second: DSatur (the uncoloured chain whose conflicting chains already
    // have the most distinct channels first; ties: more conflicts, then chain
    // order), which often reaches the busiest link's load where the first
    // order needs more.
    std::fill(channelOf.begin(), channelOf.end(), kNone);
    std::vector<llvm::BitVector> seen(numChains);
    std::vector<int32_t> saturation(numChains, 0), degree(numChains, 0);
    for (size_t i = 0; i < numChains; ++i)
      for (RankId v : chains[i].verts)
        degree[i] += static_cast<int32_t>(onArc[arcOf(chains[i], v)].size());
    auto note = [&](int32_t j, ChannelId ch) {
      if (channelOf[j] != kNone)
        return;
      llvm::BitVector &b = seen[j];
      if (static_cast<size_t>(ch) >= b.size())
        b.resize(ch + 1);
      if (!b.test(ch)) {
        b.set(ch);
        ++saturation[j];
      }
    };
    used = 0;
    for (size_t step = 0; step < numChains; ++step) {
      int32_t best = -1;
      for (size_t i = 0; i < numChains; ++i) {
        if (channelOf[i] != kNone)
          continue;
        if (best < 0 || saturation[i] > saturation[best] ||
            (saturation[i] == saturation[best] && degree[i] > degree[best]))
          best = static_cast<int32_t>(i);
      }
      ChannelId ch = colour(best, seen[best]);
      used = std::max(used, ch + 1);
      const Chain &c = chains[best];
      for (RankId v : c.verts)
        for (int32_t j : onArc[arcOf(c, v)])
          note(j, ch);
      RankId root = rootOf(c);
      if (mixedRoot[root]) {
        if (llvm::is_contained(startsAt[root], best))
          for (int32_t j : entersRoot[root])
            note(j, ch);
        if (llvm::is_contained(entersRoot[root], best))
          for (int32_t j : startsAt[root])
            note(j, ch);
      }
    }
  }
  if (used > limit && !o.channelsMayOverflow)
    return makeUserError(llvm::formatv(
        "the trees need more than {0} channels: no (link, channel) pair may "
        "carry two tree chains, and the link direction rank {1} -> rank {2} "
        "carries {3} chains ({4} chains in {5} trees in all); use "
        "--trees-per-root with a smaller K",
        limit, busiest / n, busiest % n, onArc[busiest].size(), chains.size(),
        reduce.size() + broadcast.size()));
  for (size_t i = 0; i < numChains; ++i) {
    const Chain &c = chains[i];
    Prepared &p = (c.isReduce ? reduce : broadcast)[c.tree];
    for (RankId v : c.verts)
      p.edgeChannel[v] = channelOf[i];
  }
  info.channels = used;
  return llvm::Error::success();
}

void TreeLowering::makeSegments() {
  // Unit ranges per root and phase, in K units, sorted.
  auto ranges = [&](const std::vector<Prepared> &set, RankId r) {
    std::vector<std::pair<int32_t, int>> out; // (first, tree)
    for (size_t i = 0; i < set.size(); ++i)
      if (set[i].tree->root == r)
        out.push_back({set[i].tree->firstUnit * set[i].scale,
                       static_cast<int>(i)});
    llvm::sort(out);
    return out;
  };
  for (RankId r = 0; r < n; ++r) {
    std::vector<int32_t> cuts = {0, K};
    std::vector<std::pair<int32_t, int>> red, bc;
    if (hasReduce()) {
      red = ranges(reduce, r);
      for (auto [f, t] : red)
        cuts.push_back(f);
    }
    if (hasBroadcast()) {
      bc = ranges(broadcast, r);
      for (auto [f, t] : bc)
        cuts.push_back(f);
    }
    llvm::sort(cuts);
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    auto owner = [](const std::vector<std::pair<int32_t, int>> &rs,
                    int32_t unit) {
      int t = -1;
      for (auto [f, i] : rs)
        if (f <= unit)
          t = i;
      return t;
    };
    for (size_t i = 0; i + 1 < cuts.size(); ++i) {
      int32_t a = cuts[i], len = cuts[i + 1] - cuts[i];
      int rt = hasReduce() ? owner(red, a) : -1;
      int bt = hasBroadcast() ? owner(bc, a) : -1;
      // A step moves at most kMaxCount chunks: cut long ranges evenly.
      int32_t parts = (len + kMaxCount - 1) / kMaxCount;
      for (int32_t q = 0; q < parts; ++q) {
        int32_t lo = a + static_cast<int32_t>(int64_t(len) * q / parts);
        int32_t hi = a + static_cast<int32_t>(int64_t(len) * (q + 1) / parts);
        segments.push_back({r, lo, hi - lo, rt, bt});
      }
    }
  }
  info.segments = static_cast<int32_t>(segments.size());
}

llvm::Error TreeLowering::prepare() {
  std::vector<std::string> problems;
  if (o.collective != Collective::AllReduce &&
      o.collective != Collective::AllGather &&
      o.collective != Collective::ReduceScatter)
    problems.push_back(("the trees algorithm supports allreduce, allgather "
                        "and reducescatter, not " +
                        collectiveName(o.collective))
                           .str());
  if (n < 2)
    problems.push_back(llvm::formatv(
        "spanning trees need at least 2 ranks, the topology has {0}", n));
  if (o.chunks < 1)
    problems.push_back(
        llvm::formatv("--chunks must be at least 1, got {0}", o.chunks));
  if (!problems.empty())
    return makeUserError(llvm::join(problems, "\n"));
  if (hasReduce())
    if (auto err = checkSet(o.reduce, "reduce", problems))
      return err;
  if (hasBroadcast())
    if (auto err = checkSet(o.broadcast, "broadcast", problems))
      return err;
  if (!problems.empty())
    return makeUserError(llvm::join(problems, "\n"));

  P = o.chunks;
  int64_t k = 1;
  if (hasReduce())
    k = std::lcm<int64_t>(k, o.reduce.unitsPerRoot);
  if (hasBroadcast())
    k = std::lcm<int64_t>(k, o.broadcast.unitsPerRoot);
  if (k * n * P > kMaxChunks)
    return makeUserError(llvm::formatv(
        "ranks * units per root * chunks = {0} * {1} * {2} = {3} chunks "
        "exceeds 32767 (MSCCL stores offsets in 16 bits); use fewer --chunks "
        "or --trees-per-root with a smaller K",
        n, k, P, k * n * P));
  K = static_cast<int32_t>(k);
  info.unitsPerRoot = K;
  if (hasReduce())
    for (const LoweringTree &t : o.reduce.trees) {
      reduce.emplace_back();
      prepareTree(reduce.back(), t);
      reduce.back().scale = K / o.reduce.unitsPerRoot;
    }
  if (hasBroadcast())
    for (const LoweringTree &t : o.broadcast.trees) {
      broadcast.emplace_back();
      prepareTree(broadcast.back(), t);
      broadcast.back().scale = K / o.broadcast.unitsPerRoot;
    }
  makeSegments();
  if (auto err = assignChannels())
    return err;
  return llvm::Error::success();
}

void TreeLowering::lowerPiece(const Segment &seg, int32_t p) {
  const RankId r = seg.root;
  const int32_t len = seg.len;
  const int32_t local = seg.first * P + p * len;
  const int32_t global = r * K * P + local;
  const bool inplace = o.inplace;
  const bool ar = o.collective == Collective::AllReduce;
  auto in = [&](int32_t c) { return BufferRef{BufferKind::Input, c, len}; };
  auto out = [&](int32_t c) { return BufferRef{BufferKind::Output, c, len}; };
  // The message on edge (parent[v], v) of the phase being lowered: n - 1 ids
  // per phase, no gaps.
  MsgId base = 0;
  auto msgOf = [&](RankId v) { return base + (v < r ? v : v - 1); };
  // Per rank: its last reduce op of this piece (in-place allreduce orders the
  // broadcast's write after it); the root's result op.
  std::vector<OpId> lastReduce(n, kNone);
  OpId rootFinal = kNone;

  if (seg.reduceTree >= 0) {
    const Prepared &t = reduce[seg.reduceTree];
    base = nextMsg;
    nextMsg += n - 1;
    const BufferRef own = in(global);
    for (RankId x = 0; x < n; ++x) {
      const auto &kids = t.children[x];
      if (x == r) {
        const BufferRef result =
            inplace ? in(global) : (ar ? out(global) : out(local));
        // The main child (first in chain order) last.
        std::vector<RankId> order(kids.begin() + 1, kids.end());
        order.push_back(kids.front());
        OpId prev = kNone;
        for (size_t i = 0; i < order.size(); ++i) {
          RankId c = order[i];
          ChannelId ch = t.edgeChannel[c];
          if (!inplace && i == 0) {
            // recv(result) ; result += own  -> rrc(result = own + msg)
            OpId rv = emit(x, makeRecv(result, c, msgOf(c)), ch, {});
            prev = emit(x, makeLocal(OpKind::Reduce, result, own), ch, {rv});
          } else {
            // recv(t) ; result += t  -> rrc(result = result + msg)
            BufferRef tmp = temp(x, len);
            OpId rv = emit(x, makeRecv(tmp, c, msgOf(c)), ch, {});
            prev = emit(x, makeLocal(OpKind::Reduce, result, tmp), ch,
                        {rv, prev});
          }
        }
        rootFinal = lastReduce[x] = prev;
        continue;
      }
      const RankId up = t.tree->parent[x];
      const ChannelId upCh = t.edgeChannel[x];
      if (kids.empty()) {
        lastReduce[x] = emit(x, makeSend(own, up, msgOf(x)), upCh, {});
        continue;
      }
      // Extra children accumulate into a scratch slot; the main child's
      // partial is added on the way up.
      BufferRef acc = own;
      OpId prev = kNone;
      for (size_t i = 1; i < kids.size(); ++i) {
        RankId c = kids[i];
        ChannelId ch = t.edgeChannel[c];
        if (i == 1) {
          // acc = own first: MSCCL's rrc keeps its local operand at the
          // destination's offset (the checker's rule 9).
          acc = {BufferKind::Scratch, accNext[x], len};
          accNext[x] += len;
          prev = emit(x, makeLocal(OpKind::Copy, acc, own), ch, {});
        }
        // recv(t) ; acc += t  -> rrc(acc = acc + msg)
        BufferRef tmp = temp(x, len);
        OpId rv = emit(x, makeRecv(tmp, c, msgOf(c)), ch, {});
        prev = emit(x, makeLocal(OpKind::Reduce, acc, tmp), ch, {rv, prev});
      }
      // recv(t) ; t += acc ; send(t)  -> rrs(acc + msg)
      RankId m = kids.front();
      BufferRef tmp = temp(x, len);
      OpId rv = emit(x, makeRecv(tmp, m, msgOf(m)), upCh, {});
      OpId red =
          emit(x, makeLocal(OpKind::Reduce, tmp, acc), upCh, {rv, prev});
      lastReduce[x] = emit(x, makeSend(tmp, up, msgOf(x)), upCh, {red});
    }
  }

  if (seg.broadcastTree >= 0) {
    const Prepared &t = broadcast[seg.broadcastTree];
    base = nextMsg;
    nextMsg += n - 1;
    // The slot every rank ends with: the collective's output (allgather and
    // out-of-place allreduce) or the aliased input (in-place allreduce).
    const BufferRef slot = ar && inplace ? in(global) : out(global);
    for (RankId x = 0; x < n; ++x) {
      const auto &kids = t.children[x];
      OpId have = kNone;
      BufferRef src = slot;
      if (x == r) {
        if (ar)
          have = rootFinal;
        else if (!inplace)
          src = in(local);
      } else {
        const RankId up = t.tree->parent[x];
        // In place, the result overwrites x's own contribution: only after
        // x's reduce ops have read it.
        have = emit(x, makeRecv(slot, up, msgOf(x)), t.edgeChannel[x],
                    {ar && inplace ? lastReduce[x] : kNone});
      }
      OpId firstSend = kNone;
      for (RankId c : kids) {
        OpId id = emit(x, makeSend(src, c, msgOf(c)), t.edgeChannel[c], {have});
        if (firstSend == kNone)
          firstSend = id;
      }
      // Out-of-place allgather: the root's own units, in -> out, after its
      // send to the main child (off the critical path; the dependency keeps
      // it in that send's threadblock instead of one of its own).
      if (x == r && !ar && !inplace)
        emit(x, makeLocal(OpKind::Copy, slot, src), t.edgeChannel[kids.front()],
             {firstSend});
    }
  }
}

Schedule TreeLowering::run() {
  s.collective = o.collective;
  s.numRanks = n;
  s.chunksPerLoop = n * K * P;
  s.inplace = o.inplace;
  s.stage = Stage::Lowered;
  s.name = o.name.empty()
               ? llvm::formatv("trees{0}_{1}_k{2}_c{3}_{4}", n,
                               collectiveName(o.collective), K, P,
                               o.inplace ? "inplace" : "outofplace")
                     .str()
               : o.name;
  s.ranks.resize(n);
  // Accumulators first, then the temporaries fusion removes, so the scratch
  // that survives fusion is small.
  accNext.assign(n, 0);
  for (const Segment &seg : segments)
    if (seg.reduceTree >= 0) {
      const Prepared &t = reduce[seg.reduceTree];
      for (RankId x = 0; x < n; ++x)
        if (x != seg.root && t.children[x].size() >= 2)
          accNext[x] += seg.len * P;
    }
  nextScratch = accNext;
  accNext.assign(n, 0);
  for (int32_t p = 0; p < P; ++p)
    for (const Segment &seg : segments)
      lowerPiece(seg, p);

  const int32_t full = s.chunksPerLoop, mine = K * P;
  for (RankProgram &rp : s.ranks) {
    rp.scratchChunks = scratchExtent(rp);
    setCollectiveBuffers(rp, o.collective, full, mine, o.inplace);
  }
  return std::move(s);
}

} // namespace

llvm::Expected<Schedule> lowerTrees(const TreeLoweringOptions &opts,
                                    TreeLoweringInfo *info) {
  TreeLowering l(opts);
  if (auto err = l.prepare())
    return err;
  Schedule s = l.run();
  if (info)
    *info = l.info;
  return s;
}

TreeSet starTreeSet(int32_t numRanks) {
  TreeSet set;
  set.unitsPerRoot = 1;
  for (RankId r = 0; r < numRanks; ++r) {
    LoweringTree t;
    t.root = r;
    t.parent.assign(numRanks, r);
    t.parent[r] = kNone;
    set.trees.push_back(std::move(t));
  }
  return set;
}

TreeSet forestTreeSet(const algorithms::Forest &f, int32_t numRanks) {
  algorithms::RoundedShares own;
  own.unitsPerRoot = f.k;
  for (const algorithms::PackedTree &pt : f.trees.trees)
    own.mult.push_back(pt.mult);
  return forestTreeSet(f, numRanks, own);
}

TreeSet forestTreeSet(const algorithms::Forest &f, int32_t numRanks,
                      const algorithms::RoundedShares &shares) {
  TreeSet set;
  set.unitsPerRoot = static_cast<int32_t>(shares.unitsPerRoot);
  std::vector<int32_t> next(numRanks, 0);
  for (size_t i = 0; i < f.trees.trees.size(); ++i) {
    const algorithms::PackedTree &pt = f.trees.trees[i];
    LoweringTree lt;
    lt.root = pt.root;
    lt.units = static_cast<int32_t>(shares.mult[i]);
    lt.firstUnit = next[pt.root];
    next[pt.root] += lt.units;
    for (int p : pt.parent)
      lt.parent.push_back(p < 0 ? ir::kNone : p);
    set.trees.push_back(std::move(lt));
  }
  return set;
}

} // namespace topocc::passes
