//===- ir/Printer.h - Textual form of the schedule IR ----------*- C++ -*-===//
//
// Prints a Schedule in its stable textual form (see docs/ScheduleIR.md).
// print -> parse -> print is byte-identical. Stage: any.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_IR_PRINTER_H
#define TOPOCC_IR_PRINTER_H

#include "ir/Schedule.h"

#include "llvm/Support/raw_ostream.h"

#include <string>

namespace topocc::ir {

void printSchedule(const Schedule &s, llvm::raw_ostream &os);
std::string scheduleToString(const Schedule &s);
/// One op, as it appears in the printed form (without the leading indent).
void printOp(const Op &op, OpId id, llvm::raw_ostream &os);

} // namespace topocc::ir

#endif // TOPOCC_IR_PRINTER_H
