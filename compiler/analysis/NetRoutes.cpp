//===- compiler/analysis/NetRoutes.cpp - The NICs NCCL's net transport uses ===//

#include "compiler/analysis/NetRoutes.h"

#include "compiler/analysis/CostModel.h"

#include <algorithm>
#include <deque>
#include <map>
#include <numeric>

namespace topocc::analysis {

namespace {

/// The links at each device (Topology::linksOf scans every link).
std::vector<std::vector<int>> linksAt(const topo::Topology &t) {
  std::vector<std::vector<int>> at(t.devices().size());
  for (size_t l = 0; l < t.links().size(); ++l) {
    at[t.link(static_cast<int>(l)).from].push_back(static_cast<int>(l));
    if (t.link(static_cast<int>(l)).to != t.link(static_cast<int>(l)).from)
      at[t.link(static_cast<int>(l)).to].push_back(static_cast<int>(l));
  }
  return at;
}

/// Hops from `from` to every device of its node over links that are not
/// NVLink, without passing through a GPU other than `from` (-1: none).
std::map<int, int> pciDistances(const topo::Topology &t,
                                const std::vector<std::vector<int>> &links,
                                int from) {
  std::map<int, int> dist{{from, 0}};
  std::deque<int> queue{from};
  int node = t.device(from).nodeIndex;
  while (!queue.empty()) {
    int d = queue.front();
    queue.pop_front();
    if (d != from && t.device(d).kind == topo::DeviceKind::Gpu)
      continue;
    for (int l : links[d]) {
      const topo::Link &link = t.link(l);
      if (link.type == topo::LinkType::NvLink)
        continue;
      int o = link.from == d ? link.to : link.from;
      if (t.device(o).nodeIndex != node || dist.count(o))
        continue;
      dist[o] = dist[d] + 1;
      queue.push_back(o);
    }
  }
  return dist;
}

/// The devices of `kind` at the smallest distance in `dist`, by index.
std::vector<int> nearest(const topo::Topology &t,
                         const std::map<int, int> &dist,
                         topo::DeviceKind kind) {
  int best = -1;
  std::vector<int> out;
  for (auto [d, n] : dist) {
    if (t.device(d).kind != kind || n == 0)
      continue;
    if (best < 0 || n < best) {
      best = n;
      out.clear();
    }
    if (n == best)
      out.push_back(d);
  }
  return out;
}

/// NCCL's mirrorBits: `val`'s lowest log2(pow2) bits in reverse order.
int mirrorBits(int val, int pow2) {
  int mirror = 0;
  for (int b = 1, mb = pow2 >> 1; b < pow2; b <<= 1, mb >>= 1)
    if (val & b)
      mirror |= mb;
  return mirror;
}

bool isPow2(int v) { return v > 0 && (v & (v - 1)) == 0; }

} // namespace

NcclNetRoutes::NcclNetRoutes(const topo::Topology &t) {
  perRank.resize(t.numRanks());
  const std::vector<std::vector<int>> links = linksAt(t);
  // Nearest NICs per GPU, and GPUs nearest to a NIC, once per device.
  std::map<int, int> gpusNearNic;
  for (int r = 0; r < t.numRanks(); ++r) {
    int gpu = t.rankDevice(r);
    RankNets &rn = perRank[r];
    rn.nets = nearest(t, pciDistances(t, links, gpu), topo::DeviceKind::Nic);
    const topo::Device &dev = t.device(gpu);
    if (dev.nodeIndex >= 0) {
      const topo::Node &node = t.nodes()[dev.nodeIndex];
      int index = 0;
      for (int d : node.devices) {
        if (d == gpu)
          break;
        index += t.device(d).kind == topo::DeviceKind::Gpu;
      }
      rn.dev = index;
    }
    if (rn.nets.empty())
      continue;
    auto it = gpusNearNic.find(rn.nets[0]);
    if (it == gpusNearNic.end()) {
      size_t n =
          nearest(t, pciDistances(t, links, rn.nets[0]), topo::DeviceKind::Gpu)
              .size();
      it = gpusNearNic.emplace(rn.nets[0], std::max<int>(1, n)).first;
    }
    rn.localGpus = it->second;
  }
}

int NcclNetRoutes::period(int rank) const {
  const RankNets &rn = perRank[rank];
  int count = static_cast<int>(rn.nets.size());
  return count == 0 ? 1 : (count + rn.localGpus - 1) / rn.localGpus;
}

int NcclNetRoutes::nicFor(int rank, int channel) const {
  const RankNets &rn = perRank[rank];
  int count = static_cast<int>(rn.nets.size());
  if (count == 0)
    return -1;
  int net = rn.dev;
  if (isPow2(count))
    net = mirrorBits(net, count);
  int spread = (count + rn.localGpus - 1) / rn.localGpus;
  net += std::max(0, channel) % spread;
  return rn.nets[net % count];
}

PathFlow runtimeRankFlow(LinkModel &m, const NcclNetRoutes *net, int a, int b) {
  const topo::Topology &t = m.topology();
  if (!net || t.nodeOfRank(a) == t.nodeOfRank(b))
    return m.rankFlow(a, b);
  const int period = std::lcm(net->period(a), net->period(b));
  std::map<int, double> load;
  PathFlow mean;
  for (int c = 0; c < period; ++c) {
    const int out = net->nicFor(a, c), in = net->nicFor(b, c);
    const PathFlow *f = nullptr;
    if (out >= 0 && in >= 0)
      f = &m.viaFlow(a, out, in, b);
    if (!f || !f->found)
      f = &m.rankFlow(a, b);
    if (!f->found || period == 1)
      return *f;
    if (c == 0)
      mean = *f; // its bandwidth, latency and hops stand for the others
    for (auto [res, share] : f->res)
      load[res] += share / period;
  }
  mean.res.assign(load.begin(), load.end());
  return mean;
}

} // namespace topocc::analysis
