//===- support/InputFile.cpp - Bounded reads of user files ----------------===//

#include "support/InputFile.h"

#include "support/Diagnostics.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"

#include <atomic>
#include <string>

namespace topocc {

namespace {

std::atomic<uint64_t> limitOverride{0};

std::string mebibytes(uint64_t bytes) {
  return llvm::formatv("{0:F1} MiB", static_cast<double>(bytes) / (1 << 20))
      .str();
}

llvm::Error tooLarge(llvm::StringRef path, llvm::StringRef what,
                     llvm::StringRef size, uint64_t limit) {
  return makeUserError("refusing " + what + " '" + path + "': " + size +
                       " the limit of " + mebibytes(limit) + " for " + what +
                       "s" +
                       "; --max-input-size SIZE raises it (docs/CLI.md, "
                       "\"Input size limits\")");
}

} // namespace

uint64_t defaultInputLimit(InputKind kind) {
  switch (kind) {
  case InputKind::Topology:
    return uint64_t(64) << 20;
  case InputKind::Schedule:
    return uint64_t(1) << 30;
  }
  llvm_unreachable("unknown input kind");
}

uint64_t inputLimit(InputKind kind) {
  uint64_t o = limitOverride.load();
  return o ? o : defaultInputLimit(kind);
}

void setInputLimitOverride(uint64_t bytes) { limitOverride.store(bytes); }

llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readInputFile(llvm::StringRef path, InputKind kind, llvm::StringRef what,
              bool allowStdin) {
  const uint64_t limit = inputLimit(kind);
  auto cannotRead = [&](std::error_code ec) {
    return makeUserError("cannot read " + what + " '" + path +
                         "': " + ec.message());
  };
  const bool isStdin = allowStdin && path == "-";
  if (!isStdin) {
    // A regular file says its size: refuse it before reading a byte.
    llvm::sys::fs::file_status st;
    if (std::error_code ec = llvm::sys::fs::status(path, st))
      return cannotRead(ec);
    if (llvm::sys::fs::is_directory(st))
      return makeUserError("cannot read " + what + " '" + path +
                           "': it is a directory");
    if (llvm::sys::fs::is_regular_file(st)) {
      if (st.getSize() > limit)
        return tooLarge(path, what, mebibytes(st.getSize()) + " is more than",
                        limit);
      auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                             /*RequiresNullTerminator=*/false);
      if (!buf)
        return cannotRead(buf.getError());
      return std::move(*buf);
    }
  }
  // Standard input, a pipe or a device: read in pieces, at most the limit.
  llvm::sys::fs::file_t fd = llvm::sys::fs::getStdinHandle();
  if (!isStdin) {
    auto opened = llvm::sys::fs::openNativeFileForRead(path);
    if (!opened)
      return cannotRead(llvm::errorToErrorCode(opened.takeError()));
    fd = *opened;
  }
  std::string data;
  llvm::Error result = llvm::Error::success();
  constexpr size_t kPiece = size_t(1) << 20;
  while (true) {
    size_t old = data.size();
    data.resize(old + kPiece);
    auto got = llvm::sys::fs::readNativeFile(
        fd, llvm::MutableArrayRef<char>(&data[old], kPiece));
    if (!got) {
      result = cannotRead(llvm::errorToErrorCode(got.takeError()));
      break;
    }
    data.resize(old + *got);
    if (*got == 0)
      break;
    if (data.size() > limit) {
      result = tooLarge(path, what, "it goes on past", limit);
      break;
    }
  }
  if (!isStdin)
    llvm::sys::fs::closeFile(fd);
  if (result)
    return result;
  return llvm::MemoryBuffer::getMemBufferCopy(data, path);
}

} // namespace topocc
