//===- compiler/topology/Scenario.h - What-if patches ----------*- C++ -*-===//
//
// Applies named scenarios (fail, scale, set, extends; sweep is parsed but not
// applied) to a Topology and validates the result again. Stage: right after
// parsing, before any analysis. Invariant: on success the topology still
// routes every GPU pair; on error it is unchanged.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_TOPOLOGY_SCENARIO_H
#define TOPOCC_COMPILER_TOPOLOGY_SCENARIO_H

#include "compiler/topology/Topology.h"

#include <optional>
#include <string>
#include <utility>

namespace topocc::topo {

/// Applies `scenarioName` to `t`. Errors (unknown scenario, selector matching
/// nothing, a cut) leave `t` unchanged.
llvm::Error applyScenario(Topology &t, llvm::StringRef scenarioName);

/// Glob match of one name: `*` and `?` never match '/'.
bool globMatch(llvm::StringRef pattern, llvm::StringRef text);

/// Whether a device selector matches `d`. A selector without '/' matches a
/// fabric device by name or a node device by its local name in any node.
bool selectorMatchesDevice(llvm::StringRef selector, const Device &d);

/// Syntax check of a selector; an error message, or nothing when it is fine.
/// `isFail`: a device or `A--B`; otherwise links only (`A--B` or `A->B`).
std::optional<std::string> checkSelectorSyntax(llvm::StringRef selector,
                                               bool isFail);

/// A cycle among `extends` references: its location and message.
std::optional<std::pair<SourceLoc, std::string>>
findExtendsCycle(const Topology &t);

} // namespace topocc::topo

#endif // TOPOCC_COMPILER_TOPOLOGY_SCENARIO_H
