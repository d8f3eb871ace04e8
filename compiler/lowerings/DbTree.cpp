//===- compiler/lowerings/DbTree.cpp - --algorithm dbtree -----------------===//
//
// NCCL's tree all-reduce: a double binary tree over the nodes, a chain of
// GPUs inside each, every unit reduced up and broadcast down
// (compiler/passes/LowerDbTree.h). Its depth grows with log2(nodes) where a
// ring's steps grow with the ranks, so it wins at medium sizes on many
// nodes. The chain is the intra-node ring order of the hierarchical ring.
// All-reduce.
//
//===----------------------------------------------------------------------===//

#include "compiler/lowerings/Lowering.h"

#include "compiler/passes/LowerDbTree.h"
#include "support/Diagnostics.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

namespace topocc::lowerings {

namespace {

/// --channels auto: one tree pair per GPU of a node, within the target's
/// channels (four per pair).
int32_t dbTreeAutoPairs(const topo::Topology &t,
                        const ir::TargetLimits &target) {
  const auto nodes = nodeRanks(t);
  const int32_t G = nodes.empty() ? 1 : static_cast<int32_t>(nodes[0].size());
  return std::max(1, std::min(G, target.channelLimit() / 4));
}

llvm::Expected<Lowered> lowerDbTree(const topo::Topology *t,
                                    const CompileRequest &req) {
  if (!t)
    return makeUserError("--algorithm dbtree needs the topology's nodes");
  if (req.collective != ir::Collective::AllReduce)
    return makeUserError(llvm::formatv(
        "--algorithm dbtree lowers allreduce only, not {0} (NCCL's trees "
        "serve all-reduce; use ring, hier-ring or trees)",
        ir::collectiveName(req.collective)));
  if (!req.ringOrder.empty() || req.rankOrder)
    return makeUserError("--ring applies to --algorithm ring, not dbtree");
  // Each tree pair takes four channels (two trees, up and down).
  if (req.channels != 0 &&
      4 * int64_t(req.channels) > req.target.channelLimit())
    return makeUserError(llvm::formatv(
        "--algorithm dbtree takes four channels per tree pair: --channels {0} "
        "needs {1}, more than the {2} of --emit {3}; use --channels {4} or "
        "fewer",
        req.channels, 4 * req.channels, req.target.channelLimit(),
        ir::outputFormatName(req.target.format),
        req.target.channelLimit() / 4));
  passes::DbTreeOptions o;
  o.numRanks = t->numRanks();
  o.nodes = nodeRanks(*t);
  if (o.nodes.empty())
    return makeUserError(
        "--algorithm dbtree needs GPUs grouped in nodes (a chain per node, "
        "trees across them); this topology's GPUs belong to no node (use "
        "ring, trees, dims or matching)");
  o.localOrder = hierLocalOrder(*t, o.nodes[0], req.collective, req.bytes);
  // --channels auto: one tree pair per GPU of a node, as far as the
  // target's channels allow (dbTreeAutoPairs).
  o.channels =
      req.channels == 0 ? dbTreeAutoPairs(*t, req.target) : req.channels;
  o.chunks = req.chunks;
  o.inplace = req.inplace;
  o.name = req.name;
  auto lowered = passes::lowerDbTree(o);
  if (!lowered)
    return lowered.takeError();
  Lowered out;
  out.schedule = std::move(*lowered);
  std::vector<std::string> chain;
  for (int32_t l : o.localOrder)
    chain.push_back(std::to_string(l));
  out.summary = llvm::formatv("{0} nodes x {1} GPUs, {2} tree pair(s), "
                              "intra-node chain {3}, {4} unit(s) per tree",
                              o.nodes.size(), o.nodes[0].size(), o.channels,
                              llvm::join(chain, ","), o.chunks)
                    .str();
  return out;
}

class DbTreeLowering final : public Lowering {
public:
  using Lowering::Lowering;
  llvm::StringRef passName() const override { return "lower-dbtree"; }
  llvm::Expected<Lowered> lower() override {
    return lowerDbTree(topology, req);
  }
};

} // namespace

std::unique_ptr<Lowering> makeDbTreeLowering(const LoweringInput &in) {
  return std::make_unique<DbTreeLowering>(in);
}

llvm::Expected<AutoCandidate> DbTreeLoweringCandidate(const AutoContext &ctx) {
  AutoCandidate c;
  if (!ctx.multiNode) {
    c.lines.push_back("auto: dbtree not applicable (single node)");
    return c;
  }
  if (ctx.request.collective != ir::Collective::AllReduce) {
    c.lines.push_back("auto: dbtree not applicable (all-reduce only)");
    return c;
  }
  c.request = candidateRequest(ctx.request, Algorithm::DbTree);
  // One tree pair per GPU of a node, so every GPU (and its NIC) heads one
  // pair, as far as the target's channels allow, and as many units as keep
  // a deep tree's pipeline full within the target's steps; 16 and 4 serve
  // smaller sizes (docs/Algorithms.md, section 8, measures the choice).
  // compile --algorithm dbtree has the same defaults.
  c.request->channels = dbTreeAutoPairs(ctx.topology, ctx.request.target);
  c.request->chunks =
      passes::dbTreeDefaultUnits(ctx.request.target.maxStepsPerThreadblock);
  addChunkVariants(c, {16, 4});
  return c;
}

} // namespace topocc::lowerings
