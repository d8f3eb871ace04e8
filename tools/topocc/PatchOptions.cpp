//===- tools/topocc/PatchOptions.cpp - --fail/--scale/--set ---------------===//

#include "tools/topocc/PatchOptions.h"

#include "compiler/topology/ScenarioCli.h"

#include "CLI/CLI.hpp"

namespace topocc::driver {

llvm::Expected<std::vector<topo::ScenarioOp>> PatchOptions::parse() const {
  return topo::parseScenarioOptions(fails, scales, sets);
}

void addPatchOptions(CLI::App *cmd, PatchOptions &o) {
  cmd->add_option("--fail", o.fails, "Fail devices or links SEL (repeatable)");
  cmd->add_option("--scale", o.scales,
                  "Scale link bandwidth: SEL=FACTOR, e.g. 'a/gpu0--a/sw=2x'");
  cmd->add_option("--set", o.sets,
                  "Set link bandwidth or latency: SEL=200Gb/s, SEL=+1us");
}

} // namespace topocc::driver
