//===- compiler/topology/TopologyReport.cpp - Describe a topology ---------===//

#include "compiler/topology/TopologyReport.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

namespace topocc::topo {

namespace {

std::string rateText(const Link &l, int dir) {
  std::string per = l.bandwidthText(dir);
  if (l.count == 1)
    return per;
  return llvm::formatv("{0} x {1} = {2}", l.count, per,
                       formatInUnit(l.capacity(dir), l.bandwidthUnit[dir]))
      .str();
}

std::string effText(const Link &l, int dir) {
  return formatInUnit(l.effectiveCapacity(dir), l.bandwidthUnit[dir]);
}

size_t countKind(const Topology &t, DeviceKind k) {
  size_t n = 0;
  for (const Device &d : t.devices())
    n += d.kind == k;
  return n;
}

size_t countKind(const Topology &t, DeviceKind k, const Node &node) {
  size_t n = 0;
  for (int d : node.devices)
    n += t.device(d).kind == k;
  return n;
}

std::string plural(size_t n, llvm::StringRef one, llvm::StringRef many) {
  return llvm::formatv("{0} {1}", n, n == 1 ? one : many).str();
}

} // namespace

std::string describeLinkRate(const Link &l) {
  std::string s;
  if (l.symmetric()) {
    s = rateText(l, 0) +
        (l.duplex == Duplex::Half ? " shared by both directions (half duplex)"
                                  : " per direction");
  } else {
    s = "fwd " + rateText(l, 0) + ", rev " + rateText(l, 1);
  }
  if (l.hasEfficiency) {
    s += ", efficiency " + formatNumber(l.efficiency) + ": ";
    s += l.symmetric() ? effText(l, 0)
                       : "fwd " + effText(l, 0) + ", rev " + effText(l, 1);
    s += " achievable";
  }
  s += ", latency " + l.latencyText();
  return s;
}

void printTopologyReport(const Topology &t, llvm::raw_ostream &os) {
  os << "topology: " << (t.name().empty() ? "(unnamed)" : t.name()) << '\n';
  if (!t.description().empty())
    os << "description: " << t.description() << '\n';
  os << "schema: " << t.schema() << '\n';
  if (!t.appliedScenarios().empty())
    os << "scenario: " << llvm::join(t.appliedScenarios(), ", ") << '\n';
  size_t gpus = countKind(t, DeviceKind::Gpu);
  size_t nics = countKind(t, DeviceKind::Nic);
  size_t sws = countKind(t, DeviceKind::Switch);
  os << "summary: " << plural(gpus, "GPU", "GPUs") << ", "
     << plural(t.nodes().size(), "node", "nodes");
  if (int per = t.gpusPerNode())
    os << " (" << per << " GPUs each)";
  os << ", " << plural(nics, "NIC", "NICs") << ", "
     << plural(sws, "switch", "switches") << ", "
     << plural(t.links().size(), "link", "links") << '\n';
  RouteCoverage cov = routeCoverage(t);
  if (!cov.unrouted) {
    os << "routes: every GPU pair has a route (direct or through switches "
          "and NICs)\n";
  } else {
    os << llvm::formatv("routes: {0} of {1} GPU pairs (ordered) have a "
                        "route; {2} need a GPU to relay (e.g. {3} -> {4})\n",
                        cov.pairs - cov.unrouted, cov.pairs, cov.unrouted,
                        t.device(cov.exampleFrom).name,
                        t.device(cov.exampleMissing.front()).name);
  }

  os << "\nnodes:\n";
  for (size_t i = 0; i < t.nodes().size(); ++i) {
    const Node &n = t.nodes()[i];
    os << "  " << n.name;
    if (!n.templateName.empty())
      os << "  template " << n.templateName;
    os << "  " << plural(countKind(t, DeviceKind::Gpu, n), "GPU", "GPUs")
       << ", " << plural(countKind(t, DeviceKind::Nic, n), "NIC", "NICs")
       << ", "
       << plural(countKind(t, DeviceKind::Switch, n), "switch", "switches")
       << '\n';
  }
  if (t.nodes().empty())
    os << "  (none)\n";

  os << "\nGPUs:\n";
  for (const Device &d : t.devices())
    if (d.kind == DeviceKind::Gpu) {
      os << llvm::formatv("  rank {0,-4} {1}", d.rank, d.name);
      if (!d.model.empty())
        os << "  " << d.model;
      os << '\n';
    }
  os << "\nswitches:\n";
  if (!sws)
    os << "  (none)\n";
  for (const Device &d : t.devices())
    if (d.kind == DeviceKind::Switch)
      os << "  " << d.name << "  " << switchKindName(d.switchKind) << '\n';
  os << "\nNICs:\n";
  if (!nics)
    os << "  (none)\n";
  for (const Device &d : t.devices())
    if (d.kind == DeviceKind::Nic) {
      os << "  " << d.name;
      if (!d.model.empty())
        os << "  " << d.model;
      os << '\n';
    }
  os << "\nlinks:\n";
  if (t.links().empty())
    os << "  (none)\n";
  for (const Link &l : t.links()) {
    os << "  " << t.device(l.from).name << " -- " << t.device(l.to).name
       << "  ";
    if (!l.className.empty())
      os << l.className << " (" << linkTypeName(l.type) << ")";
    else
      os << linkTypeName(l.type);
    os << "  " << describeLinkRate(l) << '\n';
  }
  os << "\nranks (" << (t.explicitRankList() ? "list" : "node-major")
     << "):\n";
  for (int r = 0; r < t.numRanks(); ++r)
    os << llvm::formatv("  {0,-4} {1}\n", r, t.rankName(r));
}

llvm::json::Value topologyToJson(const Topology &t) {
  using llvm::json::Array;
  using llvm::json::Object;
  Array devices;
  for (const Device &d : t.devices()) {
    Object o{{"name", d.name},
             {"kind", deviceKindName(d.kind)},
             {"node", d.node.empty() ? llvm::json::Value(nullptr)
                                     : llvm::json::Value(d.node)}};
    if (d.kind == DeviceKind::Switch)
      o["switch_kind"] = switchKindName(d.switchKind);
    if (!d.model.empty())
      o["model"] = d.model;
    if (d.kind == DeviceKind::Gpu)
      o["rank"] = d.rank;
    devices.push_back(std::move(o));
  }
  Array links;
  for (const Link &l : t.links()) {
    auto dirObj = [&](int dir) {
      return Object{{"bandwidth", l.bandwidthText(dir)},
                    {"bandwidth_bytes_per_s", l.bandwidth[dir]},
                    {"capacity_bytes_per_s", l.capacity(dir)},
                    {"effective_bytes_per_s", l.effectiveCapacity(dir)}};
    };
    Object o{{"from", t.device(l.from).name},
             {"to", t.device(l.to).name},
             {"type", linkTypeName(l.type)},
             {"class", l.className.empty() ? llvm::json::Value(nullptr)
                                           : llvm::json::Value(l.className)},
             {"count", l.count},
             {"duplex", l.duplex == Duplex::Half ? "half" : "full"},
             {"efficiency", l.efficiency},
             {"latency", l.latencyText()},
             {"latency_s", l.latency},
             {"fwd", dirObj(0)},
             {"rev", dirObj(1)}};
    links.push_back(std::move(o));
  }
  Array nodes;
  for (const Node &n : t.nodes()) {
    Array devs;
    for (int d : n.devices)
      devs.push_back(t.device(d).name);
    nodes.push_back(Object{
        {"name", n.name},
        {"template", n.templateName.empty()
                         ? llvm::json::Value(nullptr)
                         : llvm::json::Value(n.templateName)},
        {"devices", std::move(devs)}});
  }
  Array ranks;
  for (int r = 0; r < t.numRanks(); ++r)
    ranks.push_back(t.rankName(r));
  Array scenarios;
  for (const ScenarioDef &s : t.scenarios())
    scenarios.push_back(s.name);
  Array applied;
  for (const std::string &s : t.appliedScenarios())
    applied.push_back(s);
  RouteCoverage cov = routeCoverage(t);
  return Object{{"format", "topocc-topology/v1"},
                {"gpu_pairs", static_cast<int64_t>(cov.pairs)},
                {"gpu_pairs_without_route", static_cast<int64_t>(cov.unrouted)},
                {"schema", t.schema()},
                {"name", t.name()},
                {"description", t.description()},
                {"gpus_per_node", t.gpusPerNode()},
                {"rank_order", t.explicitRankList() ? "list" : "node-major"},
                {"nodes", std::move(nodes)},
                {"devices", std::move(devices)},
                {"links", std::move(links)},
                {"ranks", std::move(ranks)},
                {"scenarios", std::move(scenarios)},
                {"applied_scenarios", std::move(applied)}};
}

} // namespace topocc::topo
