//===- compiler/passes/LowerMatching.h - Link matching -----*- C++ -*-===//
//
// Lowers all-gather, reduce-scatter and all-reduce on a graph of direct
// links between ranks (a mesh, a torus, a GPU mesh without switches) to
// unfused primitive ops, from greedy link-chunk matching
// (compiler/algorithms/LinkMatching.h):
//   - all-gather: every rank's chunks are broadcast by the matching; a rank
//     forwards a chunk it received (receive, then send);
//   - reduce-scatter: the matching of an all-gather on the reversed links,
//     run backwards in time: each chunk's partial sums flow up its tree to
//     the rank that owns it (receive-reduce, then send);
//   - all-reduce: that reduce-scatter, then an all-gather matched with each
//     chunk released when its reduction is done.
// Every rank's ops are listed in the matching's time order, so each link's
// transfers run in the order the synthesis chose. Channels: a proper edge
// colouring of the link graph gives every link of a rank a channel of its
// own (one per colour and direction), so a threadblock either sends to one
// peer or receives from one and no threadblock waits for a receive before
// an unrelated send; a link's transfers beyond `maxStepsPerChannel` move to
// further channel layers, the first of each layer after the last of the
// layer before.
// Stage: produces Lowered.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_PASSES_LOWERMATCHING_H
#define TOPOCC_COMPILER_PASSES_LOWERMATCHING_H

#include "compiler/algorithms/LinkMatching.h"
#include "ir/Schedule.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace topocc::passes {

struct MatchingOptions {
  ir::Collective collective = ir::Collective::AllGather;
  int32_t numRanks = 0;
  /// Chunks per rank: the all-gather input (reduce-scatter output) of each
  /// rank is cut into this many, each matched on its own.
  int32_t chunks = 1;
  /// Directed links between ranks; `busy` is one chunk's time on the link.
  std::vector<algorithms::MatchLink> links;
  /// Transfers one (link, channel) carries at most (an MSCCL threadblock's
  /// steps); 0: no limit.
  int32_t maxStepsPerChannel = 0;
  bool inplace = false;
  std::string name; ///< schedule name; a default is derived when empty
};

/// What the synthesis found, for reports.
struct MatchingInfo {
  /// The synthesis' own finish time (its FIFO link model, one chunk per
  /// transfer): a figure of the synthesis, not a prediction.
  double synthesizedTime = 0;
  int64_t transfers = 0;
  int32_t channelsPerLayer = 0; ///< two per link colour
  int32_t layers = 0;           ///< channel layers
};

/// Chunk c (of numRanks * chunks) belongs to rank c / chunks: its all-gather
/// input unit c % chunks, its reduce-scatter output unit c % chunks, the
/// unit c of every full buffer. User errors for bad options and from the
/// matching (a rank no link path reaches).
llvm::Expected<ir::Schedule> lowerMatching(const MatchingOptions &o,
                                           MatchingInfo *info = nullptr);

} // namespace topocc::passes

#endif // TOPOCC_COMPILER_PASSES_LOWERMATCHING_H
