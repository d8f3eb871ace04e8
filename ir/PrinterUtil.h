//===- ir/PrinterUtil.h - Pieces of the textual IR form --------*- C++ -*-===//
//
// Small formatting helpers shared by the printer, the verifier's messages and
// the semantics: the shortest round-tripping spelling of a double and the
// `in[chunk+count]` spelling of a buffer reference. Stage: any.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_IR_PRINTERUTIL_H
#define TOPOCC_IR_PRINTERUTIL_H

#include "ir/Schedule.h"

#include "llvm/Support/raw_ostream.h"

#include <string>

namespace topocc::ir {

/// The shortest "%.Ng" spelling that strtod reads back as exactly `d`
/// ("nan", "inf", "-inf" for the special values).
std::string formatDouble(double d);

/// `in[chunk+count]`.
void printBufferRef(const BufferRef &b, llvm::raw_ostream &os);

} // namespace topocc::ir

#endif // TOPOCC_IR_PRINTERUTIL_H
