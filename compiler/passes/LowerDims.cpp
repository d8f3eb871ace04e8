//===- compiler/passes/LowerDims.cpp - Dimension-by-dimension rings -------===//
//
// See LowerDims.h. Every phase is one emitRingPhase (LowerHierRing.h) over
// the groups of ranks that differ only in the phase's dimension; a lane's
// sub-chunks are independent dependency chains, so a sub-chunk moves to the
// next dimension as soon as it is done with this one on its rank.
//
//===----------------------------------------------------------------------===//

#include "compiler/passes/LowerDims.h"

#include "compiler/passes/LowerHierRing.h"
#include "ir/Target.h"
#include "support/Diagnostics.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

namespace topocc::passes {

using namespace ir;

llvm::Expected<Schedule> lowerDims(const DimsOptions &o) {
  std::vector<std::string> problems;
  if (o.collective != Collective::AllReduce)
    problems.push_back(llvm::formatv(
        "--algorithm dims lowers allreduce only, not {0} (use trees for "
        "allgather and reducescatter on a grid)",
        collectiveName(o.collective)));
  int64_t product = 1;
  for (int32_t s : o.sizes) {
    if (s < 1)
      problems.push_back(llvm::formatv("a dimension of size {0}", s));
    product *= std::max<int32_t>(s, 1);
    if (product > int64_t(1) << 31)
      break;
  }
  if (o.sizes.empty() || product != o.numRanks)
    problems.push_back(llvm::formatv(
        "the dimensions' sizes multiply to {0}, not the {1} ranks", product,
        o.numRanks));
  if (static_cast<int64_t>(o.ranks.size()) != o.numRanks)
    problems.push_back(llvm::formatv("{0} grid ranks for {1} ranks",
                                     o.ranks.size(), o.numRanks));
  std::vector<bool> seen(std::max(o.numRanks, 0), false);
  for (RankId r : o.ranks) {
    if (r < 0 || r >= o.numRanks)
      problems.push_back(llvm::formatv("grid rank {0} is out of range", r));
    else if (seen[r])
      problems.push_back(
          llvm::formatv("rank {0} appears twice in the grid", r));
    else
      seen[r] = true;
  }
  if (o.chunks < 1)
    problems.push_back(
        llvm::formatv("--chunks must be at least 1, got {0}", o.chunks));
  int32_t activeDims = 0;
  for (int32_t sz : o.sizes)
    activeDims += sz >= 2;
  if (!o.laneChunks.empty()) {
    int64_t total = 0;
    for (int32_t k : o.laneChunks) {
      if (k < 0)
        problems.push_back(llvm::formatv("a lane of {0} sub-chunks", k));
      total += std::max(k, 0);
    }
    if (static_cast<int32_t>(o.laneChunks.size()) != activeDims)
      problems.push_back(llvm::formatv(
          "{0} lane chunk counts for {1} dimensions of size 2 or more",
          o.laneChunks.size(), activeDims));
    else if (total < 1)
      problems.push_back("every lane is empty");
  }
  if (!problems.empty())
    return makeUserError(llvm::join(problems, "\n"));

  const int32_t n = o.numRanks, K = o.chunks;
  // The dimensions that have rings (size >= 2).
  std::vector<int32_t> active;
  for (size_t d = 0; d < o.sizes.size(); ++d)
    if (o.sizes[d] >= 2)
      active.push_back(static_cast<int32_t>(d));
  const int32_t D = std::max<int32_t>(1, static_cast<int32_t>(active.size()));
  const int32_t lanes = (o.bidirectional ? 2 : 1) * D;
  if (lanes > kMaxRingChannels)
    return makeUserError(llvm::formatv(
        "--algorithm dims needs {0} channels (one per dimension and "
        "direction), more than {1}",
        lanes, kMaxRingChannels));
  // Sub-chunks per lane, and the first unit and first chain of each.
  std::vector<int32_t> laneK(lanes, K);
  if (!o.laneChunks.empty())
    for (int32_t lane = 0; lane < lanes; ++lane)
      laneK[lane] = o.laneChunks[lane % D];
  std::vector<int64_t> laneBase(lanes + 1, 0), laneChain(lanes + 1, 0);
  for (int32_t lane = 0; lane < lanes; ++lane) {
    laneBase[lane + 1] = laneBase[lane] + int64_t(n) * laneK[lane];
    laneChain[lane + 1] = laneChain[lane] + laneK[lane];
  }
  const int64_t units = laneBase[lanes];
  if (std::string why =
          tooManyUnits(units, "ranks * the lanes' chunks", "use fewer chunks");
      !why.empty())
    return makeUserError(why);

  Schedule s;
  s.collective = Collective::AllReduce;
  s.numRanks = n;
  s.chunksPerLoop = static_cast<int32_t>(units);
  s.inplace = o.inplace;
  s.stage = Stage::Lowered;
  std::vector<std::string> sizeText;
  for (int32_t sz : o.sizes)
    sizeText.push_back(std::to_string(sz));
  s.name = o.name.empty()
               ? llvm::formatv("dims{0}_allreduce_{1}_k{2}_{3}",
                               llvm::join(sizeText, "x"),
                               o.bidirectional ? "bidir" : "unidir", K,
                               o.inplace ? "inplace" : "outofplace")
                     .str()
               : o.name;
  s.ranks.resize(n);
  if (active.empty()) { // one rank: the all-reduce is a copy
    if (!o.inplace)
      s.ranks[0].ops.push_back(makeLocal(
          OpKind::Copy, BufferRef{BufferKind::Output, 0, s.chunksPerLoop},
          BufferRef{BufferKind::Input, 0, s.chunksPerLoop}));
    setCollectiveBuffers(s.ranks[0], Collective::AllReduce, s.chunksPerLoop,
                         s.chunksPerLoop, o.inplace);
    return s;
  }

  // Coordinates of every rank.
  std::vector<std::vector<int32_t>> coord(n);
  for (int32_t i = 0; i < n; ++i) {
    int32_t rest = i;
    std::vector<int32_t> c(o.sizes.size());
    for (size_t d = 0; d < o.sizes.size(); ++d) {
      c[d] = rest % o.sizes[d];
      rest /= o.sizes[d];
    }
    coord[o.ranks[i]] = std::move(c);
  }
  auto linear = [&](const std::vector<int32_t> &c) {
    int32_t i = 0;
    for (size_t d = o.sizes.size(); d-- > 0;)
      i = i * o.sizes[d] + c[d];
    return i;
  };

  // In place the output is the input (setCollectiveBuffers): the phases
  // work in it.
  const BufferKind work = o.inplace ? BufferKind::Input : BufferKind::Output;
  ChainState st(n);
  for (int32_t lane = 0; lane < lanes; ++lane) {
    const int32_t p = lane % D;
    const bool reverse = lane >= D;
    const int32_t laneChunks = laneK[lane];
    if (laneChunks == 0)
      continue;
    // The lane's dimension order.
    std::vector<int32_t> order;
    for (int32_t i = 0; i < D; ++i)
      order.push_back(active[(p + i) % D]);
    const int32_t base = static_cast<int32_t>(laneBase[lane]);
    // Stage i's groups: the ranks that differ only in dimension order[i],
    // in ring order (coordinates up, or down for the reverse lanes).
    auto groupsOf = [&](int32_t i) {
      const int32_t d = order[i], sz = o.sizes[d];
      std::vector<std::vector<RankId>> groups;
      for (RankId r = 0; r < n; ++r) {
        if (coord[r][d] != 0)
          continue;
        std::vector<int32_t> c = coord[r];
        std::vector<RankId> g;
        for (int32_t q = 0; q < sz; ++q) {
          c[d] = reverse ? (sz - q) % sz : q;
          g.push_back(o.ranks[linear(c)]);
        }
        groups.push_back(std::move(g));
      }
      return groups;
    };
    // Stage i's block of the rank at ring position q: the units whose
    // coordinates order[0..i] are that rank's.
    auto blockFn = [&, base](int32_t i,
                             std::vector<std::vector<RankId>> groups) {
      int64_t count = 1;
      for (int32_t k = i + 1; k < D; ++k)
        count *= o.sizes[order[k]];
      return [&, i, count, base, groups = std::move(groups)](
                 int32_t g, int32_t q, int32_t j, BufferKind kind) {
        const std::vector<int32_t> &c = coord[groups[g][q]];
        int64_t beta = 0;
        for (int32_t k = 0; k <= i; ++k)
          beta = beta * o.sizes[order[k]] + c[order[k]];
        beta *= count;
        return BufferRef{kind, static_cast<int32_t>(base + j * n + beta),
                         static_cast<int32_t>(count)};
      };
    };
    std::vector<size_t> firstOp(n);
    for (RankId r = 0; r < n; ++r)
      firstOp[r] = s.ranks[r].ops.size();
    auto phase = [&](RingPhaseKind kind, int32_t i, BufferKind src) {
      RingPhaseSpec spec;
      spec.kind = kind;
      spec.groups = groupsOf(i);
      spec.block = blockFn(i, spec.groups);
      spec.src = src;
      spec.work = work;
      spec.chunks = laneChunks;
      spec.chunkChains = true;
      spec.chainOffset = static_cast<int32_t>(laneChain[lane]);
      emitRingPhase(s, spec, st);
    };
    for (int32_t i = 0; i < D; ++i)
      phase(RingPhaseKind::ReduceScatter, i, i == 0 ? BufferKind::Input : work);
    for (int32_t i = D; i-- > 0;)
      phase(RingPhaseKind::AllGather, i, work);
    for (RankId r = 0; r < n; ++r)
      for (size_t k = firstOp[r]; k < s.ranks[r].ops.size(); ++k)
        s.ranks[r].ops[k].channel = lane;
  }
  finishChainedRanks(s, st, Collective::AllReduce, s.chunksPerLoop,
                     o.inplace);
  return s;
}

} // namespace topocc::passes
