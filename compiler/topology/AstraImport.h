//===- compiler/topology/AstraImport.h - ASTRA-sim networks -----*- C++ -*-===//
//
// Converts an ASTRA-sim network description (the analytical backend's
// `network.yml`: lists `topology`, `npus_count`, `bandwidth` in GB/s and
// `latency` in ns, one entry per dimension) into a topocc topology file
// whose `generate: dimensions:` section builds the same fabric
// (docs/TopologyFormat.md, "Generated fabrics"). Stage: input conversion,
// before parsing. The YAML library stays in the .cpp.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_TOPOLOGY_ASTRAIMPORT_H
#define TOPOCC_COMPILER_TOPOLOGY_ASTRAIMPORT_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace topocc::topo {

struct AstraImportOptions {
  std::string name;  ///< topology name; empty: the file's stem
  std::string model; ///< GPU model of the NPUs; empty: none
};

struct AstraImport {
  std::string yaml;               ///< the topocc topology file
  std::vector<std::string> notes; ///< what the user should know (units)
};

/// Errors are DiagnosticErrors at file:line:col (unknown keys or topology
/// names, lists of different lengths, values that are not positive).
llvm::Expected<AstraImport> importAstraSim(llvm::StringRef text,
                                           llvm::StringRef fileName,
                                           const AstraImportOptions &opts);

} // namespace topocc::topo

#endif // TOPOCC_COMPILER_TOPOLOGY_ASTRAIMPORT_H
