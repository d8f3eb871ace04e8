//===- support/OutputFile.cpp - Output files that appear whole ------------===//

#include "support/OutputFile.h"

#include "support/Diagnostics.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Signals.h"

#include <atomic>
#include <csignal>
#include <iterator>

namespace topocc {

namespace {

/// An interrupted command (Ctrl-C, a kill other than SIGKILL) removes
/// `temp` on its way out (llvm::sys::RemoveFileOnSignal). Signals the
/// process ignores stay ignored: LLVM's handler would remove the file and
/// return to a command that goes on writing it (a script's background job
/// ignores SIGINT).
void removeOnSignal(llvm::StringRef temp) {
  static const int kSignals[] = {SIGHUP, SIGINT, SIGTERM, SIGUSR2};
  bool ignored[std::size(kSignals)];
  for (size_t i = 0; i < std::size(kSignals); ++i) {
    struct sigaction old;
    ignored[i] =
        sigaction(kSignals[i], nullptr, &old) == 0 && old.sa_handler == SIG_IGN;
  }
  llvm::sys::RemoveFileOnSignal(temp);
  for (size_t i = 0; i < std::size(kSignals); ++i)
    if (ignored[i])
      std::signal(kSignals[i], SIG_IGN);
}

std::atomic<bool> removeOnSignals{false};

} // namespace

void OutputFile::removeTemporariesOnSignals(bool on) { removeOnSignals = on; }

llvm::Expected<std::unique_ptr<OutputFile>>
OutputFile::open(llvm::StringRef path) {
  std::unique_ptr<OutputFile> out(new OutputFile());
  out->path = path.str();
  if (path == "-") {
    out->stream = &llvm::outs();
    return out;
  }
  auto cannot = [&](std::error_code ec) {
    return makeUserError("cannot write '" + path + "': " + ec.message());
  };
  std::error_code ec;
  llvm::sys::fs::file_status st;
  // A symbolic link is written through, where it points (a rename would
  // replace the link).
  bool isLink = false;
  const bool inPlace =
      (!llvm::sys::fs::is_symlink_file(path, isLink) && isLink) ||
      (!llvm::sys::fs::status(path, st) && llvm::sys::fs::exists(st) &&
       !llvm::sys::fs::is_regular_file(st));
  if (inPlace) {
    out->file = std::make_unique<llvm::raw_fd_ostream>(path, ec,
                                                       llvm::sys::fs::OF_None);
    if (ec)
      return cannot(ec);
  } else {
    int fd = -1;
    llvm::SmallString<256> temp;
    ec = llvm::sys::fs::createUniqueFile(path + ".tmp-%%%%%%", fd, temp);
    if (ec)
      return cannot(ec);
    out->temp = temp.str().str();
    if (removeOnSignals) {
      removeOnSignal(out->temp);
      out->onSignal = true;
    }
    out->file =
        std::make_unique<llvm::raw_fd_ostream>(fd, /*shouldClose=*/true);
  }
  out->stream = out->file.get();
  return out;
}

OutputFile::~OutputFile() {
  if (file && !committed) {
    file->close();
    file->clear_error();
    drop();
  }
}

void OutputFile::drop() {
  if (temp.empty())
    return;
  llvm::sys::fs::remove(temp);
  if (onSignal)
    llvm::sys::DontRemoveFileOnSignal(temp);
}

llvm::Error OutputFile::commit() {
  committed = true;
  if (!file) {
    stream->flush();
    return llvm::Error::success();
  }
  file->close();
  if (file->has_error()) {
    std::string msg = file->error().message();
    file->clear_error();
    drop();
    return makeUserError("cannot write '" + path + "': " + msg);
  }
  if (temp.empty())
    return llvm::Error::success();
  if (std::error_code ec = llvm::sys::fs::rename(temp, path)) {
    drop();
    return makeUserError("cannot write '" + path + "': " + ec.message());
  }
  if (onSignal)
    llvm::sys::DontRemoveFileOnSignal(temp);
  return llvm::Error::success();
}

} // namespace topocc
