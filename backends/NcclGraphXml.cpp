//===- backends/NcclGraphXml.cpp - NCCL_GRAPH_FILE writer -----------------===//
//
// Splits each ring into node segments, checks that every node is visited
// once and that all nodes share one local order, and prints the graphs.
//
//===----------------------------------------------------------------------===//

#include "backends/NcclGraphXml.h"

#include "support/Diagnostics.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace topocc::backends {

namespace {

using topo::DeviceKind;
using topo::SwitchKind;

/// NCCL path types in increasing distance.
const char *const kPathTypes[] = {"NVL", "PIX", "PXB", "PHB", "SYS"};

int pathType(const topo::Topology &t, int fromDev, int toDev) {
  topo::Route r = t.routeDevices(fromDev, toDev);
  bool allNvl = !r.hops.empty();
  int pcieSwitches = 0;
  bool cpu = false, sys = false;
  for (const topo::Hop &h : r.hops) {
    const topo::Link &l = t.link(h.link);
    if (l.type != topo::LinkType::NvLink)
      allNvl = false;
    const topo::Device &a = t.device(h.fromDevice);
    const topo::Device &b = t.device(h.toDevice);
    if (a.switchKind == SwitchKind::CpuSocket &&
        b.switchKind == SwitchKind::CpuSocket)
      sys = true;
    if (b.switchKind == SwitchKind::CpuSocket)
      cpu = true;
    if (b.switchKind == SwitchKind::PcieSwitch)
      ++pcieSwitches;
  }
  if (allNvl)
    return 0;
  if (sys)
    return 4;
  if (cpu)
    return 3;
  return pcieSwitches > 1 ? 2 : 1;
}

std::string speedText(double gbs) {
  double v = std::round(gbs * 10) / 10;
  std::string s = llvm::formatv("{0:F1}", v).str();
  if (s.size() > 2 && s.substr(s.size() - 2) == ".0")
    s.resize(s.size() - 2);
  return s;
}

/// Position of a device among the node's devices of the same kind.
int localIndex(const topo::Topology &t, int dev) {
  const topo::Device &d = t.device(dev);
  if (d.nodeIndex < 0)
    return -1;
  int idx = 0;
  for (int x : t.nodes()[d.nodeIndex].devices) {
    if (x == dev)
      return idx;
    if (t.device(x).kind == d.kind)
      ++idx;
  }
  return -1;
}

struct Segment {
  int node = -1;
  std::vector<int> local; ///< local GPU indices in ring order
  int netIn = -1, netOut = -1; ///< local NIC indices
};

} // namespace

llvm::Expected<NcclGraphOutput>
writeNcclGraphXml(const topo::Topology &t,
                  llvm::ArrayRef<NcclGraphChannel> channels,
                  const NcclGraphOptions &opts) {
  NcclGraphOutput out;
  int n = t.numRanks();
  if (channels.empty())
    return makeUserError("no ring channels to write as an NCCL graph");
  for (int r = 0; r < n; ++r)
    if (t.nodeOfRank(r) < 0)
      return makeUserError(llvm::formatv(
          "rank {0} ({1}) is not inside a node; an NCCL graph file lists "
          "each node's local GPUs",
          r, t.rankName(r)));
  int worstIntra = 0, worstInter = 1;
  bool crossNic = false;
  bool multiNode = false;
  std::vector<std::vector<Segment>> perChannel;
  for (size_t c = 0; c < channels.size(); ++c) {
    const NcclGraphChannel &ch = channels[c];
    std::vector<int> sorted = ch.order;
    std::sort(sorted.begin(), sorted.end());
    bool perm = static_cast<int>(sorted.size()) == n;
    for (int i = 0; perm && i < n; ++i)
      perm = sorted[i] == i;
    if (!perm)
      return makeUserError(llvm::formatv(
          "channel {0} is not a ring over all {1} ranks", c, n));
    // Rotate to start at a node boundary.
    size_t start = 0;
    for (size_t i = 0; i < ch.order.size(); ++i) {
      size_t prev = (i + n - 1) % n;
      if (t.nodeOfRank(ch.order[prev]) != t.nodeOfRank(ch.order[i])) {
        start = i;
        break;
      }
    }
    std::vector<Segment> segs;
    std::map<int, int> seen;
    for (int k = 0; k < n; ++k) {
      size_t i = (start + k) % n;
      int r = ch.order[i];
      int node = t.nodeOfRank(r);
      if (segs.empty() || segs.back().node != node) {
        if (seen.count(node))
          return makeUserError(llvm::formatv(
              "channel {0} visits node '{1}' more than once; NCCL_GRAPH_FILE "
              "can only give each node one contiguous segment per ring",
              c, t.nodes()[node].name));
        seen[node] = 1;
        Segment s;
        s.node = node;
        size_t prev = (i + n - 1) % n;
        if (prev < ch.nics.size() && ch.nics[prev].second >= 0)
          s.netIn = localIndex(t, ch.nics[prev].second);
        segs.push_back(s);
      }
      segs.back().local.push_back(localIndex(t, t.rankDevice(r)));
      if (i < ch.nics.size() && ch.nics[i].first >= 0) {
        segs.back().netOut = localIndex(t, ch.nics[i].first);
        if (ch.nics[i].second >= 0 &&
            localIndex(t, ch.nics[i].first) != localIndex(t, ch.nics[i].second))
          crossNic = true;
      }
      int next = ch.order[(i + 1) % n];
      if (t.nodeOfRank(next) == node && next != r)
        worstIntra = std::max(worstIntra,
                              pathType(t, t.rankDevice(r), t.rankDevice(next)));
      else if (i < ch.nics.size() && ch.nics[i].first >= 0)
        worstInter = std::max(
            worstInter, pathType(t, t.rankDevice(r), ch.nics[i].first));
    }
    if (segs.size() > 1)
      multiNode = true;
    // One file serves every node: the local orders must agree.
    for (size_t s = 1; s < segs.size(); ++s)
      if (segs[s].local != segs[0].local || segs[s].netIn != segs[0].netIn ||
          segs[s].netOut != segs[0].netOut)
        return makeUserError(llvm::formatv(
            "channel {0}: node '{1}' needs a different local order or NIC "
            "than node '{2}'; NCCL reads one graph file on every node",
            c, t.nodes()[segs[s].node].name, t.nodes()[segs[0].node].name));
    // Node order NCCL will use: ascending by rank numbering.
    if (segs.size() > 2) {
      std::vector<int> firstRank;
      for (const Segment &s : segs) {
        int mn = n;
        for (int r = 0; r < n; ++r)
          if (t.nodeOfRank(r) == s.node)
            mn = std::min(mn, r);
        firstRank.push_back(mn);
      }
      size_t lo = std::min_element(firstRank.begin(), firstRank.end()) -
                  firstRank.begin();
      bool ascending = true;
      for (size_t k = 1; k < firstRank.size(); ++k)
        ascending = ascending && firstRank[(lo + k) % firstRank.size()] >
                                     firstRank[(lo + k - 1) % firstRank.size()];
      if (!ascending)
        out.notes.push_back(llvm::formatv(
            "channel {0}: the ring's node order is not rank order; NCCL will "
            "connect the nodes in rank order instead",
            c));
    }
    perChannel.push_back(std::move(segs));
  }
  if (multiNode)
    out.notes.push_back(
        "the inter-node order follows rank numbering: NCCL connects node k's "
        "last GPU to node k+1's first GPU; the file gives only each node's "
        "local order and NICs");
  out.notes.push_back("dev is the local GPU index in the topology file's "
                      "declaration order; it must match the NVML (nvidia-smi) "
                      "index on the machine");
  out.notes.push_back("NCCL uses min(ring, tree) channels and then doubles "
                      "them; chunking and protocol stay NCCL's own");
  const char *typeIntra = kPathTypes[worstIntra];
  const char *typeInter = multiNode ? kPathTypes[worstInter] : typeIntra;
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "<graphs version=\"1\">\n";
  for (int graph = 0; graph < 2; ++graph) {
    os << llvm::formatv(
        "  <graph id=\"{0}\" pattern=\"{1}\" crossnic=\"{2}\" "
        "nchannels=\"{3}\" speedintra=\"{4}\" speedinter=\"{5}\" "
        "latencyinter=\"0\" typeintra=\"{6}\" typeinter=\"{7}\" "
        "samechannels=\"0\">\n",
        graph, graph == 0 ? 4 : 3, crossNic ? 1 : 0, channels.size(),
        speedText(opts.speedIntra), speedText(opts.speedInter), typeIntra,
        typeInter);
    for (const std::vector<Segment> &segs : perChannel) {
      const Segment &s = segs[0];
      os << "    <channel>\n";
      if (multiNode && s.netIn >= 0)
        os << llvm::formatv("      <net dev=\"{0:x-}\"/>\n", s.netIn);
      for (int g : s.local)
        os << llvm::formatv("      <gpu dev=\"{0:x-}\"/>\n", g);
      if (multiNode && s.netOut >= 0)
        os << llvm::formatv("      <net dev=\"{0:x-}\"/>\n", s.netOut);
      os << "    </channel>\n";
    }
    os << "  </graph>\n";
  }
  os << "</graphs>\n";
  os.flush();
  out.xml = std::move(text);
  return out;
}

} // namespace topocc::backends
