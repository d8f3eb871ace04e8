//===- compiler/analysis/ComputeModel.cpp - Local work of schedule ops ----===//

#include "compiler/analysis/ComputeModel.h"

#include "compiler/analysis/CostModel.h"
#include "compiler/analysis/Simulator.h"
#include "compiler/topology/GpuModels.h"

#include <algorithm>

namespace topocc::analysis {

double memoryBandwidth(llvm::StringRef model) {
  const topo::GpuModel *m = topo::findGpuModel(model);
  return m ? m->memoryBandwidth : 0;
}

std::vector<double> rankMemoryBandwidths(const topo::Topology &t) {
  std::vector<double> out(t.numRanks(), 0);
  for (int r = 0; r < t.numRanks(); ++r)
    out[r] = memoryBandwidth(t.device(t.rankDevice(r)).model);
  return out;
}

double slowestMemoryBandwidth(const topo::Topology &t) {
  double best = 0;
  for (double b : rankMemoryBandwidths(t))
    if (b > 0)
      best = best > 0 ? std::min(best, b) : b;
  return best;
}

double memoryTraffic(const ir::Op &op, double unit) {
  if (ir::opFlags(op.kind) & ir::OF_RE)
    return 3 * op.wireCount() * unit; // received + local in, result out
  switch (op.kind) {
  case ir::OpKind::Reduce:
    return 3 * op.src.count * unit; // dst + src in, dst out
  case ir::OpKind::LinComb:
    return (static_cast<double>(op.terms.size()) + 1) * op.dst.count * unit;
  default:
    return 0;
  }
}

double computeTime(const ir::Op &op, double unit, double memBandwidth) {
  if (!(memBandwidth > 0))
    return 0;
  return memoryTraffic(op, unit) / memBandwidth;
}

std::vector<double> memoryBandwidthsFor(const topo::Topology &t,
                                        std::optional<double> override) {
  if (override)
    return std::vector<double>(t.numRanks(), std::max(0.0, *override));
  return rankMemoryBandwidths(t);
}

llvm::Expected<SimResult> simulateRun(const topo::Topology &t,
                                      const ir::Schedule &s, double bytes,
                                      SimMode mode,
                                      std::optional<double> reduceBandwidth) {
  LinkModel m(t);
  SimOptions o;
  o.bytes = bytes;
  o.mode = mode;
  o.reduceBandwidth = reduceBandwidth;
  return simulate(s, m, o);
}

llvm::Expected<double> simulateTime(const topo::Topology &t,
                                    const ir::Schedule &s, double bytes,
                                    SimMode mode,
                                    std::optional<double> reduceBandwidth) {
  auto r = simulateRun(t, s, bytes, mode, reduceBandwidth);
  if (!r)
    return r.takeError();
  return r->time;
}

} // namespace topocc::analysis
