//===- tools/topocc/DotCommand.cpp - `topocc dot` -------------------------===//
//
// `topocc dot TOPO.yaml [--rings] [--utilization] [--scenario NAME]
// [--fail SEL ...] [--scale SEL=2x ...] [--set SEL=Q ...]
// [--collective C] [--size 1G] [--chunks N] [--edge-labels] [-o FILE]`: Graphviz DOT of a
// topology (backends/DotWriter.h). With a scenario or command-line patches
// the patched topology is drawn over the base (failed links and devices
// dashed red). `--rings` overlays the rings of the bandwidth-aware search
// (compiler/algorithms/RingSearch.h) on the drawn topology; `--utilization`
// colours each link by its busy fraction in a simulated run of those rings
// (lowered and fused as in `topocc whatif`, compiler/analysis/Simulator.h).
//
//===----------------------------------------------------------------------===//

#include "tools/topocc/Driver.h"
#include "tools/topocc/PatchOptions.h"

#include "backends/DotWriter.h"
#include "compiler/algorithms/RingSearch.h"
#include "compiler/analysis/Simulator.h"
#include "compiler/passes/Fuse.h"
#include "compiler/passes/LowerRing.h"
#include "compiler/topology/ScenarioCli.h"
#include "compiler/topology/TopologyParser.h"
#include "support/ByteSize.h"
#include "support/Diagnostics.h"

#include "CLI/CLI.hpp"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <memory>

namespace topocc::driver {

namespace {

struct DotCmdOptions {
  std::string file;
  bool rings = false, utilization = false, edgeLabels = false;
  std::string scenario;
  PatchOptions patch;
  std::string collective = "allreduce";
  std::string size = "1G";
  int chunks = 4;
  std::string output = "-";
};

/// The simulated busy fraction of every link of `t` (the busier direction)
/// in a run of `rings`, lowered and fused like whatif's `ring` column (with
/// the NIC hops the search chose).
llvm::Expected<std::vector<double>>
ringUtilization(const topo::Topology &t, analysis::LinkModel &m,
                const algorithms::RingSearchResult &found, ir::Collective c,
                double bytes, int chunks) {
  passes::RingOptions ro =
      passes::searchedRingOptions(found.rings, c, t.numRanks(), chunks);
  analysis::SimOptions so;
  so.routeHints = analysis::ringRouteHints(found.rings);
  auto s = passes::lowerRing(ro);
  if (!s)
    return s.takeError();
  passes::fuse(*s);
  so.bytes = bytes;
  auto r = analysis::simulate(*s, m, so);
  if (!r)
    return r.takeError();
  std::vector<double> u(t.links().size(), 0);
  if (r->time > 0)
    for (const analysis::SimLinkStats &l : r->links) {
      double &x = u[l.resource / 2];
      x = std::max(x, l.busy / r->time);
    }
  return u;
}

llvm::Error runDotCommand(const DotCmdOptions &opts) {
  if (opts.chunks < 1 || opts.chunks > 64)
    return makeUserError(llvm::formatv(
        "--chunks must be between 1 and 64, got {0}", opts.chunks));
  auto coll = parseCollective(opts.collective);
  if (!coll)
    return coll.takeError();
  auto bytes = parseByteSize(opts.size, "--size");
  if (!bytes)
    return bytes.takeError();
  auto ops = opts.patch.parse();
  if (!ops)
    return ops.takeError();
  auto base = loadTopology(opts.file, "");
  if (!base)
    return base.takeError();

  // The drawn topology: the base, then the scenario, then the CLI patch.
  std::optional<topo::Topology> variant;
  std::vector<std::string> what;
  if (!opts.scenario.empty()) {
    auto expanded = topo::expandScenario(*base, opts.scenario);
    if (!expanded)
      return expanded.takeError();
    if (expanded->size() != 1)
      return makeUserError(llvm::formatv(
          "scenario '{0}' is a sweep over {1} topologies; dot draws one "
          "(use --set for one value)",
          opts.scenario, expanded->size()));
    variant = *base;
    if (auto err = topo::applyScenarioOps(*variant, expanded->front().name,
                                          expanded->front().ops))
      return err;
    what.push_back("scenario '" + opts.scenario +
                   "': " + topo::describeScenarioOps(expanded->front().ops));
  }
  if (!ops->empty()) {
    if (!variant)
      variant = *base;
    if (auto err = topo::applyScenarioOps(*variant, "cli", *ops))
      return err;
    what.push_back(topo::describeScenarioOps(*ops));
  }
  const topo::Topology &drawn = variant ? *variant : *base;

  backends::DotOptions dopts;
  dopts.variant = variant ? &*variant : nullptr;
  dopts.subtitle = llvm::join(what, "; ");
  dopts.edgeLabels = opts.edgeLabels;
  if (opts.rings || opts.utilization) {
    analysis::LinkModel m(drawn);
    algorithms::RingSearchOptions so;
    so.collective = *coll;
    so.bytes = *bytes;
    auto found = algorithms::searchRings(drawn, m, so);
    if (!found)
      return found.takeError();
    if (opts.rings)
      for (const analysis::RingChannel &rc : found->rings)
        dopts.rings.push_back(rc.order);
    if (opts.utilization) {
      auto u = ringUtilization(drawn, m, *found, *coll, *bytes, opts.chunks);
      if (!u)
        return u.takeError();
      dopts.utilization = std::move(*u);
      std::string line =
          llvm::formatv("link busy fraction, simulated ring {0} of {1}",
                        ir::collectiveName(*coll), sizeText(*bytes))
              .str();
      dopts.subtitle += (dopts.subtitle.empty() ? "" : "\n") + line;
    }
  }
  std::string out;
  llvm::raw_string_ostream os(out);
  backends::writeDot(os, *base, dopts);
  os.flush();
  if (auto err = writeOutputFile(opts.output, out))
    return err;
  if (opts.output != "-") {
    llvm::outs() << llvm::formatv(
        "wrote {0}: Graphviz drawing of {1} ({2} devices, {3} links); "
        "render it with: dot -Tsvg {0} -o {4}.svg\n",
        opts.output, base->name(), base->devices().size(),
        base->links().size(), llvm::StringRef(opts.output).rsplit('.').first);
    llvm::outs().flush();
  }
  return llvm::Error::success();
}

void registerDotCommand(CLI::App &app) {
  auto opts = std::make_shared<DotCmdOptions>();
  CLI::App *cmd = app.add_subcommand(
      "dot", "Draw a topology as Graphviz DOT (hosts, links by type and "
             "bandwidth, failures, rings, utilization)");
  cmd->add_option("topology", opts->file, "Topology YAML file")->required();
  cmd->add_flag("--rings", opts->rings,
                "Overlay the rings chosen by the bandwidth-aware search");
  cmd->add_flag("--utilization", opts->utilization,
                "Colour links by their busy fraction in a simulated run of "
                "those rings");
  cmd->add_flag("--edge-labels", opts->edgeLabels,
                "Print each link's bandwidth (and busy fraction, ring) on "
                "its edge; by default the legend lists each kind of link "
                "once and edges carry their text as a tooltip (labels make "
                "Graphviz's layout much wider)");
  cmd->add_option("--scenario", opts->scenario,
                  "Draw this scenario of the topology file over the base");
  addPatchOptions(cmd, opts->patch);
  cmd->add_option("--collective", opts->collective,
                  "Collective of the rings: allreduce, allgather or "
                  "reducescatter")
      ->capture_default_str();
  cmd->add_option("--size", opts->size,
                  "Message size for the ring search and the simulation")
      ->capture_default_str();
  cmd->add_option("--chunks", opts->chunks,
                  "Pipelining chunks per rank of the simulated rings")
      ->capture_default_str();
  cmd->add_option("-o,--output", opts->output, "Output file ('-': stdout)")
      ->capture_default_str();
  cmd->callback([opts] { finishCommand(runDotCommand(*opts)); });
}

static CommandRegistration reg("dot", registerDotCommand);

} // namespace
} // namespace topocc::driver
