//===- compiler/algorithms/CerarPolicy.h - CERAR policy -------*- C++ -*-===//
//
// The cost model and per-ring parameter choice of docs/Algorithms-cerar.md
// section 5 (section numbers below are that page's):
//   T_ring(S)    = 2(N-1) alpha + 2(N-1)/N S/B
//   T_CERAR(S,c) = (c+N-2) alpha + (1+(N-2)/c) w S/B + phi S/B_mem
// alpha = largest hop latency of the ring, B = its bottleneck bandwidth. The
// policy (section 5.4) falls back to the exact ring, with a reason, when
// approximation is not allowed, N < 3, the wire dtype is too wide, no q
// meets the tolerance, B is above the bandwidth ceiling, or the best c does
// not beat the ring by the margin. designCerarFor does policy + design for a
// topology; compiler/Pipeline lowers and verifies it.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_ALGORITHMS_CERARPOLICY_H
#define TOPOCC_COMPILER_ALGORITHMS_CERARPOLICY_H

#include "compiler/algorithms/Cerar.h"
#include "compiler/topology/Topology.h"
#include "ir/Schedule.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace topocc::cerar {

enum class WireDtype { FP32, FP16, BF16 };
/// "fp32", "fp16", "bf16".
llvm::StringRef wireDtypeName(WireDtype w);
std::optional<WireDtype> wireDtypeFromName(llvm::StringRef s);
int wireDtypeBytes(WireDtype w);

/// The error contract's bound (docs/Algorithms-cerar.md 8) of a q-layer
/// code on N = n ranks with a `w` wire at its best eps, from the table
/// measured over N = 3, 4, 8, 16 (interpolated in log-log); infinity when
/// unusable. The policy's screen: the lowering measures the schedule's own.
double wireError(WireDtype w, int q, int n);
/// About the eps at which wireError is reached.
double wireEps(WireDtype w, int q);
/// K_q of kappa ~ K_q eps^-(q-1) (section 3.3.5): 1, 2.00, 4.24, 8.94.
double kappaConstant(int q);

struct RingLink {
  int ranks = 0;        ///< N
  double alpha = 0;     ///< largest hop latency, s
  double bandwidth = 0; ///< bottleneck bytes/s per hop
};

struct PolicyOptions {
  /// Relative error tolerance; 0 = approximation not allowed (exact only).
  double tolerance = 0;
  WireDtype wire = WireDtype::FP32;
  int baseBytes = 4;    ///< bytes per element of the baseline all-reduce
  double kappaMax = 0;  ///< 0 = no limit
  double margin = 0.05; ///< CERAR must beat the ring by this fraction
  double phi = 8;       ///< extra memory traffic per payload byte
  double memBandwidth = 1.5e12; ///< device memory bytes/s
  int granule = 64;             ///< elements; d_pad/c >= granule
  int maxQ = 4;
};

double ringTime(const RingLink &l, double bytes);
/// w = wire bytes / base bytes.
double cerarTime(const RingLink &l, double bytes, int c, double w,
                 const PolicyOptions &o);

struct PolicyDecision {
  bool useCerar = false;
  int components = 0; ///< c
  int q = 0;
  double eps = 0;
  double kappa = 0;         ///< K_q eps^-(q-1)
  double expectedError = 0; ///< the error contract of the wire (section 8)
  double designError = 0;   ///< operator norm e = eps ||Psi|| sqrt(N-1)
  double ringTime = 0, cerarTime = 0; ///< predicted, s (cerarTime 0 if none)
  double unconstrainedC = 0;          ///< c* = sqrt((N-2) w S / (alpha B))
  double bandwidthCeiling = 0;        ///< B_mem (N-2) / (phi N)
  /// Smallest size at which the chosen c beats the ring (0 when not
  /// defined).
  double minBytes = 0;
  std::string reason; ///< why (for --explain)
};

/// Section 5.4 for one ring and one message size.
PolicyDecision chooseCerar(const RingLink &l, double bytes,
                           const PolicyOptions &o);

/// What the compile command needs for --algorithm cerar|auto.
struct CerarRequest {
  double bytes = 64.0 * 1024 * 1024;
  PolicyOptions policy;
  int components = 0; ///< 0 = chosen by the policy
  bool force = false; ///< --algorithm cerar (auto when false)
  Construction construction = Construction::Perturbed;
  int seamOffset = 0;
  bool inplace = false;
  std::vector<int> ringOrder; ///< empty: the ring search's first ring
};

struct CerarChoice {
  PolicyDecision decision;
  RingLink link;
  std::vector<int> ringOrder;
  /// Set when CERAR is used; empty when the ring should be lowered instead
  /// (auto mode, decision.reason says why). compiler/lowerings/Cerar.cpp lowers it
  /// (passes::lowerCerar) and checks the result (verifyCerarSchedule).
  std::optional<Design> design;
};

/// The ring CERAR would run on: `ringOrder`, or the ring search's first
/// ring for `bytes`, with alpha = its largest hop latency and B = its
/// bottleneck bandwidth from the cost model (analysis::ringBottleneck).
struct RingChoice {
  RingLink link;
  std::vector<int> order;
};
llvm::Expected<RingChoice> ringFor(const topo::Topology &t, double bytes,
                                   const std::vector<int> &ringOrder);

/// Ring search (or `ringOrder`), alpha/B of that ring from the cost model,
/// the policy and the design (perturbed; exact when c <= N). Forced mode: uses
/// `components` if given, else the policy's c, and is a user error with the
/// policy's reason when CERAR cannot win.
llvm::Expected<CerarChoice> designCerarFor(const topo::Topology &t,
                                         const CerarRequest &req);

/// Hierarchical CERAR (section 7): M nodes x G GPUs; exact ring
/// reduce-scatter and all-gather inside the nodes, CERAR on every rail.
struct HierLinks {
  int nodes = 0;       ///< M
  int gpusPerNode = 0; ///< G
  /// The intra-node ring (node 0's GPUs in the local order): alpha_f = its
  /// largest hop latency, B_f = its bottleneck bandwidth.
  RingLink intra;
  /// One rail ring (N = M ranks) while all G rails run at once: alpha_i =
  /// the largest hop latency of any rail, B_i = the bottleneck per hop with
  /// every rail's hops loaded together (shared NICs divide: B_NIC n_NIC/G).
  RingLink rail;
};

/// The rail and intra-node links of `nodes` (node ring order, ranks by local
/// index) and `localOrder` (empty: 0..G-1) from the cost model's routes.
/// User error when a hop has no route.
llvm::Expected<HierLinks>
hierLinksFor(const topo::Topology &t,
             const std::vector<std::vector<int>> &nodes,
             const std::vector<int> &localOrder);

/// The exact intra-node phases: 2[(G-1) alpha_f + (G-1)/G S/B_f] (0 for
/// G = 1).
double exactPhasesTime(const HierLinks &l, double bytes);
/// Exact phases + the ring all-reduce of S/G on the rails (hier-ring).
double hierRingTime(const HierLinks &l, double bytes);
/// Exact phases + T_CERAR(S/G, c; N = M, alpha_i, B_i) (section 7, Cost).
double hierCerarTime(const HierLinks &l, double bytes, int c, double w,
                     const PolicyOptions &o);

struct HierCerarRequest {
  double bytes = 64.0 * 1024 * 1024; ///< S, the whole buffer
  PolicyOptions policy;
  int components = 0; ///< 0 = chosen by the policy for the rails
  bool force = false; ///< --algorithm hier-cerar (auto when false)
  Construction construction = Construction::Perturbed;
  std::vector<std::vector<int>> nodes; ///< node ring order, by local index
  std::vector<int> localOrder;         ///< empty: 0..G-1
};

struct HierCerarChoice {
  HierLinks links;
  /// The policy (section 5.4) on one rail: N = M ranks, S/G bytes.
  PolicyDecision decision;
  /// Predicted times at S, s: the exact phases, hier-ring, hier-cerar with
  /// the chosen c (0 without a code), the flat ring over all ranks (the ring
  /// search's) and flat CERAR with the policy's c on it (0 when the policy
  /// keeps the flat ring; flatComponents its c).
  double exactPhases = 0, hierRing = 0, hierCerar = 0;
  double flatRing = 0, flatCerar = 0;
  int flatComponents = 0;
  std::string flatReason;
  std::optional<Design> design; ///< empty: auto keeps the exact algorithms
};

/// Links, the policy on the rails and the code (perturbed; exact when
/// c <= M). Forced mode: `components` if given, else the policy's c; user
/// errors as designCerarFor's, prefixed "hier-cerar:".
llvm::Expected<HierCerarChoice> designHierCerarFor(const topo::Topology &t,
                                                 const HierCerarRequest &req);

} // namespace topocc::cerar

#endif // TOPOCC_COMPILER_ALGORITHMS_CERARPOLICY_H
