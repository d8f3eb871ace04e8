//===- compiler/passes/LowerRing.h - Ring collectives to schedule IR -*- C++
//-*-===//
//
// Lowers ring allreduce (reduce-scatter then all-gather), allgather and
// reducescatter over a ring order to unfused primitive ops (send, recv,
// reduce, copy) with explicit message ids. Stage: produces Lowered. Each
// (rank, channel) is one dependency chain in the order its threadblock will
// run it; partial sums that are only forwarded live in scratch slots.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_PASSES_LOWERRING_H
#define TOPOCC_COMPILER_PASSES_LOWERRING_H

#include "compiler/analysis/CostModel.h"
#include "ir/Schedule.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace topocc::passes {

struct RingOptions {
  ir::Collective collective = ir::Collective::AllReduce;
  int32_t numRanks = 0;
  int32_t channels = 1; ///< rings; each carries 1/channels of the data
  int32_t chunks = 1;   ///< chunks per rank per channel (pipelining)
  /// Ring order, a permutation of 0..numRanks-1; empty means 0, 1, ...
  /// Used by every channel unless channelOrders is given.
  std::vector<ir::RankId> ringOrder;
  bool inplace = false;
  std::string name; ///< schedule name; a default is derived when empty
  /// Per-channel ring orders: empty, or exactly `channels` permutations.
  std::vector<std::vector<ir::RankId>> channelOrders = {};
  /// Per-channel data shares as chunk counts (units per rank on that
  /// channel): empty (every channel gets `chunks`), or exactly `channels`
  /// counts >= 1. Channel c carries channelChunks[c] / sum of the data.
  std::vector<int32_t> channelChunks = {};
  /// Per-channel step widths: empty (1), or exactly `channels` counts >= 1,
  /// each dividing its channel's chunk count. A step of channel c moves a
  /// run of channelWidths[c] consecutive chunks (MSCCL's `cnt`), so the
  /// channel pipelines channelChunks[c] / channelWidths[c] pieces: a large
  /// share costs no more steps per threadblock than a small one.
  std::vector<int32_t> channelWidths = {};
};

/// REQUIRES: nothing; invalid options (bad ring order, unsupported
/// collective, counts out of range) are user errors listing every problem.
/// With equal channelChunks and one order this is exactly the single-order
/// lowering (same units, messages and scratch slots).
llvm::Expected<ir::Schedule> lowerRing(const RingOptions &opts);

/// Integer chunk counts for data shares: U units, the smallest power of two
/// at least `shares.size() * chunks` (so the file serves power-of-two call
/// sizes), are split by the largest-remainder method (ties to the lower
/// channel), each channel getting at least 1 (taken back from the largest
/// counts). Equal shares on a power-of-two channel count give `chunks`
/// each. REQUIRES: shares non-empty, chunks >= 1.
std::vector<int32_t> chunksForShares(llvm::ArrayRef<double> shares,
                                     int32_t chunks);

/// The options that lower the ring search's `rings`
/// (compiler/algorithms/RingSearch.h) for collective `c` on `numRanks`:
/// one channel per ring in its order, the rings' data shares as chunk
/// counts: `units * chunks` when the search quantised every ring's share
/// (RingChannel::units), else chunksForShares of `chunks`. The NIC hops the
/// search chose are the simulator's route hints (analysis::ringRouteHints).
/// With `wide`, a channel's share moves in steps as wide as the share
/// (channelWidths) and `chunks` counts those pieces: a ring carrying six units
/// per rank then costs one step per ring step, not six
/// (docs/Algorithms-rings.md, "Wide steps").
RingOptions searchedRingOptions(llvm::ArrayRef<analysis::RingChannel> rings,
                                ir::Collective c, int32_t numRanks,
                                int32_t chunks, bool wide = false);

} // namespace topocc::passes

#endif // TOPOCC_COMPILER_PASSES_LOWERRING_H
