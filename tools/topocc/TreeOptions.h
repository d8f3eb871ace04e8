//===- tools/topocc/TreeOptions.h - Shared options of bound and trees -*- C++
//-*-===//
//
// What `topocc bound` and `topocc trees` share: the topology argument and
// --size, --scenario, --capacity, --format (one registration, one set of
// defaults), their parsing and the topology load in one call, and the time
// formatting of their text output.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_TOOLS_TOPOCC_TREEOPTIONS_H
#define TOPOCC_TOOLS_TOPOCC_TREEOPTIONS_H

#include "compiler/analysis/Bound.h"
#include "compiler/topology/Topology.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace CLI {
class App;
}

namespace topocc::driver {

/// The options of `bound` and `trees` that describe the graph and output.
struct GraphOptions {
  std::string file;
  std::string size = "1G";
  std::string scenario;
  std::string capacity = "raw";
  std::string format = "text";
};

/// Registers the topology argument and --size, --scenario, --capacity and
/// --format on `cmd`, stored in `o` (which must outlive the command).
void addGraphOptions(CLI::App *cmd, GraphOptions &o);

/// The parsed options and the loaded topology (scenario applied).
struct GraphInput {
  topo::Topology topology;
  analysis::CapacityKind capacity = analysis::CapacityKind::Raw;
  double bytes = 0;
};

/// Checks --format, parses --capacity and --size, loads the topology with
/// its scenario. User errors as the driver reports them.
llvm::Expected<GraphInput> loadGraphInput(const GraphOptions &o);

/// "12.34 us", "3.132 ms" or "1.500 s".
std::string timeText(double seconds);

} // namespace topocc::driver

#endif // TOPOCC_TOOLS_TOPOCC_TREEOPTIONS_H
