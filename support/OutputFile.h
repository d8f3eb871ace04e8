//===- support/OutputFile.h - Output files that appear whole ----*- C++ -*-===//
//
// Every file the topocc command writes (and topocc.Compiled.write of the
// Python module) goes through OutputFile: it is written under a temporary
// name in the directory of its path and renamed to that path only when it
// is complete and everything it depends on succeeded. A reader never sees part of a plan, and a compile that fails
// while its plan is being written (compile writes on a second thread while
// the last checks run, docs/CLI.md) leaves the old file, or none, in place.
//
//===----------------------------------------------------------------------===//

#ifndef TOPOCC_SUPPORT_OUTPUTFILE_H
#define TOPOCC_SUPPORT_OUTPUTFILE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <string>

namespace topocc {

/// An output file written under a temporary name beside `path` and renamed
/// to `path` by commit(): a reader never sees part of it, and an output
/// dropped before commit() (an error found while it was written) leaves
/// nothing behind; so does an interrupted program that asked for it
/// (removeTemporariesOnSignals: the temporary is removed on Ctrl-C and
/// termination signals; only SIGKILL leaves FILE.tmp-XXXXXX). "-" (stdout)
/// and existing files other than regular ones (/dev/null, a pipe) are
/// written in place, and so is a symbolic link (its target is written);
/// renamed() says which.
class OutputFile {
public:
  /// User error when `path` cannot be written.
  static llvm::Expected<std::unique_ptr<OutputFile>> open(llvm::StringRef path);
  /// The program's policy, off by default (tools/topocc/main.cpp turns it
  /// on): the temporaries of files opened afterwards are removed when a
  /// termination signal ends the process. It installs signal handlers
  /// (llvm::sys::RemoveFileOnSignal), which a library inside another
  /// program (the Python module) must not do; signals the process ignores
  /// stay ignored.
  static void removeTemporariesOnSignals(bool on);
  ~OutputFile(); ///< removes the temporary file unless committed
  OutputFile(const OutputFile &) = delete;
  OutputFile &operator=(const OutputFile &) = delete;

  llvm::raw_ostream &os() { return *stream; }
  /// Whether the content reaches `path` only at commit(): what is written
  /// may still be dropped.
  bool renamed() const { return !temp.empty(); }
  /// Flushes, closes and moves the file to its path; user error if the
  /// writes or the move failed.
  llvm::Error commit();

private:
  OutputFile() = default;
  /// Removes the temporary file (no longer removed on a signal).
  void drop();
  std::string path, temp;
  std::unique_ptr<llvm::raw_fd_ostream> file; ///< null for stdout
  llvm::raw_ostream *stream = nullptr;
  bool committed = false;
  bool onSignal = false; ///< `temp` is removed on a signal
};

} // namespace topocc

#endif // TOPOCC_SUPPORT_OUTPUTFILE_H
