//===- support/InputFile.h - Bounded reads of user files -------*- C++ -*-===//
//
// Every file topocc reads whole (topologies, schedules, plans, MSCCL XML)
// comes through readInputFile, which refuses a file above a size limit
// before reading it, and reads devices, pipes and standard input in pieces
// so that `topocc show /dev/zero` stops at the limit instead of exhausting
// memory. The limits are documented in docs/CLI.md ("Input size limits");
// `--max-input-size` raises them.
//
//===----------------------------------------------------------------------===//

#ifndef TOPOCC_SUPPORT_INPUTFILE_H
#define TOPOCC_SUPPORT_INPUTFILE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <memory>

namespace topocc {

/// What a file is, for its default size limit and the error message.
enum class InputKind {
  /// A topology description (YAML): 64 MiB.
  Topology,
  /// A schedule, plan or MSCCL XML file: 1 GiB.
  Schedule,
};

/// The default limit of a kind, in bytes.
uint64_t defaultInputLimit(InputKind kind);

/// The limit in force: `--max-input-size` when given, else the kind's
/// default.
uint64_t inputLimit(InputKind kind);

/// Sets the process's limit for every kind (0: back to the defaults). The
/// driver calls this for `--max-input-size`; tests use it.
void setInputLimitOverride(uint64_t bytes);

/// Reads `path` ("-" with `allowStdin`: standard input) whole, refusing it
/// with a user error that names the size, the limit and the flag when it is
/// larger than inputLimit(kind). `what` names the file in messages
/// ("topology file", "plan").
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readInputFile(llvm::StringRef path, InputKind kind, llvm::StringRef what,
              bool allowStdin = false);

} // namespace topocc

#endif // TOPOCC_SUPPORT_INPUTFILE_H
