//===- compiler/lowerings/Trees.cpp - --algorithm trees -------------------===//
//
// ForestColl spanning trees (compiler/algorithms/ForestColl.h): all-gather
// broadcasts down out-trees of the topology; reduce-scatter reduces up
// out-trees of the reversed graph used as in-trees; all-reduce does both,
// with one packing for both when every link is symmetric. The packing is
// its own timed step (build-trees); compiler/passes/LowerTrees.h lowers
// the trees to chains.
//
//===----------------------------------------------------------------------===//

#include "compiler/lowerings/Lowering.h"

#include "compiler/algorithms/ForestColl.h"
#include "compiler/algorithms/RouteGraph.h"
#include "compiler/analysis/Bound.h"
#include "compiler/passes/LowerTrees.h"
#include "support/Diagnostics.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <map>

namespace topocc::lowerings {

namespace {

/// Whether every arc of `g` has a reverse arc of the same capacity (then the
/// allgather out-trees, reversed, are reduce in-trees with the same units).
bool isSymmetric(const analysis::BoundGraph &g) {
  std::map<std::pair<int, int>, int64_t> cap;
  for (const analysis::BoundGraph::Arc &a : g.arcs)
    cap[{a.from, a.to}] += a.cap;
  for (const auto &[arc, c] : cap) {
    auto it = cap.find({arc.second, arc.first});
    if (it == cap.end() || it->second != c)
      return false;
  }
  return true;
}

class TreesLowering final : public Lowering {
public:
  using Lowering::Lowering;

  llvm::StringRef passName() const override { return "lower-trees"; }
  llvm::StringRef prepareStep() const override { return "build-trees"; }
  /// MSCCL XML's limits are met by merging roles across trees.
  bool mayCoalesce() const override { return req.target.maxChannels > 0; }

  /// The bound, the units, switch splitting and the packing per
  /// orientation.
  llvm::Error prepare() override {
    if (!topology)
      return makeUserError("--algorithm trees needs the topology: the trees "
                           "are packed on its links");
    if (!req.ringOrder.empty() || req.rankOrder)
      return makeUserError("--ring applies to --algorithm ring, not trees");
    if (req.channels != 1)
      return makeUserError("--channels applies to the ring algorithms; "
                           "--algorithm trees gives every tree chain its own "
                           "channel");
    auto g = packingGraph();
    if (!g)
      return g.takeError();
    algorithms::ForestOptions fo;
    fo.treesPerRoot = req.treesPerRoot.value_or(0);
    const ir::Collective c = req.collective;
    const int32_t n = topology->numRanks();
    passes::TreeLoweringOptions &lo = lowering;
    lo.collective = c;
    lo.numRanks = n;
    lo.chunks = req.chunks;
    lo.inplace = req.inplace;
    lo.name = req.name;
    lo.maxChannels = req.target.maxChannels;
    lo.channelsMayOverflow = mayCoalesce();
    const bool oneForest = c == ir::Collective::AllReduce && isSymmetric(*g);
    // Power-of-two units per root, so that the file serves power-of-two
    // sizes (algorithms::roundTreeShares).
    algorithms::ShareRoundingOptions ro;
    ro.maxUnitsPerRoot = passes::kTreeMaxChunksPerLoop /
                         (int64_t(n) * std::max<int32_t>(req.chunks, 1));
    ro.unitsPerStep = passes::kTreeMaxUnitsPerStep;
    if (c != ir::Collective::ReduceScatter) {
      fo.reversed = false;
      auto f = algorithms::buildForest(*g, fo);
      if (!f)
        return f.takeError();
      algorithms::RoundedShares shares = algorithms::roundTreeShares(*f, *g, ro);
      lo.broadcast = passes::forestTreeSet(*f, n, shares);
      describe(*f, shares,
               oneForest ? "reduce and broadcast trees" : "broadcast trees");
      if (oneForest) {
        lo.reduce = lo.broadcast;
        perByte *= 2;
        boundPerByte *= 2;
      }
    }
    if (c != ir::Collective::AllGather && !oneForest) {
      fo.reversed = true;
      auto f = algorithms::buildForest(*g, fo);
      if (!f)
        return f.takeError();
      algorithms::RoundedShares shares = algorithms::roundTreeShares(*f, *g, ro);
      lo.reduce = passes::forestTreeSet(*f, n, shares);
      describe(*f, shares, "reduce trees");
    }
    return llvm::Error::success();
  }

  llvm::Expected<Lowered> lower() override {
    const int32_t n = lowering.numRanks;
    passes::TreeLoweringInfo info;
    auto lowered = passes::lowerTrees(lowering, &info);
    if (!lowered)
      return lowered.takeError();
    Lowered out;
    out.schedule = std::move(*lowered);
    // Bandwidth term only: (M/N) U/k per phase against (M/N) lambda*.
    double algbw = n / perByte * 1e9, bound = n / boundPerByte * 1e9;
    out.summary =
        llvm::formatv("{0}; {1} chains on {2} channel{3}, {4} chunk{5} per "
                      "tree; fluid packing algbw {6:F2} GB/s (the packing's "
                      "value, not a prediction), {7:F2}% of the {9} {8:F2} "
                      "GB/s",
                      llvm::join(phases, "; "), info.chains, info.channels,
                      info.channels == 1 ? "" : "s", req.chunks,
                      req.chunks == 1 ? "" : "s", algbw / 1e9,
                      100 * algbw / bound, bound / 1e9, boundName)
            .str();
    context = llvm::formatv("--algorithm trees ({0} unit{1} per root, {2} "
                            "chains on {3} channel{4}, {5} chunk{6} per "
                            "tree): ",
                            info.unitsPerRoot,
                            info.unitsPerRoot == 1 ? "" : "s", info.chains,
                            info.channels, info.channels == 1 ? "" : "s",
                            req.chunks, req.chunks == 1 ? "" : "s")
                  .str();
    return out;
  }

  std::string errorContext() const override { return context; }

private:
  /// The graph the trees are packed on (--tree-graph): the physical links
  /// at raw rates, or the rank rate graph of the runtime's routes at
  /// effective rates (algorithms::buildRouteGraph).
  llvm::Expected<analysis::BoundGraph> packingGraph() {
    if (req.treeGraph == CompileRequest::TreeGraph::Physical)
      return analysis::buildBoundGraph(*topology, analysis::CapacityKind::Raw);
    boundName = "route graph's bound";
    analysis::LinkModel links(*topology);
    algorithms::RouteGraphOptions o;
    o.allGather = req.collective != ir::Collective::ReduceScatter;
    o.reduceScatter = req.collective != ir::Collective::AllGather;
    auto rg = algorithms::buildRouteGraph(*topology, links, o);
    if (!rg)
      return rg.takeError();
    return std::move(rg->graph);
  }

  /// One phase's line of the summary, and its fluid time per byte (with
  /// the rounded shares' loss).
  void describe(const algorithms::Forest &f,
                const algorithms::RoundedShares &shares,
                llvm::StringRef what) {
    perByte += f.u.value() / f.k * (1 + shares.loss);
    boundPerByte += f.bound.lambda.value();
    std::string units =
        shares.unitsPerRoot == f.k
            ? std::string()
            : llvm::formatv(" (shares in {0} units per root, {1:F2}% "
                            "slower)",
                            shares.unitsPerRoot, 100 * shares.loss)
                  .str();
    phases.push_back(llvm::formatv("{0}: k = {1}{2}, {3} trees, height max "
                                   "{4} mean {5:F2}",
                                   what, f.k, units, f.trees.trees.size(),
                                   f.trees.maxHeight, f.trees.meanHeight)
                         .str());
  }

  passes::TreeLoweringOptions lowering;
  std::vector<std::string> phases; ///< one description per packing
  /// Sums over the phases of U/k and of lambda* (s/GB per rank's byte).
  double perByte = 0, boundPerByte = 0;
  std::string context;
  /// What the packing's value is compared with in the summary.
  std::string boundName = "physical bound";
};

} // namespace

std::unique_ptr<Lowering> makeTreesLowering(const LoweringInput &in) {
  return std::make_unique<TreesLowering>(in);
}

/// auto builds trees for at most this many ranks. Beyond it the forest's
/// switch splitting and packing take minutes (128 ranks on 16 rail-optimised
/// A100 boxes: about 60 s per packing, three packings per auto), and on
/// every library topology above 32 ranks the rings or the hier-ring were
/// faster anyway (docs/benchmarks/quality.md); `--algorithm trees` still
/// builds them.
constexpr int kAutoTreesMaxRanks = 64;
/// Where GPUs relay (a torus, a mesh: few pairs have a route) the forest is
/// quicker to build (the graph has no switches to split; 2.6 s for a
/// 4x4x8 torus) and the trees are often the only schedule that applies (a
/// mesh of odd size has no ring): auto builds them up to this many ranks
/// (a 16 x 16 mesh: 26 s).
constexpr int kAutoRelayTreesMaxRanks = 256;
/// auto packs trees on the routes' rate graph up to this many ranks: its
/// linear program has one column per rank pair in a dense tableau.
constexpr int kAutoRouteTreesMaxRanks = 32;

llvm::Expected<AutoCandidate> TreesLoweringCandidate(const AutoContext &ctx) {
  AutoCandidate c;
  const bool relay = ctx.topology.numRanks() > kAutoTreesMaxRanks &&
                     topo::routeCoverage(ctx.topology).unrouted > 0;
  const int maxRanks = relay ? kAutoRelayTreesMaxRanks : kAutoTreesMaxRanks;
  if (ctx.topology.numRanks() > maxRanks) {
    c.lines.push_back(llvm::formatv("auto: trees not considered above {0} "
                                    "ranks{1} (building the forest takes "
                                    "minutes at this scale; --algorithm "
                                    "trees builds it)",
                                    maxRanks, relay ? " where GPUs relay" : "")
                          .str());
    return c;
  }
  c.request = candidateRequest(ctx.request, Algorithm::Trees);
  if (!ctx.request.treesPerRoot) {
    // The optimal k may need more chains than the channels allow: fall
    // back to one tree per root (the best packing with k = 1).
    c.fallback = c.request;
    c.fallback->treesPerRoot = 1;
    c.fallbackWhat = "trees with the optimal k";
    c.fallbackHow = "trying --trees-per-root 1";
    // The optimum's k is the fluid model's; the runtime pays per tree
    // (threadblocks, steps), so small k and finer chunks are priced too.
    std::vector<int64_t> ks{1};
    if (ctx.topology.numRanks() <= 32)
      ks = {1, 2, 4};
    // Trees packed on the routes' rate graph load the links as packed. On
    // one node they are priced beside the physical packing's; across nodes
    // they were slower than the defaults on every library row (deeper
    // trees) and their LP takes about a second per variant at 32 ranks
    // (docs/Algorithms-trees.md, "Trees on the runtime's routes").
    std::vector<CompileRequest::TreeGraph> graphs{
        CompileRequest::TreeGraph::Physical};
    if (ctx.topology.numNodes() == 1 &&
        ctx.topology.numRanks() <= kAutoRouteTreesMaxRanks)
      graphs.push_back(CompileRequest::TreeGraph::Routes);
    for (CompileRequest::TreeGraph graph : graphs)
      for (int64_t k : ks)
        for (int32_t chunks : {1, 2}) {
          CompileRequest v = *c.request;
          v.treesPerRoot = k;
          v.chunks = chunks;
          v.treeGraph = graph;
          c.variants.push_back(
              {llvm::formatv("{0}--trees-per-root {1} --chunks {2}",
                             graph == CompileRequest::TreeGraph::Routes
                                 ? "--tree-graph routes "
                                 : "",
                             k, chunks)
                   .str(),
               v});
        }
  }
  return c;
}

} // namespace topocc::lowerings
