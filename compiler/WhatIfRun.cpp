//===- compiler/WhatIfRun.cpp - `topocc whatif` from a request ------------===//

#include "compiler/WhatIfRun.h"

#include "backends/MscclTarget.h"
#include "compiler/Pipeline.h"
#include "compiler/passes/Fuse.h"
#include "compiler/passes/LowerRing.h"
#include "compiler/topology/ScenarioCli.h"
#include "compiler/topology/Units.h"
#include "support/Diagnostics.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <functional>
#include <memory>

namespace topocc {

namespace {

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

analysis::WhatIfAlgorithm rankRingAlgorithm() {
  analysis::WhatIfAlgorithm a = analysis::simulatedAlgorithm(
      "rank-ring", "one ring in rank order (what a naive ring does)",
      [](const analysis::WhatIfContext &ctx) -> llvm::Expected<ir::Schedule> {
        passes::RingOptions ro;
        ro.collective = ctx.settings.collective;
        ro.numRanks = ctx.topology.numRanks();
        ro.chunks = ctx.settings.chunks;
        return lowerAndFuse(ro);
      });
  // Where GPUs relay (a torus, a rail-only fabric), consecutive ranks may
  // have no route: the column is then n/a, not an error of the table.
  a.make = [make = a.make](const analysis::WhatIfContext &ctx)
      -> llvm::Expected<std::unique_ptr<analysis::WhatIfEvaluator>> {
    const topo::Topology &t = ctx.topology;
    if (topo::routeCoverage(t).unrouted == 0) // linear; every pair routes
      return make(ctx);
    for (int r = 0; r < t.numRanks(); ++r) {
      int next = (r + 1) % t.numRanks();
      if (r != next && !t.route(r, next).found())
        return std::make_unique<NotApplicable>(llvm::formatv(
            "the rank order is not a ring of routed pairs: no route from "
            "rank {0} ({1}) to rank {2} ({3})",
            r, t.rankName(r), next, t.rankName(next)));
    }
    return make(ctx);
  };
  return a;
}

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
    // The file `compile` writes by default: MSCCL XML for the topology's
    // GPUs (their SM count, the vendor's runtime and its limits), so that a
    // column is a schedule that runtime can load. Coded schedules (CERAR,
    // and auto where --tolerance admits them) are plans for the topocc
    // runtime, and a GPU model without an SM count has no such target:
    // those keep the IR's encoding limits.
    const bool mayCode =
        coded || (algorithm == Algorithm::Auto && ctx.settings.tolerance > 0);
    if (!mayCode) {
      if (auto target = backends::mscclTargetFor(&ctx.topology, {}))
        req.target = *target;
      else
        llvm::consumeError(target.takeError());
    }
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

} // namespace

/// A new algorithm is one line here: simulatedAlgorithm for a schedule
/// builder, compiledAlgorithm for a `compile --algorithm` name, or a
/// WhatIfAlgorithm with its own evaluator (compiler/analysis/WhatIf.h).
analysis::WhatIfRegistry makeWhatIfRegistry() {
  analysis::WhatIfRegistry r;
  r.add(compiledAlgorithm(
      Algorithm::Ring,
      "rings from the bandwidth-aware search (at the largest size), "
      "compiled (`compile --algorithm ring --channels auto`)",
      [](CompileRequest &req) { req.channels = 0; }));
  r.add(rankRingAlgorithm());
  analysis::addAnalysisAlgorithms(r); // nccl-model, bound, realizable
  r.add(compiledAlgorithm(Algorithm::Trees,
                          "ForestColl spanning trees, compiled "
                          "(`compile --algorithm trees`)"));
  r.add(compiledAlgorithm(Algorithm::HierRing,
                          "hierarchical ring, compiled "
                          "(`compile --algorithm hier-ring`)"));
  r.add(compiledAlgorithm(Algorithm::Cerar,
                          "CERAR coded all-reduce, compiled for the "
                          "largest size (`compile --algorithm "
                          "cerar`, needs --tolerance)"));
  r.add(compiledAlgorithm(Algorithm::HierCerar,
                          "hierarchical CERAR (exact "
                          "intra-node phases, CERAR per rail), "
                          "compiled for the largest size, "
                          "needs --tolerance"));
  r.add(compiledAlgorithm(Algorithm::Dims,
                          "dimension-by-dimension rings on a generated "
                          "grid, compiled (`compile --algorithm dims`)"));
  r.add(compiledAlgorithm(Algorithm::Matching,
                          "greedy link-chunk matching on direct GPU links, "
                          "compiled (`compile --algorithm matching`)"));
  r.add(compiledAlgorithm(
      Algorithm::DbTree,
      "NCCL's double binary tree all-reduce, compiled (`compile --algorithm "
      "dbtree`: a tree pair per GPU of a node)",
      [](CompileRequest &req) { req.channels = 0; }));
  r.add(compiledAlgorithm(Algorithm::Auto,
                          "what `compile --algorithm auto` chooses "
                          "for the largest size"));
  return r;
}

llvm::Expected<analysis::WhatIfSettings>
whatIfSettings(const WhatIfRequest &req) {
  analysis::WhatIfSettings settings;
  settings.collective = req.collective;
  if (req.chunks < 1 || req.chunks > 64)
    return makeUserError(llvm::formatv(
        "--chunks must be between 1 and 64, got {0}", req.chunks));
  settings.chunks = req.chunks;
  if (req.timeSimulation < 0 || req.timeSimulation > 100)
    return makeUserError(
        llvm::formatv("--time-simulation must be between 0 and 100, got {0}",
                      req.timeSimulation));
  settings.timingRuns = req.timeSimulation;
  if (!(req.tolerance >= 0) || !std::isfinite(req.tolerance))
    return makeUserError("--tolerance must be a non-negative number");
  settings.tolerance = req.tolerance;
  auto mode = analysis::parseSimMode(req.mode);
  if (!mode)
    return mode.takeError();
  settings.mode = *mode;
  settings.fold = req.fold;
  if (!req.reduceBandwidth.empty()) {
    auto q =
        topo::parseQuantity(req.reduceBandwidth, topo::QuantityKind::Bandwidth,
                            "--reduce-bandwidth");
    if (!q)
      return makeUserError(llvm::toString(q.takeError()));
    if (q->value < 0)
      return makeUserError("--reduce-bandwidth must not be negative");
    settings.reduceBandwidth = q->value;
  }
  return settings;
}

llvm::Expected<std::vector<const analysis::WhatIfAlgorithm *>>
selectWhatIfAlgorithms(const analysis::WhatIfRegistry &registry,
                       llvm::StringRef names) {
  llvm::SmallVector<llvm::StringRef, 8> parts;
  names.split(parts, ',', -1, false);
  std::vector<std::string> nameList;
  for (llvm::StringRef n : parts)
    nameList.push_back(n.trim().str());
  return registry.select(nameList);
}

llvm::Expected<std::vector<WhatIfVariant>>
whatIfVariants(const topo::Topology &base, const WhatIfRequest &req) {
  std::vector<WhatIfVariant> out;
  for (const std::string &name : req.scenarios) {
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
  auto ops = topo::parseScenarioOptions(req.fails, req.scales, req.sets);
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

llvm::Expected<analysis::WhatIfReport>
runWhatIfReport(const topo::Topology &base,
                llvm::ArrayRef<const analysis::WhatIfAlgorithm *> algos,
                llvm::ArrayRef<double> sizes,
                const analysis::WhatIfSettings &settings,
                llvm::ArrayRef<WhatIfVariant> variants) {
  analysis::WhatIfReport report;
  report.topology = base.name().str();
  report.settings = settings;
  for (const analysis::WhatIfAlgorithm *a : algos) {
    report.algorithms.push_back(a->name);
    report.competes.push_back(a->competes);
  }
  auto add = [&](const topo::Topology &t, llvm::StringRef name,
                 llvm::StringRef detail) -> llvm::Error {
    auto table = analysis::runWhatIf(t, algos, sizes, settings, name, detail);
    if (!table)
      return table.takeError();
    report.tables.push_back(std::move(*table));
    return llvm::Error::success();
  };
  if (auto err = add(base, "base", ""))
    return err;
  for (const WhatIfVariant &v : variants)
    if (auto err = add(v.topology, v.name, v.detail))
      return err;
  return report;
}

llvm::Expected<WhatIfPlan> planWhatIf(const WhatIfRequest &req) {
  auto settings = whatIfSettings(req);
  if (!settings)
    return settings.takeError();
  auto sizes = analysis::parseSizes(req.sizes);
  if (!sizes)
    return sizes.takeError();
  WhatIfPlan plan{*settings, std::move(*sizes), makeWhatIfRegistry(), {}};
  auto algos = selectWhatIfAlgorithms(plan.registry, req.algorithms);
  if (!algos)
    return algos.takeError();
  plan.algos = std::move(*algos);
  return plan;
}

llvm::Expected<analysis::WhatIfReport> whatIfReport(const topo::Topology &base,
                                                    const WhatIfRequest &req) {
  auto plan = planWhatIf(req);
  if (!plan)
    return plan.takeError();
  auto variants = whatIfVariants(base, req);
  if (!variants)
    return variants.takeError();
  return runWhatIfReport(base, plan->algos, plan->sizes, plan->settings,
                         *variants);
}

} // namespace topocc
