//===- compiler/analysis/Prediction.cpp - The prediction of a schedule ----===//

#include "compiler/analysis/Prediction.h"

#include "compiler/analysis/CostModel.h"
#include "compiler/analysis/RealizableGraph.h"

#include "llvm/Support/FormatVariadic.h"

namespace topocc::analysis {

TopologyBounds computeTopologyBounds(const topo::Topology &t, SimMode mode) {
  TopologyBounds b;
  RealizableOptions o;
  o.ncclNetRule = mode == SimMode::Runtime;
  auto realizable = computeRealizableBound(t, o);
  if (realizable)
    b.realizable = std::move(*realizable);
  else
    b.error = llvm::toString(realizable.takeError());
  auto physical = computeBound(t, CapacityKind::Effective);
  if (physical)
    b.physical = std::move(*physical);
  else if (b.error.empty())
    b.error = llvm::toString(physical.takeError());
  else
    llvm::consumeError(physical.takeError());
  return b;
}

llvm::Expected<Prediction> predictSchedule(const topo::Topology &t,
                                           const ir::Schedule &s,
                                           double bytes, SimMode mode,
                                           const TopologyBounds *bounds) {
  LinkModel m(t);
  SimOptions o;
  o.bytes = bytes;
  o.mode = mode;
  auto sim = simulate(s, m, o);
  if (!sim)
    return sim.takeError();
  return predictionOf(t, s, std::move(*sim), mode, bounds);
}

Prediction predictionOf(const topo::Topology &t, const ir::Schedule &s,
                        SimResult sim, SimMode mode,
                        const TopologyBounds *bounds) {
  Prediction p;
  const double bytes = sim.bytes;
  p.bytes = bytes;
  p.mode = mode;
  for (const ir::RankProgram &rp : s.ranks)
    for (const ir::Op &op : rp.ops)
      p.coded = p.coded || op.kind == ir::OpKind::LinComb;
  p.sim = std::move(sim);
  p.allReduce = s.collective == ir::Collective::AllReduce;
  std::optional<TopologyBounds> own;
  if (!bounds)
    bounds = &own.emplace(computeTopologyBounds(t, mode));
  if (bounds->realizable)
    p.bound = boundNumbers(*bounds->realizable, s.collective, bytes);
  if (bounds->physical)
    p.physical = boundNumbers(*bounds->physical, s.collective, bytes);
  p.boundError = bounds->error;
  return p;
}

std::string predictionText(const Prediction &p) {
  std::string line =
      llvm::formatv("{0:F3} ms, algbw {1:F2} GB/s, busbw {2:F2} GB/s",
                    p.sim.time * 1e3, p.sim.algbw / 1e9, p.sim.busbw / 1e9)
          .str();
  if (p.bound) {
    line += llvm::formatv(", {0:F1}% of the realizable bound (busbw {1:F2} "
                          "GB/s",
                          100.0 * p.fractionOfBound(), p.bound->busbw / 1e9)
                .str();
    if (p.physical)
      line += llvm::formatv("; physical bound busbw {0:F2} GB/s",
                            p.physical->busbw / 1e9)
                  .str();
    if (p.coded)
      line += "; an exact collective's: a coded schedule approximates with "
              "less traffic";
    else if (p.allReduce && p.fractionOfBound() > 1 + 1e-9)
      line += "; the all-reduce bound is reduce-scatter then all-gather, "
              "which this schedule beats by overlapping them on opposite "
              "link directions";
    line += ")";
  } else {
    line += " (no bound: " + p.boundError + ")";
  }
  return line;
}

llvm::json::Object predictionJson(const Prediction &p) {
  llvm::json::Object sim{{"mode", simModeName(p.mode)},
                         {"time_s", p.sim.time},
                         {"algbw_GBps", p.sim.algbw / 1e9},
                         {"busbw_GBps", p.sim.busbw / 1e9}};
  if (p.bound) {
    sim["bound"] = "realizable";
    sim["bound_time_s"] = p.bound->time;
    sim["bound_busbw_GBps"] = p.bound->busbw / 1e9;
    sim["percent_of_bound"] = 100.0 * p.fractionOfBound();
    if (p.physical)
      sim["physical_bound_busbw_GBps"] = p.physical->busbw / 1e9;
  } else {
    sim["bound_error"] = p.boundError;
  }
  if (p.coded)
    sim["coded"] = true;
  else if (p.allReduce && p.fractionOfBound() > 1 + 1e-9)
    sim["bound_beaten_by_overlap"] = true;
  return sim;
}

} // namespace topocc::analysis
