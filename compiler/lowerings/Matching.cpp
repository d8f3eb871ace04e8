//===- compiler/lowerings/Matching.cpp - --algorithm matching -------------===//
//
// Greedy link-chunk matching (compiler/algorithms/LinkMatching.h, lowered by
// compiler/passes/LowerMatching.h) on the direct links between GPUs: a
// mesh, a torus, a GPU mesh without switches. All-gather, reduce-scatter
// and all-reduce.
//
//===----------------------------------------------------------------------===//

#include "compiler/lowerings/Lowering.h"

#include "compiler/analysis/Simulator.h"
#include "compiler/passes/LowerMatching.h"
#include "support/Diagnostics.h"

#include "llvm/Support/FormatVariadic.h"

#include <map>

namespace topocc::lowerings {

namespace {

/// auto prices matching up to this many transfers (ranks x (ranks - 1) x
/// chunks per phase; the synthesis' work grows as ranks^3 x chunks^2, and
/// the passes with the ops): an all-gather on 1024 chips, an all-reduce on
/// 724.
constexpr int64_t kAutoMatchingMaxTransfers = int64_t(1) << 20;

/// The direct links between ranks of `t` (a link whose two ends are GPUs),
/// one per ordered pair with parallel links summed, each priced for a
/// chunk of `chunkBytes`: `busy` is the time at the pair's effective
/// capacity (half of it each way on a half-duplex link).
std::vector<algorithms::MatchLink> directLinks(const topo::Topology &t,
                                               double chunkBytes) {
  struct Pair {
    double capacity = 0, latency = 0;
    bool any = false;
  };
  std::map<std::pair<int32_t, int32_t>, Pair> pairs;
  for (const topo::Link &l : t.links()) {
    const int a = t.device(l.from).rank, b = t.device(l.to).rank;
    if (a < 0 || b < 0 || a == b)
      continue;
    for (int dir = 0; dir < 2; ++dir) {
      double cap = l.effectiveCapacity(dir);
      if (l.duplex == topo::Duplex::Half)
        cap /= 2;
      if (!(cap > 0))
        continue;
      Pair &p = pairs[dir == 0 ? std::make_pair(a, b) : std::make_pair(b, a)];
      p.capacity += cap;
      p.latency = p.any ? std::min(p.latency, l.latency) : l.latency;
      p.any = true;
    }
  }
  std::vector<algorithms::MatchLink> links;
  for (const auto &[ends, p] : pairs)
    links.push_back(
        {ends.first, ends.second, chunkBytes / p.capacity, p.latency});
  return links;
}

/// Why matching cannot run on `t`; empty when it can.
std::string whyNotMatching(const topo::Topology &t, ir::Collective c) {
  if (c != ir::Collective::AllGather && c != ir::Collective::ReduceScatter &&
      c != ir::Collective::AllReduce)
    return "it lowers allgather, reducescatter and allreduce";
  std::vector<algorithms::MatchLink> links = directLinks(t, 1.0);
  if (links.empty())
    return "no link joins two GPUs directly; it moves data over such links "
           "only";
  // Every rank reaches every other over direct links (both ways, so that
  // the reduce-scatter's reversed links do too).
  const int32_t n = t.numRanks();
  std::vector<algorithms::MatchLink> reversed = links;
  for (algorithms::MatchLink &l : reversed)
    std::swap(l.from, l.to);
  for (const auto *graph : {&links, &reversed})
    if (int32_t r = algorithms::firstUnreachable(n, *graph, 0); r >= 0)
      return llvm::formatv("no path of direct GPU links joins {0} to {1}",
                           t.rankName(0), t.rankName(r))
          .str();
  return "";
}

llvm::Expected<Lowered> lowerMatching(const topo::Topology *t,
                                      const CompileRequest &req) {
  if (!t)
    return makeUserError("--algorithm matching needs the topology's links");
  if (std::string why = whyNotMatching(*t, req.collective); !why.empty())
    return makeUserError("--algorithm matching: " + why);
  if (!req.ringOrder.empty() || req.rankOrder)
    return makeUserError("--ring applies to --algorithm ring, not matching");
  if (req.chunks < 1)
    return makeUserError(
        llvm::formatv("--chunks must be at least 1, got {0}", req.chunks));
  const int32_t n = t->numRanks();
  // A unit's bytes in one of the executor's loop iterations.
  const double unitBytes = std::min(req.bytes / (double(n) * req.chunks),
                                    analysis::RuntimeParams().loopChunkBytes);
  passes::MatchingOptions o;
  o.collective = req.collective;
  o.numRanks = n;
  o.chunks = req.chunks;
  o.links = directLinks(*t, std::max(unitBytes, 1.0));
  // Leave room for the nops legalization adds to a threadblock.
  const int32_t steps = req.target.maxStepsPerThreadblock;
  if (steps > 0 && steps != ir::TargetLimits::kNoLimit)
    o.maxStepsPerChannel = std::max(1, steps * 3 / 4);
  o.inplace = req.inplace;
  o.name = req.name;
  passes::MatchingInfo info;
  auto lowered = passes::lowerMatching(o, &info);
  if (!lowered)
    return lowered.takeError();
  Lowered out;
  out.schedule = std::move(*lowered);
  out.summary =
      llvm::formatv("greedy link-chunk matching on {0} direct links: {1} "
                    "transfers, {2} chunk(s) per rank, {3} channels per "
                    "layer, {4} layer(s); the synthesis' own FIFO "
                    "link model finishes one loop iteration in {5:F1} us",
                    o.links.size(), info.transfers, o.chunks,
                    info.channelsPerLayer, info.layers,
                    info.synthesizedTime * 1e6)
          .str();
  return out;
}

class MatchingLowering final : public Lowering {
public:
  using Lowering::Lowering;
  llvm::StringRef passName() const override { return "lower-matching"; }
  llvm::Expected<Lowered> lower() override {
    return lowerMatching(topology, req);
  }
};

} // namespace

std::unique_ptr<Lowering> makeMatchingLowering(const LoweringInput &in) {
  return std::make_unique<MatchingLowering>(in);
}

llvm::Expected<AutoCandidate>
MatchingLoweringCandidate(const AutoContext &ctx) {
  AutoCandidate c;
  if (std::string why = whyNotMatching(ctx.topology, ctx.request.collective);
      !why.empty()) {
    c.lines.push_back("auto: matching not applicable (" + why + ")");
    return c;
  }
  const int64_t n = ctx.topology.numRanks();
  const int64_t transfers =
      (ctx.request.collective == ir::Collective::AllReduce ? 2 : 1) * n *
      (n - 1);
  if (transfers > kAutoMatchingMaxTransfers) {
    c.lines.push_back(llvm::formatv(
        "auto: matching not tried: {0} ranks need {1} transfers, more than "
        "the {2} auto synthesizes (--algorithm matching builds it)",
        n, transfers, kAutoMatchingMaxTransfers));
    return c;
  }
  c.request = candidateRequest(ctx.request, Algorithm::Matching);
  // More chunks per rank give the matching finer pieces to spread.
  addChunkVariants(c, {2});
  return c;
}

} // namespace topocc::lowerings
