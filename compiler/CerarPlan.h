//===- compiler/CerarPlan.h - Where CERAR pays, in the one model -*- C++ -*-===//
//
// What `topocc cerar-plan` reports (docs/Algorithms-cerar.md 5.6): per
// message size, the ring that `compile --algorithm ring --channels auto`
// writes and the code that `compile --algorithm cerar --tolerance T` writes,
// both simulated in the runtime model (analysis::simulate, the model every
// prediction comes from), beside the policy's alpha-beta figures (labelled
// as the policy's); then the crossovers: the smallest message size at which
// the code is faster than the ring, and at the largest size the factor on
// every link's bandwidth up to which it stays faster (a faster network
// leaves CERAR's encode and decode on the critical path). Stage: analysis
// over compiled schedules. Never prints; deterministic.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_CERARPLAN_H
#define TOPOCC_COMPILER_CERARPLAN_H

#include "compiler/algorithms/CerarPolicy.h"
#include "compiler/topology/Topology.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace topocc {

struct CerarPlanRequest {
  std::vector<double> sizes; ///< ascending, bytes (nccl-tests S)
  cerar::PolicyOptions policy;
  std::vector<int> ringOrder; ///< empty: the ring search's first ring
  /// Bisection steps of each crossover (0: no crossover search).
  int crossoverSteps = 8;
};

/// One size of the table.
struct CerarPlanRow {
  double bytes = 0;
  cerar::PolicyDecision policy; ///< the policy's choice and figures
  double ringTime = 0;          ///< simulated, s: the compiled ring
  /// The code compiled at this size: the policy's c, or when the policy
  /// keeps the ring the crossover code (CerarPlanReport::components,
  /// forced with --components); 0 when none compiles.
  int components = 0;
  bool forced = false;
  double cerarTime = 0; ///< simulated, s (0: no code)
  double eps = 0;       ///< the written code's eps (after the contract tuning)
  double contract = 0;  ///< its error contract in the wire dtype
  std::string why;      ///< why no code compiled (compile's message)
};

struct CerarPlanReport {
  cerar::RingLink link;   ///< the ring's alpha and bottleneck (policy)
  std::vector<int> order; ///< the ring
  std::vector<CerarPlanRow> rows;
  /// The code the crossovers are for: the policy's c at the largest size
  /// where it picks CERAR (else its best c there); 0: no code.
  int components = 0;
  /// Smallest size (bytes) at which that code's simulated time is below
  /// the ring's, by bisection between the table's sizes; 0 when it is
  /// slower at every size of the table, sizes.front() when it is faster
  /// at every size (the crossover may be smaller).
  double crossoverBytes = 0;
  /// At the largest size: every link's bandwidth times this factor is
  /// where the code and the ring take the same simulated time (CERAR is
  /// faster below it); 0 when not found in [1/64, 64].
  double bandwidthFactor = 0;
  double crossoverBandwidth = 0; ///< the ring's bottleneck B at that factor
};

/// REQUIRES: req.sizes is not empty. User errors of the ring search, the
/// policy and compile (a forced code that cannot meet the tolerance is a
/// row's `why`, not an error).
llvm::Expected<CerarPlanReport> cerarPlan(const topo::Topology &t,
                                          const CerarPlanRequest &req);

} // namespace topocc

#endif // TOPOCC_COMPILER_CERARPLAN_H
