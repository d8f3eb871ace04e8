//===- tools/topocc/CompileCommand.cpp - `topocc compile` -----------------===//
//
// `topocc compile TOPO.yaml --collective C --algorithm ring ... --emit
// msccl-xml|ir -o FILE` runs the pipeline (compiler/Pipeline.h) on the
// topology's ranks; `topocc compile --run-pass NAME --input-ir FILE -o FILE`
// runs one pass on textual IR. Only verified schedules are written.
//
//===----------------------------------------------------------------------===//

#include "tools/topocc/Driver.h"

#include "backends/MscclXml.h"
#include "compiler/Pipeline.h"
#include "compiler/topology/Scenario.h"
#include "compiler/topology/TopologyParser.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "support/Diagnostics.h"

#include "CLI/CLI.hpp"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <memory>
#include <map>
#include <set>

namespace topocc::driver {

namespace {

struct CompileOptions {
  std::string topology;
  std::string collective;
  std::string algorithm = "ring";
  int channels = 1;
  int chunks = 1;
  std::string ring;
  bool inplace = false;
  bool outofplace = false;
  std::string proto = "Simple";
  int maxSteps = 64;
  std::string scenario;
  std::string emit = "msccl-xml";
  std::string output;
  bool printAfterAll = false;
  bool timePasses = false;
  bool verifyEach = false;
  std::string runPass;
  std::string inputIr;
};

llvm::Expected<std::vector<ir::RankId>> parseRingOrder(llvm::StringRef text) {
  std::vector<ir::RankId> ring;
  if (text.empty())
    return ring;
  llvm::SmallVector<llvm::StringRef, 16> parts;
  text.split(parts, ',');
  for (llvm::StringRef p : parts) {
    int r;
    if (p.trim().getAsInteger(10, r))
      return makeUserError("invalid --ring '" + text + "': '" + p +
                           "' is not a rank number (expected a comma-separated "
                           "list such as 0,3,2,1)");
    ring.push_back(r);
  }
  return ring;
}

llvm::Expected<ir::Collective> parseCollective(llvm::StringRef name) {
  static const llvm::StringRef kNames[] = {"allreduce", "allgather",
                                           "reducescatter"};
  if (llvm::is_contained(kNames, name))
    return *ir::collectiveFromName(name);
  std::string hint = nearestMatch(name, kNames);
  return makeUserError("unknown --collective '" + name + "'" +
                       (hint.empty() ? "" : "; did you mean '" + hint + "'?") +
                       " (expected allreduce, allgather or reducescatter)");
}

llvm::Error checkEmit(llvm::StringRef emit) {
  if (emit == "msccl-xml" || emit == "ir")
    return llvm::Error::success();
  return makeUserError("unknown --emit '" + emit +
                       "'; expected 'msccl-xml' or 'ir'");
}

/// The text to write for `s` in the requested form.
llvm::Expected<std::string> render(const ir::Schedule &s,
                                   const CompileOptions &opts) {
  if (opts.emit == "ir")
    return ir::scheduleToString(s);
  backends::MscclXmlOptions xml;
  xml.proto = opts.proto;
  xml.maxSteps = opts.maxSteps;
  return backends::mscclXmlToString(s, xml);
}

/// "wrote FILE: ring allreduce, 4 ranks, 1 channel, 4 threadblocks (1 per
/// rank), 28 steps (at most 7 per threadblock), nchunksperloop 4"
std::string summary(const ir::Schedule &s, const CompileOptions &opts) {
  size_t threadblocks = 0, steps = 0, maxTbs = 0, maxSteps = 0;
  for (const ir::RankProgram &rp : s.ranks) {
    std::map<ir::TbId, size_t> perTb;
    for (const ir::Op &op : rp.ops)
      ++perTb[op.threadblock];
    threadblocks += perTb.size();
    maxTbs = std::max(maxTbs, perTb.size());
    for (auto &[tb, n] : perTb)
      maxSteps = std::max(maxSteps, n);
    steps += rp.ops.size();
  }
  return llvm::formatv("wrote {0}: {1} {2}, {3} ranks, {4} channel{5}, {6} "
                       "threadblocks ({7} per rank at most), {8} steps ({9} "
                       "per threadblock at most), nchunksperloop {10}\n",
                       opts.output, opts.algorithm,
                       ir::collectiveName(s.collective), s.numRanks,
                       s.numChannels, s.numChannels == 1 ? "" : "s",
                       threadblocks, maxTbs, steps, maxSteps, s.chunksPerLoop)
      .str();
}

llvm::Error runCompile(const CompileOptions &opts) {
  if (auto err = checkEmit(opts.emit))
    return err;
  if (opts.inplace && opts.outofplace)
    return makeUserError("--inplace and --outofplace exclude each other");
  CompileRequest req;
  req.algorithm = opts.algorithm;
  req.channels = opts.channels;
  req.chunks = opts.chunks;
  req.inplace = opts.inplace;
  req.proto = opts.proto;
  req.maxSteps = opts.maxSteps;
  req.verifyEach = opts.verifyEach;
  PassLogger log(&llvm::errs(), opts.printAfterAll, opts.timePasses);

  ir::Schedule result;
  if (!opts.runPass.empty()) {
    if (opts.inputIr.empty())
      return makeUserError("--run-pass needs --input-ir FILE");
    if (!opts.topology.empty())
      return makeUserError("--run-pass reads --input-ir, not a topology file");
    auto input = ir::parseScheduleFile(opts.inputIr);
    if (!input)
      return input.takeError();
    auto s = runSinglePass(opts.runPass, std::move(*input), req, log);
    log.printTimings(llvm::errs());
    if (!s)
      return s.takeError();
    result = std::move(*s);
  } else {
    if (!opts.inputIr.empty())
      return makeUserError("--input-ir is only used with --run-pass");
    if (opts.topology.empty())
      return makeUserError("compile needs a topology file (or --run-pass NAME "
                           "--input-ir FILE)");
    if (opts.collective.empty())
      return makeUserError("compile needs --collective allreduce, allgather "
                           "or reducescatter");
    auto coll = parseCollective(opts.collective);
    if (!coll)
      return coll.takeError();
    req.collective = *coll;
    auto ring = parseRingOrder(opts.ring);
    if (!ring)
      return ring.takeError();
    req.ringOrder = std::move(*ring);
    auto topo = topo::loadTopologyFile(opts.topology);
    if (!topo)
      return topo.takeError();
    if (!opts.scenario.empty())
      if (auto err = topo::applyScenario(*topo, opts.scenario))
        return err;
    req.name =
        llvm::formatv("{0}_{1}_{2}_{3}", topo->name(), opts.algorithm,
                      opts.collective, opts.inplace ? "inplace" : "outofplace")
            .str();
    auto plan = compile(topo->numRanks(), req, log);
    log.printTimings(llvm::errs());
    if (!plan)
      return plan.takeError();
    result = std::move(plan->schedule);
  }
  auto text = render(result, opts);
  if (!text)
    return text.takeError();
  if (auto err = writeOutputFile(opts.output, *text))
    return err;
  if (opts.output != "-")
    llvm::outs() << summary(result, opts);
  return llvm::Error::success();
}

} // namespace

void registerCompileCommand(CLI::App &app) {
  auto opts = std::make_shared<CompileOptions>();
  CLI::App *cmd = app.add_subcommand(
      "compile", "Compile a collective for a topology into a verified schedule "
                 "(MSCCL XML or schedule IR)");
  cmd->add_option("topology", opts->topology, "Topology YAML file");
  cmd->add_option("--collective", opts->collective,
                  "allreduce, allgather or reducescatter");
  cmd->add_option("--algorithm", opts->algorithm, "Algorithm: ring")
      ->capture_default_str();
  cmd->add_option("--channels", opts->channels,
                  "Rings (MSCCL channels); each carries 1/N of the data")
      ->capture_default_str();
  cmd->add_option("--chunks", opts->chunks,
                  "Chunks per rank per channel (pipelining)")
      ->capture_default_str();
  cmd->add_option("--ring", opts->ring,
                  "Ring order, a permutation of the ranks (e.g. 0,3,2,1); "
                  "default rank order");
  cmd->add_flag("--inplace", opts->inplace, "Emit the in-place variant");
  cmd->add_flag("--outofplace", opts->outofplace,
                "Emit the out-of-place variant (default)");
  cmd->add_option("--proto", opts->proto, "MSCCL protocol: Simple, LL, LL128")
      ->capture_default_str();
  cmd->add_option("--max-steps", opts->maxSteps,
                  "Steps per threadblock (MSCCL_MAX_NUM_STEPS of the runtime)")
      ->capture_default_str();
  cmd->add_option("--scenario", opts->scenario,
                  "Apply this named scenario of the topology first");
  cmd->add_option("--emit", opts->emit, "Output: msccl-xml or ir")
      ->capture_default_str();
  cmd->add_option("-o,--output", opts->output, "Output file ('-' for stdout)")
      ->required();
  cmd->add_flag("--print-after-all", opts->printAfterAll,
                "Print the IR after every pass to stderr");
  cmd->add_flag("--time-passes", opts->timePasses,
                "Print the wall time of every pass to stderr");
  cmd->add_flag("--verify-each", opts->verifyEach,
                "Verify the schedule after every pass");
  cmd->add_option("--run-pass", opts->runPass,
                  "Run only this pass (fuse, assign-channels, "
                  "assign-threadblocks, legalize-dependencies) on --input-ir");
  cmd->add_option("--input-ir", opts->inputIr,
                  "Textual schedule IR for --run-pass");
  cmd->callback([opts] {
    if (auto err = runCompile(*opts))
      commandExitCode() = reportError(std::move(err));
    else
      commandExitCode() = kExitOk;
  });
}

} // namespace topocc::driver
