//===- compiler/analysis/NetRoutes.h - The NICs NCCL's net transport uses -*- C++ -*-===//
//
// Which NIC a rank's inter-node connection on a channel goes through when
// the runtime is NCCL's (the MSCCL executor sets its connections up through
// NCCL's transports): without a ring or tree graph, NCCL's net transport
// asks ncclTopoGetLocalNet (src/graph/topo.cc) for the NIC, which takes
// the NICs nearest to the GPU (the best PCIe path type; here the fewest
// hops over non-NVLink links inside the node, never through another GPU),
// counts the GPUs nearest to the first of them, starts at the GPU's device
// index (bit-mirrored when the NIC count is a power of two) and adds
// channel % ceil(NICs / GPUs). docs/WhatIf.md, "Routes the runtime uses".
// Stage: analysis. Never prints; deterministic.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_ANALYSIS_NETROUTES_H
#define TOPOCC_COMPILER_ANALYSIS_NETROUTES_H

#include "compiler/topology/Topology.h"

#include <vector>

namespace topocc::analysis {

class LinkModel;
struct PathFlow;

class NcclNetRoutes {
public:
  explicit NcclNetRoutes(const topo::Topology &t);

  /// Device index of the NIC rank `rank` uses on `channel` (channels below
  /// 0 count as 0); -1 when its node has no NIC it can reach.
  int nicFor(int rank, int channel) const;

  /// Channels after which nicFor(rank, .) repeats (1 without a NIC).
  int period(int rank) const;

  /// The NICs nearest to `rank`'s GPU, in declaration order.
  const std::vector<int> &nearestNics(int rank) const {
    return perRank[rank].nets;
  }

private:
  struct RankNets {
    std::vector<int> nets; ///< nearest NICs, device indices
    int localGpus = 1;     ///< GPUs nearest to nets[0]
    int dev = 0;           ///< the GPU's index inside its node
  };
  std::vector<RankNets> perRank;
};

/// How the runtime model spreads a message from rank a to rank b over the
/// links (the simulator's rule): across nodes, with `net`, through the NICs
/// it gives both ends on a channel, averaged over the channels after which
/// those repeat (one channel on DGX boxes: a NIC per GPU), or free routing
/// where those NICs give no route; otherwise LinkModel::rankFlow. With
/// several channels the bandwidth, latency and hops are the first's.
PathFlow runtimeRankFlow(LinkModel &m, const NcclNetRoutes *net, int a, int b);

} // namespace topocc::analysis

#endif // TOPOCC_COMPILER_ANALYSIS_NETROUTES_H
