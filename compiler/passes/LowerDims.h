//===- compiler/passes/LowerDims.h - Rings per dimension ------*- C++ -*-===//
//
// Lowers an all-reduce on a grid of ranks (a torus, or ASTRA-sim style
// dimensions of rings, fully connected groups and switches) to unfused
// primitive ops: a ring reduce-scatter along each dimension in turn, then
// ring all-gathers in the reverse order, the schedule used on TPU tori.
// Stage: produces Lowered.
//
// Every dimension's links work at once: the data is split into lanes, one
// per (starting dimension, direction). Lane (p, dir) visits the dimensions
// in the rotated order p, p+1, ..., and runs every ring in direction dir,
// so at each stage the lanes of different p use different dimensions and
// the two directions use both directions of every link. On a grid whose
// dimensions have equal sizes and bandwidths every link carries the same
// load, and each rank sends (N-1)/N of the data per phase: the physical
// bound of a symmetric torus.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_PASSES_LOWERDIMS_H
#define TOPOCC_COMPILER_PASSES_LOWERDIMS_H

#include "ir/Schedule.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace topocc::passes {

struct DimsOptions {
  ir::Collective collective = ir::Collective::AllReduce;
  int32_t numRanks = 0;
  /// Size of each dimension, dimension 0 varying fastest; their product is
  /// numRanks.
  std::vector<int32_t> sizes;
  /// The rank at each linear index c0 + s0 (c1 + s1 (c2 + ...)).
  std::vector<ir::RankId> ranks;
  int32_t chunks = 1; ///< sub-chunks per lane (pipelining)
  /// Per dimension of size >= 2 (in dimension order): the sub-chunks of the
  /// two lanes that start with it, in place of `chunks`; 0 leaves those
  /// lanes empty. Unequal counts balance the links of a grid whose
  /// dimensions differ in size or bandwidth. Empty: `chunks` for every lane.
  std::vector<int32_t> laneChunks;
  /// Both directions of every ring (two lanes per starting dimension);
  /// false: one direction (one lane per starting dimension).
  bool bidirectional = true;
  bool inplace = false;
  std::string name; ///< schedule name; a default is derived when empty
};

/// Data layout: lane L (L = dir * D + p over the D dimensions of size >= 2)
/// has K_p sub-chunks (laneChunks[p], or chunks) and owns N * K_p units
/// from base_L (the lanes' units in order); sub-chunk j's block of grid
/// index beta (the coordinates in the lane's dimension order, first
/// dimension slowest) is unit base_L + j*N + beta. Channel L carries lane L.
/// User error listing every problem for bad options (sizes that do not
/// multiply to numRanks, a rank missing or repeated, a collective other
/// than all-reduce, counts out of range).
llvm::Expected<ir::Schedule> lowerDims(const DimsOptions &o);

} // namespace topocc::passes

#endif // TOPOCC_COMPILER_PASSES_LOWERDIMS_H
