//===- ir/Target.cpp - Output formats -------------------------------------===//

#include "ir/Target.h"

#include "support/Diagnostics.h"

#include "llvm/ADT/Twine.h"

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

llvm::Expected<MscclRuntime> parseMscclRuntime(llvm::StringRef name) {
  if (name == "msccl-executor")
    return MscclRuntime::MscclExecutor;
  if (name == "rccl")
    return MscclRuntime::Rccl;
  return makeUserError("unknown --msccl-runtime '" + name +
                       "'; expected 'msccl-executor' (msccl-executor-nccl) or "
                       "'rccl' (RCCL's built-in MSCCL)");
}

llvm::StringRef mscclRuntimeName(MscclRuntime r) {
  switch (r) {
  case MscclRuntime::MscclExecutor:
    return "msccl-executor";
  case MscclRuntime::Rccl:
    return "rccl";
  }
  llvm_unreachable("unknown MSCCL runtime");
}

int32_t mscclRuntimeMaxThreadblocks(MscclRuntime r) {
  return r == MscclRuntime::Rccl ? kRcclMaxThreadblocks : 0;
}

int32_t mscclRuntimeMaxSteps(MscclRuntime r) {
  return r == MscclRuntime::Rccl ? kRcclMaxSteps : TargetLimits::kNoLimit;
}

std::string tooManyUnits(int64_t units, llvm::StringRef product,
                         llvm::StringRef advice) {
  if (units <= kMaxChunksPerLoop)
    return "";
  return (llvm::Twine(product) + " = " + llvm::Twine(units) +
          " units exceeds " + llvm::Twine(kMaxChunksPerLoop) +
          " (MSCCL stores offsets in 16 bits); " + advice)
      .str();
}

} // namespace topocc::ir
