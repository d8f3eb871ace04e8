//===- compiler/analysis/NcclModel.cpp - NCCL 2.30's own estimate ---------===//
//
// Bandwidth: on NVLink nodes NCCL spreads channels over every NVLink of a GPU
// (busBw = min over GPUs of its NVLink total), across nodes it is capped by
// the NICs of a node; elsewhere the rank-order ring on NCCL's per-link
// bandwidths. Latency and protocol factors are NCCL 2.30's constants.
//
//===----------------------------------------------------------------------===//

#include "compiler/analysis/NcclModel.h"

#include "compiler/analysis/CostModel.h"

#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace topocc::analysis {

namespace {

enum Proto { LL, LL128, Simple, NumProtos };
const char *const kProtoNames[] = {"LL", "LL128", "Simple"};
// Base latency (us), ring and tree.
const double kBaseRing[] = {6.6, 14.0, 8.4};
const double kBaseTree[] = {6.8, 14.0, 8.4};
// Per-hop latency (us): NVLink, PCI, NET.
const double kRingNvl[] = {0.6, 1.9, 3.4}, kTreeNvl[] = {0.6, 1.25, 4.0};
const double kRingPci[] = {1.0, 2.5, 5.7}, kTreePci[] = {1.0, 1.9, 4.0};
const double kRingNet[] = {2.7, 4.0, 14.0}, kTreeNet[] = {5.0, 8.5, 14.0};
const double kRingProtoBw[] = {0.5, 0.92, 1.0};

int archOf(const topo::Topology &t) {
  for (int r = 0; r < t.numRanks(); ++r) {
    std::string m = llvm::StringRef(t.device(t.rankDevice(r)).model).lower();
    if (m.find("h100") != std::string::npos ||
        m.find("h200") != std::string::npos ||
        m.find("h800") != std::string::npos)
      return 90;
    if (m.find("v100") != std::string::npos)
      return 70;
  }
  return 80;
}

} // namespace

double ncclLinkBandwidth(const topo::Topology &t, const topo::Link &l,
                         int dir) {
  switch (l.type) {
  case topo::LinkType::NvLink:
    // NCCL counts 20 GB/s (20.6 on sm90) per NVLink port of 25 GB/s raw;
    // a link written as one 300 GB/s bundle is 12 ports.
    return l.capacity(dir) / 25e9 * (archOf(t) >= 90 ? 20.6e9 : 20e9);
  case topo::LinkType::Pcie:
    return 0.75 * l.capacity(dir);
  case topo::LinkType::Ib:
  case topo::LinkType::Roce:
  case topo::LinkType::Ethernet:
    // 96% of the NIC's line rate, but never above what the link carries
    // (its effective rate; Ethernet's is lower): NCCL cannot beat the wire.
    return std::min(0.96 * l.capacity(dir), l.effectiveCapacity(dir));
  default:
    return l.effectiveCapacity(dir);
  }
}

NcclModelResult ncclEstimate(const topo::Topology &t, ir::Collective c,
                             double bytes) {
  NcclModelResult res;
  int n = t.numRanks();
  int arch = archOf(t);
  res.arch = "sm" + std::to_string(arch);
  // Nodes that hold ranks.
  std::vector<int> nodesUsed;
  for (int r = 0; r < n; ++r) {
    int nd = t.nodeOfRank(r);
    if (std::find(nodesUsed.begin(), nodesUsed.end(), nd) == nodesUsed.end())
      nodesUsed.push_back(nd);
  }
  int nNodes = std::max<int>(1, nodesUsed.size());
  res.numNodes = nNodes;
  // NVLink total per GPU.
  double nvlMin = std::numeric_limits<double>::infinity();
  bool allNvl = true;
  for (int r = 0; r < n; ++r) {
    int d = t.rankDevice(r);
    double sum = 0;
    for (int li : t.linksOf(d)) {
      const topo::Link &l = t.link(li);
      if (l.type == topo::LinkType::NvLink)
        sum += ncclLinkBandwidth(t, l, l.from == d ? 0 : 1);
    }
    if (sum == 0)
      allNvl = false;
    nvlMin = std::min(nvlMin, sum);
  }
  double busBw = 0;
  if (allNvl) {
    busBw = nvlMin;
    res.intraPath = "NVL";
    if (nNodes > 1) {
      double inter = std::numeric_limits<double>::infinity();
      for (int nd : nodesUsed) {
        double sum = 0;
        if (nd < 0)
          continue;
        for (int d : t.nodes()[nd].devices) {
          if (t.device(d).kind != topo::DeviceKind::Nic)
            continue;
          for (int li : t.linksOf(d)) {
            const topo::Link &l = t.link(li);
            int other = l.from == d ? l.to : l.from;
            if (t.device(other).nodeIndex != nd)
              sum += ncclLinkBandwidth(t, l, l.from == d ? 0 : 1);
          }
        }
        inter = std::min(inter, sum);
      }
      if (inter > 0 && std::isfinite(inter))
        busBw = std::min(busBw, inter);
    }
  } else {
    res.intraPath = "PCI";
    // The rank-order ring on NCCL's link bandwidths.
    topo::Topology w = t;
    for (topo::Link &l : w.mutableLinks()) {
      for (int d = 0; d < 2; ++d)
        l.bandwidth[d] = ncclLinkBandwidth(t, l, d) / l.count;
      l.efficiency = 1;
    }
    LinkModel m(w);
    RingChannel rc;
    rc.order.resize(n);
    std::iota(rc.order.begin(), rc.order.end(), 0);
    RingBottleneck rb = ringBottleneck(rc, m);
    busBw = rb.routed ? rb.bandwidth : 0;
  }
  const double *intraRing = res.intraPath == "NVL" ? kRingNvl : kRingPci;
  const double *intraTree = res.intraPath == "NVL" ? kTreeNvl : kTreePci;
  int nsteps = ringSteps(c, n);
  int nInter = c == ir::Collective::AllReduce ? 2 * (nNodes - 1) : nNodes - 1;
  auto finish = [&](NcclEstimate &e) {
    e.algbw = e.time > 0 ? bytes / e.time : 0;
    e.busbw = e.algbw * busFactor(c, n);
  };
  res.ring.algorithm = "ring";
  res.ring.applicable = busBw > 0;
  res.ring.modelBusBw = busBw;
  res.ring.time = std::numeric_limits<double>::infinity();
  for (int p = 0; p < NumProtos && busBw > 0; ++p) {
    double lat = kBaseRing[p] + (nsteps - nInter) * intraRing[p] +
                 nInter * kRingNet[p];
    if (nNodes > 1 && p == Simple && arch >= 80)
      lat *= 1.4;
    double algBw = busBw * kRingProtoBw[p] * n / nsteps;
    double time = lat * 1e-6 + bytes / algBw;
    if (time < res.ring.time) {
      res.ring.time = time;
      res.ring.latency = lat * 1e-6;
      res.ring.protocol = kProtoNames[p];
    }
  }
  finish(res.ring);
  res.tree.algorithm = "tree";
  res.tree.applicable = c == ir::Collective::AllReduce && busBw > 0;
  if (res.tree.applicable) {
    double treeBw = busBw * 0.92;
    res.tree.modelBusBw = treeBw;
    res.tree.time = std::numeric_limits<double>::infinity();
    double perNode = double(n) / nNodes;
    for (int p = 0; p < NumProtos; ++p) {
      double lat = kBaseTree[p] + 2 * ((perNode - 1) * intraTree[p] +
                                       std::log2(double(nNodes)) * kTreeNet[p]);
      double algBw = treeBw * kRingProtoBw[p] * 0.5;
      double time = lat * 1e-6 + bytes / algBw;
      if (time < res.tree.time) {
        res.tree.time = time;
        res.tree.latency = lat * 1e-6;
        res.tree.protocol = kProtoNames[p];
      }
    }
    finish(res.tree);
  }
  return res;
}

} // namespace topocc::analysis
