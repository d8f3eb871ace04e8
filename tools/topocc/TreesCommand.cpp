//===- tools/topocc/TreesCommand.cpp - `topocc trees` ---------------------===//
//
// `topocc trees TOPO.yaml [--collective allgather|reducescatter|allreduce]
// [--trees-per-root K|auto] [--policy proposal|spread|greedy] [--size 1G]
// [--scenario NAME] [--capacity raw|effective] [--format text|json]
// [--time-stages]`: ForestColl spanning trees (compiler/algorithms/
// ForestColl.h): per tree its root, multiplicity, height and arcs with their
// physical paths through switches; the fluid packing algbw (bandwidth only) vs
// the exact bound. Schema: docs/Algorithms-trees.md.
//
//===----------------------------------------------------------------------===//

#include "compiler/analysis/CostModel.h"
#include "tools/topocc/Driver.h"
#include "tools/topocc/TreeOptions.h"

#include "compiler/CompileRequest.h"
#include "compiler/algorithms/ForestColl.h"
#include "compiler/algorithms/RouteGraph.h"
#include "compiler/analysis/Bound.h"
#include "compiler/topology/Scenario.h"
#include "compiler/topology/TopologyParser.h"
#include "support/Diagnostics.h"

#include "CLI/CLI.hpp"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <cmath>
#include <memory>
#include <optional>

namespace topocc::driver {

namespace {

struct TreesOptions : GraphOptions {
  std::string collective = "allgather";
  std::string treesPerRoot = "auto";
  std::string policy = "proposal";
  std::string treeGraph = "physical";
  bool timeStages = false;
  bool verbose = false; ///< list every tree (text output)
};

/// A path in the orientation data moves: as packed for allgather, reversed
/// for reduce-scatter (out-trees of the reversed graph are in-trees).
std::vector<int> dataPath(const std::vector<int> &p, bool reversed) {
  return reversed ? std::vector<int>(p.rbegin(), p.rend()) : p;
}

/// A path of the packing graph `g` by its vertex names (devices on the
/// physical graph, ranks on the route graph).
std::string pathText(const analysis::BoundGraph &g, const std::vector<int> &p) {
  std::string s;
  for (size_t i = 0; i < p.size(); ++i)
    s += (i ? " -> " : "") + g.vertexName(p[i]);
  return s;
}

llvm::json::Object forestJson(const topo::Topology &t,
                              const analysis::BoundGraph &g,
                              const algorithms::Forest &f,
                              llvm::StringRef phase) {
  const int n = t.numRanks();
  llvm::json::Array trees;
  for (size_t ti = 0; ti < f.trees.trees.size(); ++ti) {
    const algorithms::PackedTree &tr = f.trees.trees[ti];
    llvm::json::Array arcs, phys;
    for (auto [p, c] : tr.arcs)
      arcs.push_back(f.reversed ? llvm::json::Array{c, p}
                                : llvm::json::Array{p, c});
    for (const algorithms::PhysicalTree &pt : f.trees.physical) {
      if (pt.tree != static_cast<int>(ti))
        continue;
      llvm::json::Array paths;
      for (const std::vector<int> &p : pt.paths) {
        llvm::json::Array names;
        for (int v : dataPath(p, f.reversed))
          names.push_back(g.vertexName(v));
        paths.push_back(std::move(names));
      }
      phys.push_back(
          llvm::json::Object{{"mult", pt.mult}, {"paths", std::move(paths)}});
    }
    trees.push_back(llvm::json::Object{{"root", tr.root},
                                       {"mult", tr.mult},
                                       {"height", tr.height},
                                       {"arcs", std::move(arcs)},
                                       {"physical", std::move(phys)}});
  }
  return llvm::json::Object{
      {"phase", phase},
      {"lambda", f.bound.lambda.str()},
      {"k_optimal", f.bound.k},
      {"k", f.k},
      {"u", f.u.str()},
      {"algbw", f.algbw(n)},
      {"bound_algbw", n / f.bound.lambda.value() * 1e9},
      {"max_height", f.trees.maxHeight},
      {"mean_height", f.trees.meanHeight},
      {"congestion", f.trees.congestion},
      {"split_max_flows", f.split.maxFlows},
      {"split_exact_switches", static_cast<int64_t>(f.split.rejected.size())},
      {"split_symmetric_plans", f.split.symmetricPlans},
      {"split_mirrored_plans", f.split.mirroredPlans},
      {"pack_max_flows", f.trees.maxFlows},
      {"symmetry_order", f.trees.symmetryOrder},
      {"symmetry_fallback", f.trees.symmetryFallback},
      {"cut_rejects", f.trees.cutRejects},
      {"oracle_free", f.trees.oracleFree},
      {"trees", std::move(trees)}};
}

void printForest(llvm::raw_ostream &os, const topo::Topology &t,
                 const analysis::BoundGraph &g, const algorithms::Forest &f,
                 llvm::StringRef phase, llvm::StringRef boundName, double bytes,
                 bool listTrees) {
  const int n = t.numRanks();
  double boundAlgbw = n / f.bound.lambda.value() * 1e9;
  double algbw = f.algbw(n);
  size_t distinct = f.trees.trees.size();
  os << llvm::formatv("{0} ({1}): lambda* = {2} s/GB, optimal k = {3}\n",
                      phase,
                      f.reversed ? "in-trees: out-trees of the reversed graph"
                                 : "out-trees",
                      f.bound.lambda.str(), f.bound.k);
  os << llvm::formatv("  trees: k = {0} per root, U = {1} s/GB: algbw {2:F2} "
                      "GB/s, {3:F2}% of the {6} {4:F2} GB/s, time {5}\n",
                      f.k, f.u.str(), algbw / 1e9, 100 * algbw / boundAlgbw,
                      boundAlgbw / 1e9, timeText(bytes / algbw), boundName);
  os << llvm::formatv("  {0} tree{1} ({2} physical), height max {3} mean "
                      "{4:F2}, congestion {5:F3} of U; max-flows: {6} "
                      "splitting, {7} packing\n",
                      distinct, distinct == 1 ? "" : "s",
                      f.trees.physical.size(), f.trees.maxHeight,
                      f.trees.meanHeight, f.trees.congestion,
                      f.split.maxFlows, f.trees.maxFlows);
  if (f.trees.symmetryOrder > 1)
    os << llvm::formatv("  packing: symmetric, one probed tree per orbit of "
                        "{0} rank shifts by {1}; {2} probes answered by a "
                        "box cut{3}\n",
                        f.trees.symmetryOrder, n / f.trees.symmetryOrder,
                        f.trees.cutRejects,
                        f.trees.oracleFree ? ", no max-flow needed" : "");
  else if (f.trees.symmetryFallback)
    os << "  packing: the symmetric packing got stuck; packed without "
          "symmetry\n";
  if (!listTrees) {
    size_t arcs = 0;
    for (const algorithms::PhysicalTree &pt : f.trees.physical)
      arcs += pt.paths.size();
    os << llvm::formatv("  {0} physical tree arcs; --verbose (or --format "
                        "json) lists every tree\n",
                        arcs);
    return;
  }
  for (size_t ti = 0; ti < distinct; ++ti) {
    const algorithms::PackedTree &tr = f.trees.trees[ti];
    os << llvm::formatv("  tree {0}: root {1} ({2}), {3} unit{4}, height {5}\n",
                        ti, tr.root, t.rankName(tr.root), tr.mult,
                        tr.mult == 1 ? "" : "s", tr.height);
    for (const algorithms::PhysicalTree &pt : f.trees.physical) {
      if (pt.tree != static_cast<int>(ti))
        continue;
      if (pt.mult != tr.mult)
        os << llvm::formatv("    {0} unit{1}:\n", pt.mult,
                            pt.mult == 1 ? "" : "s");
      for (size_t a = 0; a < tr.arcs.size(); ++a) {
        auto [p, c] = tr.arcs[a];
        int from = f.reversed ? c : p, to = f.reversed ? p : c;
        os << llvm::formatv("    {0} -> {1}: {2}\n", from, to,
                            pathText(g, dataPath(pt.paths[a], f.reversed)));
      }
    }
  }
}

llvm::Error runTrees(const TreesOptions &opts) {
  if (opts.collective != "allgather" && opts.collective != "reducescatter" &&
      opts.collective != "allreduce")
    return makeUserError("unknown --collective '" + opts.collective +
                         "' (expected allgather, reducescatter or allreduce)");
  algorithms::ForestOptions fo;
  if (opts.policy == "spread")
    fo.policy = algorithms::SplitPolicy::Spread;
  else if (opts.policy == "greedy")
    fo.policy = algorithms::SplitPolicy::Greedy;
  else if (opts.policy == "proposal")
    fo.policy = algorithms::SplitPolicy::Proposal;
  else
    return makeUserError("unknown --policy '" + opts.policy +
                         "' (expected proposal, spread or greedy)");
  auto k = algorithms::parseTreesPerRoot(opts.treesPerRoot);
  if (!k)
    return k.takeError();
  fo.treesPerRoot = k->value_or(0);
  auto input = loadGraphInput(opts);
  if (!input)
    return input.takeError();
  const topo::Topology &t = input->topology;
  const analysis::CapacityKind kind = input->capacity;
  const double bytes = input->bytes;
  auto treeGraph = parseTreeGraph(opts.treeGraph);
  if (!treeGraph)
    return treeGraph.takeError();
  if (*treeGraph == CompileRequest::TreeGraph::Hier)
    return makeUserError("--tree-graph hier applies to compile "
                         "(--algorithm trees); `topocc trees` packs one "
                         "graph: use --tree-graph routes, or pass one "
                         "node's topology");
  const bool onRoutes = *treeGraph == CompileRequest::TreeGraph::Routes;
  const llvm::StringRef boundName =
      onRoutes ? "route graph's bound" : "physical bound";
  if (onRoutes && kind != analysis::CapacityKind::Raw)
    return makeUserError("--tree-graph routes packs at the runtime model's "
                         "effective rates; --capacity does not apply");
  analysis::LinkModel links(t);
  auto packingGraph = [&]() -> llvm::Expected<analysis::BoundGraph> {
    if (!onRoutes)
      return analysis::buildBoundGraph(t, kind);
    algorithms::RouteGraphOptions rgo;
    rgo.allGather = opts.collective != "reducescatter";
    rgo.reduceScatter = opts.collective != "allgather";
    auto rg = algorithms::buildRouteGraph(t, links, rgo);
    if (!rg)
      return rg.takeError();
    return std::move(rg->graph);
  };
  llvm::Expected<analysis::BoundGraph> g = packingGraph();
  if (!g)
    return g.takeError();

  std::vector<std::pair<std::string, algorithms::Forest>> forests;
  if (opts.collective != "allgather") {
    fo.reversed = true;
    auto f = algorithms::buildForest(*g, fo);
    if (!f)
      return f.takeError();
    forests.push_back({"reducescatter", std::move(*f)});
  }
  if (opts.collective != "reducescatter") {
    fo.reversed = false;
    auto f = algorithms::buildForest(*g, fo);
    if (!f)
      return f.takeError();
    forests.push_back({"allgather", std::move(*f)});
  }
  if (opts.timeStages)
    for (auto &[phase, f] : forests)
      llvm::errs() << llvm::formatv(
          "{0}: bound {1:F3} ms, units {2:F3} ms, splitting {3:F3} ms, "
          "packing {4:F3} ms\n",
          phase, f.boundSeconds * 1e3, f.unitsSeconds * 1e3,
          f.splitSeconds * 1e3, f.packSeconds * 1e3);

  // The collective as a whole: time = (M/N) sum of U/k over its phases.
  const int n = t.numRanks();
  double perByte = 0, boundPerByte = 0;
  for (auto &[phase, f] : forests) {
    perByte += f.u.value() / f.k * 1e-9 / n;
    boundPerByte += f.bound.lambda.value() * 1e-9 / n;
  }
  double time = bytes * perByte, boundTime = bytes * boundPerByte;
  // The same trees on the routes the schedule's messages take (one route
  // per rank pair), which is what compile's cost model and the simulator
  // see. Each rank pair's route is a max-flow on the topology, so above
  // kRoutedMaxRanks (64 DGX boxes: 261 632 pairs, 7 s) it is left out.
  constexpr int kRoutedMaxRanks = 128;
  const bool routed = t.numRanks() <= kRoutedMaxRanks;
  // Across nodes a message goes through the NICs NCCL gives both ends, as
  // in the runtime model.
  std::optional<analysis::NcclNetRoutes> net;
  if (t.numNodes() > 1)
    net.emplace(t);
  double routedPerByte = 0, worst = 0;
  int busiest = -1;
  for (auto &[phase, f] : forests) {
    if (!routed)
      break;
    auto r = algorithms::routedTime(
        f, links, onRoutes ? analysis::CapacityKind::Effective : kind,
        net ? &*net : nullptr);
    if (!r)
      return r.takeError();
    routedPerByte += r->secondsPerByte;
    if (r->secondsPerByte > worst) {
      worst = r->secondsPerByte;
      busiest = r->busiest;
    }
  }
  const double routedTime = bytes * routedPerByte;
  const std::string busiestName =
      busiest >= 0 ? links.resourceName(busiest) : std::string();
  double busFactor = opts.collective == "allreduce" ? 2.0 * (n - 1) / n
                                                    : (n - 1.0) / n;

  std::string out;
  llvm::raw_string_ostream os(out);
  if (opts.format == "json") {
    llvm::json::Array fj;
    for (auto &[phase, f] : forests)
      fj.push_back(forestJson(t, *g, f, phase));
    llvm::json::Object root{
        {"format", "topocc-trees/v1"},
        {"topology", t.name()},
        {"scenario", opts.scenario},
        {"collective", opts.collective},
        {"tree_graph", opts.treeGraph},
        {"ranks", n},
        {"bytes", bytes},
        {"fluid_packing",
         llvm::json::Object{{"time_s", time},
                            {"algbw", bytes / time},
                            {"busbw", bytes / time * busFactor}}},
        {"routed", routed ? llvm::json::Value(llvm::json::Object{
                                {"time_s", routedTime},
                                {"algbw", bytes / routedTime},
                                {"busbw", bytes / routedTime * busFactor},
                                {"busiest_link", busiestName}})
                          : llvm::json::Value(nullptr)},
        {"bound", llvm::json::Object{{"time_s", boundTime},
                                     {"algbw", bytes / boundTime},
                                     {"busbw", bytes / boundTime * busFactor}}},
        {"forests", std::move(fj)}};
    os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << '\n';
  } else {
    os << "topology " << t.name();
    if (!opts.scenario.empty())
      os << " (scenario " << opts.scenario << ")";
    os << llvm::formatv(": {0} GPUs; {1} trees\n", n, opts.collective);
    os << llvm::formatv(
        "fluid packing: time {0}  algbw {1:F2} GB/s  busbw {2:F2} GB/s  "
        "({3:F2}% of the {5}: algbw {4:F2} GB/s; the packing's value, not a "
        "prediction)\n",
        timeText(time), bytes / time / 1e9, bytes / time * busFactor / 1e9,
        100 * boundTime / time, bytes / boundTime / 1e9, boundName);
    if (routed)
      os << llvm::formatv(
          "on the schedule's routes: time {0}  algbw {1:F2} GB/s  busbw "
          "{2:F2} GB/s  ({3:F2}% of the {5}; busiest link {4})\n",
          timeText(routedTime), bytes / routedTime / 1e9,
          bytes / routedTime * busFactor / 1e9, 100 * boundTime / routedTime,
          busiestName, boundName);
    else
      os << llvm::formatv("on the schedule's routes: not computed above {0} "
                          "ranks (a max-flow per rank pair)\n",
                          kRoutedMaxRanks);
    for (auto &[phase, f] : forests)
      printForest(os, t, *g, f, phase, boundName, bytes, opts.verbose);
  }
  os.flush();
  return writeOutputFile("-", out);
}

void registerTreesCommand(CLI::App &app) {
  auto opts = std::make_shared<TreesOptions>();
  CLI::App *cmd = app.add_subcommand(
      "trees", "ForestColl spanning trees: k trees per root through switches, "
               "their fluid packing throughput vs the exact bound");
  addGraphOptions(cmd, *opts);
  cmd->add_option("--collective", opts->collective,
                  "allgather, reducescatter or allreduce")
      ->capture_default_str();
  cmd->add_option("--trees-per-root", opts->treesPerRoot,
                  "Trees per root K (the best schedule with exactly K), or "
                  "auto (the optimum's k)")
      ->capture_default_str();
  cmd->add_option("--policy", opts->policy,
                  "Switch splitting: proposal (fast, spread fallback), spread "
                  "(shallow trees) or greedy")
      ->capture_default_str();
  cmd->add_option("--tree-graph", opts->treeGraph,
                  "Pack on the physical links (ForestColl's graph) or on one "
                  "rate per rank pair that the runtime's routes carry "
                  "(routes, at effective rates)")
      ->capture_default_str();
  cmd->add_flag("--time-stages", opts->timeStages,
                "Print each stage's wall time to stderr");
  cmd->add_flag("--verbose,-v", opts->verbose,
                "List every tree with its arcs' paths (the default prints "
                "each forest's summary)");
  cmd->callback([opts] { finishCommand(runTrees(*opts)); });
}

static CommandRegistration reg("trees", registerTreesCommand);

} // namespace

} // namespace topocc::driver
