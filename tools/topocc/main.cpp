//===- tools/topocc/main.cpp - The topocc command-line driver -------------===//
//
// Dispatches to the subcommands. Exit codes: 0 ok, 1 user error (bad input or
// unsatisfiable request), 2 internal error (a bug in topocc).
//
//===----------------------------------------------------------------------===//

#include "tools/topocc/Driver.h"

#include "CLI/CLI.hpp"

int main(int argc, char **argv) {
  using namespace topocc::driver;
  CLI::App app{"topocc: topology-aware collective compiler"};
  app.set_version_flag("--version", std::string("topocc ") + TOPOCC_VERSION);
  app.require_subcommand(1);
  registerShowCommand(app);
  registerCompileCommand(app);
  registerAllCommands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    int rc = app.exit(e);
    // CLI11 returns 0 for --help/--version; usage errors are user errors.
    return rc == 0 ? kExitOk : kExitUser;
  }
  return commandExitCode();
}
