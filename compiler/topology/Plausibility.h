//===- compiler/topology/Plausibility.h - Implausible rates ----*- C++ -*-===//
//
// Warnings for link rates no hardware of the link's type has, the mark of a
// unit or a convention mixed up: NVLink written as a GPU's bidirectional
// total per port ("600 GB/s, count: 12" is 7200 GB/s per direction), a NIC
// port in bytes where bits were meant. The ranges are in
// docs/TopologyFormat.md ("Plausible rates"). A warning does not stop the
// command; the driver prints it.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_TOPOLOGY_PLAUSIBILITY_H
#define TOPOCC_COMPILER_TOPOLOGY_PLAUSIBILITY_H

#include "compiler/topology/Topology.h"
#include "support/Diagnostics.h"

#include <vector>

namespace topocc::topo {

/// What hardware of a link type reaches, per direction.
struct PlausibleRate {
  double maxPortBandwidth = 0; ///< one port, bytes/s
  double maxCapacity = 0;      ///< count x port (one device's bundle), bytes/s
  const char *hardware = "";   ///< what the limits come from
};

/// The limits of `type`; nothing for custom links.
std::optional<PlausibleRate> plausibleRate(LinkType type);

/// One warning per link declaration (a pattern that expands to many links
/// warns once) whose port rate or count x port rate exceeds its type's
/// limits, in declaration order.
std::vector<Diagnostic> implausibleLinkWarnings(const Topology &t);

} // namespace topocc::topo

#endif // TOPOCC_COMPILER_TOPOLOGY_PLAUSIBILITY_H
