//===- tools/topocc/RingsCommand.cpp - `topocc rings` ---------------------===//
//
// `topocc rings TOPO.yaml [--collective C] [--size 1G] [--channels N|auto]
// [--scenario NAME] [--format text|json] [--emit-nccl-graph FILE]`: searches
// ring orders (compiler/algorithms/RingSearch.h) and prints each channel's
// order, bottleneck and share, the alpha-beta estimate of time/algbw/busbw
// (CostModel.h, not the runtime model), the same for
// the rank-order ring and NCCL's own model. JSON schema: docs/CLI-rings.md.
//
//===----------------------------------------------------------------------===//

#include "tools/topocc/Driver.h"

#include "backends/NcclGraphRings.h"
#include "compiler/lowerings/Lowering.h"
#include "compiler/Pipeline.h"
#include "compiler/algorithms/RingSearch.h"
#include "compiler/analysis/CostModel.h"
#include "compiler/analysis/NcclModel.h"
#include "compiler/topology/Scenario.h"
#include "compiler/topology/TopologyParser.h"
#include "ir/Target.h"
#include "support/ByteSize.h"
#include "support/Diagnostics.h"

#include "CLI/CLI.hpp"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>

namespace topocc::driver {

namespace {

struct RingsOptions {
  std::string file;
  std::string collective = "allreduce";
  std::string size = "1G";
  std::string channels = "auto";
  std::string scenario;
  std::string format = "text";
  std::string ncclGraph;
  bool timeSearch = false;
};

std::string gbs(double bytesPerSec) {
  return llvm::formatv("{0:F2} GB/s", bytesPerSec / 1e9).str();
}

std::string timeText(double s) {
  if (s < 1e-3)
    return llvm::formatv("{0:F2} us", s * 1e6).str();
  if (s < 1)
    return llvm::formatv("{0:F3} ms", s * 1e3).str();
  return llvm::formatv("{0:F3} s", s).str();
}

llvm::json::Object costJson(const analysis::CostReport &r) {
  llvm::json::Object o{{"time_s", r.time},
                       {"bandwidth_time_s", r.bandwidthTime},
                       {"latency_time_s", r.latencyTime},
                       {"raw_bandwidth_time_s", r.rawBandwidthTime},
                       {"algbw", r.algbw},
                       {"busbw", r.busbw}};
  if (r.bottleneck >= 0)
    o["bottleneck"] = llvm::json::Object{
        {"link", r.bottleneckName},
        {"bytes", r.bottleneckBytes},
        {"capacity", r.bottleneckCapacity},
        {"raw_capacity", r.bottleneckRawCapacity}};
  else
    o["bottleneck"] = nullptr;
  return o;
}

llvm::json::Array channelsJson(const topo::Topology &t,
                               llvm::ArrayRef<analysis::RingChannel> rings,
                               analysis::LinkModel &m) {
  llvm::json::Array arr;
  for (const analysis::RingChannel &rc : rings) {
    analysis::RingBottleneck bn = analysis::ringBottleneck(rc, m);
    llvm::json::Array order, nics;
    for (int r : rc.order)
      order.push_back(r);
    for (size_t i = 0; i < rc.nics.size(); ++i)
      if (rc.nics[i].isSet())
        nics.push_back(llvm::json::Object{
            {"hop", static_cast<int64_t>(i)},
            {"out", rc.nics[i].out >= 0 ? t.device(rc.nics[i].out).name : ""},
            {"in", rc.nics[i].in >= 0 ? t.device(rc.nics[i].in).name : ""}});
    llvm::json::Object o{{"order", std::move(order)},
                         {"share", rc.share},
                         {"nics", std::move(nics)}};
    if (bn.resource >= 0)
      o["bottleneck"] = llvm::json::Object{
          {"link", m.resourceName(bn.resource)}, {"bandwidth", bn.bandwidth}};
    else
      o["bottleneck"] = nullptr;
    arr.push_back(std::move(o));
  }
  return arr;
}

void printChannels(llvm::raw_ostream &os, const topo::Topology &t,
                   llvm::ArrayRef<analysis::RingChannel> rings,
                   analysis::LinkModel &m) {
  for (size_t c = 0; c < rings.size(); ++c) {
    const analysis::RingChannel &rc = rings[c];
    analysis::RingBottleneck bn = analysis::ringBottleneck(rc, m);
    os << llvm::formatv("  channel {0}: share {1:F3}", c, rc.share);
    if (bn.resource >= 0)
      os << "  bottleneck " << m.resourceName(bn.resource) << " at "
         << gbs(bn.bandwidth);
    os << "\n    order:";
    for (int r : rc.order)
      os << ' ' << r;
    os << '\n';
    for (size_t i = 0; i < rc.nics.size(); ++i)
      if (rc.nics[i].isSet())
        os << llvm::formatv(
            "    hop {0} -> {1} via {2} -> {3}\n", rc.order[i],
            rc.order[(i + 1) % rc.order.size()],
            rc.nics[i].out >= 0 ? t.device(rc.nics[i].out).name : "-",
            rc.nics[i].in >= 0 ? t.device(rc.nics[i].in).name : "-");
  }
}

void printCost(llvm::raw_ostream &os, const analysis::CostReport &r) {
  os << "  alpha-beta estimate: time " << timeText(r.time) << "  algbw " << gbs(r.algbw)
     << "  busbw " << gbs(r.busbw) << '\n';
  if (r.bottleneck >= 0)
    os << "  bottleneck link: " << r.bottleneckName << " ("
       << sizeText(r.bottleneckBytes) << " at " << gbs(r.bottleneckCapacity)
       << ", raw " << gbs(r.bottleneckRawCapacity) << ")\n";
  os << "  bandwidth time " << timeText(r.bandwidthTime) << " (raw "
     << timeText(r.rawBandwidthTime) << "), latency time "
     << timeText(r.latencyTime) << '\n';
}

llvm::Error runRings(const RingsOptions &opts) {
  if (auto err = checkFormat(opts.format))
    return err;
  auto coll = parseCollective(opts.collective);
  if (!coll)
    return coll.takeError();
  auto bytes = parseByteSize(opts.size, "--size");
  if (!bytes)
    return bytes.takeError();
  algorithms::RingSearchOptions so;
  so.collective = *coll;
  so.bytes = *bytes;
  // An NCCL graph file holds one local order for every node.
  so.sameLocalOrder = !opts.ncclGraph.empty();
  if (opts.channels != "auto") {
    int c;
    if (llvm::StringRef(opts.channels).getAsInteger(10, c) || c < 1 ||
        c > ir::kMaxRingChannels)
      return makeUserError(llvm::formatv("invalid --channels '{0}' (expected "
                                         "1 to {1} or auto)",
                                         opts.channels, ir::kMaxRingChannels)
                               .str());
    so.channels = c;
  }
  auto topo = loadTopology(opts.file, opts.scenario);
  if (!topo)
    return topo.takeError();
  const topo::Topology &t = *topo;
  analysis::LinkModel m(t);
  auto start = std::chrono::steady_clock::now();
  auto found = algorithms::searchRings(t, m, so);
  if (!found)
    return found.takeError();
  double searchSeconds = std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - start)
                             .count();
  if (opts.timeSearch) {
    std::vector<double> times{searchSeconds};
    for (int i = 0; i < 4; ++i) {
      analysis::LinkModel fresh(t);
      auto s0 = std::chrono::steady_clock::now();
      auto again = algorithms::searchRings(t, fresh, so);
      if (!again)
        return again.takeError();
      times.push_back(std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - s0)
                          .count());
    }
    std::sort(times.begin(), times.end());
    llvm::errs() << llvm::formatv("search time: {0:F3} ms (median of 5)\n",
                                  times[2] * 1e3);
  }
  std::vector<analysis::RingChannel> rankOrder{algorithms::rankOrderRing(t)};
  // On fabrics where GPUs relay (a torus), the rank order need not be a
  // ring of routed pairs: it is then reported as such, not an error.
  std::optional<analysis::CostReport> roCost;
  std::string roWhy;
  if (auto c = analysis::estimateRings(rankOrder, so.collective, so.bytes, m))
    roCost = std::move(*c);
  else {
    std::string text = llvm::toString(c.takeError());
    llvm::StringRef why = llvm::StringRef(text).trim();
    why.consume_front("error: ");
    roWhy = why.str();
  }
  analysis::NcclModelResult nccl =
      analysis::ncclEstimate(t, so.collective, so.bytes);

  // Hierarchical ring all-reduce (multi-node only): the lowered schedule's
  // estimate, compared with the flat rings.
  std::optional<analysis::CostReport> hier;
  std::string hierWhy;
  if (so.collective == ir::Collective::AllReduce && t.numNodes() >= 2) {
    auto hs = lowerings::lowerHierRingFor(t, so.collective, /*channels=*/1,
                               /*chunks=*/1, /*inplace=*/false, so.bytes);
    if (!hs) {
      hierWhy = llvm::toString(hs.takeError());
    } else {
      auto hc = analysis::estimateSchedule(*hs, m, so.bytes);
      if (!hc)
        return hc.takeError();
      hier = std::move(*hc);
    }
  }
  const bool pickHier = hier && hier->time < found->cost.time;

  // NCCL graph file.
  std::vector<std::string> notes;
  if (!opts.ncclGraph.empty()) {
    auto xml = backends::ncclGraphForRings(t, found->rings, so.collective, so.bytes, m);
    if (!xml)
      return xml.takeError();
    if (auto err = writeOutputFile(opts.ncclGraph, xml->xml))
      return err;
    notes = xml->notes;
  }

  std::string out;
  llvm::raw_string_ostream os(out);
  const algorithms::RingSearchResult &res = *found;
  if (opts.format == "json") {
    llvm::json::Value packing = nullptr;
    if (res.lpUnits > 0)
      packing = llvm::json::Object{{"lp_busbw", res.lpRate},
                                   {"upper_bound_busbw", res.lpUpperBound},
                                   {"optimal", res.lpOptimal},
                                   {"units", res.lpUnits},
                                   {"units_busbw", res.lpUnitsRate},
                                   {"chosen", !res.packing.empty()}};
    llvm::json::Object chosen{{"method", res.method},
                              {"exact", res.exact},
                              {"ring_packing_lp", std::move(packing)},
                              {"evaluated", static_cast<int64_t>(res.evaluated)},
                              {"channels", channelsJson(t, res.rings, m)},
                              {"estimate", costJson(res.cost)}};
    llvm::json::Value ro = nullptr;
    if (roCost)
      ro = llvm::json::Object{{"channels", channelsJson(t, rankOrder, m)},
                              {"estimate", costJson(*roCost)}};
    auto est = [](const analysis::NcclEstimate &e) -> llvm::json::Value {
      if (!e.applicable)
        return nullptr;
      return llvm::json::Object{{"protocol", e.protocol},
                                {"model_busbw", e.modelBusBw},
                                {"latency_s", e.latency},
                                {"time_s", e.time},
                                {"algbw", e.algbw},
                                {"busbw", e.busbw}};
    };
    llvm::json::Object nj{{"arch", nccl.arch},
                          {"intra_path", nccl.intraPath},
                          {"nodes", nccl.numNodes},
                          {"ring", est(nccl.ring)},
                          {"tree", est(nccl.tree)}};
    llvm::json::Value hierJ = nullptr;
    if (hier)
      hierJ = llvm::json::Object{{"estimate", costJson(*hier)}};
    llvm::json::Array notesJ;
    for (const std::string &s : notes)
      notesJ.push_back(s);
    llvm::json::Object root{
        {"topology", t.name()},
        {"scenario", opts.scenario},
        {"ranks", t.numRanks()},
        {"nodes", t.numNodes()},
        {"collective", ir::collectiveName(so.collective)},
        {"bytes", so.bytes},
        {"chosen", std::move(chosen)},
        {"rank_order", std::move(ro)},
        {"hier_ring", std::move(hierJ)},
        {"cost_model_picks", pickHier ? "hier-ring" : "ring"},
        {"nccl", std::move(nj)},
        {"nccl_graph",
         opts.ncclGraph.empty()
             ? llvm::json::Value(nullptr)
             : llvm::json::Value(llvm::json::Object{
                   {"file", opts.ncclGraph}, {"notes", std::move(notesJ)}})}};
    os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << '\n';
  } else {
    os << "topology " << t.name();
    if (!opts.scenario.empty())
      os << " (scenario " << opts.scenario << ")";
    os << llvm::formatv(": {0} ranks, {1} nodes; {2} of {3} ({4} B)\n",
                        t.numRanks(), t.numNodes(),
                        ir::collectiveName(so.collective), sizeText(so.bytes),
                        static_cast<int64_t>(so.bytes));
    os << llvm::formatv("chosen rings ({0}, {1} channel{2}, {3} evaluated):\n",
                        res.method, res.rings.size(),
                        res.rings.size() == 1 ? "" : "s", res.evaluated);
    if (res.lpUnits > 0)
      os << llvm::formatv(
          "  ring packing LP (fluid, all rings at once): {0:F2} GB/s per hop "
          "{1}; in {2} unit{5} {3:F2} GB/s; {4}\n",
          res.lpRate / 1e9,
          res.lpOptimal ? "(proved optimal)"
                        : llvm::formatv("(at most {0:F2})",
                                        res.lpUpperBound / 1e9)
                              .str(),
          res.lpUnits, res.lpUnitsRate / 1e9,
          res.packing.empty() ? "the rings below are the greedy set's, "
                                "as fast in the cost model or faster"
                              : "the rings below are its set",
          res.lpUnits == 1 ? "" : "s");
    printChannels(os, t, res.rings, m);
    printCost(os, res.cost);
    os << "rank-order ring:\n";
    if (roCost) {
      printChannels(os, t, rankOrder, m);
      printCost(os, *roCost);
    } else {
      os << "  not a ring of routed pairs (" << roWhy << ")\n";
    }
    if (hier) {
      os << "hierarchical ring (intra-node reduce-scatter, inter-node ring "
            "all-reduce per rail, intra-node all-gather):\n";
      printCost(os, *hier);
    } else if (!hierWhy.empty()) {
      os << "hierarchical ring: not applicable (" << hierWhy << ")\n";
    }
    os << llvm::formatv("NCCL 2.30 model ({0}, {1} intra-node, {2} node{3}):\n",
                        nccl.arch, nccl.intraPath, nccl.numNodes,
                        nccl.numNodes == 1 ? "" : "s");
    for (const analysis::NcclEstimate *e : {&nccl.ring, &nccl.tree}) {
      if (!e->applicable) {
        os << "  " << (e == &nccl.ring ? "ring" : "tree")
           << ": not applicable\n";
        continue;
      }
      os << "  " << e->algorithm << " " << e->protocol << ": time "
         << timeText(e->time) << "  algbw " << gbs(e->algbw) << "  busbw "
         << gbs(e->busbw) << "  (model busBw " << gbs(e->modelBusBw) << ")\n";
    }
    if (roCost && res.cost.time > 0 && roCost->time > 0)
      os << llvm::formatv("speedup over rank order: {0:F2}x\n",
                          roCost->time / res.cost.time);
    if (hier)
      os << llvm::formatv(
          "cost model picks: {0} ({1} vs {2} for the {3})\n",
          pickHier ? "hier-ring" : "ring",
          timeText(pickHier ? hier->time : res.cost.time),
          timeText(pickHier ? res.cost.time : hier->time),
          pickHier ? "flat rings" : "hierarchical ring");
  }
  os.flush();
  if (auto err = writeOutputFile("-", out))
    return err;
  for (const std::string &s : notes)
    llvm::errs() << "note: " << s << '\n';
  return llvm::Error::success();
}

void registerRingsCommand(CLI::App &app) {
  auto opts = std::make_shared<RingsOptions>();
  CLI::App *cmd = app.add_subcommand(
      "rings", "Choose ring orders from link bandwidths and predict their "
               "performance");
  cmd->add_option("topology", opts->file, "Topology YAML file")->required();
  cmd->add_option("--collective", opts->collective,
                  "allreduce, allgather or reducescatter")
      ->capture_default_str();
  cmd->add_option("--size", opts->size,
                  "Message size S (K/M/G/T are powers of 1024; docs/CLI.md, "
                  "Sizes)")
      ->capture_default_str();
  cmd->add_option("--channels", opts->channels, "Number of rings, or auto")
      ->capture_default_str();
  cmd->add_option("--scenario", opts->scenario,
                  "Apply this named scenario first");
  cmd->add_option("--format", opts->format, "Output format: text or json")
      ->capture_default_str();
  cmd->add_option("--emit-nccl-graph", opts->ncclGraph,
                  "Write the rings as an NCCL_GRAPH_FILE ('-' for stdout)");
  cmd->add_flag("--time-search", opts->timeSearch,
                "Print the median search time of 5 runs to stderr");
  cmd->callback([opts] { finishCommand(runRings(*opts)); });
}

static CommandRegistration reg("rings", registerRingsCommand);

} // namespace
} // namespace topocc::driver
