//===- compiler/passes/LowerHierRing.h - Two-level ring -*- C++ -*-===//
//
// Lowers a hierarchical ring all-reduce for multi-node topologies to unfused
// primitive ops: (1) a ring reduce-scatter inside every node leaves local GPU
// l with the node's partial sum of shard l, (2) a ring all-reduce of shard l
// over the GPUs with local index l of every node (rail l), (3) a ring
// all-gather inside every node. Stage: produces Lowered. Each (rank,
// channel, sub-chunk) is one dependency chain through the three phases, so
// the phases of different sub-chunks overlap (RingPhaseSpec::chunkChains).
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_PASSES_LOWERHIERRING_H
#define TOPOCC_COMPILER_PASSES_LOWERHIERRING_H

#include "ir/Schedule.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <string>
#include <vector>

namespace topocc::passes {

struct HierRingOptions {
  ir::Collective collective = ir::Collective::AllReduce;
  int32_t numRanks = 0;
  /// The ranks of each node by local index; every node has the same count G
  /// and every rank appears once. Local index l of all nodes is rail l.
  std::vector<std::vector<ir::RankId>> nodes;
  /// Intra-node ring as local indices (a permutation of 0..G-1), the same on
  /// every node; empty means 0, 1, ..., G-1.
  std::vector<int32_t> localOrder;
  /// Per channel c, when not empty: channel c's intra-node ring is
  /// channelOrders[c % size()] instead of localOrder (several rings over a
  /// node's links, as the ring packing gives for a GPU mesh).
  std::vector<std::vector<int32_t>> channelOrders;
  int32_t channels = 1; ///< independent copies, each 1/channels of the data
  int32_t chunks = 1;   ///< chunks per shard block (pipelining)
  bool inplace = false;
  std::string name; ///< schedule name; a default is derived when empty
};

/// All-reduce data layout per channel c (G local GPUs, N nodes, K chunks;
/// U = G*N*K): unit c*U + l*N*K + j*N + b is block b (node ring position)
/// of sub-chunk j of shard l. nchunksperloop = channels * U.
/// All-gather and reduce-scatter: rank r's block is units r*L .. r*L+L-1
/// (L = channels * K), sub-chunk j of channel c at r*L + c*K + j;
/// nchunksperloop = ranks * L. All-gather runs the rails first (every rank
/// gets its rail's blocks), then one intra-node ring per source node;
/// reduce-scatter runs the intra-node rings first (one per destination
/// node, partial sums in scratch), then the rails.
/// User error listing every problem for bad options (fewer than 2 nodes, unequal nodes, a rank missing or repeated, bad local order,
/// counts out of range).
llvm::Expected<ir::Schedule> lowerHierRing(const HierRingOptions &o);

/// One exact ring phase over groups of ranks, the building block of the
/// hierarchical lowerings (hier-ring, and hier-cerar's intra-node phases).
enum class RingPhaseKind { ReduceScatter, AllReduce, AllGather };

/// Block `pos` (ring position within group `group`) of sub-chunk j, in the
/// buffer `kind`.
using RingBlockFn = std::function<ir::BufferRef(
    int32_t group, int32_t pos, int32_t j, ir::BufferKind kind)>;

struct RingPhaseSpec {
  RingPhaseKind kind = RingPhaseKind::ReduceScatter;
  /// Each group lists its ranks in ring order; all groups have one size.
  std::vector<std::vector<ir::RankId>> groups;
  RingBlockFn block;
  /// ReduceScatter reads the contributions from `src` and leaves block q
  /// complete in the `work` buffer of position q; AllReduce and AllGather
  /// work in place on `work`.
  ir::BufferKind src = ir::BufferKind::Input;
  ir::BufferKind work = ir::BufferKind::Output;
  int32_t chunks = 1; ///< sub-chunks per block (pipelining)
  /// One dependency chain per (rank, sub-chunk) instead of per rank, and the
  /// phase emitted chunk-major (for j, for t, ...): sub-chunk j of the next
  /// phase starts once sub-chunk j of this one is done on its rank, so
  /// consecutive phases overlap (hier-ring's intra-node phases run while
  /// the inter-node rings carry earlier sub-chunks). Every phase of a
  /// lowering must then use it (ChainState::lastOfChunk).
  bool chunkChains = false;
  /// With chunkChains: sub-chunk j extends chain chainOffset + j (a phase
  /// emitted one sub-chunk at a time passes that sub-chunk's index).
  int32_t chainOffset = 0;
};

/// Chain state shared by the phases of one lowering: per rank the last op
/// of its dependency chain (kNone: none yet) and the next free scratch
/// chunk, and the next free message id.
struct ChainState {
  std::vector<ir::OpId> last;
  /// With RingPhaseSpec::chunkChains: per rank, per sub-chunk, the last op
  /// of that sub-chunk's chain.
  std::vector<std::vector<ir::OpId>> lastOfChunk;
  std::vector<int32_t> scratchEnd;
  ir::MsgId nextMsg = 0;
  explicit ChainState(int32_t numRanks)
      : last(numRanks, ir::kNone), lastOfChunk(numRanks),
        scratchEnd(numRanks, 0) {}
};

/// Ends a lowering built on `st`: every rank's scratch extent from the
/// chains, and its buffers for collective `c` (setCollectiveBuffers with
/// s.chunksPerLoop and `local` chunks).
void finishChainedRanks(ir::Schedule &s, const ChainState &st,
                        ir::Collective c, int32_t local, bool inplace);

/// Appends the phase to `s` (whose ranks exist), emitted step-major (for
/// step t, sub-chunk j, group, position) so every connection carries its
/// messages in the same order on both ends; every op depends on the
/// previous op of its rank's chain. With `chunkChains` the order is
/// chunk-major (for j, for t, group, position) and the chains are per
/// (rank, sub-chunk). Partial sums that are only forwarded live in fresh
/// scratch slots.
void emitRingPhase(ir::Schedule &s, const RingPhaseSpec &p, ChainState &st);

/// The rings of a node layout: per node its ranks in `localOrder` (the
/// intra-node ring), per local index l the l-th rank of every node in node
/// order (the rail). REQUIRES: checkNodeLayout found nothing wrong.
void nodeAndRailRings(const std::vector<std::vector<ir::RankId>> &nodes,
                      llvm::ArrayRef<int32_t> localOrder,
                      std::vector<std::vector<ir::RankId>> &intra,
                      std::vector<std::vector<ir::RankId>> &rails);

/// Appends to `problems` what is wrong with a node layout: nodes of
/// different sizes (`what` names the algorithm), ranks out of range, on
/// two nodes or on none, a local order that is not a permutation.
/// REQUIRES: nodes is not empty.
void checkNodeLayout(const std::vector<std::vector<ir::RankId>> &nodes,
                     int32_t numRanks, llvm::ArrayRef<int32_t> localOrder,
                     llvm::StringRef what, std::vector<std::string> &problems);

} // namespace topocc::passes

#endif // TOPOCC_COMPILER_PASSES_LOWERHIERRING_H
