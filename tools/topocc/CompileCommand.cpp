//===- tools/topocc/CompileCommand.cpp - `topocc compile` -----------------===//
//
// `topocc compile TOPO.yaml --collective C --algorithm ring|hier-ring|trees|
// cerar|hier-cerar|auto ...
// --emit msccl-xml|ir|nccl-graph -o FILE` runs the pipeline
// (compiler/Pipeline.h) on the topology: the ring algorithm uses the ring
// search's rings for --size unless --ring gives an order (or rank-order);
// trees packs ForestColl spanning trees (--trees-per-root K or the optimum);
// `topocc compile --run-pass NAME --input-ir FILE -o FILE` runs one pass on
// textual IR. Only verified schedules are written.
//
//===----------------------------------------------------------------------===//

#include "tools/topocc/Driver.h"

#include "backends/MscclTarget.h"
#include "backends/MscclXml.h"
#include "backends/MscclXmlImport.h"
#include "backends/PlanJson.h"
#include "backends/ServedSizes.h"
#include "backends/TopologyHash.h"
#include "backends/NcclGraphRings.h"
#include "compiler/analysis/CostModel.h"
#include "compiler/analysis/Prediction.h"
#include "compiler/Pipeline.h"
#include "compiler/algorithms/ForestColl.h"
#include "compiler/topology/Scenario.h"
#include "compiler/topology/TopologyParser.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "support/ByteSize.h"
#include "support/Diagnostics.h"

#include "CLI/CLI.hpp"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <chrono>
#include <memory>
#include <map>
#include <set>

namespace topocc::driver {

namespace {

struct CompileOptions {
  std::string topology;
  std::string collective;
  /// Empty: auto with a topology (the fastest candidate by the runtime
  /// model; coded plans only with --tolerance), else ring.
  std::string algorithm;
  std::string channels; ///< empty: 1, or auto for --algorithm auto
  int chunks = 1;
  std::string ring;
  std::string treesPerRoot = "auto";
  int components = 0;
  double tolerance = 0;
  std::string wireDtype = "fp32";
  double kappaMax = 0;
  int seam = 0;
  bool explain = false;
  std::string size = "64M";
  bool inplace = false;
  bool outofplace = false;
  std::string proto = "Simple";
  int maxSteps = ir::kMscclMaxSteps;
  std::string scenario;
  std::string emit = "msccl-xml";
  /// SMs of the target GPU; -1: from the topology's GPU model
  /// (ir::kDefaultSmCount without a topology).
  int smCount = -1;
  std::string mscclRuntime; ///< empty: from the GPU vendor
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

/// --channels: 1 to 32, or auto (0).
llvm::Expected<int32_t> parseChannels(llvm::StringRef text) {
  if (text == "auto")
    return 0;
  int32_t c;
  if (text.getAsInteger(10, c) || c < 1)
    return makeUserError("invalid --channels '" + text +
                         "' (expected a positive number or auto)");
  return c;
}

/// The NCCL_GRAPH_FILE of a compiled ring plan; notes go to `notes`.
llvm::Expected<std::string> renderNcclGraph(const topo::Topology &t,
                                            const CompileResult &plan,
                                            const CompileRequest &req,
                                            std::vector<std::string> &notes) {
  if (plan.algorithm != Algorithm::Ring)
    return makeUserError(
        "--emit nccl-graph cannot express --algorithm " +
        algorithmName(plan.algorithm) +
        ": an NCCL_GRAPH_FILE only lists ring (and tree) channel orders, and "
        "NCCL runs its own algorithm over them; use --emit msccl-xml");
  std::vector<analysis::RingChannel> rings = plan.searched;
  if (rings.empty())
    for (const ChannelRing &cr : plan.rings) {
      analysis::RingChannel rc;
      rc.order.assign(cr.order.begin(), cr.order.end());
      rc.share = 1.0 / plan.rings.size();
      rings.push_back(std::move(rc));
    }
  analysis::LinkModel m(t);
  auto xml =
      backends::ncclGraphForRings(t, rings, req.collective, req.bytes, m);
  if (!xml)
    return xml.takeError();
  notes = xml->notes;
  bool equal = true;
  for (const ChannelRing &cr : plan.rings)
    equal = equal && cr.chunks == plan.rings[0].chunks;
  if (!equal) {
    std::vector<std::string> counts;
    for (const ChannelRing &cr : plan.rings)
      counts.push_back(std::to_string(cr.chunks));
    notes.push_back("NCCL splits the data evenly over the channels; the "
                    "chosen unequal shares (chunks per channel " +
                    llvm::join(counts, ",") +
                    ") are only in the MSCCL XML (--emit msccl-xml)");
  }
  if (req.chunks != 1)
    notes.push_back("--chunks has no effect on an NCCL graph file (NCCL "
                    "chooses its own chunk size)");
  return xml->xml;
}

/// The text to write for `s` in the requested form.
llvm::Expected<std::string> render(const ir::Schedule &s,
                                   ir::OutputFormat emit,
                                   const CompileOptions &opts,
                                   const backends::PlanMeta &meta) {
  if (emit == ir::OutputFormat::Ir)
    return ir::scheduleToString(s);
  if (emit == ir::OutputFormat::Plan)
    return backends::planToJson(s, meta);
  backends::MscclXmlOptions xml;
  xml.proto = opts.proto;
  xml.maxSteps = opts.maxSteps;
  return backends::mscclXmlToString(s, xml);
}

/// "  predicted at 64 MiB (runtime model): ..." for the file `s` is written
/// as (`text`, the rendered file): MSCCL XML is imported back, so that the
/// number is the simulated time of what the file says (Prediction.h).
llvm::Expected<std::string> predictionFor(const topo::Topology &t,
                                          const ir::Schedule &s,
                                          ir::OutputFormat emit,
                                          llvm::StringRef text,
                                          const CompileOptions &opts,
                                          double bytes) {
  std::optional<ir::Schedule> imported;
  if (emit == ir::OutputFormat::MscclXml) {
    auto back = backends::importMscclXml(text, opts.output);
    if (!back)
      return back.takeError();
    imported = std::move(*back);
  }
  auto p = analysis::predictSchedule(t, imported ? *imported : s, bytes);
  if (!p)
    return p.takeError();
  return "  predicted at " + sizeText(bytes) + " (runtime model): " +
         analysis::predictionText(*p) + "\n";
}

/// "wrote FILE: ring allreduce, 4 ranks, 1 channel, 4 threadblocks (1 per
/// rank), 28 steps (at most 7 per threadblock), nchunksperloop 4"
std::string summary(const ir::Schedule &s, const CompileOptions &opts,
                    llvm::StringRef algorithm, const ir::TargetLimits &target) {
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
                       "per threadblock at most), nchunksperloop {10}{11}\n",
                       opts.output, algorithm,
                       ir::collectiveName(s.collective), s.numRanks,
                       s.numChannels, s.numChannels == 1 ? "" : "s",
                       threadblocks, maxTbs, steps, maxSteps, s.chunksPerLoop,
                       target.format == ir::OutputFormat::MscclXml
                           ? "; for " + backends::describeMscclTarget(target)
                           : std::string())
      .str();
}

llvm::Error runCompile(const CompileOptions &given) {
  CompileOptions opts = given;
  // With a topology the default is the fastest schedule by the runtime
  // model (auto), unless --ring names the ring's order or the output is an
  // NCCL graph file (rings only).
  if (opts.algorithm.empty())
    opts.algorithm =
        (!opts.topology.empty() && opts.ring.empty() &&
         opts.emit != "nccl-graph") ||
                opts.tolerance > 0
            ? "auto"
            : "ring";
  auto emit = ir::parseOutputFormat(opts.emit);
  if (!emit)
    return emit.takeError();
  if (opts.inplace && opts.outofplace)
    return makeUserError("--inplace and --outofplace exclude each other");
  CompileRequest req;
  auto algorithm = parseAlgorithm(opts.algorithm);
  if (!algorithm)
    return algorithm.takeError();
  req.algorithm = *algorithm;
  auto channels = parseChannels(
      !opts.channels.empty()
          ? opts.channels
          : (req.algorithm == Algorithm::Auto ? "auto" : "1"));
  if (!channels)
    return channels.takeError();
  req.channels = *channels;
  req.chunks = opts.chunks;
  auto bytes = parseByteSize(opts.size, "--size");
  if (!bytes)
    return bytes.takeError();
  req.bytes = *bytes;
  req.inplace = opts.inplace;
  req.proto = opts.proto;
  req.verifyEach = opts.verifyEach;
  auto treesPerRoot = algorithms::parseTreesPerRoot(opts.treesPerRoot);
  if (!treesPerRoot)
    return treesPerRoot.takeError();
  req.treesPerRoot = *treesPerRoot;
  req.components = opts.components;
  req.tolerance = opts.tolerance;
  req.wireDtype = opts.wireDtype;
  req.kappaMax = opts.kappaMax;
  req.seamOffset = opts.seam;
  if (opts.smCount < -1)
    return makeUserError("--sm-count must not be negative");
  backends::MscclTargetOptions targetOpts;
  if (opts.smCount >= 0)
    targetOpts.smCount = opts.smCount;
  if (!opts.mscclRuntime.empty()) {
    auto runtime = ir::parseMscclRuntime(opts.mscclRuntime);
    if (!runtime)
      return runtime.takeError();
    targetOpts.runtime = *runtime;
  }
  targetOpts.maxSteps = opts.maxSteps;
  req.target = ir::TargetLimits::forFormat(
      *emit, targetOpts.smCount.value_or(ir::kDefaultSmCount), opts.maxSteps,
      targetOpts.runtime.value_or(ir::MscclRuntime::MscclExecutor));
  if (auto err = checkCompileRequest(req))
    return err;
  PassLogger log(&llvm::errs(), opts.printAfterAll, opts.timePasses);

  ir::Schedule result;
  backends::PlanMeta meta;
  meta.generator = std::string("topocc ") + TOPOCC_VERSION;
  meta.algorithm = opts.algorithm;
  std::string text, ringsLine, explainLines, predictionLine;
  std::optional<topo::Topology> topology; ///< kept for the prediction
  std::vector<std::string> notes;
  size_t ncclChannels = 0;
  bool timingsPending = false;
  if (!opts.runPass.empty()) {
    if (*emit == ir::OutputFormat::NcclGraph)
      return makeUserError("--emit nccl-graph needs a topology, not "
                           "--run-pass");
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
    if (opts.ring == "rank-order") {
      req.rankOrder = true;
    } else {
      auto ring = parseRingOrder(opts.ring);
      if (!ring)
        return ring.takeError();
      req.ringOrder = std::move(*ring);
    }
    auto topo = loadTopology(opts.topology, opts.scenario);
    if (!topo)
      return topo.takeError();
    if (*emit == ir::OutputFormat::MscclXml) {
      // The GPU model's SMs and the vendor's runtime, unless given.
      auto target = backends::mscclTargetFor(&*topo, targetOpts);
      if (!target)
        return target.takeError();
      req.target = *target;
      if (auto err = checkCompileRequest(req))
        return err;
    }
    meta.topologyName = topo->name().str();
    meta.topologyHash = backends::topologyHash(*topo);
    req.name =
        llvm::formatv("{0}_{1}_{2}_{3}", topo->name(), opts.algorithm,
                      opts.collective, opts.inplace ? "inplace" : "outofplace")
            .str();
    auto plan = compile(*topo, req, log);
    if (!plan) {
      log.printTimings(llvm::errs());
      return plan.takeError();
    }
    timingsPending = true;
    meta.algorithm = algorithmName(plan->algorithm).str();
    meta.errorBound = plan->codedError;
    meta.roundoffGain = plan->codedRoundoffGain;
    if (opts.explain)
      for (const std::string &line : plan->explain)
        explainLines += line + "\n";
    if (plan->coded)
      explainLines += llvm::formatv("coded schedule: worst per-rank error "
                                    "operator norm {0:e}\n",
                                    plan->codedError)
                          .str();
    if (*emit == ir::OutputFormat::NcclGraph) {
      auto xml = renderNcclGraph(*topo, *plan, req, notes);
      if (!xml)
        return xml.takeError();
      text = std::move(*xml);
      ncclChannels = plan->rings.size();
    }
    ringsLine = "  " + algorithmName(plan->algorithm).str() + ": " + plan->summary;
    if (!plan->rings.empty()) {
      std::vector<std::string> chans;
      for (const ChannelRing &cr : plan->rings) {
        std::vector<std::string> order;
        for (ir::RankId r : cr.order)
          order.push_back(std::to_string(r));
        chans.push_back(llvm::join(order, ",") + " (" +
                        std::to_string(cr.chunks) + " chunk" +
                        (cr.chunks == 1 ? "" : "s") + ")");
      }
      ringsLine += "; channels: " + llvm::join(chans, "; ");
    }
    ringsLine += "\n";
    if (!plan->chosenFlags.empty())
      ringsLine = "  auto chose " + algorithmName(plan->algorithm).str() + " " +
                  plan->chosenFlags + "\n" + ringsLine;
    result = std::move(plan->schedule);
    // auto's file is named after the algorithm it chose.
    if (opts.algorithm == "auto")
      result.name = llvm::formatv("{0}_{1}_{2}_{3}", topo->name(),
                                  algorithmName(plan->algorithm),
                                  opts.collective,
                                  opts.inplace ? "inplace" : "outofplace")
                        .str();
    topology = std::move(*topo);
  }
  if (*emit != ir::OutputFormat::NcclGraph) {
    auto start = std::chrono::steady_clock::now();
    auto rendered = render(result, *emit, opts, meta);
    log.recordTime("emit " + opts.emit,
                   std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count());
    if (!rendered) {
      if (timingsPending)
        log.printTimings(llvm::errs());
      return rendered.takeError();
    }
    text = std::move(*rendered);
    if (topology) {
      auto line =
          predictionFor(*topology, result, *emit, text, opts, req.bytes);
      if (!line) {
        if (timingsPending)
          log.printTimings(llvm::errs());
        return line.takeError();
      }
      predictionLine = std::move(*line);
    }
  }
  // Pass timings, with the emission when compiling a topology.
  if (timingsPending)
    log.printTimings(llvm::errs());
  if (auto err = writeOutputFile(opts.output, text))
    return err;
  if (opts.output != "-" && *emit == ir::OutputFormat::NcclGraph)
    llvm::outs() << llvm::formatv(
        "wrote {0}: NCCL_GRAPH_FILE, {1} ring channel{2} of a verified {3} "
        "{4} schedule over {5} ranks\n",
        opts.output, ncclChannels, ncclChannels == 1 ? "" : "s",
        opts.algorithm, ir::collectiveName(result.collective),
        result.numRanks);
  else if (opts.output != "-")
    llvm::outs() << summary(result, opts, meta.algorithm, req.target);
  if (opts.output != "-" && *emit == ir::OutputFormat::MscclXml)
    llvm::outs() << "  serves: "
                 << backends::describeServedSizes(backends::servedSizes(result))
                 << '\n';
  if (opts.output != "-")
    llvm::outs() << ringsLine << predictionLine << explainLines;
  for (const std::string &n : notes)
    llvm::errs() << "note: " << n << '\n';
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
  cmd->add_option("--algorithm", opts->algorithm,
                  "Algorithm: ring, hier-ring (multi-node all-reduce), "
                  "trees (ForestColl spanning trees), cerar (coded "
                  "all-reduce), hier-cerar (exact intra-node phases, CERAR "
                  "across nodes) or auto (the fastest candidate by the "
                  "runtime model); default auto");
  cmd->add_option("--sm-count", opts->smCount,
                  "SMs (CUs) of the target GPU: MSCCL XML may launch at most "
                  "this many threadblocks per rank (they must all be "
                  "resident; 0: no limit); default: the topology's GPU model "
                  "(docs/MscclXml.md, GPU models)");
  cmd->add_option("--msccl-runtime", opts->mscclRuntime,
                  "Runtime of the MSCCL XML: msccl-executor "
                  "(msccl-executor-nccl) or rccl (RCCL's MSCCL: at most 64 "
                  "threadblocks per rank and 64 steps per threadblock); "
                  "default: rccl for AMD GPUs, msccl-executor otherwise");
  cmd->add_option("--channels", opts->channels,
                  "Rings (MSCCL channels), or auto (the ring search chooses, "
                  "auto also prices 2 to 32); default 1, auto with "
                  "--algorithm auto");
  cmd->add_option("--size", opts->size,
                  "Message size the rings are chosen for (K/M/G/T are "
                  "powers of 1024; docs/CLI.md, Sizes)")
      ->capture_default_str();
  cmd->add_option("--chunks", opts->chunks,
                  "Chunks per rank per channel (pipelining); trees: pieces "
                  "per tree")
      ->capture_default_str();
  cmd->add_option("--ring", opts->ring,
                  "Ring order for every channel, a permutation of the ranks "
                  "(e.g. 0,3,2,1), or rank-order; default: the ring search's "
                  "rings");
  cmd->add_option("--trees-per-root", opts->treesPerRoot,
                  "Trees algorithm: spanning trees per root K (the best "
                  "schedule with exactly K), or auto (the optimum's k)")
      ->capture_default_str();
  cmd->add_option("--components", opts->components,
                  "CERAR: components c (0: chosen by the policy from the "
                  "ring's bandwidth and the size)")
      ->capture_default_str();
  cmd->add_option("--tolerance", opts->tolerance,
                  "CERAR/auto: relative error allowed (0: exact algorithms "
                  "only; auto considers CERAR only above 0)")
      ->capture_default_str();
  cmd->add_option("--wire-dtype", opts->wireDtype,
                  "CERAR: dtype on the wire (fp32, fp16, bf16)")
      ->capture_default_str();
  cmd->add_option("--kappa-max", opts->kappaMax,
                  "CERAR: condition-number limit of the code (0: none)")
      ->capture_default_str();
  cmd->add_option("--cerar-rotate-seam", opts->seam,
                  "CERAR: seam offset K (ring position p uses index p+K; "
                  "vary it across calls to spread the error over ranks)")
      ->capture_default_str();
  cmd->add_flag("--explain", opts->explain,
                "Print why this algorithm and parameters were chosen (auto: "
                "every candidate's predicted time; CERAR: the policy)");
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
  cmd->add_option("--emit", opts->emit, "Output: msccl-xml, ir, nccl-graph or plan (topocc runtime)")
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
                  "Run only this pass (" + llvm::join(passNames(), ", ") +
                      ") on --input-ir");
  cmd->add_option("--input-ir", opts->inputIr,
                  "Textual schedule IR for --run-pass");
  cmd->callback([opts] { finishCommand(runCompile(*opts)); });
}

} // namespace topocc::driver
