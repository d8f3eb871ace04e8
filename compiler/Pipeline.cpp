//===- compiler/Pipeline.cpp - The ordered pass pipeline ------------------===//
//
// Modelled on Halide's lower_impl: one function lists every pass, one line
// each, with a comment saying why it is there.
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipeline.h"

#include "compiler/algorithms/CerarPolicy.h"
#include "compiler/algorithms/CerarVerify.h"
#include "compiler/algorithms/ForestColl.h"
#include "compiler/algorithms/RingSearch.h"
#include "compiler/analysis/Bound.h"
#include "compiler/analysis/ComputeModel.h"
#include "compiler/passes/AssignChannels.h"
#include "compiler/passes/AssignThreadblocks.h"
#include "compiler/passes/Fuse.h"
#include "compiler/passes/LegalizeDependencies.h"
#include "compiler/passes/LowerCerar.h"
#include "compiler/passes/LowerHierCerar.h"
#include "compiler/passes/LowerHierarchicalRing.h"
#include "compiler/passes/LowerRing.h"
#include "compiler/passes/LowerTrees.h"
#include "compiler/passes/SplitChannels.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "support/Diagnostics.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>

namespace topocc {

using ir::Schedule;
using ir::Stage;

void PassLogger::afterPass(llvm::StringRef pass, const Schedule &s) {
  if (!printAfterAll || !irOut)
    return;
  *irOut << "// *** IR Dump After " << pass << " ***\n";
  ir::printSchedule(s, *irOut);
}

void PassLogger::recordTime(llvm::StringRef pass, double seconds) {
  if (timePasses)
    times.emplace_back(pass.str(), seconds);
}

void PassLogger::printTimings(llvm::raw_ostream &os) const {
  if (!timePasses)
    return;
  os << "===-- pass execution timing report --===\n";
  os << "  wall time (s)  pass\n";
  double total = 0;
  for (const auto &[name, secs] : times) {
    os << llvm::formatv("  {0,12:f6}  {1}\n", secs, name);
    total += secs;
  }
  os << llvm::formatv("  {0,12:f6}  total\n", total);
}

namespace {

/// An internal error: `pass` turned `before` (absent for a lowering) into a
/// schedule the verifier rejects.
llvm::Error passBroke(llvm::StringRef pass,
                      const std::optional<Schedule> &before,
                      const Schedule &after, llvm::Error problems) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "the schedule is invalid after pass '" << pass
     << "' (a bug in topocc):\n"
     << llvm::toString(std::move(problems)) << '\n';
  if (before) {
    os << "--- IR before " << pass << " ---\n";
    ir::printSchedule(*before, os);
  }
  os << "--- IR after " << pass << " ---\n";
  ir::printSchedule(after, os);
  os.flush();
  return makeInternalError(text);
}

/// Runs one transform on `s`: times it, logs the IR, and verifies the result
/// when `verify` (keeping a copy of the input for the report).
llvm::Error runPass(llvm::StringRef name, Schedule &s, PassLogger &log,
                    bool verify,
                    const std::function<llvm::Error(Schedule &)> &pass,
                    const ir::VerifyOptions &vopts = {}) {
  std::optional<Schedule> before;
  if (verify)
    before = s;
  auto start = std::chrono::steady_clock::now();
  llvm::Error err = pass(s);
  log.recordTime(name, std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - start)
                           .count());
  if (err)
    return err;
  log.afterPass(name, s);
  if (verify)
    if (llvm::Error problems = ir::verifySchedule(s, vopts))
      return passBroke(name, before, s, std::move(problems));
  return llvm::Error::success();
}

llvm::Error checkRequest(const CompileRequest &req) {
  if (auto alg = parseAlgorithm(req.algorithm); !alg)
    return alg.takeError();
  if (req.proto != "Simple" && req.proto != "LL" && req.proto != "LL128")
    return makeUserError("unknown --proto '" + req.proto +
                         "'; expected 'Simple', 'LL' or 'LL128'");
  if (req.maxSteps < 1)
    return makeUserError(
        llvm::formatv("--max-steps must be at least 1, got {0}", req.maxSteps));
  return llvm::Error::success();
}

const llvm::StringRef kPassNames[] = {"fuse", "assign-channels",
                                     "split-channels", "assign-threadblocks",
                                     "legalize-dependencies"};

/// The transform registered under `name` (one of kPassNames).
/// With `coalesce` (tree schedules for MSCCL XML), the channel limit is
/// assign-threadblocks' alone: it merges the trees' roles to fit it.
std::function<llvm::Error(Schedule &)> passNamed(llvm::StringRef name,
                                                 const CompileRequest &req,
                                                 bool coalesce = false,
                                                 passes::ThreadblockInfo
                                                     *tbInfo = nullptr) {
  passes::ThreadblockLimits limits;
  limits.maxSteps = req.maxSteps;
  limits.smCount = std::max(req.maxThreadblocksPerRank, 0);
  limits.maxChannels = std::max(req.maxChannels, 0);
  limits.coalesce = coalesce;
  if (req.maxChannels <= 0) {
    // Plan JSON and the IR (no channel limit): MSCCL XML's encoding limits
    // (8-bit dependency targets, 1024 threadblocks) do not apply.
    limits.maxDepTarget = std::numeric_limits<int32_t>::max();
    limits.maxThreadblocks = std::numeric_limits<int32_t>::max();
  }
  if (name == "fuse")
    return [](Schedule &s) {
      passes::fuse(s);
      return llvm::Error::success();
    };
  const int32_t maxChannels = req.maxChannels > 0 && !coalesce
                                  ? req.maxChannels
                                  : std::numeric_limits<int32_t>::max();
  if (name == "assign-channels")
    return [maxChannels](Schedule &s) {
      return passes::assignChannels(s, maxChannels);
    };
  if (name == "split-channels")
    return [maxSteps = req.maxSteps, maxChannels](Schedule &s) {
      return passes::splitChannels(s, maxSteps, maxChannels);
    };
  if (name == "assign-threadblocks")
    return
        [limits, tbInfo](Schedule &s) {
          return passes::assignThreadblocks(s, limits, tbInfo);
        };
  assert(name == "legalize-dependencies" && "unknown pass");
  return [](Schedule &s) {
    passes::legalizeDependencies(s);
    return llvm::Error::success();
  };
}

/// The ranks of each node of `t` with GPUs, by local GPU index (device
/// declaration order inside the node).
std::vector<std::vector<ir::RankId>> nodeRanks(const topo::Topology &t) {
  std::vector<std::vector<ir::RankId>> nodes;
  for (const topo::Node &node : t.nodes()) {
    std::vector<ir::RankId> ranks;
    for (int d : node.devices) {
      const topo::Device &dev = t.device(d);
      if (dev.kind == topo::DeviceKind::Gpu && dev.rank >= 0)
        ranks.push_back(dev.rank);
    }
    if (!ranks.empty())
      nodes.push_back(std::move(ranks));
  }
  return nodes;
}

/// A lowering's product: the schedule and what it was built from.
struct Lowered {
  Schedule schedule;
  std::vector<ChannelRing> rings;
  std::vector<analysis::RingChannel> searched;
  std::string source;
  std::vector<std::string> explain;
  /// CERAR: the code the schedule implements (checked again at the end).
  std::optional<cerar::Design> design;
  std::vector<int> cerarRing;
  /// hier-cerar: the nodes and seams the code runs on (verified with
  /// cerar::verifyHierCerarSchedule instead of the single-ring check).
  std::optional<cerar::HierCerarLayout> hierLayout;
};

/// The ring algorithm: explicit order, rank order, or the ring search's
/// rings with their shares as chunk counts.
llvm::Expected<Lowered> lowerRingAlgorithm(const topo::Topology *t,
                                           int32_t numRanks,
                                           const CompileRequest &req) {
  Lowered out;
  passes::RingOptions ring{req.collective, numRanks,      req.channels,
                           req.chunks,     req.ringOrder, req.inplace,
                           req.name};
  const bool search = t && req.ringOrder.empty() && !req.rankOrder;
  if (!search && req.channels == 0)
    return makeUserError(
        "--channels auto lets the ring search choose the rings; give a number "
        "of channels with --ring or without a topology");
  if (search) {
    algorithms::RingSearchOptions so;
    so.collective = req.collective;
    so.bytes = req.bytes;
    so.channels = req.channels;
    so.maxChannels = 32; // MSCCL channels
    analysis::LinkModel m(*t);
    auto found = algorithms::searchRings(*t, m, so);
    if (!found)
      return found.takeError();
    std::vector<double> shares;
    for (const analysis::RingChannel &rc : found->rings) {
      ring.channelOrders.emplace_back(rc.order.begin(), rc.order.end());
      shares.push_back(rc.share);
    }
    ring.channels = static_cast<int32_t>(found->rings.size());
    ring.channelChunks = passes::chunksForShares(shares, req.chunks);
    out.searched = found->rings;
    out.source = "ring search (" + found->method + ")";
  } else {
    out.source = req.ringOrder.empty() ? "rank order" : "--ring";
  }
  auto lowered = passes::lowerRing(ring);
  if (!lowered)
    return lowered.takeError();
  out.schedule = std::move(*lowered);
  for (int32_t c = 0; c < ring.channels; ++c) {
    ChannelRing cr;
    if (!ring.channelOrders.empty())
      cr.order = ring.channelOrders[c];
    else if (!ring.ringOrder.empty())
      cr.order = ring.ringOrder;
    else
      for (int32_t r = 0; r < numRanks; ++r)
        cr.order.push_back(r);
    cr.chunks = ring.channelChunks.empty() ? req.chunks : ring.channelChunks[c];
    out.rings.push_back(std::move(cr));
  }
  return out;
}

/// Intra-node ring order (local indices) of the hierarchical ring: the best
/// single ring over node 0's GPUs, else 0..G-1.
std::vector<int32_t> hierLocalOrder(const topo::Topology &t,
                                    const std::vector<ir::RankId> &node0,
                                    ir::Collective c, double bytes) {
  std::vector<int32_t> order;
  algorithms::RingSearchOptions so;
  so.collective = c;
  so.bytes = bytes;
  so.channels = 1;
  analysis::LinkModel m(t);
  std::vector<int> ranks(node0.begin(), node0.end());
  if (ranks.size() >= 2) {
    auto found = algorithms::searchGroupRing(t, m, ranks, so);
    if (!found)
      llvm::consumeError(found.takeError());
    else
      for (int r : found->order)
        if (auto it = llvm::find(node0, r); it != node0.end())
          order.push_back(static_cast<int32_t>(it - node0.begin()));
  }
  if (order.size() != node0.size()) {
    order.clear();
    for (size_t l = 0; l < node0.size(); ++l)
      order.push_back(static_cast<int32_t>(l));
  }
  return order;
}

llvm::Expected<Lowered> lowerHierAlgorithm(const topo::Topology *t,
                                           const CompileRequest &req) {
  if (!t)
    return makeUserError("--algorithm hier-ring needs the topology's nodes");
  if (req.channels == 0)
    return makeUserError("--channels auto applies to --algorithm ring; give "
                         "hier-ring a number of channels");
  if (!req.ringOrder.empty() || req.rankOrder)
    return makeUserError("--ring applies to --algorithm ring, not hier-ring");
  passes::HierRingOptions o;
  o.collective = req.collective;
  o.numRanks = t->numRanks();
  o.nodes = nodeRanks(*t);
  if (o.nodes.size() >= 2 && req.collective == ir::Collective::AllReduce)
    o.localOrder = hierLocalOrder(*t, o.nodes[0], req.collective, req.bytes);
  o.channels = req.channels;
  o.chunks = req.chunks;
  o.inplace = req.inplace;
  o.name = req.name;
  auto lowered = passes::lowerHierarchicalRing(o);
  if (!lowered)
    return lowered.takeError();
  Lowered out;
  out.schedule = std::move(*lowered);
  std::vector<std::string> order;
  for (int32_t l : o.localOrder)
    order.push_back(std::to_string(l));
  out.source = llvm::formatv("{0} nodes x {1} GPUs, intra-node order {2}, "
                             "one inter-node ring per rail",
                             o.nodes.size(), o.nodes[0].size(),
                             llvm::join(order, ","))
                   .str();
  return out;
}

} // namespace

passes::TreeSet forestTreeSet(const algorithms::Forest &f, int32_t numRanks) {
  passes::TreeSet set;
  set.unitsPerRoot = static_cast<int32_t>(f.k);
  std::vector<int32_t> next(numRanks, 0);
  for (const algorithms::PackedTree &pt : f.trees.trees) {
    passes::LoweringTree lt;
    lt.root = pt.root;
    lt.units = static_cast<int32_t>(pt.mult);
    lt.firstUnit = next[pt.root];
    next[pt.root] += lt.units;
    for (int p : pt.parent)
      lt.parent.push_back(p < 0 ? ir::kNone : p);
    set.trees.push_back(std::move(lt));
  }
  return set;
}

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

/// The trees algorithm: ForestColl spanning trees (allgather: out-trees of
/// the topology; reduce-scatter: out-trees of the reversed graph used as
/// in-trees; allreduce: reduce up in-trees, broadcast down out-trees, one
/// packing for both when every link is symmetric), lowered to chains.
struct TreePlan {
  passes::TreeLoweringOptions lowering;
  std::vector<std::string> phases; ///< one description per packing
  double perByte = 0, boundPerByte = 0; ///< sum over phases of U/k, lambda*
};

/// The trees of the request (bound, units, switch splitting, packing per
/// orientation): what build-trees does before lower-trees.
llvm::Expected<TreePlan> buildTrees(const topo::Topology *t,
                                    const CompileRequest &req) {
  if (!t)
    return makeUserError("--algorithm trees needs the topology: the trees "
                         "are packed on its links");
  if (!req.ringOrder.empty() || req.rankOrder)
    return makeUserError("--ring applies to --algorithm ring, not trees");
  if (req.channels != 1)
    return makeUserError("--channels applies to the ring algorithms; "
                         "--algorithm trees gives every tree chain its own "
                         "channel");
  if (req.treesPerRoot < 0 || req.treesPerRoot > 1000)
    return makeUserError(llvm::formatv(
        "--trees-per-root must be between 1 and 1000, got {0}",
        req.treesPerRoot));
  auto g = analysis::buildBoundGraph(*t, analysis::CapacityKind::Raw);
  if (!g)
    return g.takeError();
  algorithms::ForestOptions fo;
  fo.treesPerRoot = req.treesPerRoot;
  const ir::Collective c = req.collective;
  const int32_t n = t->numRanks();
  TreePlan plan;
  passes::TreeLoweringOptions &lo = plan.lowering;
  lo.collective = c;
  lo.numRanks = n;
  lo.chunks = req.chunks;
  lo.inplace = req.inplace;
  lo.name = req.name;
  lo.maxChannels = req.maxChannels;
  lo.channelsMayOverflow = req.maxChannels > 0; // coalescing fits them
  std::vector<std::string> &phases = plan.phases;
  double &perByte = plan.perByte, &boundPerByte = plan.boundPerByte;
  auto describe = [&](const algorithms::Forest &f, llvm::StringRef what) {
    perByte += f.u.value() / f.k;
    boundPerByte += f.bound.lambda.value();
    phases.push_back(llvm::formatv("{0}: k = {1}, {2} trees, height max {3} "
                                   "mean {4:F2}",
                                   what, f.k, f.trees.trees.size(),
                                   f.trees.maxHeight, f.trees.meanHeight)
                         .str());
  };
  const bool oneForest = c == ir::Collective::AllReduce && isSymmetric(*g);
  if (c != ir::Collective::ReduceScatter) {
    fo.reversed = false;
    auto f = algorithms::buildForest(*g, fo);
    if (!f)
      return f.takeError();
    lo.broadcast = forestTreeSet(*f, n);
    describe(*f, oneForest ? "reduce and broadcast trees" : "broadcast trees");
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
    lo.reduce = forestTreeSet(*f, n);
    describe(*f, "reduce trees");
  }
  return plan;
}

/// Lowers the trees of build-trees; `context` gets what the lowering chose
/// (for the errors of the later passes).
llvm::Expected<Lowered> lowerTreesAlgorithm(const TreePlan &plan,
                                            const CompileRequest &req,
                                            std::string &context) {
  const int32_t n = plan.lowering.numRanks;
  const double perByte = plan.perByte, boundPerByte = plan.boundPerByte;
  const std::vector<std::string> &phases = plan.phases;
  passes::TreeLoweringInfo info;
  auto lowered = passes::lowerTrees(plan.lowering, &info);
  if (!lowered)
    return lowered.takeError();
  Lowered out;
  out.schedule = std::move(*lowered);
  // Bandwidth term only: (M/N) U/k per phase against (M/N) lambda*.
  double algbw = n / perByte * 1e9, bound = n / boundPerByte * 1e9;
  out.source = llvm::formatv("{0}; {1} chains on {2} channel{3}, {4} "
                             "chunk{5} per tree; predicted algbw {6:F2} GB/s, "
                             "{7:F2}% of the bound {8:F2} GB/s",
                             llvm::join(phases, "; "), info.chains,
                             info.channels, info.channels == 1 ? "" : "s",
                             req.chunks, req.chunks == 1 ? "" : "s",
                             algbw / 1e9, 100 * algbw / bound, bound / 1e9)
                   .str();
  context = llvm::formatv("--algorithm trees ({0} unit{1} per root, {2} "
                          "chains on {3} channel{4}, {5} chunk{6} per tree): ",
                          info.unitsPerRoot, info.unitsPerRoot == 1 ? "" : "s",
                          info.chains, info.channels,
                          info.channels == 1 ? "" : "s", req.chunks,
                          req.chunks == 1 ? "" : "s")
                .str();
  return out;
}

/// The request checks and policy options CERAR and hier-cerar share: an
/// all-reduce, a known wire dtype, a tolerance, positive components.
llvm::Expected<cerar::PolicyOptions>
codedPolicyOptions(const CompileRequest &req, llvm::StringRef alg) {
  if (req.collective != ir::Collective::AllReduce)
    return makeUserError(llvm::formatv(
        "--algorithm {0} is a coded all-reduce; {1} has no CERAR form (use "
        "ring or trees)",
        alg, ir::collectiveName(req.collective)));
  auto wire = cerar::wireDtypeFromName(req.wireDtype);
  if (!wire)
    return makeUserError("unknown --wire-dtype '" + req.wireDtype +
                         "'; expected 'fp32', 'fp16' or 'bf16'");
  if (req.tolerance < 0 || !std::isfinite(req.tolerance))
    return makeUserError("--tolerance must be a non-negative number");
  if (req.components < 0)
    return makeUserError("--components must be positive");
  cerar::PolicyOptions p;
  p.tolerance = req.tolerance;
  p.wire = *wire;
  p.kappaMax = req.kappaMax;
  return p;
}

/// CERAR's policy and design for the request (--algorithm cerar: forced;
/// auto: the design is empty when the exact ring wins, with the reason).
llvm::Expected<cerar::CerarPlan> designCerar(const topo::Topology *t,
                                             const CompileRequest &req,
                                             bool force) {
  if (!t)
    return makeUserError("--algorithm cerar needs the topology: its "
                         "parameters follow the ring's bottleneck link");
  auto policy = codedPolicyOptions(req, "cerar");
  if (!policy)
    return policy.takeError();
  if (req.channels != 1)
    return makeUserError("--channels applies to the ring algorithms; CERAR "
                         "runs on one ring");
  if (req.chunks != 1)
    return makeUserError("--chunks applies to the ring and trees algorithms; "
                         "CERAR's messages are its components (--components)");
  cerar::CerarRequest cr;
  cr.bytes = req.bytes;
  cr.policy = *policy;
  cr.components = req.components;
  cr.force = force;
  cr.seamOffset = req.seamOffset;
  cr.inplace = req.inplace;
  if (req.rankOrder)
    for (int r = 0; r < t->numRanks(); ++r)
      cr.ringOrder.push_back(r);
  else
    cr.ringOrder.assign(req.ringOrder.begin(), req.ringOrder.end());
  return cerar::designCerarFor(*t, cr);
}

/// Lowers the design of `plan` on its ring (compiler/passes/LowerCerar.h).
llvm::Expected<Lowered> lowerCerarAlgorithm(const cerar::CerarPlan &plan,
                                            const CompileRequest &req) {
  const cerar::Design &d = *plan.design;
  passes::CerarLowerOptions lo;
  lo.design = d;
  lo.ringOrder.assign(plan.ringOrder.begin(), plan.ringOrder.end());
  lo.seamOffset = req.seamOffset;
  lo.inplace = req.inplace;
  lo.name = req.name;
  auto lowered = passes::lowerCerar(lo);
  if (!lowered)
    return lowered.takeError();
  Lowered out;
  out.schedule = std::move(*lowered);
  std::vector<std::string> order;
  for (int r : plan.ringOrder)
    order.push_back(std::to_string(r));
  out.source =
      llvm::formatv("CERAR c = {0} on {1} ranks ({2} construction, {3} "
                    "rounds), ring {4}, worst error operator norm {5:e}",
                    d.components, d.ranks, cerar::constructionName(
                                               d.construction),
                    d.rounds, llvm::join(order, ","), d.worstError)
          .str();
  out.explain.push_back("cerar: " + plan.decision.reason);
  out.design = d;
  out.cerarRing = plan.ringOrder;
  return out;
}

/// A hier-cerar plan: the nodes (topology order; rails in that node order),
/// the intra-node order of hier-ring, and the policy's code for the rails.
struct HierCerarPlanned {
  cerar::HierCerarPlan plan;
  std::vector<std::vector<ir::RankId>> nodes;
  std::vector<int32_t> localOrder;
};

/// Hierarchical CERAR's links, policy and code (--algorithm hier-cerar:
/// forced; auto: the design is empty when the policy keeps the exact rail
/// ring, with the reason).
llvm::Expected<HierCerarPlanned> designHierCerar(const topo::Topology *t,
                                                 const CompileRequest &req,
                                                 bool force) {
  if (!t)
    return makeUserError("--algorithm hier-cerar needs the topology's nodes");
  auto policy = codedPolicyOptions(req, "hier-cerar");
  if (!policy)
    return policy.takeError();
  if (!req.ringOrder.empty() || req.rankOrder)
    return makeUserError("--ring applies to --algorithm ring and cerar, not "
                         "hier-cerar (its rings are the nodes and rails)");
  if (req.channels != 1)
    return makeUserError("--channels applies to the ring algorithms; "
                         "hier-cerar runs one ring per node and per rail");
  if (req.chunks != 1)
    return makeUserError("--chunks applies to the ring and trees algorithms; "
                         "hier-cerar's messages are its components "
                         "(--components)");
  HierCerarPlanned out;
  out.nodes = nodeRanks(*t);
  if (out.nodes.size() < 2)
    return makeUserError(llvm::formatv(
        "--algorithm hier-cerar needs at least 2 nodes with GPUs, the "
        "topology has {0}; use --algorithm cerar",
        out.nodes.size()));
  for (const std::vector<ir::RankId> &node : out.nodes)
    if (node.size() != out.nodes[0].size())
      return makeUserError(llvm::formatv(
          "--algorithm hier-cerar needs the same number of GPUs on every "
          "node: {0} and {1}",
          out.nodes[0].size(), node.size()));
  out.localOrder = hierLocalOrder(*t, out.nodes[0], req.collective, req.bytes);
  cerar::HierCerarRequest hr;
  hr.bytes = req.bytes;
  hr.policy = *policy;
  hr.components = req.components;
  hr.force = force;
  for (const std::vector<ir::RankId> &node : out.nodes)
    hr.nodes.emplace_back(node.begin(), node.end());
  hr.localOrder.assign(out.localOrder.begin(), out.localOrder.end());
  auto plan = cerar::designHierCerarFor(*t, hr);
  if (!plan)
    return plan.takeError();
  out.plan = std::move(*plan);
  return out;
}

/// "4.142 ms".
std::string msText(double s) {
  return llvm::formatv("{0:F3} ms", s * 1e3).str();
}

/// Lowers hierarchical CERAR (compiler/passes/LowerHierCerar.h).
llvm::Expected<Lowered> lowerHierCerarAlgorithm(const HierCerarPlanned &hp,
                                                const CompileRequest &req) {
  const cerar::HierCerarPlan &plan = hp.plan;
  const cerar::Design &d = *plan.design;
  passes::HierCerarOptions o;
  o.design = d;
  o.numRanks = 0;
  for (const auto &node : hp.nodes)
    o.numRanks += static_cast<int32_t>(node.size());
  o.nodes = hp.nodes;
  o.localOrder = hp.localOrder;
  o.seamOffset = req.seamOffset;
  o.staggerSeams = true;
  o.inplace = req.inplace;
  o.name = req.name;
  auto lowered = passes::lowerHierCerar(o);
  if (!lowered)
    return lowered.takeError();
  Lowered out;
  out.schedule = std::move(*lowered);
  const cerar::HierLinks &l = plan.links;
  std::vector<std::string> order;
  for (int32_t k : hp.localOrder)
    order.push_back(std::to_string(k));
  out.source =
      llvm::formatv("{0} nodes x {1} GPUs, intra-node order {2}; exact "
                    "intra-node reduce-scatter and all-gather, CERAR c = {3} "
                    "on each rail ({4} construction, {5} rounds, seams "
                    "staggered by rail), worst error operator norm {6:e}",
                    l.nodes, l.gpusPerNode, llvm::join(order, ","),
                    d.components, cerar::constructionName(d.construction),
                    d.rounds, d.worstError)
          .str();
  out.explain.push_back(
      llvm::formatv(
          "hier-cerar: {0} nodes x {1} GPUs; rail link alpha "
          "{2:F2} us, B {3:F2} GB/s (N = {0}, S/G = {4} bytes); {5}",
          l.nodes, l.gpusPerNode, l.rail.alpha * 1e6, l.rail.bandwidth / 1e9,
          static_cast<int64_t>(req.bytes / l.gpusPerNode),
          l.gpusPerNode > 1
              ? llvm::formatv("intra-node alpha {0:F2} us, B "
                              "{1:F2} GB/s",
                              l.intra.alpha * 1e6, l.intra.bandwidth / 1e9)
                    .str()
              : std::string("no intra-node phases (1 GPU per "
                            "node)"))
          .str());
  out.explain.push_back("hier-cerar: rail policy: " + plan.decision.reason);
  std::string flat =
      plan.flatCerar > 0
          ? llvm::formatv("{0} (c = {1})", msText(plan.flatCerar),
                          plan.flatComponents)
                .str()
          : std::string("- (the policy keeps the ring)");
  out.explain.push_back(
      llvm::formatv("hier-cerar: predicted at {0} bytes: ring {1}, hier-ring "
                    "{2}, cerar {3}, hier-cerar {4} (c = {5}; exact phases "
                    "{6})",
                    static_cast<int64_t>(req.bytes), msText(plan.flatRing),
                    msText(plan.hierRing), flat, msText(plan.hierCerar),
                    d.components, msText(plan.exactPhases))
          .str());
  out.design = d;
  cerar::HierCerarLayout layout;
  for (const auto &node : hp.nodes)
    layout.nodes.emplace_back(node.begin(), node.end());
  layout.seamOffset = req.seamOffset;
  layout.staggerSeams = o.staggerSeams;
  out.hierLayout = std::move(layout);
  return out;
}

llvm::Expected<CompiledPlan> compileOn(const topo::Topology *t,
                                       int32_t numRanks,
                                       const CompileRequest &req,
                                       PassLogger &log);

/// --algorithm auto: compiles every applicable algorithm (CERAR only with a
/// tolerance, with the policy's c, CERAR.md 5.4) and keeps the one with the
/// least predicted time at req.bytes (the simulator on each final schedule
/// up to kAutoSimulateOps ops, analysis::estimateSchedule beyond); the
/// winner's plan is returned (compiled again only for the caller's logger).
llvm::Expected<CompiledPlan> compileAuto(const topo::Topology *t,
                                         const CompileRequest &req,
                                         PassLogger &log) {
  if (!t)
    return makeUserError("--algorithm auto compares the algorithms on the "
                         "topology; give one");
  analysis::LinkModel m(*t);
  // The predicted time of a candidate: the simulator, with cut-through
  // links (MSCCL and the topocc runtime stream slices through every
  // connection) unless the caller names a mode (whatif's auto column). It
  // sees what the cost model cannot: trees that share a link do not each
  // get their fluid share of it (on dgx-a100 at 1 GiB the model prices
  // the trees 14% under the ring, the simulator 17% over it). Beyond
  // kAutoSimulateOps ops the cost model, which is linear in the schedule.
  constexpr size_t kAutoSimulateOps = 200000;
  struct Price {
    double time;
    const char *by;
  };
  auto price = [&](const Schedule &s) -> llvm::Expected<Price> {
    size_t ops = 0;
    for (const ir::RankProgram &rank : s.ranks)
      ops += rank.ops.size();
    if (!req.autoSimMode && ops > kAutoSimulateOps) {
      auto cost = analysis::estimateSchedule(s, m, req.bytes);
      if (!cost)
        return cost.takeError();
      return Price{cost->time, "cost model"};
    }
    auto time = analysis::simulateTime(
        *t, s, req.bytes, req.autoSimMode.value_or(analysis::SimMode::CutThrough),
        req.autoReduceBandwidth);
    if (!time)
      return time.takeError();
    return Price{*time, "simulated"};
  };
  std::vector<std::string> lines;
  std::string best;
  std::optional<CompiledPlan> bestPlan;
  double bestTime = std::numeric_limits<double>::infinity(), ringTime = 0;
  auto consider = [&](llvm::StringRef name, const Price &p,
                      CompiledPlan &plan) {
    const double time = p.time;
    lines.push_back(llvm::formatv("auto: {0} predicted {1:F3} us ({2})", name,
                                  time * 1e6, p.by)
                        .str());
    if (time < bestTime) {
      bestTime = time;
      best = name.str();
      bestPlan = std::move(plan);
    }
  };
  // A coded candidate with the policy's c: compiled quietly, priced like
  // the others, with the policy's own prediction on the line before.
  auto considerCoded = [&](CompileRequest sub, llvm::StringRef name, int c,
                           const llvm::Twine &policy) -> llvm::Error {
    sub.algorithm = name.str();
    sub.components = c;
    PassLogger quiet;
    auto plan = compileOn(t, t->numRanks(), sub, quiet);
    if (!plan)
      return plan.takeError();
    auto cost = price(plan->schedule);
    if (!cost)
      return cost.takeError();
    lines.push_back(
        llvm::formatv("auto: {0} c = {1}: {2}", name, c, policy.str()).str());
    consider(name, *cost, *plan);
    return llvm::Error::success();
  };
  const bool multiNode = nodeRanks(*t).size() >= 2;
  int64_t treesK = req.treesPerRoot; // the trees candidate's k
  for (Algorithm a : {Algorithm::Ring, Algorithm::HierRing, Algorithm::Trees}) {
    llvm::StringRef name = algorithmName(a);
    if (a == Algorithm::HierRing &&
        (!multiNode || req.collective != ir::Collective::AllReduce)) {
      lines.push_back(("auto: " + name + " not applicable (single node or "
                       "not all-reduce)")
                          .str());
      continue;
    }
    CompileRequest sub = req;
    sub.algorithm = name.str();
    // --channels auto is the ring search's; the others take their own.
    if (a != Algorithm::Ring && sub.channels == 0)
      sub.channels = 1;
    PassLogger quiet;
    auto plan = compileOn(t, t->numRanks(), sub, quiet);
    if (!plan && a == Algorithm::Trees && req.treesPerRoot == 0) {
      // The optimal k may need more chains than the channels allow: fall
      // back to one tree per root (the best packing with k = 1).
      llvm::Error err = plan.takeError();
      if (err.isA<InternalError>())
        return err;
      std::string why = llvm::toString(std::move(err));
      lines.push_back(("auto: trees with the optimal k not applicable (" +
                       llvm::StringRef(why).split('\n').first +
                       "); trying --trees-per-root 1")
                          .str());
      sub.treesPerRoot = treesK = 1;
      plan = compileOn(t, t->numRanks(), sub, quiet);
    }
    if (!plan) {
      llvm::Error err = plan.takeError();
      // A bug is reported as one, not skipped as "not applicable".
      if (err.isA<InternalError>())
        return err;
      std::string why = llvm::toString(std::move(err));
      lines.push_back(("auto: " + name + " not applicable (" +
                       llvm::StringRef(why).split('\n').first + ")")
                          .str());
      continue;
    }
    auto cost = price(plan->schedule);
    if (!cost)
      return cost.takeError();
    if (a == Algorithm::Ring)
      ringTime = cost->time;
    consider(name, *cost, *plan);
  }
  if (!(req.tolerance > 0) || req.collective != ir::Collective::AllReduce ||
      ringTime <= 0) {
    lines.push_back("auto: cerar not considered (it needs --tolerance and "
                    "an all-reduce)");
  } else if (!req.allowCoded) {
    lines.push_back("auto: cerar not considered (the output format cannot "
                    "carry coded schedules)");
  } else {
    CompileRequest sub = req;
    sub.channels = 1;
    sub.chunks = 1;
    auto cp = designCerar(t, sub, /*force=*/false);
    if (!cp)
      return cp.takeError();
    if (!cp->design) {
      lines.push_back("auto: cerar not chosen (" + cp->decision.reason + ")");
    } else {
      // The policy's c, compiled and priced like the others.
      if (auto err = considerCoded(
              sub, "cerar", cp->design->components,
              llvm::formatv("the policy predicts {0:F3}x the ring's time",
                            cp->decision.cerarTime / cp->decision.ringTime)))
        return err;
    }
  }
  // Hierarchical CERAR: exact intra-node phases, CERAR on the rails. Only
  // where it applies (multi-node all-reduce with a tolerance, an output
  // that carries coded schedules); CERAR.md section 7.
  if (multiNode && req.tolerance > 0 &&
      req.collective == ir::Collective::AllReduce && req.allowCoded &&
      ringTime > 0) {
    CompileRequest sub = req;
    sub.channels = 1;
    sub.chunks = 1;
    auto hp = designHierCerar(t, sub, /*force=*/false);
    if (!hp) {
      llvm::Error err = hp.takeError();
      if (err.isA<InternalError>())
        return err;
      std::string why = llvm::toString(std::move(err));
      lines.push_back(("auto: hier-cerar not applicable (" +
                       llvm::StringRef(why).split('\n').first + ")")
                          .str());
    } else if (!hp->plan.design) {
      lines.push_back("auto: hier-cerar not chosen (rail: " +
                      hp->plan.decision.reason + ")");
    } else {
      if (auto err = considerCoded(
              sub, "hier-cerar", hp->plan.design->components,
              llvm::formatv("the policy predicts {0:F3}x hier-ring's time",
                            hp->plan.hierCerar / hp->plan.hierRing)))
        return err;
    }
  }
  if (best.empty())
    return makeUserError("--algorithm auto: no algorithm applies:\n" +
                         llvm::join(lines, "\n"));
  lines.push_back("auto: chose " + best);
  // The winner was compiled quietly; compile it again only when the caller
  // prints the IR or times the passes.
  if (log.isQuiet()) {
    bestPlan->explain.insert(bestPlan->explain.begin(), lines.begin(),
                             lines.end());
    return std::move(*bestPlan);
  }
  CompileRequest win = req;
  win.algorithm = best;
  if (best != "ring" && win.channels == 0)
    win.channels = 1;
  if (best == "trees")
    win.treesPerRoot = treesK;
  if (best == "cerar" || best == "hier-cerar") {
    win.channels = 1;
    win.chunks = 1;
  }
  auto plan = compileOn(t, t->numRanks(), win, log);
  if (!plan)
    return plan.takeError();
  plan->explain.insert(plan->explain.begin(), lines.begin(), lines.end());
  return plan;
}

llvm::Expected<CompiledPlan> compileOn(const topo::Topology *t,
                                       int32_t numRanks,
                                       const CompileRequest &req,
                                       PassLogger &log) {
  if (auto err = checkRequest(req))
    return err;
  const Algorithm alg = cantFail(parseAlgorithm(req.algorithm));
  // auto is a choice among the others, each compiled by this function.
  if (alg == Algorithm::Auto)
    return compileAuto(t, req, log);
  const bool each = req.verifyEach;
  // Trees for MSCCL XML: merge roles across trees when separate
  // threadblocks exceed the executor's limits (FORESTCOLL.md 6.5).
  const bool coalesce = alg == Algorithm::Trees && req.maxChannels > 0;
  passes::ThreadblockInfo tbInfo;
  // Coded schedules with c > N are approximate by design: the exact
  // postcondition is replaced by the check of the code's error operators
  // at the end (cerar::verifyCerarSchedule).
  ir::VerifyOptions vopts;
  Schedule s;
  Lowered info;
  // What a lowering chose, prefixed to the user errors of the later passes
  // (which limit its choice exceeded).
  std::string context;
  auto run = [&](llvm::StringRef pass, bool verify) -> llvm::Error {
    llvm::Error err =
        runPass(pass, s, log, verify,
                passNamed(pass, req, coalesce, &tbInfo), vopts);
    if (!err || context.empty() || err.isA<InternalError>())
      return err;
    return makeUserError(context + errorMessages(std::move(err), "; "));
  };
  // The one dispatch over algorithms: each lowering produces unfused
  // send/recv/reduce chains; the passes after it are shared.
  std::string lowerName, prepareName;
  std::function<llvm::Expected<Lowered>()> lowering;
  // Work a lowering does before it emits ops (trees: the packing), timed
  // on its own; optional.
  std::function<llvm::Error()> prepare;
  TreePlan treePlan;
  cerar::CerarPlan cerarPlan;
  HierCerarPlanned hierCerarPlan;
  switch (alg) {
  case Algorithm::Auto:
    llvm_unreachable("auto is dispatched above");
  case Algorithm::Cerar:
    lowerName = "lower-cerar";
    // Policy (c, eps) and the code's design, timed on their own.
    prepareName = "design-cerar";
    prepare = [&]() -> llvm::Error {
      auto p = designCerar(t, req, /*force=*/true);
      if (!p)
        return p.takeError();
      cerarPlan = std::move(*p);
      if (cerarPlan.design->components > cerarPlan.design->ranks)
        vopts.checkSemantics = false;
      return llvm::Error::success();
    };
    lowering = [&] { return lowerCerarAlgorithm(cerarPlan, req); };
    break;
  case Algorithm::HierCerar:
    lowerName = "lower-hier-cerar";
    // Links of the rails and the nodes, the policy on one rail, the code.
    prepareName = "design-hier-cerar";
    prepare = [&]() -> llvm::Error {
      auto p = designHierCerar(t, req, /*force=*/true);
      if (!p)
        return p.takeError();
      hierCerarPlan = std::move(*p);
      // Exact codes (c <= M, or any c on 2 nodes) also pass the exact
      // postcondition; approximate ones the composed-operator check.
      if (hierCerarPlan.plan.design->construction != cerar::Construction::Exact)
        vopts.checkSemantics = false;
      return llvm::Error::success();
    };
    lowering = [&] { return lowerHierCerarAlgorithm(hierCerarPlan, req); };
    break;
  case Algorithm::Ring:
    lowerName = "lower-ring";
    lowering = [&] { return lowerRingAlgorithm(t, numRanks, req); };
    break;
  case Algorithm::HierRing:
    lowerName = "lower-hier-ring";
    lowering = [&] { return lowerHierAlgorithm(t, req); };
    break;
  case Algorithm::Trees:
    lowerName = "lower-trees";
    // The trees (bound, splitting, packing) are their own timed step.
    prepareName = "build-trees";
    prepare = [&]() -> llvm::Error {
      auto p = buildTrees(t, req);
      if (!p)
        return p.takeError();
      treePlan = std::move(*p);
      return llvm::Error::success();
    };
    lowering = [&] { return lowerTreesAlgorithm(treePlan, req, context); };
    break;
  }
  if (prepare) {
    auto start = std::chrono::steady_clock::now();
    llvm::Error err = prepare();
    log.recordTime(prepareName, std::chrono::duration<double>(
                                    std::chrono::steady_clock::now() - start)
                                    .count());
    if (err)
      return err;
  }
  auto lower = [&](Schedule &out) -> llvm::Error {
    auto lowered = lowering();
    if (!lowered)
      return lowered.takeError();
    info = std::move(*lowered);
    out = std::move(info.schedule);
    return llvm::Error::success();
  };

  // Algorithm -> unfused send/recv/reduce chains, one chain per channel.
  if (auto err = runPass(lowerName, s, log, /*verify=*/false, lower))
    return err;
  // Always: a lowering bug must be caught where it is made, with its IR.
  if (llvm::Error problems = ir::verifySchedule(s, vopts))
    return passBroke(lowerName, std::nullopt, s, std::move(problems));
  // MSCCL's fused primitives (rcs, rrs, rrc, rrcs) halve steps and copies.
  if (auto err = run("fuse", each))
    return err;
  // Each ring gets its own MSCCL channel (its own connections and FIFOs).
  if (auto err = run("assign-channels", each))
    return err;
  // Chains longer than the step limit (large rings) continue on extra
  // channels, each segment in its own threadblock.
  if (auto err = run("split-channels", each))
    return err;
  // One send and one receive peer per threadblock; enforces the step limits.
  if (auto err = run("assign-threadblocks", each))
    return err;
  // MSCCL steps carry one dependency; the rest become nops. Always verified:
  // it is cheap, and this schedule is the product.
  if (auto err = run("legalize-dependencies", /*verify=*/true))
    return err;
  CompiledPlan plan;
  // A coded schedule must still implement its code after every pass: each
  // rank's error operator equals the design's (exactness when c <= N).
  if (info.design && info.hierLayout) {
    // Every output coefficient against the composed operator (exact
    // intra-node phases around the rails' CERAR codes).
    auto chk =
        cerar::verifyHierCerarSchedule(s, *info.design, *info.hierLayout);
    if (!chk)
      return makeInternalError("the hier-cerar schedule no longer matches "
                               "its code after the passes (a bug in "
                               "topocc): " +
                               llvm::toString(chk.takeError()));
    plan.coded = true;
    plan.codedError = info.design->worstError;
    plan.codedRoundoffGain =
        info.design->maxCondition * info.design->rounds;
  } else if (info.design) {
    auto chk = cerar::verifyCerarSchedule(s, *info.design, info.cerarRing,
                                          req.seamOffset);
    if (!chk)
      return makeInternalError("the CERAR schedule no longer matches its "
                               "code after the passes (a bug in topocc): " +
                               llvm::toString(chk.takeError()));
    plan.coded = true;
    plan.codedError = info.design->worstError;
    plan.codedRoundoffGain =
        info.design->maxCondition * info.design->rounds;
  }
  plan.schedule = std::move(s);
  plan.algorithm = algorithmName(alg).str();
  plan.rings = std::move(info.rings);
  plan.searched = std::move(info.searched);
  plan.source = std::move(info.source);
  if (tbInfo.coalesced)
    plan.source += llvm::formatv("; coalesced for MSCCL XML: {0} chains in "
                                 "{1} groups on {2} channels",
                                 tbInfo.chains, tbInfo.groups, s.numChannels)
                       .str();
  plan.explain = std::move(info.explain);
  return plan;
}

} // namespace

namespace {
/// Every algorithm and its --algorithm name, in the order error messages
/// list them.
const std::pair<Algorithm, llvm::StringRef> kAlgorithms[] = {
    {Algorithm::Ring, "ring"},
    {Algorithm::HierRing, "hier-ring"},
    {Algorithm::Trees, "trees"},
    {Algorithm::Cerar, "cerar"},
    {Algorithm::HierCerar, "hier-cerar"},
    {Algorithm::Auto, "auto"},
};
} // namespace

llvm::Expected<Algorithm> parseAlgorithm(llvm::StringRef name) {
  std::vector<std::string> known;
  for (const auto &[a, text] : kAlgorithms) {
    if (name == text)
      return a;
    known.push_back("'" + text.str() + "'");
  }
  std::string list = known.size() == 1 ? known[0] : "";
  if (known.size() > 1)
    list = llvm::join(llvm::ArrayRef<std::string>(known).drop_back(), ", ") +
           " or " + known.back();
  return makeUserError("unknown --algorithm '" + name + "'; expected " + list);
}

llvm::StringRef algorithmName(Algorithm a) {
  for (const auto &[alg, text] : kAlgorithms)
    if (alg == a)
      return text;
  llvm_unreachable("unknown algorithm");
}

llvm::Expected<CompiledPlan>
compile(int32_t numRanks, const CompileRequest &req, PassLogger &log) {
  return compileOn(nullptr, numRanks, req, log);
}

llvm::Expected<CompiledPlan> compile(const topo::Topology &t,
                                     const CompileRequest &req,
                                     PassLogger &log) {
  return compileOn(&t, t.numRanks(), req, log);
}

llvm::Expected<Schedule> lowerHierRingFor(const topo::Topology &t,
                                          ir::Collective c, int32_t channels,
                                          int32_t chunks, bool inplace,
                                          double bytes) {
  CompileRequest req;
  req.algorithm = "hier-ring";
  req.collective = c;
  req.channels = channels;
  req.chunks = chunks;
  req.inplace = inplace;
  req.bytes = bytes;
  auto low = lowerHierAlgorithm(&t, req);
  if (!low)
    return low.takeError();
  return std::move(low->schedule);
}

llvm::Expected<backends::NcclGraphOutput>
ncclGraphForRings(const topo::Topology &t,
                  llvm::ArrayRef<analysis::RingChannel> rings,
                  ir::Collective c, double bytes, analysis::LinkModel &m) {
  auto cost = analysis::estimateRings(rings, c, bytes, m);
  if (!cost)
    return cost.takeError();
  std::vector<backends::NcclGraphChannel> chans;
  double perChannel = 0, inter = std::numeric_limits<double>::infinity();
  const int n = t.numRanks();
  const int steps = analysis::ringSteps(c, n);
  // Per-hop rate of the whole set, split evenly over the channels.
  if (cost->bandwidthTime > 0)
    perChannel = steps * bytes / n / cost->bandwidthTime / rings.size();
  for (const analysis::RingChannel &rc : rings) {
    backends::NcclGraphChannel ch;
    ch.order = rc.order;
    for (size_t i = 0; i < rc.order.size(); ++i) {
      analysis::NicPair np =
          i < rc.nics.size() ? rc.nics[i] : analysis::NicPair{};
      ch.nics.push_back({np.out, np.in});
      if (np.isSet())
        inter = std::min(inter, analysis::hopFlow(rc, i, m).bandwidth);
    }
    chans.push_back(std::move(ch));
  }
  backends::NcclGraphOptions go;
  go.speedIntra = perChannel / 1e9;
  go.speedInter = std::isfinite(inter) ? std::min(inter, perChannel) / 1e9
                                       : go.speedIntra;
  return backends::writeNcclGraphXml(t, chans, go);
}

llvm::ArrayRef<llvm::StringRef> passNames() { return kPassNames; }

llvm::Expected<Schedule> runSinglePass(llvm::StringRef name, Schedule s,
                                       const CompileRequest &req,
                                       PassLogger &log) {
  if (!llvm::is_contained(kPassNames, name)) {
    std::string hint = nearestMatch(name, kPassNames);
    std::string names;
    for (llvm::StringRef n : kPassNames)
      names += (names.empty() ? "" : ", ") + n.str();
    return makeUserError(
        "unknown pass '" + name + "'" +
        (hint.empty() ? "" : "; did you mean '" + hint + "'?") +
        " (passes: " + names + ")");
  }
  if (auto err = checkRequest(req))
    return err;
  Stage expected = name == "fuse"              ? Stage::Lowered
                   : name == "assign-channels" ? Stage::Fused
                   : name == "assign-threadblocks" || name == "split-channels"
                       ? Stage::ChannelsAssigned
                       : Stage::ThreadblocksAssigned;
  if (s.stage != expected && !(name == "fuse" && s.stage == Stage::Fused))
    return makeUserError("pass '" + name + "' expects a schedule at stage '" +
                         ir::stageName(expected) +
                         "', the input is at stage '" + ir::stageName(s.stage) +
                         "'");
  // The passes assume a valid input; a failure afterwards is then theirs.
  if (llvm::Error problems = ir::verifySchedule(s))
    return makeUserError("the input schedule is invalid:\n" +
                         llvm::toString(std::move(problems)));
  for (size_t r = 0; r < s.ranks.size(); ++r)
    for (size_t i = 0; i < s.ranks[r].ops.size(); ++i)
      for (ir::OpId d : s.ranks[r].ops[i].deps)
        if (static_cast<size_t>(d) >= i && name != "fuse")
          return makeUserError(llvm::formatv(
              "rank {0} %{1} depends on the later op %{2}: pass '{3}' needs "
              "every dependency to point to an earlier op",
              r, i, d, name));
  if (auto err = runPass(name, s, log, /*verify=*/true, passNamed(name, req)))
    return err;
  return s;
}

} // namespace topocc
