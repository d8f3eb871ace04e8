//===- compiler/topology/Plausibility.cpp - Implausible rates -------------===//

#include "compiler/topology/Plausibility.h"

#include "compiler/topology/Units.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <optional>
#include <set>
#include <tuple>

namespace topocc::topo {

std::optional<PlausibleRate> plausibleRate(LinkType type) {
  constexpr double GB = 1e9;
  switch (type) {
  case LinkType::NvLink:
    // NVLink 5 (Blackwell): 50 GB/s per link and direction, 18 links.
    return PlausibleRate{50 * GB, 900 * GB,
                         "NVLink 1-5: 20-50 GB/s per link and direction, at "
                         "most 18 links (900 GB/s) per GPU"};
  case LinkType::Pcie:
    return PlausibleRate{128 * GB, 128 * GB,
                         "PCIe Gen6 x16: 128 GB/s per direction"};
  case LinkType::Xgmi:
    return PlausibleRate{128 * GB, 1024 * GB,
                         "Infinity Fabric (xGMI): at most 128 GB/s per link "
                         "and direction"};
  case LinkType::C2c:
    return PlausibleRate{900 * GB, 900 * GB,
                         "NVLink-C2C: 450 GB/s per direction"};
  case LinkType::Ib:
  case LinkType::Roce:
  case LinkType::Ethernet:
    return PlausibleRate{200 * GB, 1600 * GB,
                         "network ports: at most 1.6 Tb/s (200 GB/s) per "
                         "port and direction"};
  case LinkType::Custom:
    return std::nullopt;
  }
  return std::nullopt;
}

std::vector<Diagnostic> implausibleLinkWarnings(const Topology &t) {
  std::vector<Diagnostic> out;
  std::set<std::tuple<std::string, unsigned, unsigned>> seen;
  for (const Link &l : t.links()) {
    std::optional<PlausibleRate> p = plausibleRate(l.type);
    if (!p)
      continue;
    double port = std::max(l.bandwidth[0], l.bandwidth[1]);
    int dir = l.bandwidth[0] >= l.bandwidth[1] ? 0 : 1;
    bool portHigh = port > p->maxPortBandwidth * (1 + 1e-9);
    bool bundleHigh = l.capacity(dir) > p->maxCapacity * (1 + 1e-9);
    // One port standing for a whole bundle (count 1, as ForestColl's
    // models write a GPU's NVLink) is fine up to the bundle's limit.
    if (l.count == 1 && !bundleHigh)
      continue;
    if (!portHigh && !bundleHigh)
      continue;
    if (!seen.insert({l.loc.file, l.loc.line, l.loc.col}).second)
      continue;
    std::string what =
        l.count == 1
            ? l.bandwidthText(dir) + " per direction"
            : llvm::formatv("count {0} x {1} = {2} per direction", l.count,
                            l.bandwidthText(dir),
                            formatInUnit(l.capacity(dir),
                                         l.bandwidthUnit[dir].empty()
                                             ? "GB/s"
                                             : l.bandwidthUnit[dir]))
                  .str();
    std::string msg =
        "implausible " + linkTypeName(l.type).str() + " rate: " + what +
        " (" + p->hardware +
        "). Bandwidths are per port and per direction: a GPU's "
        "bidirectional total (such as 600 GB/s for an A100's NVLink) is "
        "not a port's rate";
    if (l.type == LinkType::Ib || l.type == LinkType::Roce ||
        l.type == LinkType::Ethernet)
      msg = "implausible " + linkTypeName(l.type).str() + " rate: " + what +
            " (" + p->hardware +
            "); network rates are usually written in bits: 'Gb/s', not "
            "'GB/s'";
    Diagnostic d = t.diag(l.loc, msg);
    d.severity = Severity::Warning;
    out.push_back(std::move(d));
  }
  return out;
}

} // namespace topocc::topo
