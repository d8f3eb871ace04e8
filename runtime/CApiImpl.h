//===- runtime/CApiImpl.h - What the C API's handles hold -------*- C++ -*-===//
//
// Shared by runtime/CApi.cpp and runtime/mpi/MpiCApi.cpp: the structs behind
// the opaque handles of runtime/topocc_c.h and the error slot.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_RUNTIME_CAPIIMPL_H
#define TOPOCC_RUNTIME_CAPIIMPL_H

#include "runtime/Interpreter.h"
#include "runtime/topocc_c.h"

#include "llvm/Support/Error.h"

#include <memory>

struct topocc_transport {
  std::unique_ptr<topocc::runtime::Transport> impl;
};

namespace topocc::runtime::capi {
/// Stores the message of `err` (consumed) as this thread's last error and
/// returns TOPOCC_ERROR.
topocc_status fail(llvm::Error err);
/// The same for a plain message.
topocc_status fail(const char *message);
} // namespace topocc::runtime::capi

#endif // TOPOCC_RUNTIME_CAPIIMPL_H
