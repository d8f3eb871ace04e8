//===- compiler/algorithms/LinkMatching.h - Greedy link-chunk matching -===//
//
// Synthesizes many broadcasts at once on a graph of direct links between
// ranks, by greedy link-chunk matching over time (the synthesis TACOS uses
// for all-gather on meshes and tori): every chunk starts on its origin rank;
// whenever a directed link is free it takes a chunk its sender holds and its
// receiver neither holds nor is already receiving, the rarest such chunk
// first (the one fewest ranks hold or receive), so that every link works as
// long as its sender has something its receiver lacks. Each chunk's
// transfers form a spanning tree rooted at its origin. Links are FIFO
// servers: a chunk occupies a link for `busy` seconds and arrives `latency`
// after that. Stage: algorithm synthesis (compiler/passes/LowerMatching.h
// turns the transfers into a schedule). Deterministic; never prints.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_ALGORITHMS_LINKMATCHING_H
#define TOPOCC_COMPILER_ALGORITHMS_LINKMATCHING_H

#include "llvm/Support/Error.h"

#include <cstdint>
#include <vector>

namespace topocc::algorithms {

/// A directed link between two ranks.
struct MatchLink {
  int32_t from = 0, to = 0;
  double busy = 0;    ///< seconds one chunk occupies the link (> 0)
  double latency = 0; ///< seconds from the end of sending to arrival
};

/// One chunk crossing one link.
struct MatchTransfer {
  int32_t link = 0; ///< index into BroadcastProblem::links
  int32_t chunk = 0;
  double start = 0;  ///< the link starts sending it
  double arrive = 0; ///< the receiver holds it
};

struct BroadcastProblem {
  int32_t numRanks = 0;
  std::vector<MatchLink> links;
  /// The rank each chunk starts on.
  std::vector<int32_t> origin;
  /// When each chunk is ready on its origin; empty: all at time 0.
  std::vector<double> release;
  /// Upper bound on the synthesis' work (chunk candidates examined); a
  /// problem estimated above it is a user error, not a long wait.
  int64_t maxWork = int64_t(3) << 30;
};

struct BroadcastPlan {
  /// In the order they were chosen: by start time, then link index.
  std::vector<MatchTransfer> transfers;
  double finish = 0; ///< the last arrival
};

/// The first rank (in index order) that no path of `links` reaches from
/// rank `from`; -1 when every rank is reached.
int32_t firstUnreachable(int32_t numRanks, const std::vector<MatchLink> &links,
                         int32_t from);

/// The estimated work of matchBroadcasts on `p` (candidates examined).
int64_t matchingWork(const BroadcastProblem &p);

/// Every chunk reaches every rank. User errors for bad input (a link
/// outside the ranks or with a non-positive busy time, an origin out of
/// range, a rank no chunk can reach) or a problem over maxWork.
llvm::Expected<BroadcastPlan> matchBroadcasts(const BroadcastProblem &p);

} // namespace topocc::algorithms

#endif // TOPOCC_COMPILER_ALGORITHMS_LINKMATCHING_H
