//===- tests/support/ErrorText.h - Messages of a user error -*- C++ -*-===//
//
// The message text of an llvm::Error as the user reads it, without the
// "error: " prefix and trailing newline the diagnostic printer adds.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_TESTS_SUPPORT_ERRORTEXT_H
#define TOPOCC_TESTS_SUPPORT_ERRORTEXT_H

#include "support/Diagnostics.h"

#include "llvm/Support/Error.h"

#include <string>

namespace topocc::testing {

inline std::string errorMessage(llvm::Error e) {
  return errorMessages(std::move(e));
}

} // namespace topocc::testing

#endif // TOPOCC_TESTS_SUPPORT_ERRORTEXT_H
