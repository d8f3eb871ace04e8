//===- tools/topocc/BoundCommand.cpp - `topocc bound` ---------------------===//
//
// `topocc bound TOPO.yaml [--size 1G] [--scenario NAME] [--capacity raw|
// effective] [--format text|json]`: the exact cut bound of
// compiler/analysis/Bound.h for allgather, reduce-scatter and allreduce: the
// exact fraction lambda* (s/GB), the bound as time/algbw/busbw at a size, the
// trees per root k and U, and the argmax cut (which GPUs and devices lie
// inside, which links cross it). Schema: docs/Algorithms-trees.md.
//
//===----------------------------------------------------------------------===//

#include "compiler/analysis/CostModel.h"
#include "tools/topocc/Driver.h"
#include "tools/topocc/TreeOptions.h"

#include "compiler/analysis/Bound.h"
#include "compiler/analysis/BoundReport.h"
#include "compiler/analysis/RealizableGraph.h"
#include "compiler/topology/Scenario.h"
#include "compiler/topology/TopologyParser.h"
#include "support/Diagnostics.h"

#include "CLI/CLI.hpp"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <memory>
#include <utility>

namespace topocc::driver {

namespace {

/// "0-6, 9, 12-13".
std::string rankRanges(const std::vector<int> &ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1)
      ++j;
    if (!out.empty())
      out += ", ";
    out += std::to_string(ranks[i]);
    if (j > i)
      out += "-" + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out;
}

std::string arcName(const topo::Topology &t, const analysis::BoundGraph &g,
                    int arc) {
  auto [from, to] = analysis::boundArcEnds(t, g, arc);
  return from + " -> " + to;
}

void printDirection(llvm::raw_ostream &os, const topo::Topology &t,
                    const analysis::BoundResult &b, llvm::StringRef name,
                    const analysis::DirectionalBound &d,
                    const analysis::BoundNumbers &n, bool entering) {
  const analysis::BoundGraph &g = b.graph;
  os << llvm::formatv("{0}: lambda* = {1} s/GB ({2} iteration{3}, {4} "
                      "max-flows)\n",
                      name, d.lambda.str(), d.iterations,
                      d.iterations == 1 ? "" : "s", d.maxFlows);
  os << "  bound: time " << timeText(n.time)
     << llvm::formatv("  algbw {0:F2} GB/s  busbw {1:F2} GB/s\n",
                      n.algbw / 1e9, n.busbw / 1e9);
  os << llvm::formatv("  trees: k = {0} per root, U = {1} s/GB\n", d.k,
                      d.u.str());
  std::vector<std::string> others;
  for (int v : d.cut.vertices)
    if (t.device(v).kind != topo::DeviceKind::Gpu)
      others.push_back(t.device(v).name);
  os << llvm::formatv("  argmax cut: {0} of {1} GPUs inside (ranks {2})",
                      d.cut.ranks.size(), b.numRanks(),
                      rankRanges(d.cut.ranks));
  if (!others.empty()) {
    os << " and " << others.size()
       << (others.size() == 1 ? " other device" : " other devices");
    if (others.size() <= 4) {
      os << " (";
      for (size_t i = 0; i < others.size(); ++i)
        os << (i ? ", " : "") << others[i];
      os << ")";
    }
  }
  os << '\n';
  bool one = d.cut.arcs.size() == 1;
  os << llvm::formatv("  {0} link direction{1} {2} it, {3} GB/s in all:\n",
                      d.cut.arcs.size(), one ? "" : "s",
                      entering ? (one ? "enters" : "enter")
                               : (one ? "leaves" : "leave"),
                      plainNumber(static_cast<double>(d.cut.capacity) *
                                  static_cast<double>(g.quantumBytesPerSec) /
                                  1e9));
  const size_t kShown = 16;
  for (size_t i = 0; i < d.cut.arcs.size() && i < kShown; ++i)
    os << "    " << arcName(t, g, d.cut.arcs[i]) << "  "
       << plainNumber(analysis::boundArcBytesPerSec(g, d.cut.arcs[i]) / 1e9) << " GB/s\n";
  if (d.cut.arcs.size() > kShown)
    os << "    ... and " << d.cut.arcs.size() - kShown << " more\n";
}

/// One direction of the realizable bound: the numbers, the share of the
/// physical bound and the link directions of its cut.
void printRealizable(llvm::raw_ostream &os, const topo::Topology &t,
                     const analysis::BoundResult &r, llvm::StringRef name,
                     const analysis::DirectionalBound *d,
                     const analysis::BoundNumbers &n,
                     const analysis::BoundNumbers &physical,
                     llvm::StringRef capacity) {
  os << llvm::formatv("  {0}: time {1}  algbw {2:F2} GB/s  busbw {3:F2} "
                      "GB/s, {4:F1}% of the physical bound on {5} rates\n",
                      name, timeText(n.time), n.algbw / 1e9, n.busbw / 1e9,
                      100.0 * physical.time / n.time, capacity);
  if (!d)
    return;
  const analysis::BoundGraph &g = r.graph;
  os << llvm::formatv("    argmax cut: {0} of {1} GPUs inside (ranks {2}); "
                      "the runtime's routes cross it on {3} GB/s:\n",
                      d->cut.ranks.size(), r.numRanks(),
                      rankRanges(d->cut.ranks),
                      plainNumber(static_cast<double>(d->cut.capacity) *
                                  static_cast<double>(g.quantumBytesPerSec) /
                                  1e9));
  const size_t kShown = 8;
  for (size_t i = 0; i < d->cut.arcs.size() && i < kShown; ++i)
    os << "      " << arcName(t, g, d->cut.arcs[i]) << "  "
       << plainNumber(analysis::boundArcBytesPerSec(g, d->cut.arcs[i]) / 1e9) << " GB/s\n";
  if (d->cut.arcs.size() > kShown)
    os << "      ... and " << d->cut.arcs.size() - kShown << " more\n";
}

llvm::Error runBound(const GraphOptions &opts) {
  auto input = loadGraphInput(opts);
  if (!input)
    return input.takeError();
  const topo::Topology &t = input->topology;
  const analysis::CapacityKind kind = input->capacity;
  const double bytes = input->bytes;
  auto bound = analysis::computeBound(t, kind);
  if (!bound)
    return bound.takeError();
  const analysis::BoundResult &b = *bound;
  auto realizable = analysis::computeRealizableBound(t);
  if (!realizable)
    return realizable.takeError();
  const analysis::BoundResult &rb = *realizable;
  auto numbers = [&](const analysis::BoundResult &r, ir::Collective c) {
    return analysis::boundNumbers(r, c, bytes);
  };
  using ir::Collective;
  analysis::BoundNumbers ag = numbers(b, Collective::AllGather),
                         rs = numbers(b, Collective::ReduceScatter),
                         ar = numbers(b, Collective::AllReduce),
                         rag = numbers(rb, Collective::AllGather),
                         rrs = numbers(rb, Collective::ReduceScatter),
                         rar = numbers(rb, Collective::AllReduce);

  std::string out;
  llvm::raw_string_ostream os(out);
  if (opts.format == "json") {
    analysis::printBoundJson(os, t, b, rb, bytes, opts.scenario,
                             opts.capacity);
  } else {
    os << "topology " << t.name();
    if (!opts.scenario.empty())
      os << " (scenario " << opts.scenario << ")";
    os << llvm::formatv(
        ": {0} GPUs, {1} vertices, {2} arcs; {3} capacities in units of {4} "
        "GB/s\n",
        b.numRanks(), b.graph.numVertices, b.graph.arcs.size(), opts.capacity,
        plainNumber(static_cast<double>(b.graph.quantumBytesPerSec) / 1e9));
    os << llvm::formatv("size {0} ({1} B): AG output, RS input, AR buffer\n",
                        sizeText(bytes), static_cast<int64_t>(bytes));
    printDirection(os, t, b, "allgather", b.allgather, ag, false);
    printDirection(os, t, b, "reducescatter", b.reduceScatter, rs, true);
    os << llvm::formatv("allreduce: lambda* = {0} s/GB (reduce-scatter + "
                        "allgather)\n",
                        b.allreduceLambda.str());
    os << "  bound: time " << timeText(ar.time)
       << llvm::formatv("  algbw {0:F2} GB/s  busbw {1:F2} GB/s\n",
                        ar.algbw / 1e9, ar.busbw / 1e9);
    // Beside the physical bound above (on --capacity rates, every path).
    os << llvm::formatv("realizable bound (the paths the runtime gives each "
                        "message, effective rates; {0} vertices, {1} "
                        "arcs):\n",
                        rb.graph.numVertices, rb.graph.arcs.size());
    printRealizable(os, t, rb, "allgather", &rb.allgather, rag, ag,
                    opts.capacity);
    printRealizable(os, t, rb, "reducescatter", &rb.reduceScatter, rrs, rs,
                    opts.capacity);
    printRealizable(os, t, rb, "allreduce", nullptr, rar, ar, opts.capacity);
  }
  os.flush();
  return writeOutputFile("-", out);
}

void registerBoundCommand(CLI::App &app) {
  auto opts = std::make_shared<GraphOptions>();
  CLI::App *cmd = app.add_subcommand(
      "bound", "Exact throughput bound (cut bound, ForestColl) of allgather, "
               "reduce-scatter and allreduce");
  addGraphOptions(cmd, *opts);
  cmd->callback([opts] { finishCommand(runBound(*opts)); });
}

static CommandRegistration reg("bound", registerBoundCommand);

} // namespace

} // namespace topocc::driver
