//===- tools/topocc/WhatIfCommand.cpp - `topocc whatif` -------------------===//
//
// `topocc whatif TOPO.yaml [--collective C] [--sizes 1K:8G]
// [--algorithms ring,rank-ring,nccl-model,bound,realizable,trees,hier-ring]
// [--scenario NAME ...]
// [--fail SEL ...] [--scale SEL=2x ...] [--set SEL=200Gb/s ...]
// [--chunks N] [--mode runtime|cut-through|store-and-forward] [--no-fold]
// [--reduce-bandwidth Q] [--format table|csv|json] [-o FILE] [--svg FILE]
// [--trace FILE]`:
// an nccl-tests-style table per topology (the base, each scenario, one per
// sweep value, and the command-line patch) with the winner per size and the
// difference from the base (compiler/analysis/WhatIf.h). The algorithms,
// the option checks, the scenarios and the run are compiler/WhatIfRun.h's
// (shared with the Python module); this file adds the outputs. `--svg`
// plots busbw (backends/SvgPlot.h); `--trace` writes a Chrome/Perfetto trace
// (backends/Trace.h) with flow arrows for the simulator's dependencies.
// Progress goes to stderr only when stderr is a terminal.
//
//===----------------------------------------------------------------------===//

#include "tools/topocc/Driver.h"
#include "tools/topocc/PatchOptions.h"

#include "backends/SvgPlot.h"
#include "backends/Trace.h"
#include "compiler/WhatIfRun.h"
#include "compiler/analysis/WhatIf.h"
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
  bool noFold = false;
  std::string trace;
  std::string traceLimit = "256M";
  std::string svg;
  bool explain = false;
};

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

/// Every transfer is one trace event of at least this many bytes (an "X"
/// slice with its name, track, times and arguments is about 150).
constexpr double kMinTraceEventBytes = 100;

/// --trace: the first simulated algorithm on the base topology at the
/// largest size, refused when the trace would exceed `limit` bytes. The
/// simulator keeps at most limit / kMinTraceEventBytes transfers, so memory
/// stays bounded by the limit whatever the run's size.
llvm::Error writeTrace(const topo::Topology &t,
                       llvm::ArrayRef<const analysis::WhatIfAlgorithm *> algos,
                       const analysis::WhatIfSettings &settings, double bytes,
                       llvm::StringRef path, double limit) {
  analysis::LinkModel m(t);
  analysis::WhatIfContext ctx{t, m, settings, bytes};
  for (const analysis::WhatIfAlgorithm *a : algos) {
    auto eval = a->make(ctx);
    if (!eval)
      return eval.takeError();
    auto maxTransfers = static_cast<size_t>(limit / kMinTraceEventBytes) + 1;
    auto run = (*eval)->traceRun(bytes, maxTransfers);
    if (!run)
      return run.takeError();
    if (!*run)
      continue;
    const analysis::SimResult &r = **run;
    std::string what =
        llvm::formatv("{0} {1} {2}", a->name,
                      ir::collectiveName(settings.collective), sizeText(bytes))
            .str();
    auto refuse = [&](llvm::StringRef size) {
      return makeUserError(llvm::formatv(
          "--trace: the trace of {0} would be {1}, over --trace-limit {2}; "
          "raise --trace-limit, or trace a smaller size (the trace is of "
          "the largest of --sizes) or a smaller topology",
          what, size, sizeText(limit)));
    };
    if (r.transfers.size() < r.transferCount)
      return refuse(
          llvm::formatv("at least {0} ({1} link transfers, at "
                        "least {2} bytes of trace each)",
                        sizeText(static_cast<double>(r.transferCount) *
                                 kMinTraceEventBytes),
                        r.transferCount, static_cast<int>(kMinTraceEventBytes))
              .str());
    std::vector<std::string> names;
    for (int res = 0; res < m.numResources(); ++res)
      names.push_back(m.resourceName(res));
    std::string title = llvm::formatv("{0} {1} {2} B on {3}", a->name,
                                      ir::collectiveName(settings.collective),
                                      static_cast<int64_t>(bytes), t.name())
                            .str();
    uint64_t size = backends::chromeTraceBytes(r, names, title);
    if (size > limit)
      return refuse(sizeText(static_cast<double>(size)));
    if (auto err = writeOutputStream(path, [&](llvm::raw_ostream &os) {
          backends::writeChromeTrace(os, r, names, title);
        }))
      return err;
    // On stderr: stdout carries the table (or CSV, JSON) scripts read.
    if (path != "-" && !isQuiet())
      llvm::errs() << llvm::formatv(
          "wrote {0}: trace of {1}, {2} link transfers, {3} dependencies, "
          "{4}\n",
          path, what, r.transfers.size(), r.flows.size(),
          sizeText(static_cast<double>(size)));
    return llvm::Error::success();
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
  auto traceLimit = parseByteSize(opts.traceLimit, "--trace-limit");
  if (!traceLimit)
    return traceLimit.takeError();
  WhatIfRequest req;
  auto coll = parseCollective(opts.collective);
  if (!coll)
    return coll.takeError();
  req.collective = *coll;
  req.sizes = opts.sizes;
  req.algorithms = opts.algorithms;
  req.scenarios = opts.scenarios;
  req.fails = opts.patch.fails;
  req.scales = opts.patch.scales;
  req.sets = opts.patch.sets;
  req.chunks = opts.chunks;
  req.tolerance = opts.tolerance;
  req.mode = opts.mode;
  req.reduceBandwidth = opts.reduceBandwidth;
  req.timeSimulation = opts.timeSimulation;
  req.fold = !opts.noFold;
  auto plan = planWhatIf(req);
  if (!plan)
    return plan.takeError();
  const analysis::WhatIfSettings &settings = plan->settings;
  const std::vector<double> &sizes = plan->sizes;
  const std::vector<const analysis::WhatIfAlgorithm *> &algos = plan->algos;

  auto base = loadTopology(opts.file, "");
  if (!base)
    return base.takeError();
  auto more = whatIfVariants(*base, req);
  if (!more)
    return more.takeError();

  auto run = runWhatIfReport(*base, algos, sizes, settings, *more);
  if (!run)
    return run.takeError();
  analysis::WhatIfReport &report = *run;
  if (settings.timingRuns > 0)
    for (const analysis::WhatIfTable &table : report.tables)
      for (const analysis::WhatIfRow &row : table.rows)
        for (size_t i = 0; i < row.cells.size(); ++i)
          if (row.cells[i].simEvents > 0)
            llvm::errs() << llvm::formatv(
                "simulation time: {0} {1} {2} B: {3:F4} s (median of {4}), "
                "{5} events\n",
                table.scenario, report.algorithms[i],
                static_cast<int64_t>(row.bytes), row.cells[i].simSeconds,
                settings.timingRuns, row.cells[i].simEvents);

  if (!opts.trace.empty())
    if (auto err = writeTrace(*base, algos, settings, sizes.back(), opts.trace,
                              *traceLimit))
      return err;

  if (!opts.svg.empty()) {
    std::string svg;
    llvm::raw_string_ostream sos(svg);
    backends::writeWhatIfSvg(sos, report);
    sos.flush();
    if (auto err = writeOutputFile(opts.svg, svg))
      return err;
    // On stderr: stdout carries the table (or CSV, JSON) scripts read.
    if (opts.svg != "-" && !isQuiet())
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
    if (auto err = explainAlgorithms(os, *base, algos, settings,
                                     sizes.back()))
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
  cmd->add_flag("--no-fold", opts->noFold,
                "Simulate every rank, also where a symmetry of the topology "
                "and schedule makes ranks identical (by default one rank per "
                "orbit runs; docs/WhatIf.md, \"Folding symmetric ranks\")");
  cmd->add_option("--time-simulation", opts->timeSimulation,
                  "Run each simulation N times and print the median time to "
                  "stderr (benchmarks)");
  cmd->add_option("--trace", opts->trace,
                  "Write a Perfetto/Chrome trace JSON of the first simulated "
                  "algorithm at the largest size on the base topology");
  cmd->add_option("--trace-limit", opts->traceLimit,
                  "Largest trace --trace writes (a longer run is refused "
                  "before anything is written)")
      ->capture_default_str();
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
