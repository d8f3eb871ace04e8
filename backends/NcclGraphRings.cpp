//===- backends/NcclGraphRings.cpp - Ring channels as NCCL_GRAPH_FILE -----===//

#include "backends/NcclGraphRings.h"

#include <cmath>
#include <limits>

namespace topocc::backends {

llvm::Expected<NcclGraphOutput>
ncclGraphForRings(const topo::Topology &t,
                  llvm::ArrayRef<analysis::RingChannel> rings,
                  ir::Collective c, double bytes, analysis::LinkModel &m) {
  auto cost = analysis::estimateRings(rings, c, bytes, m);
  if (!cost)
    return cost.takeError();
  std::vector<NcclGraphChannel> chans;
  double perChannel = 0, inter = std::numeric_limits<double>::infinity();
  const int n = t.numRanks();
  const int steps = analysis::ringSteps(c, n);
  // Per-hop rate of the whole set, split evenly over the channels.
  if (cost->bandwidthTime > 0)
    perChannel = steps * bytes / n / cost->bandwidthTime / rings.size();
  for (const analysis::RingChannel &rc : rings) {
    NcclGraphChannel ch;
    ch.order = rc.order;
    for (size_t i = 0; i < rc.order.size(); ++i) {
      analysis::NicPair np =
          i < rc.nics.size() ? rc.nics[i] : analysis::NicPair{};
      ch.nics.push_back({np.out, np.in});
      if (np.isSet())
        inter = std::min(inter, analysis::hopFlow(rc, i, m).bandwidth);
    }
    chans.push_back(std::move(ch));
  }
  NcclGraphOptions go;
  go.speedIntra = perChannel / 1e9;
  go.speedInter = std::isfinite(inter) ? std::min(inter, perChannel) / 1e9
                                       : go.speedIntra;
  return writeNcclGraphXml(t, chans, go);
}

} // namespace topocc::backends
