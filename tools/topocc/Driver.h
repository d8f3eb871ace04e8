//===- tools/topocc/Driver.h - Shared pieces of the CLI driver -*- C++ -*-===//
//
// The topocc driver is the only code that prints diagnostics and chooses exit
// codes: 0 ok, 1 user error, 2 internal error. Each subcommand lives in its
// own file and registers itself with CLI11 through a register* function.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_TOOLS_DRIVER_H
#define TOPOCC_TOOLS_DRIVER_H

#include "compiler/topology/Topology.h"
#include "ir/Schedule.h"
#include "support/ByteSize.h" // sizeText, plainNumber
#include "support/OutputFile.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace CLI {
class App;
}

namespace topocc::driver {

enum ExitCode : int { kExitOk = 0, kExitUser = 1, kExitInternal = 2 };

/// Prints `err` to stderr (diagnostics with source line and caret) and
/// returns the exit code it maps to (1 user error, 2 internal error).
int reportError(llvm::Error err);

/// Exit code of the subcommand that ran; set by subcommand callbacks.
int &commandExitCode();

/// Sets the exit code from a subcommand's result (reporting the error).
void finishCommand(llvm::Error err);

/// Loads a topology file, prints its implausible-rate warnings
/// (compiler/topology/Plausibility.h) to stderr, and applies `scenario`
/// when it is not empty.
llvm::Expected<topo::Topology> loadTopology(llvm::StringRef path,
                                            llvm::StringRef scenario);

/// --quiet: progress and the "wrote FILE" lines on stderr are left out;
/// notes, warnings and errors stay.
void setQuiet(bool quiet);
bool isQuiet();

/// Opens `path` for writing ("-" is stdout) and writes `text`; user error if
/// the file cannot be written.
llvm::Error writeOutputFile(llvm::StringRef path, llvm::StringRef text);

/// The same for output written as a stream (large files: nothing is held in
/// memory); `write` writes the whole content to the stream it gets.
llvm::Error
writeOutputStream(llvm::StringRef path,
                  llvm::function_ref<void(llvm::raw_ostream &)> write);

/// "text" or "json"; user error otherwise.
llvm::Error checkFormat(llvm::StringRef format);

/// --collective: allreduce, allgather or reducescatter; user error with a
/// "did you mean" hint otherwise.
llvm::Expected<ir::Collective> parseCollective(llvm::StringRef name);

// Subcommands (one file each).
void registerShowCommand(CLI::App &app);
void registerCompileCommand(CLI::App &app);

/// Further subcommands register themselves from their own file with a static
/// object, so adding a command touches no other file:
///   static CommandRegistration reg("verify", registerVerifyCommand);
/// main() adds them in name order after `show` and `compile`.
struct CommandRegistration {
  CommandRegistration(const char *name, void (*registerFn)(CLI::App &));
};
/// Adds every self-registered command to `app`.
void registerAllCommands(CLI::App &app);

} // namespace topocc::driver

#endif // TOPOCC_TOOLS_DRIVER_H
