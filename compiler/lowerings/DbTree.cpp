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
#include "llvm/Support/MathExtras.h"

namespace topocc::lowerings {

namespace {

llvm::Expected<Lowered> lowerDbTree(const topo::Topology *t,
                                    const CompileRequest &req) {
  if (!t)
    return makeUserError("--algorithm dbtree needs the topology's nodes");
  if (req.collective != ir::Collective::AllReduce)
    return makeUserError(llvm::formatv(
        "--algorithm dbtree lowers allreduce only, not {0} (NCCL's trees "
        "serve all-reduce; use ring, hier-ring or trees)",
        ir::collectiveName(req.collective)));
  if (req.channels == 0)
    return makeUserError("--channels auto applies to --algorithm ring; give "
                         "dbtree a number of tree pairs");
  if (!req.ringOrder.empty() || req.rankOrder)
    return makeUserError("--ring applies to --algorithm ring, not dbtree");
  // Each tree pair takes four channels (two trees, up and down).
  if (4 * int64_t(req.channels) > req.target.channelLimit())
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
  o.channels = req.channels;
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
  // pair, as far as the target's channels allow. A unit costs each
  // threadblock one step (fuse makes every child's receive and reduction
  // one rrc), so 64 units per tree fit MSCCL's 64 steps and keep the
  // pipeline of a deep tree full; 16 and 4 serve smaller sizes
  // (docs/Algorithms.md, section 8, measures the choice).
  const int32_t G = static_cast<int32_t>(nodeRanks(ctx.topology)[0].size());
  c.request->channels =
      std::max(1, std::min(G, ctx.request.target.channelLimit() / 4));
  const int64_t maxSteps = ctx.request.target.maxStepsPerThreadblock;
  c.request->chunks =
      maxSteps == ir::TargetLimits::kNoLimit || maxSteps >= 64
          ? 64
          : std::max<int32_t>(
                1, static_cast<int32_t>(llvm::PowerOf2Floor(
                       static_cast<uint64_t>(std::max<int64_t>(1, maxSteps)))));
  addChunkVariants(c, {16, 4});
  return c;
}

} // namespace topocc::lowerings
