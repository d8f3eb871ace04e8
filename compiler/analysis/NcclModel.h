//===- compiler/analysis/NcclModel.h - NCCL 2.30's own estimate -*- C++ -*-===//
//
// A reference row "what NCCL would do": NCCL 2.30's tuning model
// (src/graph/tuning.cc) for ring and tree with its own per-link bandwidth
// assumptions and latency constants (docs/Algorithms-rings.md, "2. NCCL
// reference model", which also says what it keeps and what it drops).
// Stage: analysis. An approximation of NCCL's topology search.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_ANALYSIS_NCCLMODEL_H
#define TOPOCC_COMPILER_ANALYSIS_NCCLMODEL_H

#include "compiler/topology/Topology.h"
#include "ir/Schedule.h"

#include <string>

namespace topocc::analysis {

/// NCCL's assumed bandwidth of a link direction, bytes/s (all ports):
/// NVLink 20 GB/s per port (SM70/SM80), 20.6 (SM90); PCIe 0.75 x raw
/// (width * speed / 80: Gen3 x16 12, Gen4 24, Gen5 48); IB/RoCE/Ethernet
/// 0.96 x raw (12 for 100 Gb/s); other links (xGMI, C2C, socket) as the
/// topology's effective capacity.
double ncclLinkBandwidth(const topo::Topology &t, const topo::Link &l,
                         int dir);

/// One algorithm's estimate with the protocol NCCL would pick.
struct NcclEstimate {
  bool applicable = false; ///< tree: allreduce only
  std::string algorithm;   ///< "ring" or "tree"
  std::string protocol;    ///< "LL", "LL128" or "Simple"
  double modelBusBw = 0;   ///< nChannels * bw of NCCL's search, bytes/s
  double latency = 0;      ///< seconds
  double time = 0, algbw = 0, busbw = 0; ///< busbw per nccl-tests
};

struct NcclModelResult {
  NcclEstimate ring, tree;
  int numNodes = 1;
  std::string intraPath; ///< "NVL" or "PCI": the per-hop latency class used
  std::string arch;      ///< "sm70", "sm80", "sm90" (from the GPU model)
};

/// REQUIRES: collective is allreduce, allgather or reducescatter; bytes > 0.
NcclModelResult ncclEstimate(const topo::Topology &t, ir::Collective c,
                             double bytes);

} // namespace topocc::analysis

#endif // TOPOCC_COMPILER_ANALYSIS_NCCLMODEL_H
