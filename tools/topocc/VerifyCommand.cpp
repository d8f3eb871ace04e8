//===- tools/topocc/VerifyCommand.cpp - `topocc verify` -------------------===//
//
// `topocc verify FILE.xml [FILE.xml...] [--legacy] [--max-steps N]
// [--sm-count N] [--topology TOPO.yaml] [--size 1G] [--format text|json]`
// checks MSCCL algorithm XML files (backends/MscclXmlCheck.h) and prints a
// verdict per file: accept, or reject with every finding classified by what
// the real executor does with it (rejects the file, hangs, runs wrongly, or
// runs a non-conforming file). Window overlaps across the given files are
// warnings. Exit 0 when every file is accepted and no finding says it hangs
// or runs wrongly (a warning such as more threadblocks than --sm-count
// included), 1 otherwise or when the command line is wrong, 2 on an
// internal error. docs/Verify.md.
//
//===----------------------------------------------------------------------===//

#include "tools/topocc/Driver.h"

#include "backends/MscclVerify.h"
#include "backends/MscclXmlCheck.h"
#include "backends/MscclXmlImport.h"
#include "backends/ServedSizes.h"
#include "compiler/analysis/Bound.h"
#include "compiler/analysis/CostModel.h"
#include "compiler/analysis/Prediction.h"
#include "compiler/analysis/Simulator.h"
#include "compiler/topology/GpuModels.h"
#include "compiler/topology/TopologyParser.h"
#include "compiler/topology/Units.h"
#include "support/ByteSize.h"
#include "support/Diagnostics.h"
#include "support/InputFile.h"

#include "CLI/CLI.hpp"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <map>
#include <memory>
#include <optional>

namespace topocc::driver {

namespace {

using backends::MscclConsequence;
using backends::MscclFinding;
using backends::MscclVerdict;
using FileResult = backends::MscclFileResult;

struct VerifyOptions {
  std::vector<std::string> files;
  bool legacy = false;
  unsigned maxSteps = 64;
  /// -1: the --topology's GPU model, else 108 (an A100).
  int smCount = -1;
  std::string topology;
  std::string size;
  std::string mode = "runtime";
  std::string format = "text";
};

/// --size: a byte size as every command reads it (support/ByteSize.h).
llvm::Expected<double> parseSize(llvm::StringRef text) {
  if (std::optional<double> bytes = readByteSize(text))
    return *bytes;
  return makeUserError("invalid --size '" + text +
                       "': expected a positive byte count such as 1G, 64K, "
                       "1048576 or 1 GiB");
}

std::string whereOf(const MscclFinding &f) {
  std::string w;
  if (f.rank >= 0)
    w += llvm::formatv("rank {0}", f.rank).str();
  if (f.tb >= 0)
    w += llvm::formatv("{0}tb {1}", w.empty() ? "" : " ", f.tb).str();
  if (f.step >= 0)
    w += llvm::formatv("{0}step {1}", w.empty() ? "" : " ", f.step).str();
  return w;
}

/// The diagnostic with "[rank R tb T step S; consequence]" appended.
Diagnostic annotated(const MscclFinding &f) {
  Diagnostic d = f.diag;
  std::string where = whereOf(f);
  std::string what =
      f.consequence ? backends::mscclConsequenceText(*f.consequence).str()
                    : std::string();
  if (where.empty() && what.empty())
    return d;
  // After the first line (a deadlock message lists the cycle below it).
  size_t eol = d.message.find('\n');
  if (eol == std::string::npos)
    eol = d.message.size();
  d.message.insert(eol, " [" + where +
                            (where.empty() || what.empty() ? "" : "; ") +
                            what + "]");
  return d;
}

std::string describeAlgo(const backends::MscclAlgoInfo &a) {
  std::string mode;
  if (a.meta.inplace && a.meta.outofplace)
    mode = "in-place and out-of-place";
  else if (a.meta.inplace)
    mode = "in-place";
  else if (a.meta.outofplace)
    mode = "out-of-place";
  else
    mode = "no mode";
  return llvm::formatv("{0}, {1} ranks, {2}, {3}, nchannels {4}, "
                       "nchunksperloop {5}",
                       a.meta.coll, a.meta.ngpus, mode,
                       a.proto.empty() ? "no proto" : a.proto, a.nchannels,
                       a.nchunksperloop)
      .str();
}

/// "2 errors: 1 hangs, 1 runs wrongly" in the order of MscclConsequence.
std::string countSummary(const std::vector<MscclFinding> &fs) {
  std::map<MscclConsequence, unsigned> n;
  for (const MscclFinding &f : fs)
    if (f.consequence)
      ++n[*f.consequence];
  std::string out = llvm::formatv("{0} error{1}", fs.size(),
                                  fs.size() == 1 ? "" : "s")
                        .str();
  const char *sep = ": ";
  for (auto &[c, k] : n) {
    out += llvm::formatv("{0}{1} {2}", sep, k,
                         backends::mscclConsequenceText(c))
               .str();
    sep = ", ";
  }
  return out;
}


std::string simulationLine(const FileResult &r, const VerifyOptions &opts,
                           double bytes);

void printText(const VerifyOptions &opts, const std::vector<FileResult> &rs,
               const std::vector<Diagnostic> &overlaps,
               std::optional<double> sizeBytes, llvm::raw_ostream &os) {
  unsigned accepted = 0;
  for (const FileResult &r : rs) {
    if (!r.ioError.empty()) {
      os << r.file << ": reject: " << r.ioError << '\n';
      continue;
    }
    const MscclVerdict &v = r.verdict;
    std::string algo = v.algo ? " (" + describeAlgo(*v.algo) + ")" : "";
    if (r.accepted()) {
      ++accepted;
      os << r.file << ": accept" << algo << '\n';
      if (v.algo)
        os << "  serves: " << backends::mscclServesText(*v.algo) << '\n';
    } else if (v.accepted()) {
      os << r.file << ": reject" << algo << ": wrong --topology\n";
    } else {
      os << r.file << ": reject" << algo << ": " << countSummary(v.findings)
         << '\n';
    }
    for (const MscclFinding &f : v.findings)
      annotated(f).print(os);
    for (const MscclFinding &f : v.warningFindings)
      annotated(f).print(os);
    if (!opts.topology.empty()) {
      if (!r.topologyError.empty())
        os << r.file << ": error: " << r.topologyError << '\n';
      else if (r.sim)
        os << simulationLine(r, opts, *sizeBytes) << '\n';
      else if (!r.simError.empty())
        os << r.file << ": note: not simulated: " << r.simError << '\n';
    }
  }
  for (const Diagnostic &d : overlaps)
    d.print(os);
  if (rs.size() > 1)
    os << llvm::formatv("verify: {0} files, {1} accepted, {2} rejected\n",
                        rs.size(), accepted, rs.size() - accepted);
}

/// "F: simulated at 1 GiB on T: 3.2 ms, algbw 335.5 GB/s, busbw 293.6 GB/s,
/// 92.1% of the realizable bound (busbw 318.7 GB/s; ...)"
std::string simulationLine(const FileResult &r, const VerifyOptions &opts,
                           double bytes) {
  return llvm::formatv("{0}: simulated at {1} on {2} ({3} model): ", r.file,
                       sizeText(bytes), opts.topology,
                       analysis::simModeName(r.prediction->mode))
             .str() +
         analysis::predictionText(*r.prediction);
}

llvm::Expected<bool> runVerify(const VerifyOptions &opts) {
  if (auto err = checkFormat(opts.format))
    return err;
  if (opts.maxSteps < 1)
    return makeUserError("--max-steps must be at least 1");
  auto mode = analysis::parseSimMode(opts.mode);
  if (!mode)
    return mode.takeError();
  std::optional<topo::Topology> topology;
  std::optional<double> sizeBytes;
  if (!opts.size.empty() && opts.topology.empty())
    return makeUserError("--size needs --topology (the size of the simulated "
                         "call)");
  if (!opts.topology.empty()) {
    auto t = loadTopology(opts.topology, "");
    if (!t)
      return t.takeError();
    topology = std::move(*t);
    auto sz = parseSize(opts.size.empty() ? "1G" : opts.size);
    if (!sz)
      return sz.takeError();
    sizeBytes = *sz;
  }

  backends::MscclVerifyOptions vo;
  vo.legacy = opts.legacy;
  vo.maxSteps = opts.maxSteps;
  vo.smCount = opts.smCount;
  vo.topology = topology ? &*topology : nullptr;
  vo.topologyFile = opts.topology;
  vo.bytes = sizeBytes.value_or(0);
  vo.mode = *mode;
  auto report = backends::verifyMscclFiles(opts.files, vo);
  if (!report)
    return report.takeError();
  const std::vector<FileResult> &results = report->files;
  const std::vector<Diagnostic> &overlaps = report->overlaps;

  std::string out;
  llvm::raw_string_ostream os(out);
  if (opts.format == "json")
    backends::printMscclVerifyJson(os, *report, vo);
  else
    printText(opts, results, overlaps, sizeBytes, os);
  os.flush();
  if (auto err = writeOutputFile("-", out))
    return err;
  // A file that would hang or compute wrongly fails the command even when
  // the finding is only a warning (more blocks than SMs).
  return report->passes();
}

void registerVerifyCommand(CLI::App &app) {
  auto opts = std::make_shared<VerifyOptions>();
  CLI::App *cmd = app.add_subcommand(
      "verify", "Check MSCCL algorithm XML files: executor checks, rules, "
                "deadlock, races and the collective's result");
  cmd->add_option("files", opts->files, "MSCCL algorithm XML files")
      ->required();
  cmd->add_flag("--legacy", opts->legacy,
                "Accept the legacy microsoft/msccl dialect (reduce_scatter, "
                "missing outofplace/minBytes/maxBytes)");
  cmd->add_option("--max-steps", opts->maxSteps,
                  "MSCCL_MAX_NUM_STEPS of the target executor build")
      ->capture_default_str();
  cmd->add_option("--sm-count", opts->smCount,
                  "SMs of the target GPU (co-residency check; 0 disables); "
                  "default: the --topology's GPU model, else 108");
  cmd->add_option("--topology", opts->topology,
                  "Topology YAML; its rank count must equal ngpus");
  cmd->add_option("--size", opts->size,
                  "Call size for the simulation (default 1G; needs "
                  "--topology)");
  cmd->add_option("--mode", opts->mode,
                  "Simulation model: runtime (the model compile's "
                  "prediction uses), cut-through or store-and-forward")
      ->capture_default_str();
  cmd->add_option("--format", opts->format, "Output format: text or json")
      ->capture_default_str();
  cmd->callback([opts] {
    auto ok = runVerify(*opts);
    if (!ok)
      commandExitCode() = reportError(ok.takeError());
    else
      commandExitCode() = *ok ? kExitOk : kExitUser;
  });
}

} // namespace

static CommandRegistration reg("verify", registerVerifyCommand);

} // namespace topocc::driver
