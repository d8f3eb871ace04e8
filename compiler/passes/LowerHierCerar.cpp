//===- compiler/passes/LowerHierCerar.cpp - Hierarchical CERAR ------------===//
//
// Phase 1: emitRingPhase(ReduceScatter) over the intra-node rings, blocks =
//          shards of c units, contributions from `in`, results in the work
//          buffer (`out`, or `in` in place).
// Phase 2: emitCerarRing per rail l on units [l*c, (l+1)*c) of the work
//          buffer, in place (the encode and decode work on the node sums),
//          seam offset hierCerarRailSeam(l, ...).
// Phase 3: emitRingPhase(AllGather) over the intra-node rings.
// Message ids are consecutive per phase (ChainState::nextMsg); the scratch
// of the reduce-scatter comes first, the CERAR pool after it.
//
//===----------------------------------------------------------------------===//

#include "compiler/passes/LowerHierCerar.h"

#include "compiler/passes/LowerHierRing.h"
#include "support/Diagnostics.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

namespace topocc::passes {

using namespace ir;

namespace {

llvm::Error checkOptions(const HierCerarOptions &o) {
  std::vector<std::string> problems;
  if (o.nodes.size() < 2)
    return makeUserError(llvm::formatv(
        "hier-cerar needs at least 2 nodes with GPUs, the topology has {0}",
        o.nodes.size()));
  if (auto err = checkCerarDesign(o.design))
    return err;
  if (o.design.ranks != static_cast<int>(o.nodes.size()))
    problems.push_back(llvm::formatv("the inter-node code has N = {0}, the "
                                     "topology has {1} nodes",
                                     o.design.ranks, o.nodes.size()));
  const size_t g = o.nodes[0].size();
  checkNodeLayout(o.nodes, o.numRanks, o.localOrder, "hier-cerar", problems);
  const int64_t units = int64_t(g) * o.design.components;
  if (units > 32767)
    problems.push_back(llvm::formatv(
        "GPUs per node * components = {0} units exceeds 32767", units));
  if (!problems.empty())
    return makeUserError(llvm::join(problems, "\n"));
  return llvm::Error::success();
}

} // namespace

llvm::Expected<Schedule> lowerHierCerar(const HierCerarOptions &o,
                                        HierCerarInfo *info) {
  if (auto err = checkOptions(o))
    return err;
  const cerar::Design &d = o.design;
  const int32_t M = static_cast<int32_t>(o.nodes.size()),
                G = static_cast<int32_t>(o.nodes[0].size()), c = d.components,
                n = o.numRanks;
  std::vector<int32_t> lorder = o.localOrder;
  if (lorder.empty())
    for (int32_t l = 0; l < G; ++l)
      lorder.push_back(l);
  const BufferKind work = o.inplace ? BufferKind::Input : BufferKind::Output;

  Schedule s;
  s.collective = Collective::AllReduce;
  s.numRanks = n;
  s.chunksPerLoop = G * c;
  s.inplace = o.inplace;
  s.stage = Stage::Lowered;
  s.name = o.name.empty()
               ? llvm::formatv("hiercerar{0}x{1}_allreduce_c{2}_{3}_{4}", M, G,
                               c, cerar::constructionName(d.construction),
                               o.inplace ? "inplace" : "outofplace")
                     .str()
               : o.name;
  s.ranks.resize(n);
  ChainState st(n);

  std::vector<std::vector<RankId>> intra, rails;
  nodeAndRailRings(o.nodes, lorder, intra, rails);
  // Intra position q holds the shard of local index lorder[q]: c units.
  RingBlockFn shard = [&](int32_t, int32_t q, int32_t, BufferKind k) {
    return BufferRef{k, lorder[q] * c, c};
  };
  RingPhaseSpec rs;
  rs.kind = RingPhaseKind::ReduceScatter;
  rs.groups = intra;
  rs.block = shard;
  rs.src = BufferKind::Input;
  rs.work = work;
  emitRingPhase(s, rs, st);

  HierCerarInfo got;
  got.nodes = M;
  got.gpusPerNode = G;
  for (int32_t l = 0; l < G; ++l) {
    CerarRingSpec spec;
    spec.design = &d;
    spec.ring = rails[l];
    spec.seamOffset = hierCerarRailSeam(l, M, o.seamOffset, o.staggerSeams);
    spec.input = work;
    spec.result = work;
    spec.firstChunk = l * c;
    spec.forceGeneric = o.forceGeneric;
    CerarLoweringInfo ri = emitCerarRing(s, spec, st);
    got.rail.inPlaceWorker = ri.inPlaceWorker;
    got.rail.rounds = ri.rounds;
    got.rail.peakScratch = std::max(got.rail.peakScratch, ri.peakScratch);
  }

  RingPhaseSpec ag = rs;
  ag.kind = RingPhaseKind::AllGather;
  ag.src = work;
  emitRingPhase(s, ag, st);

  finishChainedRanks(s, st, Collective::AllReduce, s.chunksPerLoop,
                     o.inplace);
  if (info)
    *info = got;
  return s;
}

} // namespace topocc::passes
