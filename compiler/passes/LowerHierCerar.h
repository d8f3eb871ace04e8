//===- compiler/passes/LowerHierCerar.h - Hierarchical CERAR ---*- C++ -*-===//
//
// Lowers hierarchical CERAR (docs/Algorithms-cerar.md 7) for M nodes x G GPUs
// to the schedule IR: (1) an exact ring reduce-scatter inside every node leaves
// local GPU l with the node's sum of shard l (S/G bytes), (2) G independent
// inter-node CERAR rings, one per rail (rail l = local GPU l of every node, in
// node order), each on its shard with a code of N = M ranks and c components,
// (3) an exact ring all-gather inside every node. The data is cut into G*c
// units: shard l is units [l*c, (l+1)*c), its component j is unit l*c + j.
// Stage: produces Lowered; every rank is one dependency chain through the three
// phases. Reuses the phase emitters of the hierarchical ring (emitRingPhase)
// and of CERAR (emitCerarRing).
//
// Seams: node position p of rail l uses the code of logical index
// (p + seam_l) mod M with seam_l = seamOffset + l when staggerSeams (the
// default), so that each node holds exact results for some shards; else
// seam_l = seamOffset on every rail.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_PASSES_LOWERHIERCERAR_H
#define TOPOCC_COMPILER_PASSES_LOWERHIERCERAR_H

#include "compiler/algorithms/Cerar.h"
#include "compiler/passes/LowerCerar.h"
#include "ir/Schedule.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace topocc::passes {

struct HierCerarOptions {
  /// The inter-node code: ranks = number of nodes M.
  cerar::Design design;
  int32_t numRanks = 0;
  /// The ranks of each node by local index, nodes in ring order (node
  /// position p = nodes[p]); every node has G ranks, every rank appears once.
  std::vector<std::vector<ir::RankId>> nodes;
  /// Intra-node ring as local indices (a permutation of 0..G-1), the same on
  /// every node; empty means 0, 1, ..., G-1.
  std::vector<int32_t> localOrder;
  int32_t seamOffset = 0;
  bool staggerSeams = true;
  bool inplace = false;
  bool forceGeneric = false; ///< the generic CERAR worker (tests)
  std::string name;          ///< a default is derived when empty
};

struct HierCerarInfo {
  CerarLoweringInfo rail; ///< the CERAR worker of the rails
  int32_t nodes = 0, gpusPerNode = 0;
};

/// User error listing every problem for bad options (fewer than 2 nodes:
/// "hier-cerar needs at least 2 nodes", unequal nodes, a rank missing or
/// repeated, bad local order, a code whose N is not the node count or that
/// is incomplete, more than 32767 units).
llvm::Expected<ir::Schedule> lowerHierCerar(const HierCerarOptions &o,
                                            HierCerarInfo *info = nullptr);

/// Seam offset of rail `rail` (M nodes): (seam + rail) mod M when
/// staggered, else seam mod M.
inline int32_t hierCerarRailSeam(int32_t rail, int32_t m, int32_t seam,
                                 bool stagger) {
  int32_t v = stagger ? seam + rail : seam;
  return ((v % m) + m) % m;
}

} // namespace topocc::passes

#endif // TOPOCC_COMPILER_PASSES_LOWERHIERCERAR_H
