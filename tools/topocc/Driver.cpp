//===- tools/topocc/Driver.cpp - Shared pieces of the CLI driver ----------===//

#include "tools/topocc/Driver.h"

#include "compiler/topology/Plausibility.h"

#include "support/Diagnostics.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/WithColor.h"

#include <map>

namespace topocc::driver {

namespace {
using RegisterFn = void (*)(CLI::App &);
std::map<std::string, RegisterFn> &commandRegistry() {
  static std::map<std::string, RegisterFn> registry;
  return registry;
}
} // namespace

CommandRegistration::CommandRegistration(const char *name,
                                         void (*registerFn)(CLI::App &)) {
  commandRegistry()[name] = registerFn;
}

void registerAllCommands(CLI::App &app) {
  for (auto &[name, fn] : commandRegistry())
    fn(app);
}

namespace {
bool &quietFlag() {
  static bool quiet = false;
  return quiet;
}
} // namespace

void setQuiet(bool quiet) { quietFlag() = quiet; }
bool isQuiet() { return quietFlag(); }

int &commandExitCode() {
  static int code = kExitOk;
  return code;
}

void finishCommand(llvm::Error err) {
  commandExitCode() = err ? reportError(std::move(err)) : kExitOk;
}

llvm::Expected<topo::Topology> loadTopology(llvm::StringRef path,
                                            llvm::StringRef scenario) {
  auto t = topo::loadTopologyFile(path);
  if (!t)
    return t.takeError();
  for (const Diagnostic &d : topo::implausibleLinkWarnings(*t))
    d.print(llvm::errs());
  if (!scenario.empty())
    if (auto err = topo::applyScenario(*t, scenario))
      return err;
  return t;
}

int reportError(llvm::Error err) {
  int code = kExitUser;
  llvm::handleAllErrors(
      std::move(err),
      [&](const DiagnosticError &d) {
        for (const Diagnostic &diag : d.diagnostics())
          diag.print(llvm::errs());
      },
      [&](const InternalError &e) {
        code = kExitInternal;
        llvm::errs() << "topocc: internal error: " << e.getMessage() << '\n';
      },
      [&](const llvm::ErrorInfoBase &e) {
        llvm::errs() << "topocc: error: " << e.message() << '\n';
      });
  llvm::errs().flush();
  return code;
}

llvm::Error
writeOutputStream(llvm::StringRef path,
                  llvm::function_ref<void(llvm::raw_ostream &)> write) {
  auto out = OutputFile::open(path);
  if (!out)
    return out.takeError();
  write((*out)->os());
  return (*out)->commit();
}

llvm::Error writeOutputFile(llvm::StringRef path, llvm::StringRef text) {
  return writeOutputStream(path, [&](llvm::raw_ostream &os) { os << text; });
}

llvm::Expected<ir::Collective> parseCollective(llvm::StringRef name) {
  static const llvm::StringRef kNames[] = {"allreduce", "allgather",
                                           "reducescatter"};
  if (llvm::is_contained(kNames, name))
    return *ir::collectiveFromName(name);
  std::string hint = nearestMatch(name, kNames);
  return makeUserError("unknown --collective '" + name + "'" +
                       (hint.empty() ? "" : "; did you mean '" + hint + "'?") +
                       " (expected allreduce, allgather or reducescatter)");
}

llvm::Error checkFormat(llvm::StringRef format) {
  if (format == "text" || format == "json")
    return llvm::Error::success();
  return makeUserError("unknown --format '" + format +
                       "'; expected 'text' or 'json'");
}

} // namespace topocc::driver
