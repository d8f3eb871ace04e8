//===- compiler/topology/Topology.cpp - The cluster model -----------------===//
//
// Model accessors, rank bookkeeping and the GPU connectivity check.
//
//===----------------------------------------------------------------------===//

#include "compiler/topology/Topology.h"

#include "support/UnionFind.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>
#include <numeric>

namespace topocc::topo {

namespace {
const llvm::StringRef kSwitchKinds[] = {"nvswitch",  "pcie-switch",
                                        "cpu-socket", "ib-switch",
                                        "eth-switch", "roce-switch"};
const llvm::StringRef kLinkTypes[] = {"nvlink", "pcie", "xgmi",     "c2c",
                                      "ib",     "roce", "ethernet", "custom"};
} // namespace

llvm::StringRef deviceKindName(DeviceKind k) {
  switch (k) {
  case DeviceKind::Gpu:
    return "gpu";
  case DeviceKind::Nic:
    return "nic";
  case DeviceKind::Switch:
    return "switch";
  }
  llvm_unreachable("unknown device kind");
}

llvm::StringRef switchKindName(SwitchKind k) {
  if (k == SwitchKind::None)
    return "";
  return kSwitchKinds[static_cast<int>(k) - 1];
}

llvm::StringRef linkTypeName(LinkType t) {
  return kLinkTypes[static_cast<int>(t)];
}

std::optional<SwitchKind> parseSwitchKind(llvm::StringRef s) {
  for (size_t i = 0; i < std::size(kSwitchKinds); ++i)
    if (kSwitchKinds[i] == s)
      return static_cast<SwitchKind>(i + 1);
  return std::nullopt;
}

std::optional<LinkType> parseLinkType(llvm::StringRef s) {
  for (size_t i = 0; i < std::size(kLinkTypes); ++i)
    if (kLinkTypes[i] == s)
      return static_cast<LinkType>(i);
  return std::nullopt;
}

llvm::ArrayRef<llvm::StringRef> switchKindNames() { return kSwitchKinds; }
llvm::ArrayRef<llvm::StringRef> linkTypeNames() { return kLinkTypes; }

std::string Link::bandwidthText(int dir) const {
  return formatInUnit(bandwidth[dir], bandwidthUnit[dir]);
}

std::string Link::latencyText() const {
  return formatInUnit(latency, latencyUnit);
}

int Topology::findDevice(llvm::StringRef fullName) const {
  auto it = byName_.find(fullName);
  return it == byName_.end() ? -1 : it->second;
}

std::vector<int> Topology::linksOf(int d) const {
  std::vector<int> out;
  for (size_t i = 0; i < links_.size(); ++i)
    if (links_[i].from == d || links_[i].to == d)
      out.push_back(static_cast<int>(i));
  return out;
}

int Topology::rankOf(llvm::StringRef fullName) const {
  int d = findDevice(fullName);
  return d < 0 ? -1 : devices_[d].rank;
}

int Topology::gpusPerNode() const {
  if (nodes_.empty())
    return 0;
  int common = -1;
  for (const Node &n : nodes_) {
    int gpus = 0;
    for (int d : n.devices)
      gpus += devices_[d].kind == DeviceKind::Gpu;
    if (common >= 0 && gpus != common)
      return 0;
    common = gpus;
  }
  for (const Device &d : devices_)
    if (d.kind == DeviceKind::Gpu && d.nodeIndex < 0)
      return 0;
  return common;
}

const ScenarioDef *Topology::findScenario(llvm::StringRef name) const {
  for (const ScenarioDef &s : scenarios_)
    if (s.name == name)
      return &s;
  return nullptr;
}

Diagnostic Topology::diag(const SourceLoc &loc, std::string message) const {
  Diagnostic d;
  d.loc = loc;
  d.message = std::move(message);
  if (source_ && loc.line)
    d.sourceLine = sourceLineOf(*source_, loc.line);
  return d;
}

void Topology::setHeader(std::string schema, std::string name,
                         std::string description, std::string fileName) {
  schema_ = std::move(schema);
  name_ = std::move(name);
  description_ = std::move(description);
  fileName_ = std::move(fileName);
}

void Topology::setRanks(std::vector<int> gpuDevices, bool fromList) {
  for (Device &d : devices_)
    d.rank = -1;
  ranks_ = std::move(gpuDevices);
  rankList_ = fromList;
  for (size_t r = 0; r < ranks_.size(); ++r)
    devices_[ranks_[r]].rank = static_cast<int>(r);
}

void Topology::reindex() {
  byName_.clear();
  for (size_t i = 0; i < devices_.size(); ++i)
    byName_.emplace(devices_[i].name, static_cast<int>(i));
}

void Topology::removeDevicesAndLinks(const std::vector<bool> &remove,
                                     const std::vector<bool> &removeLinks) {
  std::vector<int> newIndex(devices_.size(), -1);
  std::vector<Device> kept;
  for (size_t i = 0; i < devices_.size(); ++i) {
    if (remove[i])
      continue;
    newIndex[i] = static_cast<int>(kept.size());
    kept.push_back(std::move(devices_[i]));
  }
  std::vector<Link> keptLinks;
  for (size_t i = 0; i < links_.size(); ++i) {
    Link &l = links_[i];
    if (removeLinks[i] || newIndex[l.from] < 0 || newIndex[l.to] < 0)
      continue;
    l.from = newIndex[l.from];
    l.to = newIndex[l.to];
    keptLinks.push_back(std::move(l));
  }
  for (Node &n : nodes_) {
    std::vector<int> devs;
    for (int d : n.devices)
      if (newIndex[d] >= 0)
        devs.push_back(newIndex[d]);
    n.devices = std::move(devs);
  }
  // A removed device breaks the grid; a removed link leaves it (its ring
  // then has an unrouted hop, which the algorithms report).
  for (int d : gridDevices_)
    if (newIndex[d] < 0) {
      grid_.clear();
      break;
    }
  if (grid_.empty())
    gridDevices_.clear();
  for (int &d : gridDevices_)
    d = newIndex[d];
  std::vector<int> ranks;
  for (int d : ranks_)
    if (newIndex[d] >= 0)
      ranks.push_back(newIndex[d]);
  devices_ = std::move(kept);
  links_ = std::move(keptLinks);
  reindex();
  setRanks(std::move(ranks), rankList_);
}

//===----------------------------------------------------------------------===//
// Connectivity
//===----------------------------------------------------------------------===//

namespace {
std::string nameList(const Topology &t, llvm::ArrayRef<int> devs) {
  constexpr size_t kMax = 16;
  std::string s;
  for (size_t i = 0; i < devs.size() && i < kMax; ++i)
    s += (i ? ", " : "") + t.device(devs[i]).name;
  if (devs.size() > kMax)
    s += llvm::formatv(" and {0} more", devs.size() - kMax).str();
  return s;
}
} // namespace

namespace {

/// Components of the GPU graph (every link, as if GPUs forwarded), each a
/// sorted list of GPU device indices; the first holds the first GPU.
std::vector<std::vector<int>> gpuComponents(const Topology &t) {
  const auto &devs = t.devices();
  UnionFind all(devs.size());
  for (const Link &l : t.links())
    all.join(l.from, l.to);
  std::map<size_t, size_t> index;
  std::vector<std::vector<int>> comps;
  for (size_t i = 0; i < devs.size(); ++i) {
    if (devs[i].kind != DeviceKind::Gpu)
      continue;
    auto [it, inserted] = index.emplace(all.find(i), comps.size());
    if (inserted)
      comps.emplace_back();
    comps[it->second].push_back(static_cast<int>(i));
  }
  return comps;
}

} // namespace

void checkConnectivity(const Topology &t, DiagnosticList &diags,
                       const SourceLoc &loc, llvm::StringRef context) {
  std::vector<std::vector<int>> comps = gpuComponents(t);
  if (comps.size() < 2)
    return;
  auto at = [&](int dev) { return loc.isValid() ? loc : t.device(dev).loc; };
  // A GPU relays by receiving and sending, so GPUs joined through other GPUs
  // are connected; only separate components are an error.
  std::string list;
  size_t gpus = 0;
  for (size_t c = 0; c < comps.size(); ++c) {
    gpus += comps[c].size();
    if (c == 8) {
      list += llvm::formatv("; and {0} more", comps.size() - 8).str();
      break;
    }
    list +=
        llvm::formatv("{0}component {1} ({2} GPU{3}): {4}", c ? "; " : "",
                      c + 1, comps[c].size(), comps[c].size() == 1 ? "" : "s",
                      nameList(t, comps[c]))
            .str();
  }
  for (size_t c = 9; c < comps.size(); ++c)
    gpus += comps[c].size();
  diags.add(t.diag(
      at(comps[1][0]),
      llvm::formatv("{0}the {1} GPUs form {2} disconnected components (no "
                    "links join them, even through other GPUs): {3}",
                    context, gpus, comps.size(), list)
          .str()));
}

RouteCoverage routeCoverage(const Topology &t) {
  RouteCoverage out;
  const auto &devs = t.devices();
  std::vector<int> gpus;
  for (size_t i = 0; i < devs.size(); ++i)
    if (devs[i].kind == DeviceKind::Gpu)
      gpus.push_back(static_cast<int>(i));
  uint64_t n = gpus.size();
  out.pairs = n < 2 ? 0 : n * (n - 1);
  if (n < 2)
    return out;

  // Clusters of switches and NICs (what forwards a message).
  UnionFind fwd(devs.size());
  for (const Link &l : t.links())
    if (devs[l.from].kind != DeviceKind::Gpu &&
        devs[l.to].kind != DeviceKind::Gpu)
      fwd.join(l.from, l.to);
  std::vector<std::vector<int>> direct(devs.size());   // GPU -> GPUs
  std::vector<std::vector<int>> clusters(devs.size()); // GPU -> cluster roots
  std::vector<std::vector<int>> members(devs.size());  // root -> GPUs
  for (const Link &l : t.links()) {
    bool fg = devs[l.from].kind == DeviceKind::Gpu;
    bool tg = devs[l.to].kind == DeviceKind::Gpu;
    if (fg && tg) {
      direct[l.from].push_back(l.to);
      direct[l.to].push_back(l.from);
    } else if (fg) {
      clusters[l.from].push_back(static_cast<int>(fwd.find(l.to)));
    } else if (tg) {
      clusters[l.to].push_back(static_cast<int>(fwd.find(l.from)));
    }
  }
  for (int g : gpus) {
    llvm::sort(clusters[g]);
    clusters[g].erase(std::unique(clusters[g].begin(), clusters[g].end()),
                      clusters[g].end());
    for (int c : clusters[g])
      members[c].push_back(g);
  }
  // GPUs with the same clusters and no direct links reach the same GPUs:
  // count each such group once (keeps rail and switch fabrics linear).
  std::map<std::vector<int>, uint64_t> groupMissing;
  std::vector<int> mark(devs.size(), -1);
  for (int g : gpus) {
    bool whole = false;
    for (int c : clusters[g])
      whole |= members[c].size() == gpus.size();
    if (whole)
      continue;
    if (direct[g].empty()) {
      auto it = groupMissing.find(clusters[g]);
      if (it != groupMissing.end()) {
        out.unrouted += it->second;
        continue;
      }
    }
    uint64_t reached = 0;
    auto visit = [&](int h) {
      if (h != g && mark[h] != g) {
        mark[h] = g;
        ++reached;
      }
    };
    for (int c : clusters[g])
      for (int h : members[c])
        visit(h);
    for (int h : direct[g])
      visit(h);
    uint64_t missing = n - 1 - reached;
    if (direct[g].empty())
      groupMissing[clusters[g]] = missing;
    out.unrouted += missing;
    if (missing && out.exampleFrom < 0) {
      out.exampleFrom = g;
      for (int h : gpus)
        if (h != g && mark[h] != g)
          out.exampleMissing.push_back(h);
    }
  }
  return out;
}

} // namespace topocc::topo
