//===- compiler/CompileRequest.cpp - Algorithm names, request checks -------===//

#include "compiler/CompileRequest.h"

#include "compiler/algorithms/ForestColl.h"
#include "support/Diagnostics.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstdio>

namespace topocc {

namespace {

/// Every algorithm and its --algorithm name, in the order error messages
/// list them: the registry's rows, then auto.
struct AlgorithmRow {
  Algorithm algorithm;
  llvm::StringRef name;
};
const AlgorithmRow kAlgorithms[] = {
#define TOPOCC_ALGORITHM(Enum, Name, Lowering) {Algorithm::Enum, Name},
#include "compiler/Algorithms.def"
    {Algorithm::Auto, "auto"},
};

const Algorithm kLowerings[] = {
#define TOPOCC_ALGORITHM(Enum, Name, Lowering) Algorithm::Enum,
#include "compiler/Algorithms.def"
};

bool isCoded(Algorithm a) {
  return a == Algorithm::Cerar || a == Algorithm::HierCerar;
}

} // namespace

llvm::ArrayRef<Algorithm> loweringAlgorithms() { return kLowerings; }

llvm::Expected<Algorithm> parseAlgorithm(llvm::StringRef name) {
  std::vector<std::string> known;
  for (const AlgorithmRow &row : kAlgorithms) {
    if (name == row.name)
      return row.algorithm;
    known.push_back("'" + row.name.str() + "'");
  }
  std::string list =
      llvm::join(llvm::ArrayRef<std::string>(known).drop_back(), ", ") +
      " or " + known.back();
  return makeUserError("unknown --algorithm '" + name + "'; expected " + list);
}

llvm::Expected<CompileRequest::TreeGraph> parseTreeGraph(llvm::StringRef name) {
  if (name == "physical")
    return CompileRequest::TreeGraph::Physical;
  if (name == "routes")
    return CompileRequest::TreeGraph::Routes;
  if (name == "hier")
    return CompileRequest::TreeGraph::Hier;
  return makeUserError("unknown --tree-graph '" + name +
                       "'; expected 'physical', 'routes' or 'hier'");
}

llvm::Expected<CompileRequest::RingSteps> parseRingSteps(llvm::StringRef name) {
  if (name == "pipelined")
    return CompileRequest::RingSteps::Pipelined;
  if (name == "wide")
    return CompileRequest::RingSteps::Wide;
  return makeUserError("unknown --ring-steps '" + name +
                       "'; expected 'pipelined' or 'wide'");
}

llvm::StringRef algorithmName(Algorithm a) {
  for (const AlgorithmRow &row : kAlgorithms)
    if (row.algorithm == a)
      return row.name;
  llvm_unreachable("unknown algorithm");
}

llvm::Error checkCompileRequest(const CompileRequest &req) {
  if (req.treesPerRoot)
    if (llvm::Error err = algorithms::checkTreesPerRoot(*req.treesPerRoot))
      return err;
  if (req.treesPerRoot && req.algorithm != Algorithm::Trees &&
      req.algorithm != Algorithm::Auto)
    return makeUserError("--trees-per-root applies to --algorithm trees");
  if (req.treeGraph != CompileRequest::TreeGraph::Physical &&
      req.algorithm != Algorithm::Trees)
    return makeUserError("--tree-graph applies to --algorithm trees");
  if (req.ringSteps != CompileRequest::RingSteps::Pipelined &&
      req.algorithm != Algorithm::Ring)
    return makeUserError("--ring-steps applies to --algorithm ring");
  if (!(req.tolerance >= 0) || !std::isfinite(req.tolerance)) {
    char got[32];
    std::snprintf(got, sizeof got, "%g", req.tolerance);
    return makeUserError(
        llvm::Twine("--tolerance is a relative error and must be a finite "
                    "number >= 0, got ") +
        got);
  }
  const bool codedAlgorithm = isCoded(req.algorithm) ||
                              req.algorithm == Algorithm::Auto;
  if (!codedAlgorithm &&
      (req.components != 0 || req.tolerance != 0 || req.kappaMax != 0 ||
       req.seamOffset != 0 || req.wireDtype != "fp32"))
    return makeUserError("--components, --tolerance, --wire-dtype, "
                         "--kappa-max and --cerar-rotate-seam apply to "
                         "--algorithm cerar, hier-cerar or auto");
  if (req.components < 0 || req.kappaMax < 0 || req.seamOffset < 0)
    return makeUserError(
        "--components, --kappa-max and --cerar-rotate-seam must not be "
        "negative");
  if (isCoded(req.algorithm) &&
      req.target.format == ir::OutputFormat::MscclXml)
    return makeUserError(
        "--algorithm " + algorithmName(req.algorithm) +
        " produces a coded schedule (linear combinations with coefficients "
        "and subtraction) that the MSCCL executor cannot run; use --emit "
        "plan (topocc runtime) or --emit ir");
  if (req.channels < 0 || req.channels > req.target.ringChannelLimit()) {
    const bool msccl = req.target.maxChannels > 0;
    return makeUserError(llvm::formatv(
        "--channels {0} is out of range for --emit {1}: 1 to {2}{3}, or auto",
        req.channels, ir::outputFormatName(req.target.format),
        req.target.ringChannelLimit(),
        msccl ? llvm::formatv(" (MSCCL's and NCCL's MAXCHANNELS; --emit plan "
                              "and ir take up to {0})",
                              ir::kMaxRingChannels)
                    .str()
              : std::string()));
  }
  if (req.proto != "Simple" && req.proto != "LL" && req.proto != "LL128")
    return makeUserError("unknown --proto '" + req.proto +
                         "'; expected 'Simple', 'LL' or 'LL128'");
  if (req.target.maxStepsPerThreadblock < 1)
    return makeUserError(llvm::formatv("--max-steps must be at least 1, got {0}",
                                       req.target.maxStepsPerThreadblock));
  if (req.target.format == ir::OutputFormat::MscclXml &&
      req.target.maxStepsPerThreadblock >
          ir::mscclRuntimeMaxSteps(req.target.runtime))
    return makeUserError(llvm::formatv(
        "--max-steps {0} is more than --msccl-runtime {1} accepts: {2} steps "
        "per threadblock (MSCCL_MAX_NUM_STEPS, fixed when it is built)",
        req.target.maxStepsPerThreadblock,
        ir::mscclRuntimeName(req.target.runtime),
        ir::mscclRuntimeMaxSteps(req.target.runtime)));
  return llvm::Error::success();
}

} // namespace topocc
