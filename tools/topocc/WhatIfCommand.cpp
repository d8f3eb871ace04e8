//===- tools/topocc/WhatIfCommand.cpp - `topocc whatif` -------------------===//
//
// `topocc whatif TOPO.yaml [--collective C] [--sizes 1K:8G]
// [--algorithms ring,rank-ring,nccl-model,bound] [--scenario NAME ...]
// [--fail SEL ...] [--scale SEL=2x ...] [--set SEL=200Gb/s ...]
// [--chunks N] [--mode store-and-forward|cut-through]
// [--reduce-bandwidth Q] [--format table|csv|json] [-o FILE]`:
// an nccl-tests-style table per topology (the base, each scenario, one per
// sweep value, and the command-line patch) with the winner per size and the
// difference from the base (compiler/analysis/WhatIf.h). Registers the
// algorithms that need the compiler: `ring` (RingSearch's rings, lowered and
// legalized by the pipeline's passes) and `rank-ring` (compile() in rank
// order). Progress goes to stderr only when stderr is a terminal.
//
//===----------------------------------------------------------------------===//

#include "tools/topocc/Driver.h"

#include "compiler/Pipeline.h"
#include "compiler/algorithms/RingSearch.h"
#include "compiler/analysis/WhatIf.h"
#include "compiler/passes/LowerRing.h"
#include "compiler/topology/ScenarioCli.h"
#include "compiler/topology/TopologyParser.h"
#include "support/Diagnostics.h"

#include "CLI/CLI.hpp"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Process.h"

#include <memory>

namespace topocc::driver {

namespace {

struct WhatIfOptions {
  std::string file;
  std::string collective = "allreduce";
  std::string sizes = "1K:8G";
  std::string algorithms = "ring,rank-ring,nccl-model,bound";
  std::vector<std::string> scenarios, fails, scales, sets;
  int chunks = 4;
  std::string mode = "store-and-forward";
  std::string reduceBandwidth;
  std::string format = "table";
  std::string output = "-";
};

/// The pipeline after lowering, pass by pass (compile() takes one order;
/// searched rings may differ per channel).
llvm::Expected<ir::Schedule> legalize(ir::Schedule s,
                                      const CompileRequest &req) {
  PassLogger log;
  for (llvm::StringRef pass : passNames()) {
    auto next = runSinglePass(pass, std::move(s), req, log);
    if (!next)
      return next.takeError();
    s = std::move(*next);
  }
  return s;
}

analysis::WhatIfAlgorithm ringAlgorithm() {
  return analysis::simulatedAlgorithm(
      "ring",
      "rings from the bandwidth-aware search (at the largest size), one "
      "channel per ring",
      [](const analysis::WhatIfContext &ctx) -> llvm::Expected<ir::Schedule> {
        algorithms::RingSearchOptions so;
        so.collective = ctx.settings.collective;
        so.bytes = ctx.largestBytes > 0 ? ctx.largestBytes : so.bytes;
        auto found = algorithms::searchRings(ctx.topology, ctx.links, so);
        if (!found)
          return found.takeError();
        passes::RingOptions ro;
        ro.collective = so.collective;
        ro.numRanks = ctx.topology.numRanks();
        ro.channels = static_cast<int32_t>(found->rings.size());
        ro.chunks = ctx.settings.chunks;
        std::vector<double> shares;
        for (const analysis::RingChannel &rc : found->rings) {
          ro.channelOrders.push_back(rc.order);
          shares.push_back(rc.share);
        }
        ro.channelChunks = passes::chunksForShares(shares, ro.chunks);
        auto lowered = passes::lowerRing(ro);
        if (!lowered)
          return lowered.takeError();
        CompileRequest req;
        req.collective = so.collective;
        return legalize(std::move(*lowered), req);
      });
}

analysis::WhatIfAlgorithm rankRingAlgorithm() {
  return analysis::simulatedAlgorithm(
      "rank-ring", "one ring in rank order (what a naive ring does)",
      [](const analysis::WhatIfContext &ctx) -> llvm::Expected<ir::Schedule> {
        CompileRequest req;
        req.collective = ctx.settings.collective;
        req.chunks = ctx.settings.chunks;
        PassLogger log;
        auto plan = compile(ctx.topology.numRanks(), req, log);
        if (!plan)
          return plan.takeError();
        return std::move(plan->schedule);
      });
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

/// The topologies to tabulate after the base: (name, detail, topology).
struct Variant {
  std::string name, detail;
  topo::Topology topology;
};

llvm::Expected<std::vector<Variant>> variants(const topo::Topology &base,
                                              const WhatIfOptions &opts) {
  std::vector<Variant> out;
  for (const std::string &name : opts.scenarios) {
    auto expanded = topo::expandScenario(base, name);
    if (!expanded)
      return expanded.takeError();
    for (const topo::ExpandedScenario &e : *expanded) {
      topo::Topology t = base;
      if (auto err = topo::applyScenarioOps(t, e.name, e.ops))
        return err;
      out.push_back({e.name, topo::describeScenarioOps(e.ops), std::move(t)});
    }
  }
  auto ops = topo::parseScenarioOptions(opts.fails, opts.scales, opts.sets);
  if (!ops)
    return ops.takeError();
  if (!ops->empty()) {
    topo::Topology t = base;
    if (auto err = topo::applyScenarioOps(t, "cli", *ops))
      return err;
    out.push_back({"cli", topo::describeScenarioOps(*ops), std::move(t)});
  }
  return out;
}

llvm::Error runWhatIfCommand(const WhatIfOptions &opts) {
  if (opts.format != "table" && opts.format != "csv" && opts.format != "json")
    return makeUserError("unknown --format '" + opts.format +
                         "' (expected table, csv or json)");
  analysis::WhatIfSettings settings;
  auto coll = parseCollective(opts.collective);
  if (!coll)
    return coll.takeError();
  settings.collective = *coll;
  if (opts.chunks < 1 || opts.chunks > 64)
    return makeUserError(llvm::formatv(
        "--chunks must be between 1 and 64, got {0}", opts.chunks));
  settings.chunks = opts.chunks;
  if (opts.mode == "cut-through")
    settings.mode = analysis::SimMode::CutThrough;
  else if (opts.mode != "store-and-forward")
    return makeUserError("unknown --mode '" + opts.mode +
                         "' (expected store-and-forward or cut-through)");
  if (!opts.reduceBandwidth.empty()) {
    auto q = topo::parseQuantity(opts.reduceBandwidth,
                                 topo::QuantityKind::Bandwidth,
                                 "--reduce-bandwidth");
    if (!q)
      return makeUserError(llvm::toString(q.takeError()));
    if (q->value < 0)
      return makeUserError("--reduce-bandwidth must not be negative");
    settings.reduceBandwidth = q->value;
  }
  auto sizes = analysis::parseSizes(opts.sizes);
  if (!sizes)
    return sizes.takeError();
  analysis::WhatIfRegistry registry;
  registry.add(ringAlgorithm());
  registry.add(rankRingAlgorithm());
  analysis::addAnalysisAlgorithms(registry);
  llvm::SmallVector<llvm::StringRef, 8> names;
  llvm::StringRef(opts.algorithms).split(names, ',', -1, false);
  std::vector<std::string> nameList;
  for (llvm::StringRef n : names)
    nameList.push_back(n.trim().str());
  auto algos = registry.select(nameList);
  if (!algos)
    return algos.takeError();

  auto base = topo::loadTopologyFile(opts.file);
  if (!base)
    return base.takeError();
  auto more = variants(*base, opts);
  if (!more)
    return more.takeError();

  analysis::WhatIfReport report;
  report.topology = base->name().str();
  report.settings = settings;
  for (const analysis::WhatIfAlgorithm *a : *algos) {
    report.algorithms.push_back(a->name);
    report.competes.push_back(a->competes);
  }
  bool showProgress = llvm::sys::Process::StandardErrIsDisplayed();
  analysis::WhatIfProgress progress;
  if (showProgress)
    progress = [](llvm::StringRef scenario, size_t done, size_t total) {
      llvm::errs() << llvm::formatv("\rwhatif: {0}: {1}/{2}   ", scenario,
                                    done, total);
    };
  auto add = [&](const topo::Topology &t, llvm::StringRef name,
                 llvm::StringRef detail) -> llvm::Error {
    auto table = analysis::runWhatIf(t, *algos, *sizes, settings, name, detail,
                                     progress);
    if (!table)
      return table.takeError();
    report.tables.push_back(std::move(*table));
    return llvm::Error::success();
  };
  if (auto err = add(*base, "base", ""))
    return err;
  for (const Variant &v : *more)
    if (auto err = add(v.topology, v.name, v.detail))
      return err;
  if (showProgress)
    llvm::errs() << "\r" << std::string(60, ' ') << "\r";

  std::string out;
  llvm::raw_string_ostream os(out);
  if (opts.format == "csv")
    analysis::printWhatIfCsv(os, report);
  else if (opts.format == "json")
    analysis::printWhatIfJson(os, report);
  else
    analysis::printWhatIfTable(os, report);
  os.flush();
  return writeOutputFile(opts.output, out);
}

void registerWhatIfCommand(CLI::App &app) {
  auto opts = std::make_shared<WhatIfOptions>();
  CLI::App *cmd = app.add_subcommand(
      "whatif", "Simulate algorithms over message sizes on a topology and "
                "its what-if scenarios");
  cmd->add_option("topology", opts->file, "Topology YAML file")->required();
  cmd->add_option("--collective", opts->collective,
                  "allreduce, allgather or reducescatter")
      ->capture_default_str();
  cmd->add_option("--sizes", opts->sizes,
                  "SIZE, MIN:MAX or MIN:MAX:FACTOR, comma-separated (K/M/G "
                  "are powers of 1024)")
      ->capture_default_str();
  cmd->add_option("--algorithms", opts->algorithms,
                  "Comma-separated: ring, rank-ring, nccl-model, bound")
      ->capture_default_str();
  cmd->add_option("--scenario", opts->scenarios,
                  "A scenario of the topology file (repeatable; a sweep "
                  "gives one table per value)");
  cmd->add_option("--fail", opts->fails,
                  "Fail devices or links SEL (repeatable)");
  cmd->add_option("--scale", opts->scales,
                  "Scale link bandwidth: SEL=FACTOR, e.g. 'a/gpu0--a/sw=2x'");
  cmd->add_option("--set", opts->sets,
                  "Set link bandwidth or latency: SEL=200Gb/s, SEL=+1us");
  cmd->add_option("--chunks", opts->chunks,
                  "Pipelining chunks per rank of simulated schedules")
      ->capture_default_str();
  cmd->add_option("--mode", opts->mode,
                  "Simulated links: store-and-forward or cut-through")
      ->capture_default_str();
  cmd->add_option("--reduce-bandwidth", opts->reduceBandwidth,
                  "Local reduction speed (e.g. 600GB/s; 0GB/s: free); "
                  "default from the GPU model");
  cmd->add_option("--format", opts->format, "table, csv or json")
      ->capture_default_str();
  cmd->add_option("-o,--output", opts->output, "Output file ('-': stdout)")
      ->capture_default_str();
  cmd->callback([opts] {
    if (auto err = runWhatIfCommand(*opts))
      commandExitCode() = reportError(std::move(err));
    else
      commandExitCode() = kExitOk;
  });
}

static CommandRegistration reg("whatif", registerWhatIfCommand);

} // namespace
} // namespace topocc::driver
