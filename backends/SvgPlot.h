//===- backends/SvgPlot.h - Line plots as SVG, written directly -*- C++ -*-===//
//
// A small line-plot writer (no plotting dependency): a log2 or linear x axis,
// a linear y axis from 0, one polyline per series with point markers, dashed
// series, a legend right of the plot, axis titles. `writeWhatIfSvg` turns a
// what-if report into busbw vs message size (one line per algorithm and
// scenario, the bound dashed). Stage: output. Pure functions writing to a
// stream; deterministic (fixed palette, fixed number formatting).
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_BACKENDS_SVGPLOT_H
#define TOPOCC_BACKENDS_SVGPLOT_H

#include "compiler/analysis/WhatIf.h"

#include "llvm/Support/raw_ostream.h"

#include <string>
#include <utility>
#include <vector>

namespace topocc::backends {

struct PlotSeries {
  std::string name;
  /// (x, y); a NaN y leaves a gap (the line is broken there).
  std::vector<std::pair<double, double>> points;
  bool dashed = false;
  std::string color; ///< "#rrggbb"; empty takes the next palette colour
  enum class Marker { Circle, Square, Triangle, Diamond } marker =
      Marker::Circle;
};

struct LinePlot {
  std::string title, xLabel, yLabel;
  /// Log2 x axis with byte-size tick labels (1K, 64M, 1G); else linear.
  bool log2SizeX = true;
  std::vector<PlotSeries> series;
  int width = 860, height = 500;
};

/// Writes `p` as a standalone SVG 1.1 document. Series with no finite point
/// are listed in the legend only.
void writeSvgPlot(llvm::raw_ostream &os, const LinePlot &p);

/// A byte count as an axis label: powers of 1024 with K, M, G, T ("1K",
/// "64M", "1.5G"), bytes below 1024 as a plain number.
std::string sizeTickLabel(double bytes);

/// busbw (GB/s, 1e9) vs message size of every table of `r`: one series per
/// (scenario, algorithm) with an applicable cell, named "ALG" for the base
/// and "ALG (SCENARIO)" otherwise; the reference columns (the bound) dashed.
/// Colours come from a fixed 10-colour palette in series order (base
/// algorithms first, then each scenario's); markers are circles for the
/// base and squares, triangles, diamonds for the scenarios in turn.
LinePlot whatIfPlot(const analysis::WhatIfReport &r);

/// writeSvgPlot(os, whatIfPlot(r)).
void writeWhatIfSvg(llvm::raw_ostream &os, const analysis::WhatIfReport &r);

} // namespace topocc::backends

#endif // TOPOCC_BACKENDS_SVGPLOT_H
