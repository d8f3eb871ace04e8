//===- compiler/topology/TopologyReport.h - Describe a topology -*- C++ -*-===//
//
// Text and JSON descriptions of a Topology for `topocc show`: devices, nodes,
// links with bandwidths in the file's own units (and the efficiency-scaled
// rate when set), and the rank order. Stage: reporting. Output is
// deterministic (declaration order; JSON keys sorted).
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_TOPOLOGY_TOPOLOGYREPORT_H
#define TOPOCC_COMPILER_TOPOLOGY_TOPOLOGYREPORT_H

#include "compiler/topology/Topology.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

namespace topocc::topo {

/// Human-readable report (the schema is documented in docs/CLI.md "show").
void printTopologyReport(const Topology &t, llvm::raw_ostream &os);

/// JSON report, `"format": "topocc-topology/v1"`.
llvm::json::Value topologyToJson(const Topology &t);

/// One line describing a link's rate, e.g.
/// "5 x 25 GB/s = 125 GB/s per direction, latency 0.7 us".
std::string describeLinkRate(const Link &l);

} // namespace topocc::topo

#endif // TOPOCC_COMPILER_TOPOLOGY_TOPOLOGYREPORT_H
