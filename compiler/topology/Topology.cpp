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

void checkConnectivity(const Topology &t, DiagnosticList &diags,
                       const SourceLoc &loc, llvm::StringRef context) {
  const auto &devs = t.devices();
  std::vector<int> gpus;
  for (size_t i = 0; i < devs.size(); ++i)
    if (devs[i].kind == DeviceKind::Gpu)
      gpus.push_back(static_cast<int>(i));
  if (gpus.size() < 2)
    return;
  auto at = [&](int dev) { return loc.isValid() ? loc : t.device(dev).loc; };

  // 1. Plain connectivity (as if GPUs forwarded): which GPUs are cut off.
  UnionFind all(devs.size());
  for (const Link &l : t.links())
    all.join(l.from, l.to);
  size_t root = all.find(gpus[0]);
  std::vector<int> cut;
  for (int g : gpus)
    if (all.find(g) != root)
      cut.push_back(g);
  if (!cut.empty()) {
    diags.add(t.diag(
        at(cut[0]),
        llvm::formatv("{0}{1} of {2} GPUs are cut off from {3}: {4}", context,
                      cut.size(), gpus.size(), t.device(gpus[0]).name,
                      nameList(t, cut))
            .str()));
    return;
  }

  // 2. Without forwarding through GPUs: clusters of switches and NICs.
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
  // check each such group once (keeps rail and switch fabrics linear).
  std::map<std::vector<int>, bool> checkedGroups;
  std::vector<int> mark(devs.size(), -1);
  for (int g : gpus) {
    bool whole = false;
    for (int c : clusters[g])
      whole |= members[c].size() == gpus.size();
    if (whole)
      continue;
    if (direct[g].empty()) {
      auto [it, inserted] = checkedGroups.emplace(clusters[g], true);
      if (!inserted && it->second)
        continue;
    }
    size_t reached = 0;
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
    if (reached + 1 == gpus.size())
      continue;
    if (direct[g].empty())
      checkedGroups[clusters[g]] = false;
    std::vector<int> missing;
    for (int h : gpus)
      if (h != g && mark[h] != g)
        missing.push_back(h);
    diags.add(t.diag(
        at(g), llvm::formatv("{0}{1} cannot reach {2} without forwarding "
                             "through another GPU (GPUs do not forward): {3}",
                             context, t.device(g).name,
                             missing.size() == 1 ? "this GPU"
                                                 : "these GPUs",
                             nameList(t, missing))
                   .str()));
    return;
  }
}

} // namespace topocc::topo
