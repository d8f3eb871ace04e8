//===- compiler/lowerings/Dims.cpp - --algorithm dims ---------------------===//
//
// Dimension-by-dimension rings on a generated grid (a torus, or dimensions
// of rings, fully connected groups and switches): the grid comes from the
// topology's `generate:` section (topo::Topology::grid), the schedule from
// compiler/passes/LowerDims.h. All-reduce.
//
//===----------------------------------------------------------------------===//

#include "compiler/lowerings/Lowering.h"

#include "compiler/algorithms/LinearProgram.h"
#include "compiler/passes/LowerDims.h"
#include "support/Diagnostics.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

namespace topocc::lowerings {

std::string whyNoDimsGrid(const topo::Topology &t) {
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

namespace {

/// Sub-chunks of the lanes that start with each dimension of size >= 2,
/// `chunks` on average: the data shares that balance the links, from the
/// packing LP "maximise the data sum_p x_p such that every dimension's
/// links carry at most one time unit of it", rounded by largest remainder
/// to D * chunks sub-chunks, at least one per lane.
///
/// The lanes starting with dimension p visit the dimensions in the order
/// p, p+1, ...; at stage i their data is (s-1)/s of what is left, and what
/// is left shrinks by each dimension visited, once for the reduce-scatter
/// and once for the all-gather. A dimension's lane bandwidth is the route
/// from a rank to its neighbour along it, halved where the two directions'
/// lanes share a link direction (a ring of two, a switch's uplink).
std::vector<int32_t> balancedLaneChunks(const topo::Topology &t, int32_t chunks,
                                        std::vector<double> &shares) {
  std::vector<int32_t> active;
  std::vector<int32_t> stride;
  int32_t st = 1;
  for (size_t d = 0; d < t.grid().size(); ++d) {
    if (t.grid()[d].size >= 2)
      active.push_back(static_cast<int32_t>(d));
    stride.push_back(st);
    st *= t.grid()[d].size;
  }
  const int D = static_cast<int>(active.size());
  shares.assign(D, 1.0 / std::max(D, 1));
  std::vector<int32_t> equal(D, chunks);
  if (D < 2)
    return equal;
  std::vector<double> laneBw(D);
  for (int i = 0; i < D; ++i) {
    const topo::GridDim &g = t.grid()[active[i]];
    topo::Route r = t.route(t.gridRank(0), t.gridRank(stride[active[i]]));
    if (!r.found() || !(r.bottleneck > 0))
      return equal;
    laneBw[i] = r.bottleneck /
                (g.size == 2 || g.kind == topo::GridDim::Switch ? 2.0 : 1.0);
  }
  const double bwMax = *std::max_element(laneBw.begin(), laneBw.end());
  algorithms::PackingLp lp;
  lp.rows = D; // dimensions
  lp.cols = D; // starting dimensions
  lp.a.assign(static_cast<size_t>(D) * D, 0);
  lp.b.assign(D, 1.0);
  lp.c.assign(D, 1.0);
  for (int p = 0; p < D; ++p) {
    double left = 1;
    for (int i = 0; i < D; ++i) {
      const int d = (p + i) % D;
      const double s = t.grid()[active[d]].size;
      lp.at(d, p) += 2 * left * (s - 1) / s * bwMax / laneBw[d];
      left /= s;
    }
  }
  algorithms::LpSolution sol = algorithms::solvePackingLp(lp);
  double sum = 0;
  for (double x : sol.x)
    sum += std::max(0.0, x);
  if (!sol.optimal || !(sum > 0))
    return equal;
  const int64_t total = int64_t(D) * chunks;
  std::vector<int32_t> k(D);
  std::vector<std::pair<double, int>> rest;
  int64_t given = 0;
  for (int p = 0; p < D; ++p) {
    shares[p] = std::max(0.0, sol.x[p]) / sum;
    const double exact = shares[p] * total;
    // Snap values within rounding noise of an integer (equal shares).
    k[p] = static_cast<int32_t>(std::floor(exact + 1e-9));
    given += k[p];
    rest.push_back({-(exact - k[p]), p});
  }
  std::stable_sort(rest.begin(), rest.end());
  for (size_t i = 0; given < total; ++i, ++given)
    ++k[rest[i % rest.size()].second];
  // Every lane carries something (its channels stay numbered densely):
  // take sub-chunks back from the largest.
  for (int p = 0; p < D; ++p)
    while (k[p] < 1) {
      auto big = std::max_element(k.begin(), k.end());
      if (*big <= 1)
        return equal;
      --*big;
      ++k[p];
    }
  return k;
}

llvm::Expected<Lowered> lowerDims(const topo::Topology *t,
                                  const CompileRequest &req) {
  if (!t)
    return makeUserError("--algorithm dims needs the topology's grid");
  if (std::string why = whyNoDimsGrid(*t); !why.empty())
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
  std::vector<double> shares;
  o.laneChunks = balancedLaneChunks(*t, req.chunks, shares);
  o.inplace = req.inplace;
  o.name = req.name;
  // A stage-0 block spans the grid indices of the other dimensions: one op
  // moves N / s of them, which an MSCCL step must hold.
  int64_t biggest = 0;
  for (const topo::GridDim &d : t->grid())
    if (d.size >= 2)
      biggest = std::max<int64_t>(biggest, t->numRanks() / d.size);
  if (biggest > req.target.maxStepCount)
    return makeUserError(llvm::formatv(
        "--algorithm dims on this grid moves {0} chunks in one step, more "
        "than the {1} of --emit {2}; use --emit plan",
        biggest, req.target.maxStepCount,
        ir::outputFormatName(req.target.format)));
  auto lowered = passes::lowerDims(o);
  if (!lowered)
    return lowered.takeError();
  Lowered out;
  out.schedule = std::move(*lowered);
  std::vector<std::string> laneText;
  for (int32_t k : o.laneChunks)
    laneText.push_back(std::to_string(k));
  out.summary = llvm::formatv("grid {0}: reduce-scatter along each "
                              "dimension, then all-gather back; {1} lanes "
                              "(each dimension first, both directions), "
                              "sub-chunks per starting dimension {2}",
                              llvm::join(sizes, " x "), 2 * o.laneChunks.size(),
                              llvm::join(laneText, ","))
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
  if (std::string why = whyNoDimsGrid(ctx.topology); !why.empty()) {
    c.lines.push_back("auto: dims not applicable (" + why + ")");
    return c;
  }
  if (ctx.request.collective != ir::Collective::AllReduce) {
    c.lines.push_back("auto: dims not applicable (all-reduce only)");
    return c;
  }
  c.request = candidateRequest(ctx.request, Algorithm::Dims);
  // Sub-chunks let a lane's next dimension start before this one ends.
  // More sub-chunks also let the lanes' shares follow the balance of a
  // grid whose dimensions differ (balancedLaneChunks). Every variant is
  // simulated: on the 1024-chip torus 4 sub-chunks win (84.5% of the
  // bound against 50.0% for 1; docs/benchmarks/scale.md).
  addChunkVariants(c, {2, 4, 8});
  return c;
}

} // namespace topocc::lowerings
