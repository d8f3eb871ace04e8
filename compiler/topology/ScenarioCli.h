//===- compiler/topology/ScenarioCli.h - Scenarios from the command line -*- C++ -*-===//
//
// Builds what-if patches from command-line options (`--fail SEL`,
// `--scale SEL=2x`, `--set SEL=200Gb/s`) as ScenarioOps, applies op lists
// with the scenario machinery of Scenario.h, and expands `sweep` scenarios
// into one concrete scenario per value. Stage: right after parsing, before
// any analysis. Invariant: an applied topology was validated again (every
// GPU pair still routes); on error the topology is unchanged.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_TOPOLOGY_SCENARIOCLI_H
#define TOPOCC_COMPILER_TOPOLOGY_SCENARIOCLI_H

#include "compiler/topology/Topology.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace topocc::topo {

/// `--fail SEL`: a device selector or an undirected link `A--B`.
llvm::Expected<ScenarioOp> parseFailOption(llvm::StringRef arg);
/// `--scale SEL=F`: multiplies the bandwidth of the links `SEL` (`A--B` or
/// `A->B`) by the factor F ("2x", "0.5x").
llvm::Expected<ScenarioOp> parseScaleOption(llvm::StringRef arg);
/// `--set SEL=Q`: assigns (or with a sign, shifts) the bandwidth ("200Gb/s")
/// or, when Q has a time unit, the latency ("+0.5us") of the links `SEL`.
llvm::Expected<ScenarioOp> parseSetOption(llvm::StringRef arg);

/// The three option lists as ops, in the order fail, scale, set.
llvm::Expected<std::vector<ScenarioOp>>
parseScenarioOptions(llvm::ArrayRef<std::string> fails,
                     llvm::ArrayRef<std::string> scales,
                     llvm::ArrayRef<std::string> sets);

/// One line describing ops, e.g. "fail a/gpu1; scale a/gpu0--sw 2x".
std::string describeScenarioOps(llvm::ArrayRef<ScenarioOp> ops);

/// Applies `ops` in order to `t` as a scenario named `name` (recorded in
/// appliedScenarios()), with the checks of applyScenario: a selector that
/// matches nothing and a failure that cuts GPUs off are errors, and leave
/// `t` unchanged.
llvm::Error applyScenarioOps(Topology &t, llvm::StringRef name,
                             llvm::ArrayRef<ScenarioOp> ops);

/// A concrete scenario: a name and the ops to apply.
struct ExpandedScenario {
  std::string name; ///< "NAME" or "NAME[a/gpu0--sw=200 Gb/s]" for sweeps
  std::vector<ScenarioOp> ops;
};

/// The scenario `name` of `t`, with each `sweep` op replaced by a `set` of
/// one of its values: one ExpandedScenario per combination (the first sweep
/// varies slowest). A scenario without sweeps expands to itself. Unknown
/// name: the error of applyScenario, with the known names.
llvm::Expected<std::vector<ExpandedScenario>>
expandScenario(const Topology &t, llvm::StringRef name);

} // namespace topocc::topo

#endif // TOPOCC_COMPILER_TOPOLOGY_SCENARIOCLI_H
