//===- compiler/analysis/Bound.h - Exact cut bound (ForestColl) -*- C++ -*-===//
//
// The exact throughput bound (docs/Algorithms-trees.md, "The bound"): for
// allgather
//   T*_AG = (M/N) * lambda*,  lambda* = max over vertex sets S that miss at
//   least one GPU of |S n GPUs| / B+(S)           (B+ = bandwidth leaving S)
// and for reduce-scatter the same on the reversed graph (B- = entering S);
// allreduce is RS followed by AG. lambda* is found by Dinkelbach iteration
// over integer max-flows (Boost.Graph Boykov-Kolmogorov, only inside
// Bound.cpp), in exact integer arithmetic: no floating point in the search.
//
// Exact capacities: every direction of every link becomes one arc whose
// capacity is count x per-port bandwidth in bytes/s (raw by default, or x
// efficiency), rounded to a whole number of bytes/s (rejected when that moves
// it by more than 1e-9 relative: every rate written in decimal or binary
// units, 25 GB/s, 200 Gb/s, 12.5 GB/s, 1 GiB/s, is a whole number of bytes/s),
// then divided by the gcd of all capacities (the quantum, in bytes/s per
// unit). GPUs relay (store-and-forward); switches, NICs and CPU sockets
// forward. Half-duplex links cannot be modelled as two independent arcs and
// are rejected. Stage: analysis, on a validated topology. Never prints;
// deterministic (vertex ids are device ids, GPUs in rank order).
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_ANALYSIS_BOUND_H
#define TOPOCC_COMPILER_ANALYSIS_BOUND_H

#include "compiler/topology/Topology.h"
#include "ir/Schedule.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace topocc::analysis {

/// A non-negative fraction in lowest terms (den > 0).
struct Fraction {
  int64_t num = 0, den = 1;

  /// Reduces num/den; REQUIRES den > 0.
  static Fraction make(int64_t num, int64_t den);
  double value() const { return static_cast<double>(num) / den; }
  /// "7/300", or "3" when den == 1.
  std::string str() const;
  friend bool operator==(const Fraction &a, const Fraction &b) {
    return a.num == b.num && a.den == b.den;
  }
};

/// An integer max-flow network (Boost.Graph Boykov-Kolmogorov inside
/// Bound.cpp), for many flows on one graph: arcs are never removed, only
/// their capacities change (0 disables an arc). Used by the bound, switch
/// splitting and tree packing.
class MaxFlowNetwork {
public:
  explicit MaxFlowNetwork(int numVertices);
  ~MaxFlowNetwork();
  MaxFlowNetwork(MaxFlowNetwork &&) noexcept;
  MaxFlowNetwork &operator=(MaxFlowNetwork &&) noexcept;

  int numVertices() const;
  /// Adds a vertex; returns its id.
  int addVertex();
  /// Adds arc from -> to (with a zero-capacity reverse twin); returns its id.
  int addArc(int from, int to, int64_t cap = 0);
  void setCapacity(int arc, int64_t cap);
  int64_t capacity(int arc) const;
  /// Max-flow value from s to t (s != t).
  int64_t maxFlow(int s, int t);
  /// The same value without the cut side (sourceSide and flow are not
  /// updated): for oracles that only need the number.
  int64_t maxFlowValue(int s, int t);
  /// After maxFlow: the flow on `arc` (capacity minus residual).
  int64_t flow(int arc) const;
  /// After maxFlow: true when v is residual-reachable from s (the source
  /// side of the minimum cut closest to s).
  bool sourceSide(int v) const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

/// The integer digraph the bound works on.
struct BoundGraph {
  struct Arc {
    int from = -1, to = -1; ///< vertex (= device) ids
    int64_t cap = 0;        ///< capacity in quanta
    int link = -1, dir = 0; ///< the topology link and direction (-1: none)
  };
  int numVertices = 0;
  /// Vertex id of rank r (compute vertices, in rank order).
  std::vector<int> compute;
  std::vector<Arc> arcs;
  /// Bytes/s per capacity unit (the gcd of all link capacities). Graphs
  /// built by hand keep the default: capacities in GB/s.
  int64_t quantumBytesPerSec = 1000000000;
  /// Device names (buildBoundGraph); empty for graphs built by hand.
  std::vector<std::string> names;
  /// "dgx0/nvs", or "vertex 8" without names.
  std::string vertexName(int v) const {
    return v < static_cast<int>(names.size()) ? names[v]
                                              : "vertex " + std::to_string(v);
  }
};

enum class CapacityKind { Raw, Effective };
/// "raw" or "effective" (the --capacity option); user error otherwise.
llvm::Expected<CapacityKind> parseCapacityKind(llvm::StringRef text);

/// `bytesPerSec` as a whole number of bytes/s, or nullopt when it is below
/// 1, too large or more than 1e-9 relative away from a whole number.
std::optional<int64_t> integralCapacity(double bytesPerSec);

/// Per vertex of `g`: whether rank 0's vertex reaches it along the arcs
/// (reversed: whether it reaches rank 0's vertex). REQUIRES: a rank.
std::vector<char> reachedFromFirstRank(const BoundGraph &g, bool reversed);

/// Divides the capacities of `g` (bytes/s) by their gcd (setting
/// quantumBytesPerSec) and checks what dinkelbachBound requires: the sum
/// of capacities small enough for exact arithmetic and every compute vertex
/// reaching every other (user errors naming `t`'s ranks).
llvm::Error finishBoundGraph(BoundGraph &g, const topo::Topology &t);

/// Builds the integer digraph of `t`: one vertex per device, two arcs per
/// link (count x bandwidth per direction, x efficiency for Effective).
/// User errors: half-duplex links, a capacity that is not a whole number of
/// bytes/s, fewer than 2 GPUs, capacities too large for exact arithmetic.
llvm::Expected<BoundGraph> buildBoundGraph(const topo::Topology &t,
                                           CapacityKind kind);

/// The argmax cut: S is the source side (for allgather every shard owned in
/// S must leave it; for reduce-scatter every partial sum for a GPU in S must
/// enter it). `arcs` are the arcs that cross it: leaving S (allgather) or
/// entering S (reduce-scatter), in arc order.
struct BoundCut {
  std::vector<int> vertices; ///< S, sorted vertex ids
  std::vector<int> ranks;    ///< ranks whose GPU lies in S, sorted
  int64_t capacity = 0;      ///< d(S) in quanta
  std::vector<int> arcs;     ///< indices into BoundGraph::arcs
};

/// The bound for one direction of the graph.
struct DirectionalBound {
  /// n(S)/d(S) in seconds per byte times quantumBytesPerSec (= lambda* when
  /// capacities are in quanta).
  Fraction lambdaInt;
  /// lambda* in seconds per GB (GB = 1e9 bytes), exact.
  Fraction lambda;
  /// Trees per root k and per-arc tree units c(e) = U b(e)
  /// (docs/Algorithms-trees.md, "Trees per root and units"):
  /// k = den(lambdaInt) / g, c(e) = num(lambdaInt) b(e) / g, with
  /// g = gcd(den(lambdaInt), gcd of the capacities). U = k lambda (s/GB).
  int64_t k = 0;
  Fraction u;
  int64_t unitDivisor = 1; ///< g above
  /// c(e) for an arc of capacity `cap` (quanta): tree units it carries.
  int64_t arcUnits(int64_t cap) const {
    return lambdaInt.num * cap / unitDivisor;
  }
  BoundCut cut;
  int iterations = 0; ///< Dinkelbach rounds (1 = the start was optimal)
  int maxFlows = 0;   ///< max-flow computations
};

/// Dinkelbach iteration on `g` (reversed: reduce-scatter). REQUIRES: g has at
/// least 2 compute vertices, all mutually reachable, and
/// N x sum(capacities) < 2^62 (buildBoundGraph checks both). Each round's
/// max flows (one per rank) run on `workers` threads (0: the machine's
/// cores, at most 8, and at least 64 ranks each); the result does not
/// depend on the count. From kOrbitMinRanks ranks (and with `orbits`) a
/// round computes one flow per orbit of rankOrbits(g): the same bound,
/// cut and rounds with fewer max flows.
llvm::Expected<DirectionalBound> dinkelbachBound(const BoundGraph &g,
                                                 bool reversed, int workers = 0,
                                                 bool orbits = true);

/// dinkelbachBound looks for rank orbits from this many ranks on (below,
/// every rank gets its flow, as the small golden outputs show).
inline constexpr int kOrbitMinRanks = 64;

/// For each rank, the smallest rank of its orbit under the automorphisms
/// of `g` that swapping two consecutive values of one indexed word in every
/// vertex name proposes ("su3" with "su4" everywhere), each accepted only
/// after checking that it maps ranks to ranks and keeps every ordered
/// pair's capacity (BoundSymmetry.cpp). Ranks with equal representatives
/// have equal max flows from the super source; a graph without names gets
/// every rank its own orbit.
std::vector<int> rankOrbits(const BoundGraph &g);

/// The same by enumerating every vertex set (test oracle; exponential).
/// REQUIRES: g.numVertices <= 24.
DirectionalBound bruteForceBound(const BoundGraph &g, bool reversed);

struct BoundResult {
  BoundGraph graph;
  DirectionalBound allgather;     ///< out-trees of G
  DirectionalBound reduceScatter; ///< out-trees of the reversed graph
  /// lambda*_RS + lambda*_AG in s/GB (allreduce = RS then AG).
  Fraction allreduceLambda;
  int numRanks() const { return static_cast<int>(graph.compute.size()); }
};

/// Both directions for `t`.
llvm::Expected<BoundResult> computeBound(const topo::Topology &t,
                                         CapacityKind kind = CapacityKind::Raw);
/// Both directions on a finished graph (finishBoundGraph).
llvm::Expected<BoundResult> computeBoundOn(BoundGraph g);

/// The bound as nccl-tests numbers at `bytes` (M: AG output, RS input, AR
/// buffer): time = (M/N) lambda, algbw = M/time, busbw = algbw (N-1)/N
/// (AG, RS) or algbw 2(N-1)/N (AR). Bandwidths in bytes/s.
struct BoundNumbers {
  double time = 0, algbw = 0, busbw = 0;
};
BoundNumbers boundNumbers(const BoundResult &b, ir::Collective c,
                          double bytes);

} // namespace topocc::analysis

#endif // TOPOCC_COMPILER_ANALYSIS_BOUND_H
