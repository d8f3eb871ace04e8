//===- tools/topocc/ImportCommand.cpp - `topocc import` -------------------===//
//
// `topocc import astra-sim NETWORK.yml [-o TOPO.yaml] [--model M] [--name N]`:
// converts another tool's fabric description into a topocc topology file
// (compiler/topology/AstraImport.h), checks that the result parses, and
// writes it (stdout by default). Notes on units go to stderr.
//
//===----------------------------------------------------------------------===//

#include "tools/topocc/Driver.h"

#include "compiler/topology/AstraImport.h"
#include "compiler/topology/TopologyParser.h"
#include "support/Diagnostics.h"

#include "llvm/Support/MemoryBuffer.h"

#include "CLI/CLI.hpp"

#include <memory>

namespace topocc::driver {

namespace {

struct ImportOptions {
  std::string file;
  std::string output = "-";
  topo::AstraImportOptions astra;
};

llvm::Error runImportAstra(const ImportOptions &opts) {
  auto buf = llvm::MemoryBuffer::getFile(opts.file);
  if (!buf)
    return makeUserError("cannot read ASTRA-sim network file '" + opts.file +
                         "': " + buf.getError().message());
  auto imported =
      topo::importAstraSim((*buf)->getBuffer(), opts.file, opts.astra);
  if (!imported)
    return imported.takeError();
  // The file written must be one topocc reads (sizes within its limits).
  std::string outName = opts.output == "-" ? "<import>" : opts.output;
  if (auto parsed = topo::parseTopology(imported->yaml, outName); !parsed)
    return parsed.takeError();
  if (!isQuiet())
    for (const std::string &n : imported->notes)
      llvm::errs() << "note: " << n << '\n';
  return writeOutputFile(opts.output, imported->yaml);
}

} // namespace

void registerImportCommand(CLI::App &app) {
  CLI::App *cmd = app.add_subcommand(
      "import", "Convert another tool's fabric description into a topology "
                "file");
  cmd->require_subcommand(1);
  auto opts = std::make_shared<ImportOptions>();
  CLI::App *astra = cmd->add_subcommand(
      "astra-sim", "ASTRA-sim analytical network file (topology, npus_count, "
                   "bandwidth in GB/s = GiB/s, latency in ns)");
  astra->add_option("network", opts->file, "ASTRA-sim network YAML file")
      ->required();
  astra
      ->add_option("-o,--output", opts->output,
                   "Topology file to write ('-': standard output)")
      ->capture_default_str();
  astra->add_option("--model", opts->astra.model,
                    "GPU model of the NPUs (e.g. h100-sxm5; docs/MscclXml.md, "
                    "GPU models)");
  astra->add_option("--name", opts->astra.name,
                    "Topology name (default: the file's stem)");
  astra->callback([opts] { finishCommand(runImportAstra(*opts)); });
}

static CommandRegistration reg("import", registerImportCommand);

} // namespace topocc::driver
