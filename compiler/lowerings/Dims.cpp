//===- compiler/lowerings/Dims.cpp - --algorithm dims ---------------------===//
//
// Dimension-by-dimension rings on a generated grid (a torus, or dimensions
// of rings, fully connected groups and switches): the grid comes from the
// topology's `generate:` section (topo::Topology::grid), the schedule from
// compiler/passes/LowerDims.h. All-reduce.
//
//===----------------------------------------------------------------------===//

#include "compiler/lowerings/Lowering.h"

#include "compiler/passes/LowerDims.h"
#include "support/Diagnostics.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

namespace topocc::lowerings {

namespace {

/// Why `t` has no grid the dims algorithm can use; empty when it has one.
std::string whyNoGrid(const topo::Topology &t) {
  if (t.grid().empty())
    return "the topology has no 'generate:' grid";
  for (size_t d = 0; d < t.grid().size(); ++d)
    if (!t.grid()[d].ringRouted())
      return llvm::formatv("dimension {0} is a line of {1} (a mesh): its "
                           "ends have no link, so it has no ring",
                           d, t.grid()[d].size)
          .str();
  return "";
}

llvm::Expected<Lowered> lowerDims(const topo::Topology *t,
                                  const CompileRequest &req) {
  if (!t)
    return makeUserError("--algorithm dims needs the topology's grid");
  if (std::string why = whyNoGrid(*t); !why.empty())
    return makeUserError("--algorithm dims: " + why);
  if (!req.ringOrder.empty() || req.rankOrder)
    return makeUserError("--ring applies to --algorithm ring, not dims");
  passes::DimsOptions o;
  o.collective = req.collective;
  o.numRanks = t->numRanks();
  std::vector<std::string> sizes;
  for (const topo::GridDim &d : t->grid()) {
    o.sizes.push_back(d.size);
    sizes.push_back(std::to_string(d.size));
  }
  for (int i = 0; i < t->numRanks(); ++i)
    o.ranks.push_back(t->gridRank(i));
  o.chunks = req.chunks;
  o.inplace = req.inplace;
  o.name = req.name;
  auto lowered = passes::lowerDims(o);
  if (!lowered)
    return lowered.takeError();
  Lowered out;
  out.schedule = std::move(*lowered);
  out.summary = llvm::formatv("grid {0}: reduce-scatter along each "
                              "dimension, then all-gather back; {1} lanes "
                              "(each dimension first, both directions)",
                              llvm::join(sizes, " x "),
                              out.schedule.chunksPerLoop /
                                  (t->numRanks() * req.chunks))
                    .str();
  return out;
}

class DimsLowering final : public Lowering {
public:
  using Lowering::Lowering;
  llvm::StringRef passName() const override { return "lower-dims"; }
  llvm::Expected<Lowered> lower() override { return lowerDims(topology, req); }
};

} // namespace

std::unique_ptr<Lowering> makeDimsLowering(const LoweringInput &in) {
  return std::make_unique<DimsLowering>(in);
}

llvm::Expected<AutoCandidate> DimsLoweringCandidate(const AutoContext &ctx) {
  AutoCandidate c;
  if (std::string why = whyNoGrid(ctx.topology); !why.empty()) {
    c.lines.push_back("auto: dims not applicable (" + why + ")");
    return c;
  }
  if (ctx.request.collective != ir::Collective::AllReduce) {
    c.lines.push_back("auto: dims not applicable (all-reduce only)");
    return c;
  }
  c.request = candidateRequest(ctx.request, Algorithm::Dims);
  // Sub-chunks let a lane's next dimension start before this one ends.
  for (int32_t chunks : {2, 4}) {
    if (chunks == c.request->chunks)
      continue;
    CompileRequest v = *c.request;
    v.chunks = chunks;
    c.variants.push_back({"--chunks " + std::to_string(chunks), v});
  }
  return c;
}

} // namespace topocc::lowerings
