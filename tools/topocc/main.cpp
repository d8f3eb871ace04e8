//===- tools/topocc/main.cpp - The topocc command-line driver -------------===//
//
// Dispatches to the subcommands. Exit codes: 0 ok, 1 user error (bad input or
// unsatisfiable request), 2 internal error (a bug in topocc).
//
//===----------------------------------------------------------------------===//

#include "tools/topocc/Driver.h"

#include "support/ByteSize.h"
#include "support/Diagnostics.h"
#include "support/InputFile.h"
#include "support/OutputFile.h"
#include "support/Progress.h"

#include "CLI/CLI.hpp"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <malloc.h>
#include <optional>
#include <string>
#include <vector>

namespace {
/// The allocator keeps what it frees. topocc builds and drops schedules of
/// hundreds of megabytes again and again (auto's candidates, each pass's
/// copy, the simulator's state); glibc's default maps each large block
/// afresh and returns it when freed, so every new one costs a page fault
/// per 4 KiB. Taking every block from the heap and never trimming it made a
/// 1024-chip torus compile 1.2 to 1.3 times as fast, for 3% more peak
/// memory (up to 27% on whatif of 512 GPUs); docs/benchmarks/scale.md has
/// the measurements.
void keepFreedMemory() {
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, INT_MAX);
  mallopt(M_TOP_PAD, 64 << 20);
}
} // namespace

int main(int argc, char **argv) {
  using namespace topocc::driver;
  keepFreedMemory();
  // An interrupted topocc leaves no half-written temporary output behind
  // (support/OutputFile.h); the handlers are this program's policy.
  topocc::OutputFile::removeTemporariesOnSignals(true);
  CLI::App app{"topocc: topology-aware collective compiler"};
  app.set_version_flag("-V,--version",
                       std::string("topocc ") + TOPOCC_VERSION);
  app.require_subcommand(1);
  registerShowCommand(app);
  registerCompileCommand(app);
  registerAllCommands(app);
  // --max-input-size may come anywhere (before or after the command): take
  // it out of the arguments before CLI11 sees them, so that it applies to
  // every file any command reads.
  std::string maxInputHelp;
  app.add_option("--max-input-size", maxInputHelp,
                 "Largest input file to read (default 64M for topologies, "
                 "1G for schedules, plans and MSCCL XML); may also follow "
                 "the command");
  // --quiet and --progress, like --max-input-size, may come anywhere.
  bool quiet = false, forceProgress = false;
  app.add_flag("--quiet", quiet,
               "No progress, summary or 'wrote FILE' lines on stderr "
               "(notes, warnings and errors stay); may also follow the "
               "command");
  app.add_flag("--progress", forceProgress,
               "Progress of long steps on stderr even when it is not a "
               "terminal (one line per step and a summary; by default only "
               "a terminal gets a live line); may also follow the command");
  std::vector<char *> args(argv, argv + argc);
  for (size_t i = 1; i < args.size();) {
    llvm::StringRef a(args[i]);
    if (a == "--quiet" || a == "--progress") {
      (a == "--quiet" ? quiet : forceProgress) = true;
      args.erase(args.begin() + i);
      continue;
    }
    std::optional<llvm::StringRef> value;
    size_t taken = 1;
    if (a == "--max-input-size") {
      if (i + 1 < args.size())
        value = llvm::StringRef(args[i + 1]);
      else
        value = llvm::StringRef();
      taken = 2;
    } else if (a.startswith("--max-input-size=")) {
      value = a.drop_front(strlen("--max-input-size="));
    }
    if (!value) {
      ++i;
      continue;
    }
    std::optional<uint64_t> bytes = topocc::readByteCount(*value);
    if (!bytes || *bytes == 0) {
      llvm::errs() << "topocc: error: invalid --max-input-size '" << *value
                   << "'; expected a size such as 256M or 2G\n";
      return kExitUser;
    }
    topocc::setInputLimitOverride(*bytes);
    args.erase(args.begin() + i,
               args.begin() + std::min(args.size(), i + taken));
  }
  argc = static_cast<int>(args.size());
  argv = args.data();
  // A word where the command belongs that names no command ("comple"):
  // say so and name the nearest one, instead of CLI11's "A subcommand is
  // required".
  if (argc > 1 && argv[1][0] != '-') {
    std::vector<std::string> names;
    for (CLI::App *sub : app.get_subcommands([](CLI::App *) { return true; }))
      names.push_back(sub->get_name());
    if (std::find(names.begin(), names.end(), argv[1]) == names.end()) {
      std::vector<llvm::StringRef> refs(names.begin(), names.end());
      std::string near = topocc::nearestMatch(argv[1], refs);
      llvm::errs() << "topocc: error: unknown command '" << argv[1] << "'"
                   << (near.empty() ? "" : "; did you mean '" + near + "'?")
                   << " (commands: " << llvm::join(refs, ", ")
                   << "; topocc --help lists them)\n";
      return kExitUser;
    }
  }
  if (quiet && forceProgress) {
    llvm::errs() << "topocc: error: --quiet and --progress contradict each "
                    "other; give one\n";
    return kExitUser;
  }
  setQuiet(quiet);
  // Progress of long steps: a live line where someone watches stderr, one
  // line per step with --progress (logs), nothing with --quiet.
  std::optional<topocc::StreamProgress> progress;
  const unsigned columns = llvm::sys::Process::StandardErrColumns();
  if (forceProgress || (!quiet && llvm::sys::Process::StandardErrIsDisplayed()))
    progress.emplace(llvm::errs(),
                     forceProgress &&
                             !llvm::sys::Process::StandardErrIsDisplayed()
                         ? topocc::StreamProgress::Style::Lines
                         : topocc::StreamProgress::Style::Live,
                     columns ? columns : 80);
  if (progress)
    topocc::setProgressSink(&*progress);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    int rc = app.exit(e);
    // CLI11 returns 0 for --help/--version; usage errors are user errors.
    return rc == 0 ? kExitOk : kExitUser;
  }
  if (progress) {
    topocc::setProgressSink(nullptr);
    // The summary when the command ran for a couple of seconds.
    progress->finish(argc > 1 ? argv[1] : "", 2.0);
  }
  return commandExitCode();
}
