//===- tools/topocc/ShowCommand.cpp - `topocc show` -----------------------===//
//
// `topocc show TOPO.yaml [--scenario NAME] [--format text|json]`: loads and
// validates a topology, applies a scenario, and describes the result.
//
//===----------------------------------------------------------------------===//

#include "tools/topocc/Driver.h"

#include "compiler/topology/Scenario.h"
#include "compiler/topology/TopologyParser.h"
#include "compiler/topology/TopologyReport.h"

#include "CLI/CLI.hpp"

#include <memory>

namespace topocc::driver {

namespace {
struct ShowOptions {
  std::string file;
  std::string scenario;
  std::string format = "text";
};

llvm::Error runShow(const ShowOptions &opts) {
  if (auto err = checkFormat(opts.format))
    return err;
  auto topo = loadTopology(opts.file, opts.scenario);
  if (!topo)
    return topo.takeError();
  std::string out;
  llvm::raw_string_ostream os(out);
  if (opts.format == "json")
    os << llvm::formatv("{0:2}", topo::topologyToJson(*topo)) << '\n';
  else
    topo::printTopologyReport(*topo, os);
  os.flush();
  return writeOutputFile("-", out);
}
} // namespace

void registerShowCommand(CLI::App &app) {
  auto opts = std::make_shared<ShowOptions>();
  CLI::App *cmd = app.add_subcommand(
      "show", "Validate a topology file and describe its devices, links and "
              "ranks");
  cmd->add_option("topology", opts->file, "Topology YAML file")->required();
  cmd->add_option("--scenario", opts->scenario,
                  "Apply this named scenario first");
  cmd->add_option("--format", opts->format, "Output format: text or json")
      ->capture_default_str();
  cmd->callback([opts] { finishCommand(runShow(*opts)); });
}

} // namespace topocc::driver
