//===- compiler/algorithms/ForestColl.h - Spanning-tree schedules -*- C++ -*-===//
//
// The ForestColl pipeline of docs/Algorithms-trees.md up to physical trees:
// exact bound (compiler/analysis/Bound.h), tree units per arc (at the optimum
// k, or the smallest U_k for a fixed k, "Fixed k"), switch removal
// (SwitchSplitting.h), tree packing and map-back (TreePacking.h). Allgather
// packs out-trees of G, reduce-scatter out-trees of the reversed graph (their
// arcs reversed are in-trees). Stage: algorithm. Never prints; deterministic.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_ALGORITHMS_FORESTCOLL_H
#define TOPOCC_COMPILER_ALGORITHMS_FORESTCOLL_H

#include "compiler/algorithms/SwitchSplitting.h"
#include "compiler/algorithms/TreePacking.h"
#include "compiler/analysis/Bound.h"
#include "compiler/analysis/CostModel.h"
#include "compiler/analysis/NetRoutes.h"

#include "llvm/Support/Error.h"

#include <optional>

namespace topocc::algorithms {

/// The smallest U_k (exact, in s/GB) such that floor(U_k b(e)) tree units per
/// arc admit k spanning out-trees per root (docs/Algorithms-trees.md, "Fixed
/// k"), and those units. Its throughput is N k / U_k; with k = the optimum's k
/// it equals the bound. `g` as for dinkelbachBound.
struct FixedK {
  int64_t k = 0;
  analysis::Fraction u;       ///< U_k, s/GB
  std::vector<int64_t> units; ///< floor(U_k b(e)) per arc of g
  int maxFlows = 0;
};
llvm::Expected<FixedK> fixedKUnits(const analysis::BoundGraph &g,
                                   bool reversed, int64_t k);

/// The largest trees-per-root count a request may ask for.
constexpr int64_t kMaxTreesPerRoot = 1000;

/// --trees-per-root: "auto" (none: the optimum's k) or 1 to
/// kMaxTreesPerRoot; a user error in the CLI's wording otherwise.
llvm::Expected<std::optional<int64_t>> parseTreesPerRoot(llvm::StringRef text);
/// The same check for a count given as a number.
llvm::Error checkTreesPerRoot(int64_t k);

struct ForestOptions {
  bool reversed = false;   ///< reduce-scatter: pack the reversed graph
  int64_t treesPerRoot = 0; ///< 0: the optimum's k (automatic)
  SplitPolicy policy = SplitPolicy::Proposal;
  PackOptions pack;
};

struct Forest {
  bool reversed = false;
  analysis::DirectionalBound bound; ///< lambda* of this orientation
  int64_t k = 0;
  analysis::Fraction u;   ///< s/GB; the trees take (M/N) U / k seconds
  std::vector<int64_t> units;
  SwitchSplitResult split;
  TreePackingResult trees;
  double boundSeconds = 0, unitsSeconds = 0, splitSeconds = 0,
         packSeconds = 0; ///< wall time per stage
  /// Predicted algbw of the trees in bytes/s (bandwidth only): N k / U.
  double algbw(int numRanks) const { return numRanks * k / u.value() * 1e9; }
};

llvm::Expected<Forest> buildForest(const analysis::BoundGraph &g,
                                   const ForestOptions &opts);

/// The throughput loss that power-of-two shares may cost
/// (roundTreeShares): 1%.
constexpr double kShareRoundingTolerance = 0.01;

/// The forest's tree shares rounded to a power-of-two number of units per
/// root (docs/Algorithms-trees.md, "Power-of-two shares"): the MSCCL
/// runtimes use a file only for calls whose element count is a multiple of
/// nchunksperloop = ranks x units per root x chunks, so with a power-of-two
/// rank count the file then serves every power-of-two size. For each power
/// of two K from the most trees one root has up to `maxUnitsPerRoot`, each
/// root's shares C_T / k are scaled to K by largest-remainder rounding with
/// every tree keeping at least one unit; the loss of K is the busiest
/// link's time with the rounded shares on the packing's physical paths over
/// its time with the exact shares, minus 1. The smallest K with a loss of
/// at most `tolerance` wins; when none has, the K of least loss (the
/// smaller on ties); when no power of two fits `maxUnitsPerRoot`, the
/// forest's own shares (rounded false). A K that gives some tree more steps
/// than its exact share (ceil(units / unitsPerStep)) is skipped.
struct ShareRoundingOptions {
  int64_t maxUnitsPerRoot = 0; ///< the largest K
  int64_t unitsPerStep = 0;    ///< units one step moves at most; 0: any
  double tolerance = kShareRoundingTolerance;
};
struct RoundedShares {
  int64_t unitsPerRoot = 0;  ///< K
  std::vector<int64_t> mult; ///< per tree of f.trees.trees: >= 1, K per root
  double loss = 0;           ///< throughput lost to the rounding (0.004)
  bool rounded = false;      ///< K is a power of two
};
RoundedShares roundTreeShares(const Forest &f, const analysis::BoundGraph &g,
                              const ShareRoundingOptions &opts);

/// The trees' time when every tree arc's data takes the route(s) the
/// schedule's messages take between its two ranks
/// (analysis::runtimeRankFlow with `net`, the runtime model's NICs across
/// nodes; within a node and without `net` LinkModel::rankFlow, the widest
/// shortest route split evenly over equal ones), not the switch paths the
/// packing chose: a GPU pair
/// joined by NVLink and by PCIe through the CPUs sends over NVLink only, so
/// trees packed over both load NVLink more than U. Seconds per byte of the
/// collective's data M (each root's M/N bytes, a tree of C_T units carrying
/// C_T/k of them over each arc), set by the busiest link (capacities as
/// `kind`), and that link (a LinkModel resource). Equals the forest's
/// U / (k N) when the routes are the packing's paths. User error when two
/// ranks of an arc have no route.
struct RoutedTime {
  double secondsPerByte = 0;
  int busiest = -1;
};
llvm::Expected<RoutedTime> routedTime(const Forest &f, analysis::LinkModel &m,
                                      analysis::CapacityKind kind,
                                      const analysis::NcclNetRoutes *net);

} // namespace topocc::algorithms

#endif // TOPOCC_COMPILER_ALGORITHMS_FORESTCOLL_H
