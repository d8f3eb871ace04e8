//===- backends/DotWriter.cpp - Topologies as Graphviz DOT ----------------===//
//
// Matching a variant to its base: scenario ops never add devices or links
// and keep file order, so each variant link is matched to the first unused
// base link with the same endpoint names and type; base links left over
// failed. Devices match by full name.
//
//===----------------------------------------------------------------------===//

#include "backends/DotWriter.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

namespace topocc::backends {

llvm::StringRef linkTypeColor(topo::LinkType t) {
  switch (t) {
  case topo::LinkType::NvLink:
    return "#4e9a06"; // green
  case topo::LinkType::Pcie:
    return "#3465a4"; // blue
  case topo::LinkType::Xgmi:
    return "#f57900"; // orange
  case topo::LinkType::C2c:
    return "#75507b"; // purple
  case topo::LinkType::Ib:
    return "#8f5902"; // brown
  case topo::LinkType::Roce:
    return "#06989a"; // teal
  case topo::LinkType::Ethernet:
    return "#555753"; // grey
  case topo::LinkType::Custom:
    return "#000000";
  }
  return "#000000";
}

namespace {

const char *const kFailed = "#cc0000";
const char *const kRingColors[] = {"#e6194b", "#3cb44b", "#4363d8",
                                   "#f58231", "#911eb4", "#42d4f4",
                                   "#f032e6", "#9a6324"};

/// A DOT string literal.
std::string quote(llvm::StringRef s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

/// Green (0) through yellow to red (1).
std::string heatColor(double f) {
  f = std::clamp(f, 0.0, 1.0);
  int r = static_cast<int>(std::lround(f < 0.5 ? 510 * f : 255));
  int g = static_cast<int>(std::lround(f < 0.5 ? 200 : 200 * (2 - 2 * f)));
  return llvm::formatv("#{0:x-2}{1:x-2}00", r, g).str();
}

std::string bandwidthLabel(const topo::Link &l) {
  std::string s = l.bandwidthText(0);
  if (!l.symmetric())
    s += " / " + l.bandwidthText(1);
  if (l.count > 1)
    s += llvm::formatv(" x{0}", l.count).str();
  if (l.duplex == topo::Duplex::Half)
    s += " half";
  return s;
}

} // namespace

void writeDot(llvm::raw_ostream &os, const topo::Topology &base,
              const DotOptions &o) {
  const topo::Topology &drawn = o.variant ? *o.variant : base;

  // Base device -> drawn device, base link -> drawn link (-1: failed).
  std::vector<int> devMap(base.devices().size(), -1);
  for (size_t d = 0; d < base.devices().size(); ++d)
    devMap[d] = drawn.findDevice(base.device(static_cast<int>(d)).name);
  std::vector<int> linkMap(base.links().size(), -1);
  if (!o.variant) {
    for (size_t l = 0; l < linkMap.size(); ++l)
      linkMap[l] = static_cast<int>(l);
  } else {
    std::map<std::tuple<std::string, std::string, int>, std::vector<int>> free;
    for (size_t l = base.links().size(); l-- > 0;) {
      const topo::Link &k = base.link(static_cast<int>(l));
      free[{base.device(k.from).name, base.device(k.to).name,
            static_cast<int>(k.type)}]
          .push_back(static_cast<int>(l));
    }
    for (size_t l = 0; l < drawn.links().size(); ++l) {
      const topo::Link &k = drawn.link(static_cast<int>(l));
      auto it = free.find({drawn.device(k.from).name, drawn.device(k.to).name,
                           static_cast<int>(k.type)});
      if (it == free.end() || it->second.empty())
        continue;
      linkMap[it->second.back()] = static_cast<int>(l);
      it->second.pop_back();
    }
  }

  // Bandwidth range for widths: the larger direction's raw capacity.
  auto capOf = [](const topo::Link &l) {
    return std::max(l.capacity(0), l.capacity(1));
  };
  double lo = 0, hi = 0;
  for (const topo::Link &l : drawn.links()) {
    double c = capOf(l);
    if (c <= 0)
      continue;
    lo = lo > 0 ? std::min(lo, c) : c;
    hi = std::max(hi, c);
  }
  auto width = [&](double c) {
    if (!(c > 0) || !(hi > lo))
      return 2.0;
    return 1.0 + 5.0 * std::log(c / lo) / std::log(hi / lo);
  };

  os << "// topocc dot: " << base.name() << "\n";
  os << "digraph " << quote(base.name()) << " {\n";
  std::string label = base.name().str();
  if (!o.subtitle.empty())
    label += "\n" + o.subtitle;
  os << "  label=" << quote(label) << ";\n  labelloc=t;\n  fontsize=18;\n";
  os << "  graph [fontname=\"Helvetica\", compound=true, newrank=true];\n";
  os << "  node [fontname=\"Helvetica\", fontsize=10, style=filled];\n";
  os << "  edge [fontname=\"Helvetica\", fontsize=8, dir=none];\n";

  auto nodeLine = [&](int d, llvm::StringRef indent) {
    const topo::Device &dev = base.device(d);
    int dd = devMap[d];
    std::string text = dev.node.empty() ? dev.name : dev.localName;
    const char *shape = "box", *fill = "#c6dbef";
    if (dev.kind == topo::DeviceKind::Gpu) {
      if (dd >= 0 && drawn.device(dd).rank >= 0)
        text += llvm::formatv("\nrank {0}", drawn.device(dd).rank).str();
      if (!dev.model.empty())
        text += "\n" + dev.model;
    } else if (dev.kind == topo::DeviceKind::Nic) {
      shape = "ellipse";
      fill = "#fdd0a2";
    } else {
      shape = "hexagon";
      fill = "#e5e5e5";
      llvm::StringRef kind = topo::switchKindName(dev.switchKind);
      if (!kind.empty())
        text += "\n" + kind.str();
    }
    if (dd < 0)
      text += "\nfailed";
    os << indent << quote(dev.name) << " [label=" << quote(text)
       << ", shape=" << shape << ", fillcolor=" << quote(fill);
    if (dd < 0)
      os << ", style=\"filled,dashed\", color=" << quote(kFailed)
         << ", fontcolor=" << quote(kFailed);
    os << "];\n";
  };

  // Hosts as clusters, then fabric devices.
  for (size_t n = 0; n < base.nodes().size(); ++n) {
    const topo::Node &node = base.nodes()[n];
    os << "  subgraph " << quote("cluster_" + node.name) << " {\n";
    os << "    label=" << quote(node.name)
       << ";\n    style=rounded;\n    color=\"#888888\";\n";
    for (int d : node.devices)
      nodeLine(d, "    ");
    os << "  }\n";
  }
  for (size_t d = 0; d < base.devices().size(); ++d)
    if (base.device(static_cast<int>(d)).nodeIndex < 0)
      nodeLine(static_cast<int>(d), "  ");

  // Physical links.
  for (size_t l = 0; l < base.links().size(); ++l) {
    const topo::Link &bl = base.link(static_cast<int>(l));
    int dl = linkMap[l];
    const topo::Link &k = dl >= 0 ? drawn.link(dl) : bl;
    os << "  " << quote(base.device(bl.from).name) << " -> "
       << quote(base.device(bl.to).name) << " [";
    if (dl < 0) {
      os << "label=" << quote(bandwidthLabel(bl) + " failed")
         << ", color=" << quote(kFailed) << ", fontcolor=" << quote(kFailed)
         << ", style=dashed, penwidth=1.5";
    } else {
      std::string text = bandwidthLabel(k);
      std::string color = linkTypeColor(k.type).str();
      if (!o.utilization.empty()) {
        double u = o.utilization[dl];
        text += llvm::formatv(" {0:F0}%", 100 * u).str();
        color = heatColor(u);
      }
      os << "label=" << quote(text) << ", color=" << quote(color)
         << ", penwidth=" << llvm::formatv("{0:F2}", width(capOf(k)));
      if (k.duplex == topo::Duplex::Half)
        os << ", style=dotted";
    }
    os << ", tooltip=" << quote(topo::linkTypeName(bl.type)) << "];\n";
  }

  // Ring overlays.
  for (size_t i = 0; i < o.rings.size(); ++i) {
    const std::vector<int> &ring = o.rings[i];
    const char *color = kRingColors[i % std::size(kRingColors)];
    for (size_t h = 0; h < ring.size() && ring.size() > 1; ++h) {
      int a = ring[h], b = ring[(h + 1) % ring.size()];
      os << "  " << quote(drawn.rankName(a)) << " -> "
         << quote(drawn.rankName(b)) << " [dir=forward, "
         << "color=" << quote(color) << ", penwidth=2.5, fontcolor="
         << quote(color) << ", label=" << quote(llvm::formatv("ring {0}", i).str())
         << "];\n";
    }
  }

  // Legend: with utilization the colour scale the links are drawn in (a
  // link-type legend would show NVLink green while green means idle);
  // otherwise the link types that occur.
  if (!o.utilization.empty()) {
    os << "  subgraph cluster_legend {\n    label=\"link utilization "
          "(busy time / run)\";\n"
       << "    style=rounded;\n    color=\"#bbbbbb\";\n"
       << "    node [shape=plaintext, style=\"\", fontsize=9];\n";
    for (int pct : {0, 25, 50, 75, 100}) {
      std::string a = llvm::formatv("legend_util_{0}_a", pct).str();
      std::string b = llvm::formatv("legend_util_{0}_b", pct).str();
      os << "    " << quote(a) << " [label=\"\", width=0.1];\n";
      os << "    " << quote(b) << " [label="
         << quote(llvm::formatv("{0}%{1}", pct, pct == 0 ? " (idle)" : "")
                      .str())
         << "];\n";
      os << "    " << quote(a) << " -> " << quote(b) << " [color="
         << quote(heatColor(pct / 100.0)) << ", penwidth=3];\n";
    }
    os << "  }\n}\n";
    return;
  }
  std::vector<topo::LinkType> types;
  for (const topo::Link &l : base.links())
    if (!llvm::is_contained(types, l.type))
      types.push_back(l.type);
  llvm::sort(types);
  os << "  subgraph cluster_legend {\n    label=\"link types\";\n"
     << "    style=rounded;\n    color=\"#bbbbbb\";\n"
     << "    node [shape=plaintext, style=\"\", fontsize=9];\n";
  for (topo::LinkType t : types) {
    std::string a = ("legend_" + llvm::Twine(topo::linkTypeName(t)) + "_a").str();
    std::string b = ("legend_" + llvm::Twine(topo::linkTypeName(t)) + "_b").str();
    os << "    " << quote(a) << " [label=\"\", width=0.1];\n";
    os << "    " << quote(b) << " [label=" << quote(topo::linkTypeName(t))
       << "];\n";
    os << "    " << quote(a) << " -> " << quote(b) << " [color="
       << quote(linkTypeColor(t)) << ", penwidth=3];\n";
  }
  os << "  }\n}\n";
}

} // namespace topocc::backends
