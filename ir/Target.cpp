//===- ir/Target.cpp - Output formats -------------------------------------===//

#include "ir/Target.h"

#include "support/Diagnostics.h"

namespace topocc::ir {

namespace {
struct FormatRow {
  OutputFormat format;
  llvm::StringRef name;
};
const FormatRow kFormats[] = {{OutputFormat::MscclXml, "msccl-xml"},
                              {OutputFormat::Ir, "ir"},
                              {OutputFormat::NcclGraph, "nccl-graph"},
                              {OutputFormat::Plan, "plan"}};
} // namespace

llvm::Expected<OutputFormat> parseOutputFormat(llvm::StringRef name) {
  for (const FormatRow &row : kFormats)
    if (row.name == name)
      return row.format;
  return makeUserError("unknown --emit '" + name +
                       "'; expected 'msccl-xml', 'ir', 'nccl-graph' or 'plan'");
}

llvm::StringRef outputFormatName(OutputFormat f) {
  for (const FormatRow &row : kFormats)
    if (row.format == f)
      return row.name;
  llvm_unreachable("unknown output format");
}

} // namespace topocc::ir
