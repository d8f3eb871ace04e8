//===- tools/topocc/WhatIfCommand.cpp - `topocc whatif` -------------------===//
//
// `topocc whatif TOPO.yaml [--collective C] [--sizes 1K:8G]
// [--algorithms ring,rank-ring,nccl-model,bound,realizable,trees,hier-ring]
// [--scenario NAME ...]
// [--fail SEL ...] [--scale SEL=2x ...] [--set SEL=200Gb/s ...]
// [--chunks N] [--mode runtime|cut-through|store-and-forward]
// [--reduce-bandwidth Q] [--format table|csv|json] [-o FILE] [--svg FILE]
// [--trace FILE]`:
// an nccl-tests-style table per topology (the base, each scenario, one per
// sweep value, and the command-line patch) with the winner per size and the
// difference from the base (compiler/analysis/WhatIf.h). Registers the
// algorithms that need the compiler: `ring` (RingSearch's rings, one channel
// each) and `rank-ring` (one ring in rank order), lowered and fused; `trees`
// and `hier-ring`, compiled by the whole pipeline (n/a where they do not
// apply). `--svg` plots busbw (backends/SvgPlot.h); `--trace` writes a
// Chrome/Perfetto trace (backends/Trace.h) with flow arrows for the
// simulator's dependencies. Progress goes to stderr only when stderr is a
// terminal.
//
//===----------------------------------------------------------------------===//

#include "tools/topocc/Driver.h"
#include "tools/topocc/PatchOptions.h"

#include "backends/SvgPlot.h"
#include "backends/Trace.h"
#include "compiler/Pipeline.h"
#include "compiler/algorithms/RingSearch.h"
#include "compiler/analysis/WhatIf.h"
#include "compiler/passes/Fuse.h"
#include "compiler/passes/LowerRing.h"
#include "compiler/topology/ScenarioCli.h"
#include "compiler/topology/TopologyParser.h"
#include "support/Diagnostics.h"

#include "CLI/CLI.hpp"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Process.h"

#include <cmath>
#include <memory>

namespace topocc::driver {

namespace {

struct WhatIfOptions {
  std::string file;
  std::string collective = "allreduce";
  std::string sizes = "1K:8G";
  std::string algorithms = "ring,rank-ring,nccl-model,bound";
  std::vector<std::string> scenarios;
  PatchOptions patch;
  int chunks = 1;
  double tolerance = 0;
  std::string mode = "runtime";
  std::string reduceBandwidth;
  std::string format = "table";
  std::string output = "-";
  int timeSimulation = 0;
  std::string trace;
  std::string svg;
  bool explain = false;
};

/// The ring lowering with MSCCL's fused primitives. Simulating needs no
/// more: each (rank, channel) is one dependency chain in the order its
/// threadblock runs it, so channel and threadblock assignment and
/// legalization (zero-cost nops) do not change the timing (checked in
/// tests/unit/analysis), and whatif skips them and their verification,
/// which dominate at hundreds of ranks. The simulator itself rejects a
/// schedule that cannot run to the end.
llvm::Expected<ir::Schedule> lowerAndFuse(const passes::RingOptions &ro) {
  auto s = passes::lowerRing(ro);
  if (!s)
    return s.takeError();
  passes::fuse(*s);
  return std::move(*s);
}

analysis::WhatIfAlgorithm rankRingAlgorithm() {
  return analysis::simulatedAlgorithm(
      "rank-ring", "one ring in rank order (what a naive ring does)",
      [](const analysis::WhatIfContext &ctx) -> llvm::Expected<ir::Schedule> {
        passes::RingOptions ro;
        ro.collective = ctx.settings.collective;
        ro.numRanks = ctx.topology.numRanks();
        ro.chunks = ctx.settings.chunks;
        return lowerAndFuse(ro);
      });
}

/// A column for a case that does not apply (detail says why) at any size.
class NotApplicable : public analysis::WhatIfEvaluator {
public:
  explicit NotApplicable(std::string why) : why(std::move(why)) {}
  llvm::Expected<analysis::WhatIfEstimate> estimate(double) override {
    analysis::WhatIfEstimate e;
    e.detail = why;
    return e;
  }

private:
  std::string why;
};

/// A column that simulates what `topocc compile --algorithm NAME` produces
/// (the whole pipeline, compiler/Pipeline.h) for the largest size of the
/// sweep; n/a with compile's message where the algorithm does not apply to
/// the topology (a user error), an error for a bug (an internal error).
analysis::WhatIfAlgorithm
compiledAlgorithm(Algorithm algorithm, std::string description,
                  std::function<void(CompileRequest &)> tweak = {}) {
  analysis::WhatIfAlgorithm a;
  const std::string name = algorithmName(algorithm).str();
  a.name = name;
  a.description = std::move(description);
  a.make = [name, algorithm, tweak](const analysis::WhatIfContext &ctx)
      -> llvm::Expected<std::unique_ptr<analysis::WhatIfEvaluator>> {
    CompileRequest req;
    req.collective = ctx.settings.collective;
    req.algorithm = algorithm;
    // CERAR's messages are its components: no pipelining chunks.
    const bool coded =
        algorithm == Algorithm::Cerar || algorithm == Algorithm::HierCerar;
    req.chunks = coded ? 1 : ctx.settings.chunks;
    if (coded || algorithm == Algorithm::Auto)
      req.tolerance = ctx.settings.tolerance;
    // auto picks by the same simulation this table shows (mode, reduce
    // bandwidth), so its column is the fastest of the candidates.
    if (algorithm == Algorithm::Auto) {
      req.channels = 0; // as compile's default: the ring variants too
      req.autoSimMode = ctx.settings.mode;
      req.autoReduceBandwidth = ctx.settings.reduceBandwidth;
    }
    if (ctx.largestBytes > 0)
      req.bytes = ctx.largestBytes;
    if (tweak)
      tweak(req);
    PassLogger log;
    auto plan = compile(ctx.topology, req, log);
    if (!plan) {
      llvm::Error err = plan.takeError();
      if (err.isA<InternalError>())
        return err;
      std::string full = llvm::toString(std::move(err));
      std::string text = llvm::StringRef(full).trim().str();
      if (llvm::StringRef(text).startswith("error: "))
        text = text.substr(7);
      return std::make_unique<NotApplicable>(text);
    }
    auto sim = analysis::simulatedAlgorithm(
        name, "",
        [s = std::move(plan->schedule)](const analysis::WhatIfContext &)
            -> llvm::Expected<ir::Schedule> { return s; });
    return sim.make(ctx);
  };
  return a;
}

/// Every algorithm whatif knows, in the order `--algorithms` lists them.
/// A new one is one line here: simulatedAlgorithm for a schedule builder,
/// compiledAlgorithm for a `compile --algorithm` name, or a WhatIfAlgorithm
/// with its own evaluator (compiler/analysis/WhatIf.h).
analysis::WhatIfRegistry makeRegistry() {
  analysis::WhatIfRegistry r;
  r.add(compiledAlgorithm(
      Algorithm::Ring,
      "rings from the bandwidth-aware search (at the largest size), "
      "compiled (`compile --algorithm ring --channels auto`)",
      [](CompileRequest &req) { req.channels = 0; }));
  r.add(rankRingAlgorithm());
  analysis::addAnalysisAlgorithms(r); // nccl-model, bound, realizable
  r.add(compiledAlgorithm(Algorithm::Trees, "ForestColl spanning trees, compiled "
                                   "(`compile --algorithm trees`)"));
  r.add(compiledAlgorithm(Algorithm::HierRing, "hierarchical ring, compiled "
                                       "(`compile --algorithm hier-ring`)"));
  r.add(compiledAlgorithm(Algorithm::Cerar, "CERAR coded all-reduce, compiled for the "
                                   "largest size (`compile --algorithm "
                                   "cerar`, needs --tolerance)"));
  r.add(compiledAlgorithm(Algorithm::HierCerar, "hierarchical CERAR (exact "
                                        "intra-node phases, CERAR per rail), "
                                        "compiled for the largest size, "
                                        "needs --tolerance"));
  r.add(compiledAlgorithm(Algorithm::Auto, "what `compile --algorithm auto` chooses "
                                  "for the largest size"));
  return r;
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
  auto ops = opts.patch.parse();
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

/// --explain: where each simulated algorithm's time goes on the base
/// topology at the largest size, beside the cost model's estimate.
llvm::Error explainAlgorithms(
    llvm::raw_ostream &os, const topo::Topology &t,
    llvm::ArrayRef<const analysis::WhatIfAlgorithm *> algos,
    const analysis::WhatIfSettings &settings, double bytes) {
  analysis::LinkModel m(t);
  analysis::WhatIfContext ctx{t, m, settings, bytes};
  std::vector<std::pair<std::string, analysis::WhatIfBreakdown>> rows;
  for (const analysis::WhatIfAlgorithm *a : algos) {
    auto eval = a->make(ctx);
    if (!eval)
      return eval.takeError();
    auto b = (*eval)->breakdown(bytes);
    if (!b)
      return b.takeError();
    if (*b)
      rows.push_back({a->name, std::move(**b)});
  }
  analysis::printWhatIfBreakdowns(os, bytes, rows);
  return llvm::Error::success();
}

/// --trace: the first simulated algorithm on the base topology at the
/// largest size.
llvm::Error writeTrace(const topo::Topology &t,
                       llvm::ArrayRef<const analysis::WhatIfAlgorithm *> algos,
                       const analysis::WhatIfSettings &settings, double bytes,
                       llvm::StringRef path) {
  analysis::LinkModel m(t);
  analysis::WhatIfContext ctx{t, m, settings, bytes};
  for (const analysis::WhatIfAlgorithm *a : algos) {
    auto eval = a->make(ctx);
    if (!eval)
      return eval.takeError();
    auto run = (*eval)->traceRun(bytes);
    if (!run)
      return run.takeError();
    if (!*run)
      continue;
    std::vector<std::string> names;
    for (int r = 0; r < m.numResources(); ++r)
      names.push_back(m.resourceName(r));
    std::string title = llvm::formatv("{0} {1} {2} B on {3}", a->name,
                                      ir::collectiveName(settings.collective),
                                      static_cast<int64_t>(bytes), t.name())
                            .str();
    return writeOutputFile(path,
                           backends::writeChromeTrace(**run, names, title));
  }
  return makeUserError("--trace needs a simulated algorithm that applies "
                       "(ring, rank-ring, trees or hier-ring) in --algorithms");
}

llvm::Error runWhatIfCommand(const WhatIfOptions &opts) {
  if (opts.explain && opts.format != "table")
    return makeUserError("--explain needs --format table");
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
  if (opts.timeSimulation < 0 || opts.timeSimulation > 100)
    return makeUserError(llvm::formatv(
        "--time-simulation must be between 0 and 100, got {0}",
        opts.timeSimulation));
  settings.timingRuns = opts.timeSimulation;
  if (!(opts.tolerance >= 0) || !std::isfinite(opts.tolerance))
    return makeUserError("--tolerance must be a non-negative number");
  settings.tolerance = opts.tolerance;
  auto mode = analysis::parseSimMode(opts.mode);
  if (!mode)
    return mode.takeError();
  settings.mode = *mode;
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
  analysis::WhatIfRegistry registry = makeRegistry();
  llvm::SmallVector<llvm::StringRef, 8> names;
  llvm::StringRef(opts.algorithms).split(names, ',', -1, false);
  std::vector<std::string> nameList;
  for (llvm::StringRef n : names)
    nameList.push_back(n.trim().str());
  auto algos = registry.select(nameList);
  if (!algos)
    return algos.takeError();

  auto base = loadTopology(opts.file, "");
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
    if (settings.timingRuns > 0)
      for (const analysis::WhatIfRow &row : table->rows)
        for (size_t i = 0; i < row.cells.size(); ++i)
          if (row.cells[i].simEvents > 0)
            llvm::errs() << llvm::formatv(
                "simulation time: {0} {1} {2} B: {3:F4} s (median of {4}), "
                "{5} events\n",
                name, report.algorithms[i], static_cast<int64_t>(row.bytes),
                row.cells[i].simSeconds, settings.timingRuns,
                row.cells[i].simEvents);
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

  if (!opts.trace.empty())
    if (auto err = writeTrace(*base, *algos, settings, sizes->back(),
                              opts.trace))
      return err;

  if (!opts.svg.empty()) {
    std::string svg;
    llvm::raw_string_ostream sos(svg);
    backends::writeWhatIfSvg(sos, report);
    sos.flush();
    if (auto err = writeOutputFile(opts.svg, svg))
      return err;
    // On stderr: stdout carries the table (or CSV, JSON) scripts read.
    if (opts.svg != "-")
      llvm::errs() << "wrote " << opts.svg << ": busbw plot, "
                   << report.algorithms.size() << " algorithms x "
                   << report.tables.size() << " scenario(s)\n";
  }

  std::string out;
  llvm::raw_string_ostream os(out);
  if (opts.format == "csv")
    analysis::printWhatIfCsv(os, report);
  else if (opts.format == "json")
    analysis::printWhatIfJson(os, report);
  else
    analysis::printWhatIfTable(os, report);
  if (opts.explain)
    if (auto err = explainAlgorithms(os, *base, *algos, settings,
                                     sizes->back()))
      return err;
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
                  "SIZE, MIN:MAX or MIN:MAX:FACTOR, comma-separated (K/M/G/T "
                  "are powers of 1024; docs/CLI.md, Sizes)")
      ->capture_default_str();
  cmd->add_option("--algorithms", opts->algorithms,
                  "Comma-separated: ring, rank-ring, nccl-model, bound, "
                  "realizable, trees, hier-ring, cerar, hier-cerar, auto")
      ->capture_default_str();
  cmd->add_option("--scenario", opts->scenarios,
                  "A scenario of the topology file (repeatable; a sweep "
                  "gives one table per value)");
  addPatchOptions(cmd, opts->patch);
  cmd->add_option("--chunks", opts->chunks,
                  "Pipelining chunks per rank of simulated schedules")
      ->capture_default_str();
  cmd->add_option("--tolerance", opts->tolerance,
                  "Relative error the cerar and auto columns may use (0: "
                  "exact only)")
      ->capture_default_str();
  cmd->add_option("--mode", opts->mode,
                  "Simulation model: runtime (how the MSCCL executor runs "
                  "a schedule; docs/WhatIf.md), cut-through or "
                  "store-and-forward")
      ->capture_default_str();
  cmd->add_option("--reduce-bandwidth", opts->reduceBandwidth,
                  "Local reduction speed (e.g. 600GB/s; 0GB/s: free); "
                  "default from the GPU model");
  cmd->add_option("--time-simulation", opts->timeSimulation,
                  "Run each simulation N times and print the median time to "
                  "stderr (benchmarks)");
  cmd->add_option("--trace", opts->trace,
                  "Write a Perfetto/Chrome trace JSON of the first simulated "
                  "algorithm at the largest size on the base topology");
  cmd->add_option("--svg", opts->svg,
                  "Write busbw vs message size as an SVG plot (one line per "
                  "algorithm and scenario, the bound dashed)");
  cmd->add_flag("--explain", opts->explain,
               "After the table: each simulated algorithm's critical path "
               "(compute, network), busiest link and the cost model's "
               "estimate at the largest size on the base topology");
  cmd->add_option("--format", opts->format, "table, csv or json")
      ->capture_default_str();
  cmd->add_option("-o,--output", opts->output, "Output file ('-': stdout)")
      ->capture_default_str();
  cmd->callback([opts] { finishCommand(runWhatIfCommand(*opts)); });
}

static CommandRegistration reg("whatif", registerWhatIfCommand);

} // namespace
} // namespace topocc::driver
