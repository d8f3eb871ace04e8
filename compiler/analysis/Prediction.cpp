//===- compiler/analysis/Prediction.cpp - The prediction of a schedule ----===//

#include "compiler/analysis/Prediction.h"

#include "compiler/analysis/CostModel.h"

#include "llvm/Support/FormatVariadic.h"

namespace topocc::analysis {

llvm::Expected<Prediction> predictSchedule(const topo::Topology &t,
                                           const ir::Schedule &s,
                                           double bytes, SimMode mode,
                                           const BoundResult *bound) {
  LinkModel m(t);
  SimOptions o;
  o.bytes = bytes;
  o.mode = mode;
  auto sim = simulate(s, m, o);
  if (!sim)
    return sim.takeError();
  Prediction p;
  p.bytes = bytes;
  p.mode = mode;
  for (const ir::RankProgram &rp : s.ranks)
    for (const ir::Op &op : rp.ops)
      p.coded = p.coded || op.kind == ir::OpKind::LinComb;
  p.sim = std::move(*sim);
  if (bound) {
    p.bound = boundNumbers(*bound, s.collective, bytes);
    return p;
  }
  auto b = computeBound(t, CapacityKind::Effective);
  if (!b) {
    p.boundError = llvm::toString(b.takeError());
    return p;
  }
  p.bound = boundNumbers(*b, s.collective, bytes);
  return p;
}

std::string predictionText(const Prediction &p) {
  std::string line =
      llvm::formatv("{0:F3} ms, algbw {1:F2} GB/s, busbw {2:F2} GB/s",
                    p.sim.time * 1e3, p.sim.algbw / 1e9, p.sim.busbw / 1e9)
          .str();
  if (p.bound)
    line += llvm::formatv(", {0:F1}% of the cut bound (busbw {1:F2} GB/s{2})",
                          100.0 * p.fractionOfBound(), p.bound->busbw / 1e9,
                          p.coded ? ", an exact collective's: a coded "
                                    "schedule approximates with less traffic"
                                  : "")
                .str();
  else
    line += " (no cut bound: " + p.boundError + ")";
  return line;
}

} // namespace topocc::analysis
