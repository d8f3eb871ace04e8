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

/// Text for an HTML-like Graphviz label.
std::string htmlEscape(llvm::StringRef s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else if (c == '"')
      out += "&quot;";
    else
      out += c;
  }
  return out;
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

  // Links of the same type and bandwidth form a class: the legend shows
  // each class once (colour, width, text, count); an edge carries its text
  // as a tooltip, and as a label only with o.edgeLabels (labels are nodes
  // to Graphviz's layout: 154 of them made dgx-a100x2 9481 pt wide).
  struct LinkClass {
    topo::LinkType type;
    std::string text;
    double width;
    bool failed, half;
    int count = 0;
  };
  std::vector<LinkClass> classes;
  auto classOf = [&](topo::LinkType t, const std::string &text, double w,
                     bool failed, bool half) {
    for (LinkClass &c : classes)
      if (c.type == t && c.text == text && c.failed == failed) {
        ++c.count;
        return;
      }
    classes.push_back({t, text, w, failed, half, 1});
  };

  // Fabric levels: 0 inside hosts, then 1 + the smallest level of a
  // neighbour (leaves 1, spines 2). A fabric link is drawn from its higher
  // end, so the fabric sits above the hosts, spines on top.
  std::vector<int> level(base.devices().size(), -1);
  std::vector<int> frontier;
  for (size_t d = 0; d < base.devices().size(); ++d)
    if (base.device(static_cast<int>(d)).nodeIndex >= 0) {
      level[d] = 0;
      frontier.push_back(static_cast<int>(d));
    }
  // Links per device (both ends), and per host the links inside it.
  std::vector<std::vector<int>> linksAt(base.devices().size());
  std::vector<std::vector<int>> hostLinks(base.nodes().size());
  for (size_t l = 0; l < base.links().size(); ++l) {
    const topo::Link &k = base.link(static_cast<int>(l));
    linksAt[k.from].push_back(static_cast<int>(l));
    linksAt[k.to].push_back(static_cast<int>(l));
    int h = base.device(k.from).nodeIndex;
    if (h >= 0 && h == base.device(k.to).nodeIndex)
      hostLinks[h].push_back(static_cast<int>(l));
  }
  for (size_t q = 0; q < frontier.size(); ++q) {
    int a = frontier[q];
    for (int l : linksAt[a]) {
      const topo::Link &k = base.link(l);
      int b = k.from == a ? k.to : k.from;
      if (level[b] < 0) {
        level[b] = level[a] + 1;
        frontier.push_back(b);
      }
    }
  }

  for (size_t l = 0; l < base.links().size(); ++l) {
    const topo::Link &bl = base.link(static_cast<int>(l));
    int dl = linkMap[l];
    const topo::Link &k = dl >= 0 ? drawn.link(dl) : bl;
    int tail = bl.from, head = bl.to;
    if (level[head] > level[tail])
      std::swap(tail, head);
    os << "  " << quote(base.device(tail).name) << " -> "
       << quote(base.device(head).name) << " [";
    std::string text = bandwidthLabel(dl < 0 ? bl : k);
    std::string tip = (topo::linkTypeName(bl.type) + " " + text).str();
    if (dl < 0) {
      classOf(bl.type, text, 1.5, /*failed=*/true, false);
      // xlabel: placed after the layout, so it costs no space.
      os << "xlabel=\"failed\", color=" << quote(kFailed)
         << ", fontcolor=" << quote(kFailed) << ", style=dashed, penwidth=1.5";
      tip += " failed";
    } else {
      std::string color = linkTypeColor(k.type).str();
      double w = width(capOf(k));
      classOf(k.type, text, w, false, k.duplex == topo::Duplex::Half);
      if (!o.utilization.empty()) {
        double u = o.utilization[dl];
        std::string pct = llvm::formatv("{0:F0}%", 100 * u).str();
        tip += ", " + pct + " busy";
        text += " " + pct;
        color = heatColor(u);
      }
      if (o.edgeLabels)
        os << "label=" << quote(text) << ", ";
      os << "color=" << quote(color)
         << ", penwidth=" << llvm::formatv("{0:F2}", w);
      if (k.duplex == topo::Duplex::Half)
        os << ", style=dotted";
    }
    os << ", tooltip=" << quote(tip) << "];\n";
  }

  // Hosts in a grid: host h below host h - cols (invisible edges), the GPUs
  // and NICs of a grid row on one rank.
  size_t numHosts = base.nodes().size();
  size_t cols = 1;
  if (numHosts > 1) {
    // Per host: its GPUs and NICs (the top of the host, in file order), and
    // its deepest device (longest path over its own links, drawn
    // from -> to; capped for cycles), which the host below hangs from.
    std::vector<std::vector<int>> topOf(numHosts);
    std::vector<int> bottomOf(numHosts, -1);
    double hostW = 95, hostH = 75;
    for (size_t n = 0; n < numHosts; ++n) {
      const std::vector<int> &devs = base.nodes()[n].devices;
      std::map<int, int> depth;
      for (int d : devs) {
        depth[d] = 0;
        if (base.device(d).kind != topo::DeviceKind::Switch)
          topOf[n].push_back(d);
      }
      // Relaxation to a fixpoint (at most one pass per device).
      for (size_t iter = 0; iter < devs.size(); ++iter) {
        bool changed = false;
        for (int li : hostLinks[n]) {
          const topo::Link &l = base.link(li);
          if (depth[l.to] < depth[l.from] + 1 &&
              depth[l.from] + 1 < static_cast<int>(devs.size())) {
            depth[l.to] = depth[l.from] + 1;
            changed = true;
          }
        }
        if (!changed)
          break;
      }
      for (int d : devs)
        if (bottomOf[n] < 0 || depth[d] > depth[bottomOf[n]])
          bottomOf[n] = d;
      // A host is about as wide as its widest rank (~95 pt a device) and
      // as tall as its ranks (~75 pt each, and its label).
      std::map<int, int> perRank;
      for (int d : devs)
        ++perRank[base.device(d).kind == topo::DeviceKind::Switch ? depth[d]
                                                                  : 0];
      int widest = 1;
      for (const auto &[r, k] : perRank)
        widest = std::max(widest, k);
      hostW = std::max(hostW, 95.0 * widest);
      hostH = std::max(hostH, 75.0 * (depth[bottomOf[n]] + 1) + 40);
    }
    // Columns for a grid about as wide as a 16:9 screen for its height.
    cols = std::clamp<size_t>(
        static_cast<size_t>(std::lround(
            std::sqrt(numHosts * (16.0 / 9.0) * hostH / hostW))),
        1, numHosts);
    // A grid row: one rank.
    for (size_t row = 0; row * cols < numHosts; ++row) {
      os << "  { rank=same;";
      for (size_t n = row * cols; n < std::min(numHosts, (row + 1) * cols);
           ++n)
        for (int d : topOf[n])
          os << " " << quote(base.device(d).name) << ";";
      os << " }\n";
    }
    // Below the host above: hung from its deepest device (a heavy edge,
    // which also keeps the two near one column).
    for (size_t n = cols; n < numHosts; ++n)
      if (!topOf[n].empty())
        os << "  " << quote(base.device(bottomOf[n - cols]).name) << " -> "
           << quote(base.device(topOf[n].front()).name)
           << " [style=invis, weight=10];\n";
  }

  // A generated grid (a torus or mesh): one rank per row of the grid, a
  // row holding the first dimensions up to about the square root of the
  // GPUs, so that the drawing keeps the grid's shape.
  if (!base.grid().empty()) {
    const int n = base.numRanks();
    int width = 1;
    for (const topo::GridDim &g : base.grid()) {
      if (int64_t(width) * width >= n)
        break;
      width *= g.size;
    }
    for (int row = 0; row * width < n; ++row) {
      os << "  { rank=same;";
      for (int i = row * width; i < std::min(n, (row + 1) * width); ++i)
        os << " " << quote(base.rankName(base.gridRank(i))) << ";";
      os << " }\n";
    }
    for (int row = 1; row * width < n; ++row)
      os << "  " << quote(base.rankName(base.gridRank((row - 1) * width)))
         << " -> " << quote(base.rankName(base.gridRank(row * width)))
         << " [style=invis, weight=10];\n";
  }

  // Ring overlays.
  for (size_t i = 0; i < o.rings.size(); ++i) {
    const std::vector<int> &ring = o.rings[i];
    const char *color = kRingColors[i % std::size(kRingColors)];
    for (size_t h = 0; h < ring.size() && ring.size() > 1; ++h) {
      int a = ring[h], b = ring[(h + 1) % ring.size()];
      os << "  " << quote(drawn.rankName(a)) << " -> "
         << quote(drawn.rankName(b)) << " [dir=forward, "
         << "color=" << quote(color) << ", penwidth=2.5, constraint=false, "
         << "tooltip=" << quote(llvm::formatv("ring {0}: rank {1} -> {2}", i, a, b).str());
      if (o.edgeLabels)
        os << ", fontcolor=" << quote(color)
           << ", label=" << quote(llvm::formatv("ring {0}", i).str());
      os << "];\n";
    }
  }

  // Legend: one node holding a table (no layout cost): the link classes,
  // with utilization the colour scale the links are drawn in (then the
  // classes are grey: green means idle, not NVLink), and the rings.
  std::string rowsText;
  auto header = [&](llvm::StringRef text) {
    rowsText += "<tr><td colspan=\"2\" align=\"left\"><b>" +
                htmlEscape(text) + "</b></td></tr>";
  };
  auto row = [&](llvm::StringRef color, double w, llvm::StringRef text) {
    rowsText += llvm::formatv("<tr><td bgcolor=\"{0}\" width=\"36\" "
                              "height=\"{1}\" fixedsize=\"true\" cellpadding=\"0\"></td>"
                              "<td align=\"left\">{2}</td></tr>",
                              color, std::max(1L, std::lround(w)),
                              htmlEscape(text))
                    .str();
  };
  header(o.utilization.empty() ? "links (colour: type, width: bandwidth)"
                                 : "links (width: bandwidth)");
  for (const LinkClass &c : classes)
    row(c.failed ? kFailed
        : o.utilization.empty() ? linkTypeColor(c.type)
                                : llvm::StringRef("#888a85"),
        c.width,
        llvm::formatv("{0} {1}{2}{3}  ({4})", topo::linkTypeName(c.type),
                      c.text, c.half ? " (dotted)" : "",
                      c.failed ? " failed (dashed)" : "", c.count)
            .str());
  if (!o.utilization.empty()) {
    header("link utilization (busy time / run)");
    for (int pct : {0, 25, 50, 75, 100})
      row(heatColor(pct / 100.0), 3,
          llvm::formatv("{0}%{1}", pct, pct == 0 ? " (idle)" : "").str());
  }
  if (!o.rings.empty()) {
    header("rings (arrows, GPU to GPU)");
    for (size_t i = 0; i < o.rings.size(); ++i)
      row(kRingColors[i % std::size(kRingColors)], 3,
          llvm::formatv("ring {0}", i).str());
  }
  os << "  \"legend\" [shape=plaintext, style=\"\", fontsize=9, label=<"
     << "<table border=\"1\" color=\"#bbbbbb\" cellborder=\"0\" "
        "cellspacing=\"3\">"
     << rowsText << "</table>>];\n}\n";
}

} // namespace topocc::backends
