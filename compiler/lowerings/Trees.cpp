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
#include "compiler/algorithms/NodeTrees.h"
#include "compiler/algorithms/RouteGraph.h"
#include "compiler/analysis/Bound.h"
#include "compiler/analysis/NetRoutes.h"
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

/// Why `t`, whose nodes' ranks are `nodes`, has no hierarchical trees
/// (worded to follow "--tree-graph hier "); empty when it has.
std::string whyNoHierTrees(const topo::Topology &t,
                           const std::vector<std::vector<ir::RankId>> &nodes) {
  auto nodeName = [&](ir::RankId r) { return t.nodes()[t.nodeOfRank(r)].name; };
  if (nodes.size() < 2)
    return "joins the trees of one node across nodes; the topology has one "
           "node with GPUs (use --tree-graph routes)";
  for (const std::vector<ir::RankId> &node : nodes)
    if (node.size() != nodes[0].size())
      return llvm::formatv("needs nodes of the same size: {0} has {1} GPUs, "
                           "{2} has {3}",
                           nodeName(node[0]), node.size(),
                           nodeName(nodes[0][0]), nodes[0].size())
          .str();
  if (nodes[0].size() < 2)
    return "needs at least 2 GPUs per node; use --algorithm ring or trees";
  return "";
}

/// `local` (trees on local GPU indices) joined across `nodes`
/// (algorithms::joinedParents): each local tree once per node, rooted at
/// that node's copy of its root, with the same unit range.
passes::TreeSet joinNodeTrees(const passes::TreeSet &local,
                              const std::vector<std::vector<ir::RankId>> &nodes,
                              int32_t numRanks) {
  passes::TreeSet out;
  out.unitsPerRoot = local.unitsPerRoot;
  for (size_t b = 0; b < nodes.size(); ++b)
    for (const passes::LoweringTree &lt : local.trees) {
      std::vector<int> localParent;
      for (ir::RankId p : lt.parent)
        localParent.push_back(p == ir::kNone ? -1 : p);
      passes::LoweringTree t;
      t.root = nodes[b][lt.root];
      t.firstUnit = lt.firstUnit;
      t.units = lt.units;
      for (int p : algorithms::joinedParents(
               localParent, lt.root, static_cast<int>(b), nodes, numRanks))
        t.parent.push_back(p < 0 ? ir::kNone : p);
      out.trees.push_back(std::move(t));
    }
  return out;
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
    const ir::Collective c = req.collective;
    const int32_t n = topology->numRanks();
    const bool joined = req.treeGraph == CompileRequest::TreeGraph::Hier;
    if (joined) {
      nodes = nodeRanks(*topology);
      if (std::string why = whyNoHierTrees(*topology, nodes); !why.empty())
        return makeUserError("--tree-graph hier " + why);
      analysis::LinkModel links(*topology);
      if (algorithms::oneSwitchLevel(links, nodes[0]))
        return prepareStars();
    }
    auto g = packingGraph();
    if (!g)
      return g.takeError();
    // The trees are packed on one node's GPUs (local indices) when joined.
    const int32_t packed = joined ? static_cast<int32_t>(nodes[0].size()) : n;
    auto treeSet = [&](const algorithms::Forest &f,
                       const algorithms::RoundedShares &shares) {
      passes::TreeSet set = passes::forestTreeSet(f, packed, shares);
      return joined ? joinNodeTrees(set, nodes, n) : set;
    };
    algorithms::ForestOptions fo;
    fo.treesPerRoot = req.treesPerRoot.value_or(0);
    passes::TreeLoweringOptions &lo = lowering;
    setLoweringOptions();
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
      lo.broadcast = treeSet(*f, shares);
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
      lo.reduce = treeSet(*f, shares);
      describe(*f, shares, "reduce trees");
    }
    return llvm::Error::success();
  }

  llvm::Expected<Lowered> lower() override {
    // The packing's ranks: one node's when joined (a node tree carries its
    // root's units in every node, so the joined trees' algbw is the node
    // packing's).
    const int32_t n = nodes.empty() ? lowering.numRanks
                                    : static_cast<int32_t>(nodes[0].size());
    passes::TreeLoweringInfo info;
    auto lowered = passes::lowerTrees(lowering, &info);
    if (!lowered)
      return lowered.takeError();
    Lowered out;
    out.schedule = std::move(*lowered);
    // Bandwidth term only: (M/N) U/k per phase against (M/N) lambda*.
    // Stars are not packed: no fluid value.
    std::string fluid;
    if (perByte > 0) {
      double algbw = n / perByte * 1e9, bound = n / boundPerByte * 1e9;
      fluid = llvm::formatv("; fluid packing algbw {0:F2} GB/s (the "
                            "packing's value, not a prediction), {1:F2}% of "
                            "the {3} {2:F2} GB/s",
                            algbw / 1e9, 100 * algbw / bound, bound / 1e9,
                            boundName)
                  .str();
    }
    if (!nodes.empty())
      phases.push_back(llvm::formatv("joined across {0} nodes by a tree of "
                                     "fan-out {1} per local GPU",
                                     nodes.size(), algorithms::kNodeFanout)
                           .str());
    out.summary =
        llvm::formatv("{0}; {1} chains on {2} channel{3}, {4} chunk{5} per "
                      "tree{6}",
                      llvm::join(phases, "; "), info.chains, info.channels,
                      info.channels == 1 ? "" : "s", req.chunks,
                      req.chunks == 1 ? "" : "s", fluid)
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
    if (req.treeGraph == CompileRequest::TreeGraph::Hier) {
      boundName = "node route graph's bound";
      o.ranks.assign(nodes[0].begin(), nodes[0].end());
      o.loadPerRate = joinLoad(links);
    }
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

  /// What the messages that join the nodes (joinNodeTrees) put on the
  /// links per unit of the node trees' rate x: a node tree carries the
  /// units of its local root in every node, so x is N times the rate of
  /// one root's units, and each GPU of node 0 sends those to its N - 1
  /// peers and receives theirs (the runtime's routes, NICs included).
  std::vector<std::pair<int, double>> joinLoad(analysis::LinkModel &links) {
    analysis::NcclNetRoutes net(*topology);
    const double perRate = 1.0 / static_cast<double>(nodes.size());
    std::vector<std::pair<int, double>> load;
    for (size_t l = 0; l < nodes[0].size(); ++l)
      for (size_t c = 1; c < nodes.size(); ++c)
        for (auto [a, b] : {std::pair(nodes[0][l], nodes[c][l]),
                            std::pair(nodes[c][l], nodes[0][l])}) {
          analysis::PathFlow f = analysis::runtimeRankFlow(links, &net, a, b);
          for (auto [res, share] : f.res)
            load.emplace_back(res, share * perRate);
        }
    return load;
  }

  void setLoweringOptions() {
    passes::TreeLoweringOptions &lo = lowering;
    lo.collective = req.collective;
    lo.numRanks = topology->numRanks();
    lo.chunks = req.chunks;
    lo.inplace = req.inplace;
    lo.name = req.name;
    lo.maxChannels = req.target.maxChannels;
    lo.channelsMayOverflow = mayCoalesce();
  }

  /// --tree-graph hier on nodes of one switch level: a star per root in
  /// every node, joined across the nodes; one set serves both phases.
  llvm::Error prepareStars() {
    if (req.treesPerRoot && *req.treesPerRoot != 1)
      return makeUserError(llvm::formatv(
          "--tree-graph hier on {0}: its nodes' GPUs all meet at one switch "
          "level, where each root's tree in a node is a star (one tree per "
          "root); --trees-per-root {1} does not apply",
          topology->name(), *req.treesPerRoot));
    setLoweringOptions();
    const int32_t n = topology->numRanks();
    passes::TreeSet set = joinNodeTrees(
        passes::starTreeSet(static_cast<int32_t>(nodes[0].size())), nodes, n);
    if (req.collective != ir::Collective::ReduceScatter)
      lowering.broadcast = set;
    if (req.collective != ir::Collective::AllGather)
      lowering.reduce = set;
    phases.push_back(llvm::formatv("a star per root in each node ({0} GPUs "
                                   "at one switch level)",
                                   nodes[0].size())
                         .str());
    return llvm::Error::success();
  }

  passes::TreeLoweringOptions lowering;
  /// --tree-graph hier: the ranks of each node by local index.
  std::vector<std::vector<ir::RankId>> nodes;
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

/// Hierarchical trees (--tree-graph hier) across nodes of the same size,
/// each with at least 2 GPUs: stars per node where its GPUs meet at one
/// switch level (chunking is all there is to choose), else the node route
/// graph's packing with k = 1, 2 and 4 (the runtime's limits on
/// threadblocks favour small k in MSCCL XML, the plan format larger ones).
void addHierVariants(const AutoContext &ctx, AutoCandidate &c) {
  const std::vector<std::vector<ir::RankId>> nodes = nodeRanks(ctx.topology);
  if (!whyNoHierTrees(ctx.topology, nodes).empty())
    return;
  analysis::LinkModel links(ctx.topology);
  const bool stars = algorithms::oneSwitchLevel(links, nodes[0]);
  for (int64_t k :
       stars ? std::vector<int64_t>{0} : std::vector<int64_t>{1, 2, 4})
    for (int32_t chunks : {1, 2}) {
      if (!stars && chunks > 1)
        continue; // the runtime pipelines by its slices
      CompileRequest v = *c.request;
      v.treeGraph = CompileRequest::TreeGraph::Hier;
      v.chunks = chunks;
      std::string flags = "--tree-graph hier";
      if (k > 0) {
        v.treesPerRoot = k;
        flags += " --trees-per-root " + std::to_string(k);
      }
      c.variants.push_back({flags + " --chunks " + std::to_string(chunks), v});
    }
}

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
    addHierVariants(ctx, c);
  }
  return c;
}

} // namespace topocc::lowerings
