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

#include "ir/CombinedGraph.h"

#include "support/Diagnostics.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cassert>
#include <map>
#include <numeric>

namespace topocc::passes {

using namespace ir;


llvm::Error assignChannels(Schedule &s, int32_t maxChannels) {
  assert(s.stage == Stage::Fused && "assignChannels runs after fusion");
  // Ops joined by same-rank deps and messages share a channel.
  const std::vector<std::vector<size_t>> piece = ir::subSchedules(s);

  // Classes that already carry a channel keep it.
  std::map<size_t, ChannelId> channelOf;
  ChannelId nextChannel = 0;
  for (size_t r = 0; r < s.ranks.size(); ++r)
    for (size_t i = 0; i < s.ranks[r].ops.size(); ++i)
      if (ChannelId c = s.ranks[r].ops[i].channel; c != kNone) {
        channelOf.emplace(piece[r][i], c);
        nextChannel = std::max(nextChannel, c + 1);
      }
  for (size_t r = 0; r < s.ranks.size(); ++r)
    for (size_t i = 0; i < s.ranks[r].ops.size(); ++i) {
      // An op's own channel wins (a lowering that chose per-op channels,
      // like the tree lowering's per-chain channels, keeps them all).
      if (s.ranks[r].ops[i].channel != kNone)
        continue;
      auto [it, isNew] = channelOf.emplace(piece[r][i], nextChannel);
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
