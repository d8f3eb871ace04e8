//===- compiler/passes/LowerTrees.h - Spanning trees to schedule IR -*- C++ -*-===//
//
// Lowers ForestColl spanning trees (compiler/algorithms/ForestColl.h) to
// unfused primitive ops (send, recv, reduce, copy) with explicit message ids
// and a channel on every op (docs/Algorithms-trees.md, "Lowering"): allgather
// broadcasts each root's units down its out-trees (root send, interior
// receive-copy-send, leaf receive); reduce-scatter reduces them up in-trees
// (leaves send, interior receive-reduce-send, root receive-reduce-copy);
// allreduce reduces every unit to its root on an in-tree, then broadcasts it
// down an out-tree. Each root's shard is cut into k units (k trees per root); a
// tree carries its multiplicity's worth of consecutive units, cut into `chunks`
// pipelined pieces. Channels: every tree is covered by arc-disjoint downward
// chains, and each chain takes the smallest channel that none of its link
// directions (rank pairs) uses yet, so no (link, channel) pair carries two
// chains; when that order needs more than maxChannels, a DSatur colouring is
// tried.
// Stage: produces Lowered.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_PASSES_LOWERTREES_H
#define TOPOCC_COMPILER_PASSES_LOWERTREES_H

#include "compiler/algorithms/ForestColl.h"
#include "ir/Schedule.h"
#include "ir/Target.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace topocc::passes {

/// MSCCL_MAX_COUNT: a step moves at most 71 chunks, so a tree's unit range
/// is cut into steps of at most this many.
constexpr int32_t kTreeMaxUnitsPerStep = 71;
/// MSCCL stores buffer offsets in 16 bits: ranks x units per root x chunks
/// (nchunksperloop) is at most this.
constexpr int64_t kTreeMaxChunksPerLoop = ir::kMaxChunksPerLoop;

/// One spanning tree on the ranks.
struct LoweringTree {
  ir::RankId root = 0;
  /// The tree carries units [firstUnit, firstUnit + units) of its root's
  /// unitsPerRoot units.
  int32_t firstUnit = 0;
  int32_t units = 1;
  /// Per rank: the neighbour towards the root (kNone for the root). For a
  /// broadcast tree data moves parent -> child; for a reduce tree child ->
  /// parent.
  std::vector<ir::RankId> parent;
};

/// The trees of one phase with the units per root they split.
struct TreeSet {
  int32_t unitsPerRoot = 0; ///< k
  std::vector<LoweringTree> trees;
};

struct TreeLoweringOptions {
  ir::Collective collective = ir::Collective::AllGather;
  int32_t numRanks = 0;
  /// Allgather and allreduce: out-trees that broadcast each root's units.
  TreeSet broadcast;
  /// Reduce-scatter and allreduce: in-trees that reduce each root's units.
  TreeSet reduce;
  /// Pipelined pieces per tree (each piece moves the tree's units once).
  int32_t chunks = 1;
  bool inplace = false;
  std::string name; ///< schedule name; derived when empty
  /// Channels the chains may use: 32 for MSCCL XML; 0 means no limit (the
  /// plan format and the IR have none).
  int32_t maxChannels = ir::kMscclMaxChannels;
  /// MSCCL XML with coalescing (AssignThreadblocks.h): when the chains need
  /// more than maxChannels, keep the colouring with more channels instead of
  /// failing; assign-threadblocks then chooses channels within the limit.
  bool channelsMayOverflow = false;
};

/// What the lowering chose, for reports.
struct TreeLoweringInfo {
  int32_t channels = 0;   ///< channels the chains use
  int32_t chains = 0;     ///< chains over all trees and phases
  int32_t unitsPerRoot = 0; ///< K: lcm of the phases' k for allreduce
  int32_t segments = 0;   ///< (root, unit range) pieces lowered per chunk
};

/// REQUIRES: nothing; invalid options (a tree that does not span the ranks,
/// unit ranges that do not partition each root's units, too many channels
/// or chunks) are user errors saying what is wrong.
llvm::Expected<ir::Schedule> lowerTrees(const TreeLoweringOptions &opts,
                                        TreeLoweringInfo *info = nullptr);

/// One star per root (every other rank its child), one unit each.
TreeSet starTreeSet(int32_t numRanks);

/// The trees of ForestColl's forest `f` (compiler/algorithms/ForestColl.h)
/// as the tree lowering takes them: each root's k units split in tree order
/// into consecutive ranges of the trees' multiplicities.
TreeSet forestTreeSet(const algorithms::Forest &f, int32_t numRanks);
/// The same with the shares of `shares` (algorithms::roundTreeShares):
/// shares.unitsPerRoot units per root, tree i carrying shares.mult[i].
TreeSet forestTreeSet(const algorithms::Forest &f, int32_t numRanks,
                      const algorithms::RoundedShares &shares);

} // namespace topocc::passes

#endif // TOPOCC_COMPILER_PASSES_LOWERTREES_H
