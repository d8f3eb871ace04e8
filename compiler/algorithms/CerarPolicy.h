//===- compiler/algorithms/CerarPolicy.h - CERAR policy -------*- C++ -*-===//
//
// The cost model and per-ring parameter choice of CERAR.md section 5:
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

/// CERAR.md 5.3: worst-rank relative error under wire rounding at the best
/// eps (upper end of the measured range); infinity when unusable.
double wireError(WireDtype w, int q);
/// The eps at which wireError was measured.
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
  double expectedError = 0; ///< wire-rounded estimate (section 5.3)
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

struct CerarPlan {
  PolicyDecision decision;
  RingLink link;
  std::vector<int> ringOrder;
  /// Set when CERAR is used; empty when the ring should be lowered instead
  /// (auto mode, decision.reason says why). compiler/Pipeline lowers it
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
/// the policy and the design (perturbed; exact when c <= N). Forced mode: uses `components` if given, else the policy's
/// c, and is a user error with the policy's reason when CERAR cannot win.
llvm::Expected<CerarPlan> designCerarFor(const topo::Topology &t,
                                         const CerarRequest &req);

} // namespace topocc::cerar

#endif // TOPOCC_COMPILER_ALGORITHMS_CERARPOLICY_H
