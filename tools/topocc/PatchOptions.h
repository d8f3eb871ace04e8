//===- tools/topocc/PatchOptions.h - --fail/--scale/--set ------*- C++ -*-===//
//
// The command-line topology patch that `topocc dot` and `topocc whatif`
// share: one registration of --fail, --scale and --set (same help texts)
// and their parsing into scenario ops (compiler/topology/ScenarioCli.h).
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_TOOLS_TOPOCC_PATCHOPTIONS_H
#define TOPOCC_TOOLS_TOPOCC_PATCHOPTIONS_H

#include "compiler/topology/Topology.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace topocc::driver {

struct PatchOptions {
  std::vector<std::string> fails, scales, sets;
  /// The ops in the order fail, scale, set; user errors name the option.
  llvm::Expected<std::vector<topo::ScenarioOp>> parse() const;
};

/// Registers --fail, --scale and --set on `cmd`, stored in `o` (which must
/// outlive the command).
void addPatchOptions(CLI::App *cmd, PatchOptions &o);

} // namespace topocc::driver

#endif // TOPOCC_TOOLS_TOPOCC_PATCHOPTIONS_H
