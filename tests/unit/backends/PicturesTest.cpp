//===- tests/unit/backends/PicturesTest.cpp - SVG plots and DOT drawings --===//
//
// backends/SvgPlot (axis labels, dashed and broken lines, escaping, the
// what-if series) and backends/DotWriter (host clusters, failed links of a
// variant, widths by bandwidth, ring and utilization overlays).
//
//===----------------------------------------------------------------------===//

#include "backends/DotWriter.h"
#include "backends/SvgPlot.h"
#include "compiler/topology/ScenarioCli.h"
#include "compiler/topology/TopologyParser.h"

#include "gtest/gtest.h"

#include "llvm/ADT/StringRef.h"

#include <cmath>
#include <limits>

using namespace topocc;
using namespace topocc::backends;

namespace {

size_t count(llvm::StringRef hay, llvm::StringRef needle) {
  size_t n = 0;
  for (size_t pos = hay.find(needle); pos != llvm::StringRef::npos;
       pos = hay.find(needle, pos + needle.size()))
    ++n;
  return n;
}

PlotSeries series(std::string name,
                  std::vector<std::pair<double, double>> points,
                  bool dashed = false) {
  PlotSeries s;
  s.name = std::move(name);
  s.points = std::move(points);
  s.dashed = dashed;
  return s;
}

std::string svgOf(const LinePlot &p) {
  std::string s;
  llvm::raw_string_ostream os(s);
  writeSvgPlot(os, p);
  os.flush();
  return s;
}

TEST(PicturesTest, SizeTickLabels) {
  EXPECT_EQ(sizeTickLabel(512), "512");
  EXPECT_EQ(sizeTickLabel(1024), "1K");
  EXPECT_EQ(sizeTickLabel(64.0 * 1024 * 1024), "64M");
  EXPECT_EQ(sizeTickLabel(1.5 * 1024 * 1024 * 1024), "1.5G");
  EXPECT_EQ(sizeTickLabel(8.0 * 1024 * 1024 * 1024 * 1024), "8T");
}

TEST(PicturesTest, SvgLinesAxesAndLegend) {
  LinePlot p;
  p.title = "t <&> \"q\"";
  p.xLabel = "size";
  p.yLabel = "busbw";
  const double nan = std::numeric_limits<double>::quiet_NaN();
  PlotSeries a = series("alg & co", {{1024, 1}, {2048, 2}, {4096, nan},
                                     {8192, 4}, {16384, 5}});
  PlotSeries b = series("bound", {{1024, 10}, {16384, 10}}, /*dashed=*/true);
  p.series = {a, b};
  std::string s = svgOf(p);
  EXPECT_TRUE(llvm::StringRef(s).startswith("<?xml"));
  EXPECT_TRUE(llvm::StringRef(s).endswith("</svg>\n"));
  // The NaN breaks `a` into two polylines; `b` is one dashed polyline.
  EXPECT_EQ(count(s, "<polyline"), 3u);
  EXPECT_EQ(count(s, "stroke-dasharray=\"7,4\""), 2u); // line and legend
  // Markers: 4 finite points of `a` plus its legend sample; none for `b`.
  EXPECT_EQ(count(s, "<circle"), 5u);
  // Escaped text, axis titles, x ticks at every power of two from 1K to 16K.
  EXPECT_NE(s.find("t &lt;&amp;&gt; &quot;q&quot;"), std::string::npos);
  EXPECT_NE(s.find(">alg &amp; co</text>"), std::string::npos);
  for (const char *tick : {">1K<", ">2K<", ">4K<", ">8K<", ">16K<"})
    EXPECT_EQ(count(s, tick), 1u) << tick;
  // y axis: 0 to a nice 10 above the largest value, in steps of 2.
  for (const char *tick : {">0<", ">2<", ">4<", ">6<", ">8<", ">10<"})
    EXPECT_EQ(count(s, tick), 1u) << tick;
  // Deterministic.
  EXPECT_EQ(s, svgOf(p));
}

TEST(PicturesTest, SvgThinsLongAxesAndHandlesOneSize) {
  LinePlot p;
  PlotSeries a = series("a", {});
  for (int k = 10; k <= 33; ++k) // 1K to 8G: 24 powers of two
    a.points.push_back({std::ldexp(1.0, k), 1.0 * k});
  p.series = {a};
  std::string s = svgOf(p);
  // At most 12 labels: every second power of two.
  EXPECT_EQ(count(s, ">1K<"), 1u);
  EXPECT_EQ(count(s, ">2K<"), 0u);
  EXPECT_EQ(count(s, ">4K<"), 1u);
  EXPECT_EQ(count(s, ">4G<"), 1u);

  LinePlot one;
  one.series = {series("a", {{1024.0 * 1024, 3}})};
  std::string t = svgOf(one);
  EXPECT_EQ(count(t, "<polyline"), 0u); // one point: a marker, no line
  EXPECT_EQ(count(t, ">1M<"), 1u);
  EXPECT_EQ(count(t, "<circle"), 2u);
}

TEST(PicturesTest, WhatIfSeriesPerAlgorithmAndScenario) {
  analysis::WhatIfReport r;
  r.topology = "quad";
  r.algorithms = {"ring", "never", "bound"};
  r.competes = {true, true, false};
  auto cell = [](double busbw) {
    analysis::WhatIfEstimate e;
    e.applicable = busbw > 0;
    e.busbw = busbw * 1e9;
    return e;
  };
  for (const char *name : {"base", "half"}) {
    analysis::WhatIfTable t;
    t.scenario = name;
    for (double bytes : {1024.0, 4096.0}) {
      analysis::WhatIfRow row;
      row.bytes = bytes;
      row.cells = {cell(bytes / 1024), cell(0), cell(100)};
      t.rows.push_back(row);
    }
    r.tables.push_back(t);
  }
  LinePlot p = whatIfPlot(r);
  ASSERT_EQ(p.series.size(), 4u); // "never" is n/a everywhere: left out
  EXPECT_EQ(p.series[0].name, "ring");
  EXPECT_EQ(p.series[1].name, "bound");
  EXPECT_EQ(p.series[2].name, "ring (half)");
  EXPECT_EQ(p.series[3].name, "bound (half)");
  EXPECT_FALSE(p.series[0].dashed);
  EXPECT_TRUE(p.series[1].dashed);
  EXPECT_EQ(p.series[2].marker, PlotSeries::Marker::Square);
  EXPECT_DOUBLE_EQ(p.series[0].points[1].second, 4.0);
  EXPECT_EQ(p.title, "quad: allreduce busbw");
}

const char *kPair = R"(schema: topocc/v1
name: pair
nodes:
  - name: "h[0-1]"
    gpus: [ g0, g1 ]
    nics: [ nic0 ]
    switches: [ { name: plx, kind: pcie-switch } ]
    links:
      - { from: g0, to: g1, type: nvlink, bandwidth: 50 GB/s, latency: 1 us, count: 2 }
      - { from: "g{i:0-1}", to: plx, type: pcie, bandwidth: 16 GB/s, latency: 1 us }
      - { from: nic0, to: plx, type: pcie, bandwidth: 16 GB/s, latency: 1 us }
fabric:
  switches: [ { name: leaf, kind: ib-switch } ]
  links:
    - { from: "h{n:0-1}/nic0", to: leaf, type: ib, bandwidth: 100 Gb/s, latency: 2 us }
)";

std::string dotOf(const topo::Topology &t, const DotOptions &o = {}) {
  std::string s;
  llvm::raw_string_ostream os(s);
  writeDot(os, t, o);
  os.flush();
  return s;
}

TEST(PicturesTest, DotClustersWidthsAndColours) {
  auto t = topo::parseTopology(kPair, "pair.yaml");
  ASSERT_TRUE(bool(t)) << llvm::toString(t.takeError());
  std::string s = dotOf(*t);
  EXPECT_EQ(count(s, "subgraph \"cluster_h0\""), 1u);
  EXPECT_EQ(count(s, "subgraph \"cluster_h1\""), 1u);
  // The fabric switch is outside every host cluster: after both.
  EXPECT_GT(s.find("\"leaf\" [label=\"leaf\\nib-switch\""),
            s.find("subgraph \"cluster_h1\""));
  EXPECT_NE(s.find("\"h0/g0\" [label=\"g0\\nrank 0\""), std::string::npos);
  EXPECT_NE(s.find("\"h1/g1\" [label=\"g1\\nrank 3\""), std::string::npos);
  // Widest link (2 x 50 GB/s) 6, narrowest (100 Gb/s = 12.5 GB/s) 1; the
  // text is a tooltip, not a label (labels widen the layout).
  EXPECT_NE(s.find("\"h0/g0\" -> \"h0/g1\" [color=\"" +
                   linkTypeColor(topo::LinkType::NvLink).str() +
                   "\", penwidth=6.00, tooltip=\"nvlink 50 GB/s x2\"]"),
            std::string::npos)
      << s;
  // Fabric links are drawn from the fabric end: switches above hosts.
  EXPECT_NE(s.find("\"leaf\" -> \"h0/nic0\" [color=\"" +
                   linkTypeColor(topo::LinkType::Ib).str() +
                   "\", penwidth=1.00, tooltip=\"ib 100 Gb/s\"]"),
            std::string::npos);
  EXPECT_EQ(count(s, "label=\"50 GB/s"), 0u);
  EXPECT_EQ(count(s, "label=\"16 GB/s"), 0u);
  // The legend lists each class once with its count.
  EXPECT_NE(s.find("nvlink 50 GB/s x2  (2)"), std::string::npos);
  EXPECT_NE(s.find("pcie 16 GB/s  (6)"), std::string::npos);
  EXPECT_NE(s.find("ib 100 Gb/s  (2)"), std::string::npos);
  // Two small hosts fit side by side: one grid row, one rank.
  EXPECT_NE(s.find("{ rank=same; \"h0/g0\"; \"h0/g1\"; \"h0/nic0\"; "
                   "\"h1/g0\"; \"h1/g1\"; \"h1/nic0\"; }"),
            std::string::npos)
      << s;
  DotOptions labelled;
  labelled.edgeLabels = true;
  EXPECT_NE(dotOf(*t, labelled).find("\"h0/g0\" -> \"h0/g1\" [label=\"50 "
                                     "GB/s x2\", color="),
            std::string::npos);
  EXPECT_EQ(count(s, "failed"), 0u);
  EXPECT_EQ(s, dotOf(*t));
}

TEST(PicturesTest, DotVariantRingsAndUtilization) {
  auto t = topo::parseTopology(kPair, "pair.yaml");
  ASSERT_TRUE(bool(t)) << llvm::toString(t.takeError());
  auto ops = topo::parseScenarioOptions({"h0/g0--h0/g1"},
                                        {"h1/nic0--leaf=0.5x"}, {});
  ASSERT_TRUE(bool(ops)) << llvm::toString(ops.takeError());
  topo::Topology v = *t;
  ASSERT_FALSE(bool(topo::applyScenarioOps(v, "cli", *ops)));
  DotOptions o;
  o.variant = &v;
  o.subtitle = "cli";
  o.rings = {{0, 1, 3, 2}};
  o.utilization.assign(v.links().size(), 0.0);
  o.utilization[0] = 1.0; // h0/g0 -> h0/plx in the variant (the NVLink failed)
  std::string s = dotOf(*t, o);
  EXPECT_NE(s.find("\"h0/g0\" -> \"h0/g1\" [xlabel=\"failed\", "
                   "color=\"#cc0000\", fontcolor=\"#cc0000\", style=dashed"),
            std::string::npos)
      << s;
  EXPECT_EQ(count(s, " failed\""), 1u); // the failed link's tooltip
  EXPECT_NE(s.find("\"leaf\" -> \"h1/nic0\" [color=\"#00c800\", "
                   "penwidth=1.00, tooltip=\"ib 50 Gb/s, 0% busy\"]"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("\"h0/g0\" -> \"h0/plx\" [color=\"#ff0000\""),
            std::string::npos);
  EXPECT_NE(s.find("tooltip=\"pcie 16 GB/s, 100% busy\""), std::string::npos);
  EXPECT_EQ(count(s, "tooltip=\"ring 0: rank "), 4u);
  EXPECT_NE(s.find("<b>rings (arrows, GPU to GPU)</b>"), std::string::npos);
  EXPECT_NE(s.find("\"h1/g1\" -> \"h1/g0\" [dir=forward"), std::string::npos);
  EXPECT_NE(s.find("label=\"pair\\ncli\""), std::string::npos);
}

} // namespace
