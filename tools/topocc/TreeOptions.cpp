//===- tools/topocc/TreeOptions.cpp - Shared options of bound and trees ---===//

#include "tools/topocc/TreeOptions.h"

#include "compiler/analysis/CostModel.h"
#include "support/ByteSize.h"
#include "tools/topocc/Driver.h"

#include "CLI/CLI.hpp"

#include "llvm/Support/FormatVariadic.h"

namespace topocc::driver {

void addGraphOptions(CLI::App *cmd, GraphOptions &o) {
  cmd->add_option("topology", o.file, "Topology YAML file")->required();
  cmd->add_option("--size", o.size,
                  "Message size M (K/M/G/T are powers of 1024; docs/CLI.md, "
                  "Sizes)")
      ->capture_default_str();
  cmd->add_option("--scenario", o.scenario, "Apply this named scenario first");
  cmd->add_option("--capacity", o.capacity,
                  "Link capacities: raw (line rate) or effective (x "
                  "efficiency)")
      ->capture_default_str();
  cmd->add_option("--format", o.format, "Output format: text or json")
      ->capture_default_str();
}

llvm::Expected<GraphInput> loadGraphInput(const GraphOptions &o) {
  if (auto err = checkFormat(o.format))
    return err;
  auto capacity = analysis::parseCapacityKind(o.capacity);
  if (!capacity)
    return capacity.takeError();
  auto bytes = parseByteSize(o.size, "--size");
  if (!bytes)
    return bytes.takeError();
  auto topo = loadTopology(o.file, o.scenario);
  if (!topo)
    return topo.takeError();
  return GraphInput{std::move(*topo), *capacity, *bytes};
}

std::string timeText(double s) {
  if (s < 1e-3)
    return llvm::formatv("{0:F2} us", s * 1e6).str();
  if (s < 1)
    return llvm::formatv("{0:F3} ms", s * 1e3).str();
  return llvm::formatv("{0:F3} s", s).str();
}

} // namespace topocc::driver
