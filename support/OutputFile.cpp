//===- support/OutputFile.cpp - Output files that appear whole ------------===//

#include "support/OutputFile.h"

#include "support/Diagnostics.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"

namespace topocc {

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
  const bool inPlace = !llvm::sys::fs::status(path, st) &&
                       llvm::sys::fs::exists(st) &&
                       !llvm::sys::fs::is_regular_file(st);
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
    if (!temp.empty())
      llvm::sys::fs::remove(temp);
  }
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
    if (!temp.empty())
      llvm::sys::fs::remove(temp);
    return makeUserError("cannot write '" + path + "': " + msg);
  }
  if (!temp.empty())
    if (std::error_code ec = llvm::sys::fs::rename(temp, path)) {
      llvm::sys::fs::remove(temp);
      return makeUserError("cannot write '" + path + "': " + ec.message());
    }
  return llvm::Error::success();
}

} // namespace topocc
