//===- compiler/passes/AssignChannels.cpp - Channel per op ----------------===//
//
// Union-find over all ops of the schedule: a same-rank dependency or a message
// joins two ops. Each class is one sub-schedule (for a ring lowering: one
// ring) and becomes one channel; a class in which some op already carries a
// channel gives that channel to its ops without one, and ops that carry a
// channel keep their own.
//
//===----------------------------------------------------------------------===//

#include "compiler/passes/AssignChannels.h"

#include "support/Diagnostics.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cassert>
#include <map>
#include <numeric>

namespace topocc::passes {

using namespace ir;

namespace {

/// Disjoint sets over dense ids with path halving.
class UnionFind {
public:
  explicit UnionFind(size_t n) : parent(n) {
    std::iota(parent.begin(), parent.end(), 0);
  }
  size_t find(size_t x) {
    while (parent[x] != x)
      x = parent[x] = parent[parent[x]];
    return x;
  }
  void join(size_t a, size_t b) {
    a = find(a);
    b = find(b);
    if (a != b)
      parent[std::max(a, b)] = std::min(a, b); // smallest id is the root
  }

private:
  std::vector<size_t> parent;
};

} // namespace

llvm::Error assignChannels(Schedule &s, int32_t maxChannels) {
  assert(s.stage == Stage::Fused && "assignChannels runs after fusion");
  // Global id of (rank, op): offset of the rank plus the op index.
  std::vector<size_t> base(s.ranks.size() + 1, 0);
  for (size_t r = 0; r < s.ranks.size(); ++r)
    base[r + 1] = base[r] + s.ranks[r].ops.size();
  UnionFind uf(base.back());
  for (size_t r = 0; r < s.ranks.size(); ++r)
    for (size_t i = 0; i < s.ranks[r].ops.size(); ++i)
      for (OpId d : s.ranks[r].ops[i].deps)
        uf.join(base[r] + i, base[r] + d);
  for (const MsgEnds &m : indexMessages(s))
    if (m.sender != kNone && m.receiver != kNone)
      uf.join(base[m.sender] + m.sendOp, base[m.receiver] + m.recvOp);

  // Classes that already carry a channel keep it.
  std::map<size_t, ChannelId> channelOf;
  ChannelId nextChannel = 0;
  for (size_t r = 0; r < s.ranks.size(); ++r)
    for (size_t i = 0; i < s.ranks[r].ops.size(); ++i)
      if (ChannelId c = s.ranks[r].ops[i].channel; c != kNone) {
        channelOf.emplace(uf.find(base[r] + i), c);
        nextChannel = std::max(nextChannel, c + 1);
      }
  for (size_t r = 0; r < s.ranks.size(); ++r)
    for (size_t i = 0; i < s.ranks[r].ops.size(); ++i) {
      // An op's own channel wins (a lowering that chose per-op channels,
      // like the tree lowering's per-chain channels, keeps them all).
      if (s.ranks[r].ops[i].channel != kNone)
        continue;
      auto [it, isNew] = channelOf.emplace(uf.find(base[r] + i), nextChannel);
      if (isNew)
        ++nextChannel;
      s.ranks[r].ops[i].channel = it->second;
    }
  if (nextChannel > maxChannels)
    return makeUserError(llvm::formatv(
        "the schedule needs {0} independent channels, more than the limit of "
        "{1}; use fewer --channels",
        nextChannel, maxChannels));
  s.numChannels = std::max<int32_t>(nextChannel, 1);
  s.stage = Stage::ChannelsAssigned;
  return llvm::Error::success();
}

} // namespace topocc::passes
