//===- compiler/passes/LowerDbTree.cpp - Double binary tree all-reduce ----===//
//
// See LowerDbTree.h. Each unit is two dependency chains per rank: the
// reduction (receive each child's partial sum and add it, then send to the
// parent) and the broadcast (receive the sum from the parent, send it to
// every child), the broadcast's first op after the reduction's last, since
// it overwrites the buffer the reduction read or sent. Units are emitted in
// order and, within a unit, ranks children first (reduction) and parents
// first (broadcast), so every connection carries its messages in the same
// order on both ends.
//
//===----------------------------------------------------------------------===//

#include "compiler/passes/LowerDbTree.h"

#include "compiler/passes/LowerHierRing.h"
#include "ir/Target.h"
#include "support/Diagnostics.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cassert>

namespace topocc::passes {

using namespace ir;

namespace {

/// Children of a rank in one tree at most: the next GPU of its node's
/// chain and two child nodes' heads (the bit tree's fan-out).
constexpr int32_t kMaxKids = 3;

/// A binary tree over positions 0..n-1 with root 0, as NCCL builds its
/// trees: position p > 0 with lowest set bit b hangs below p - b + 2b (b
/// cleared, 2b set), or below p - b where that is past the end. The odd
/// positions are the leaves; the depth is about log2(n). Numbering the
/// nodes one place on for the second tree makes most leaves interior there,
/// and every node has at most two children in the two trees together
/// (LowerDbTreeTest checks every count up to 300 nodes).
std::vector<int32_t> bitTreeParents(int32_t n) {
  std::vector<int32_t> parent(n, -1);
  for (int32_t p = 1; p < n; ++p) {
    const int32_t b = p & -p;
    const int64_t up = int64_t(p ^ b) | (int64_t(b) << 1);
    parent[p] = up < n ? static_cast<int32_t>(up) : (p ^ b);
  }
  return parent;
}

} // namespace

int32_t dbTreeDefaultUnits(int32_t maxStepsPerThreadblock) {
  if (maxStepsPerThreadblock >= 64)
    return 64; // kNoLimit too
  return std::max<int32_t>(
      1, static_cast<int32_t>(llvm::PowerOf2Floor(static_cast<uint64_t>(
             std::max<int32_t>(1, maxStepsPerThreadblock)))));
}

std::vector<RankTree> dbTreePair(const DbTreeOptions &o, int32_t channel) {
  const int32_t N = static_cast<int32_t>(o.nodes.size());
  const int32_t G = static_cast<int32_t>(o.nodes[0].size());
  std::vector<int32_t> order = o.localOrder;
  if (order.empty())
    for (int32_t l = 0; l < G; ++l)
      order.push_back(l);
  std::rotate(order.begin(),
              order.begin() + (int64_t(channel) * G / o.channels) % G,
              order.end());
  // Node positions of the tree: node p in tree 0, node p + 1 in tree 1.
  const std::vector<int32_t> posParent = bitTreeParents(N);
  std::vector<RankTree> trees(2);
  for (int32_t t = 0; t < 2; ++t) {
    RankTree &tree = trees[t];
    tree.parent.assign(o.numRanks, kNone);
    tree.children.assign(o.numRanks, {});
    const std::vector<int32_t> &chain = order;
    auto nodeAt = [&](int32_t p) { return t == 0 ? p : (p + 1) % N; };
    auto head = [&](int32_t node) { return o.nodes[node][chain[0]]; };
    for (int32_t p = 0; p < N; ++p) {
      const std::vector<RankId> &ranks = o.nodes[nodeAt(p)];
      for (int32_t i = 1; i < G; ++i) {
        tree.parent[ranks[chain[i]]] = ranks[chain[i - 1]];
        tree.children[ranks[chain[i - 1]]].push_back(ranks[chain[i]]);
      }
    }
    for (int32_t p = 0; p < N; ++p) {
      const RankId h = head(nodeAt(p));
      if (posParent[p] < 0) {
        tree.root = h;
        continue;
      }
      const RankId up = head(nodeAt(posParent[p]));
      tree.parent[h] = up;
      tree.children[up].push_back(h);
    }
  }
  return trees;
}

llvm::Expected<Schedule> lowerDbTree(const DbTreeOptions &o) {
  std::vector<std::string> problems;
  if (o.nodes.empty())
    problems.push_back("the tree all-reduce needs at least one node");
  else
    checkNodeLayout(o.nodes, o.numRanks, o.localOrder, "the tree all-reduce",
                    problems);
  if (o.channels < 1 || 4 * int64_t(o.channels) > kMaxRingChannels)
    problems.push_back(llvm::formatv(
        "--channels must be between 1 and {0} for the tree all-reduce (each "
        "tree pair takes four channels), got {1}",
        kMaxRingChannels / 4, o.channels));
  if (o.chunks < 1)
    problems.push_back(
        llvm::formatv("--chunks must be at least 1, got {0}", o.chunks));
  const int64_t units =
      2 * int64_t(std::max(o.channels, 1)) * std::max(o.chunks, 1);
  if (std::string why = tooManyUnits(units, "2 trees * channels * chunks",
                                     "use fewer channels or chunks");
      !why.empty())
    problems.push_back(why);
  if (!problems.empty())
    return makeUserError(llvm::join(problems, "\n"));

  const int32_t n = o.numRanks, K = o.chunks;
  Schedule s;
  s.collective = Collective::AllReduce;
  s.numRanks = n;
  s.chunksPerLoop = static_cast<int32_t>(units);
  s.inplace = o.inplace;
  s.stage = Stage::Lowered;
  s.name = o.name.empty()
               ? llvm::formatv("dbtree{0}x{1}_allreduce_c{2}_k{3}_{4}",
                               o.nodes.size(), o.nodes[0].size(), o.channels, K,
                               o.inplace ? "inplace" : "outofplace")
                     .str()
               : o.name;
  s.ranks.resize(n);
  // In place the output is the input (setCollectiveBuffers).
  const BufferKind work = o.inplace ? BufferKind::Input : BufferKind::Output;
  MsgId nextMsg = 0;
  std::vector<std::vector<RankTree>> pairs;
  for (int32_t c = 0; c < o.channels; ++c)
    pairs.push_back(dbTreePair(o, c));
  // Each rank's ops, counted first (a list grown op by op holds up to twice
  // its size; at 4096 GPUs that was gigabytes): per tree and unit, a
  // receive and a reduce per child and a send down to it, a send up and a
  // receive down below the root, and the lone rank's copy.
  std::vector<size_t> counted(n, 0);
  for (const std::vector<RankTree> &pair : pairs)
    for (const RankTree &tree : pair)
      for (RankId r = 0; r < n; ++r) {
        const size_t kids = tree.children[r].size();
        counted[r] += K * (3 * kids + (tree.parent[r] != kNone   ? 2
                                       : kids == 0 && !o.inplace ? 1
                                                                 : 0));
      }
  for (RankId r = 0; r < n; ++r)
    s.ranks[r].ops.reserve(counted[r]);
  for (int32_t c = 0; c < o.channels; ++c) {
    const std::vector<RankTree> &pair = pairs[c];
    for (int32_t t = 0; t < 2; ++t) {
      const RankTree &tree = pair[t];
      // Ranks children first: reversed breadth-first order from the root.
      std::vector<RankId> topDown{tree.root};
      for (size_t i = 0; i < topDown.size(); ++i)
        for (RankId ch : tree.children[topDown[i]])
          topDown.push_back(ch);
      const ChannelId up = 4 * c + 2 * t, down = up + 1;
      for (int32_t j = 0; j < K; ++j) {
        const int32_t u = (2 * c + t) * K + j;
        const BufferRef in{BufferKind::Input, u, 1}, out{work, u, 1};
        // Per rank: the last op of this unit's reduction chain, and the
        // message each child sent up.
        std::vector<OpId> last(n, kNone);
        std::vector<MsgId> sentUp(n, kNone);
        auto emit = [&](RankId r, Op op, ChannelId ch) {
          if (last[r] != kNone)
            op.deps = {last[r]};
          op.channel = ch;
          std::vector<Op> &ops = s.ranks[r].ops;
          ops.push_back(std::move(op));
          last[r] = static_cast<OpId>(ops.size() - 1);
        };
        for (auto it = topDown.rbegin(); it != topDown.rend(); ++it) {
          const RankId r = *it;
          const std::vector<RankId> &kids = tree.children[r];
          // The partial sum collects in `out` (the input itself in place);
          // a child's message lands in `out` when it is the first out of
          // place (out = msg + in), else in a scratch slot of its own (one
          // writer and one reader, so fuse makes the pair one rrc and the
          // slot disappears).
          bool summed = false; // `out` holds this rank's partial sum
          assert(kids.size() <= static_cast<size_t>(kMaxKids));
          for (size_t k = 0; k < kids.size(); ++k) {
            const RankId ch = kids[k];
            const BufferRef slot{BufferKind::Scratch,
                                 u * kMaxKids + static_cast<int32_t>(k), 1};
            if (!summed && !o.inplace) {
              emit(r, makeRecv(out, ch, sentUp[ch]), up);
              emit(r, makeLocal(OpKind::Reduce, out, in), up);
            } else {
              emit(r, makeRecv(slot, ch, sentUp[ch]), up);
              emit(r, makeLocal(OpKind::Reduce, summed ? out : in, slot), up);
              s.ranks[r].scratchChunks =
                  std::max(s.ranks[r].scratchChunks, slot.chunk + 1);
            }
            summed = true;
          }
          const BufferRef partial = summed || o.inplace ? out : in;
          if (tree.parent[r] != kNone) {
            sentUp[r] = nextMsg++;
            emit(r, makeSend(partial, tree.parent[r], sentUp[r]), up);
          } else if (!summed && !o.inplace) {
            emit(r, makeLocal(OpKind::Copy, out, in), up); // one rank
          }
        }
        // The broadcast, parents first; a rank's chain continues from its
        // reduction (the sum arrives in the buffer the reduction used).
        // The sends to the children only read the sum: each waits for it,
        // not for the other sends.
        std::vector<MsgId> sentDown(n, kNone);
        for (RankId r : topDown) {
          if (tree.parent[r] != kNone)
            emit(r, makeRecv(out, tree.parent[r], sentDown[r]), down);
          const OpId ready = last[r];
          for (RankId ch : tree.children[r]) {
            sentDown[ch] = nextMsg++;
            last[r] = ready;
            emit(r, makeSend(out, ch, sentDown[ch]), down);
          }
        }
      }
    }
  }
  for (RankId r = 0; r < n; ++r) {
    assert(s.ranks[r].ops.size() == counted[r] &&
           "each rank's ops were counted");
    setCollectiveBuffers(s.ranks[r], Collective::AllReduce, s.chunksPerLoop,
                         s.chunksPerLoop, o.inplace);
  }
  return s;
}

} // namespace topocc::passes
