//===- compiler/topology/TopologyParser.h - Read topology YAML -*- C++ -*-===//
//
// Reads the `topocc/v1` topology format (docs/TopologyFormat.md), expands
// templates and captures, and validates the result. Stage: first stage of
// the compiler. The YAML library stays in the .cpp; its exceptions stop there.
// Invariant: a returned Topology passed every check of docs/TopologyFormat.md,
// "Validation"; errors list every problem found, each with file:line:col.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_TOPOLOGY_TOPOLOGYPARSER_H
#define TOPOCC_COMPILER_TOPOLOGY_TOPOLOGYPARSER_H

#include "compiler/topology/Topology.h"

namespace topocc::topo {

/// A topology that would expand to more devices or more links than this is
/// refused before anything is expanded.
constexpr uint64_t kMaxDevices = 1000000;
constexpr uint64_t kMaxLinks = 1000000;

/// The schema string this parser reads.
constexpr llvm::StringLiteral kSchemaV1 = "topocc/v1";

/// Expansion limits (tools that must bound their work, such as the fuzzer,
/// lower them).
struct ParseLimits {
  uint64_t maxDevices = kMaxDevices;
  uint64_t maxLinks = kMaxLinks;
};

/// Parses a topology file's text; `fileName` is used in diagnostics.
llvm::Expected<Topology> parseTopology(llvm::StringRef text,
                                       llvm::StringRef fileName);
llvm::Expected<Topology> parseTopology(llvm::StringRef text,
                                       llvm::StringRef fileName,
                                       const ParseLimits &limits);

/// Reads and parses `path`; a missing or unreadable file is a user error.
llvm::Expected<Topology> loadTopologyFile(llvm::StringRef path);

} // namespace topocc::topo

#endif // TOPOCC_COMPILER_TOPOLOGY_TOPOLOGYPARSER_H
