//===- ir/Parser.h - Parse the textual schedule IR -------------*- C++ -*-===//
//
// Parses the form written by ir/Printer.h. Malformed input is a user error
// with file:line:col. The result is not verified; run ir/Verifier.h on it.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_IR_PARSER_H
#define TOPOCC_IR_PARSER_H

#include "ir/Schedule.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace topocc::ir {

/// `fileName` is used in diagnostics only.
llvm::Expected<Schedule> parseSchedule(llvm::StringRef text,
                                       llvm::StringRef fileName);
llvm::Expected<Schedule> parseScheduleFile(llvm::StringRef path);

} // namespace topocc::ir

#endif // TOPOCC_IR_PARSER_H
