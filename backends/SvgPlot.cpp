//===- backends/SvgPlot.cpp - Line plots as SVG, written directly ---------===//
//
// Layout: a fixed margin around the plot area, the legend in a column on the
// right. The x axis spans the data's log2 range (one unit of padding when
// all points share one x); ticks at powers of two, labelled at most every
// few so at most 12 labels show. The y axis starts at 0 and ends at a nice
// multiple (1, 2, 2.5, 5 x 10^k) above the largest value.
//
//===----------------------------------------------------------------------===//

#include "backends/SvgPlot.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace topocc::backends {

namespace {

const char *const kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                                "#bcbd22", "#17becf"};

/// `s` cut to what fits the legend column (40 characters, then "...").
std::string legendText(llvm::StringRef s) {
  constexpr size_t kMax = 40;
  return s.size() <= kMax ? s.str() : s.take_front(kMax - 3).str() + "...";
}

std::string escape(llvm::StringRef s) {
  std::string out;
  for (char c : s) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

/// Coordinates with two decimals (stable text, small files).
std::string num(double v) {
  if (std::fabs(v) < 0.005)
    v = 0;
  return llvm::formatv("{0:F2}", v).str();
}

/// Shortest text of a tick value ("0", "2.5", "150").
std::string tickText(double v) {
  std::string s = llvm::formatv("{0:F3}", v).str();
  while (!s.empty() && s.back() == '0')
    s.pop_back();
  if (!s.empty() && s.back() == '.')
    s.pop_back();
  return s == "-0" ? "0" : s;
}

/// The smallest of 1, 2, 2.5, 5 x 10^k that is >= x (x > 0).
double niceStep(double x) {
  double p = std::pow(10.0, std::floor(std::log10(x)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * p >= x * (1 - 1e-12))
      return m * p;
  return 10 * p;
}

void marker(llvm::raw_ostream &os, PlotSeries::Marker m, double x, double y,
            llvm::StringRef color) {
  switch (m) {
  case PlotSeries::Marker::Circle:
    os << "<circle cx=\"" << num(x) << "\" cy=\"" << num(y)
       << "\" r=\"3\" fill=\"" << color << "\"/>";
    break;
  case PlotSeries::Marker::Square:
    os << "<rect x=\"" << num(x - 3) << "\" y=\"" << num(y - 3)
       << "\" width=\"6\" height=\"6\" fill=\"" << color << "\"/>";
    break;
  case PlotSeries::Marker::Triangle:
    os << "<polygon points=\"" << num(x) << "," << num(y - 4) << " "
       << num(x - 4) << "," << num(y + 3) << " " << num(x + 4) << ","
       << num(y + 3) << "\" fill=\"" << color << "\"/>";
    break;
  case PlotSeries::Marker::Diamond:
    os << "<polygon points=\"" << num(x) << "," << num(y - 4) << " "
       << num(x - 4) << "," << num(y) << " " << num(x) << "," << num(y + 4)
       << " " << num(x + 4) << "," << num(y) << "\" fill=\"" << color
       << "\"/>";
    break;
  }
}

} // namespace

std::string sizeTickLabel(double bytes) {
  static const char *const kSuffix[] = {"", "K", "M", "G", "T"};
  int i = 0;
  double v = bytes;
  while (v >= 1024 && i < 4) {
    v /= 1024;
    ++i;
  }
  return tickText(v) + kSuffix[i];
}

void writeSvgPlot(llvm::raw_ostream &os, const LinePlot &p) {
  const double left = 78, top = 46, bottom = 64, legendW = 250;
  // The legend may need more height than asked for.
  const int height = std::max(
      p.height, static_cast<int>(top + 18 * p.series.size() + 30));
  const double plotW = std::max(100.0, p.width - left - legendW - 20);
  const double plotH = std::max(100.0, height - top - bottom);
  auto xOf = [&](double x) { return p.log2SizeX ? std::log2(x) : x; };
  auto finite = [&](const std::pair<double, double> &pt) {
    return std::isfinite(pt.second) && std::isfinite(pt.first) &&
           (!p.log2SizeX || pt.first > 0);
  };

  // Data ranges.
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, yMax = 0;
  for (const PlotSeries &s : p.series)
    for (const auto &pt : s.points)
      if (finite(pt)) {
        x0 = std::min(x0, xOf(pt.first));
        x1 = std::max(x1, xOf(pt.first));
        yMax = std::max(yMax, pt.second);
      }
  if (!(x0 <= x1)) {
    x0 = p.log2SizeX ? 10 : 0;
    x1 = x0 + 1;
  }
  if (x1 - x0 < 1e-9) {
    x0 -= 1;
    x1 += 1;
  }
  double yStep = niceStep(yMax > 0 ? yMax / 5 : 0.2);
  double yTop = std::max(yStep, std::ceil(yMax / yStep - 1e-9) * yStep);
  auto px = [&](double x) { return left + (xOf(x) - x0) / (x1 - x0) * plotW; };
  auto py = [&](double y) { return top + plotH - y / yTop * plotH; };

  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\""
     << p.width << "\" height=\"" << height << "\" viewBox=\"0 0 "
     << p.width << " " << height
     << "\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\">\n";
  os << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  os << "<text x=\"" << num(left + plotW / 2) << "\" y=\"24\" "
     << "text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">"
     << escape(p.title) << "</text>\n";

  // Grid and ticks.
  os << "<g class=\"grid\" stroke=\"#dddddd\" stroke-width=\"1\">\n";
  int yTicks = static_cast<int>(std::lround(yTop / yStep));
  for (int i = 0; i <= yTicks; ++i) {
    double y = py(i * yStep);
    os << "<line x1=\"" << num(left) << "\" y1=\"" << num(y) << "\" x2=\""
       << num(left + plotW) << "\" y2=\"" << num(y) << "\"/>\n";
  }
  int xFirst = static_cast<int>(std::ceil(x0 - 1e-9));
  int xLast = static_cast<int>(std::floor(x1 + 1e-9));
  int every = 1;
  if (p.log2SizeX)
    while ((xLast - xFirst) / every + 1 > 12)
      ++every;
  std::vector<int> xTicks;
  if (p.log2SizeX)
    for (int k = xFirst; k <= xLast; ++k)
      if (((k % every) + every) % every == 0)
        xTicks.push_back(k);
  for (int k : xTicks) {
    double x = left + (k - x0) / (x1 - x0) * plotW;
    os << "<line x1=\"" << num(x) << "\" y1=\"" << num(top) << "\" x2=\""
       << num(x) << "\" y2=\"" << num(top + plotH) << "\"/>\n";
  }
  os << "</g>\n";
  os << "<rect x=\"" << num(left) << "\" y=\"" << num(top) << "\" width=\""
     << num(plotW) << "\" height=\"" << num(plotH)
     << "\" fill=\"none\" stroke=\"black\" stroke-width=\"1\"/>\n";
  os << "<g class=\"ticks\">\n";
  for (int i = 0; i <= yTicks; ++i)
    os << "<text x=\"" << num(left - 6) << "\" y=\"" << num(py(i * yStep) + 4)
       << "\" text-anchor=\"end\">" << tickText(i * yStep) << "</text>\n";
  for (int k : xTicks) {
    double x = left + (k - x0) / (x1 - x0) * plotW;
    os << "<text x=\"" << num(x) << "\" y=\"" << num(top + plotH + 18)
       << "\" text-anchor=\"middle\">"
       << escape(sizeTickLabel(std::ldexp(1.0, k))) << "</text>\n";
  }
  os << "</g>\n";
  os << "<text x=\"" << num(left + plotW / 2) << "\" y=\""
     << num(top + plotH + 44) << "\" text-anchor=\"middle\">"
     << escape(p.xLabel) << "</text>\n";
  os << "<text transform=\"translate(" << num(left - 52) << ","
     << num(top + plotH / 2) << ") rotate(-90)\" text-anchor=\"middle\">"
     << escape(p.yLabel) << "</text>\n";

  // Series.
  size_t colorIndex = 0;
  std::vector<std::string> colors;
  for (const PlotSeries &s : p.series)
    colors.push_back(!s.color.empty()
                         ? s.color
                         : kPalette[colorIndex++ % std::size(kPalette)]);
  for (size_t i = 0; i < p.series.size(); ++i) {
    const PlotSeries &s = p.series[i];
    os << "<g class=\"series\">\n<title>" << escape(s.name) << "</title>\n";
    // One polyline per run of finite points.
    std::vector<std::pair<double, double>> run;
    auto flush = [&] {
      if (run.size() >= 2) {
        os << "<polyline fill=\"none\" stroke=\"" << colors[i]
           << "\" stroke-width=\"2\"";
        if (s.dashed)
          os << " stroke-dasharray=\"7,4\"";
        os << " points=\"";
        for (size_t k = 0; k < run.size(); ++k)
          os << (k ? " " : "") << num(run[k].first) << ","
             << num(run[k].second);
        os << "\"/>\n";
      }
      run.clear();
    };
    std::vector<std::pair<double, double>> pts;
    for (const auto &pt : s.points) {
      if (!finite(pt)) {
        flush();
        continue;
      }
      std::pair<double, double> q{px(pt.first), py(pt.second)};
      run.push_back(q);
      pts.push_back(q);
    }
    flush();
    if (!s.dashed)
      for (const auto &q : pts) {
        marker(os, s.marker, q.first, q.second, colors[i]);
        os << "\n";
      }
    os << "</g>\n";
  }

  // Legend.
  double lx = left + plotW + 20, ly = top + 8;
  os << "<g class=\"legend\">\n";
  for (size_t i = 0; i < p.series.size(); ++i) {
    const PlotSeries &s = p.series[i];
    double y = ly + 18 * static_cast<double>(i);
    os << "<line x1=\"" << num(lx) << "\" y1=\"" << num(y) << "\" x2=\""
       << num(lx + 28) << "\" y2=\"" << num(y) << "\" stroke=\"" << colors[i]
       << "\" stroke-width=\"2\"" << (s.dashed ? " stroke-dasharray=\"7,4\"" : "")
       << "/>";
    if (!s.dashed)
      marker(os, s.marker, lx + 14, y, colors[i]);
    os << "<text x=\"" << num(lx + 36) << "\" y=\"" << num(y + 4) << "\">"
       << escape(s.name) << "</text>\n";
  }
  os << "</g>\n</svg>\n";
}

LinePlot whatIfPlot(const analysis::WhatIfReport &r) {
  LinePlot p;
  p.title = llvm::formatv("{0}: {1} busbw", r.topology,
                          ir::collectiveName(r.settings.collective))
                .str();
  p.xLabel = "message size (bytes, log2 scale; K/M/G = 1024^1/2/3)";
  p.yLabel = "busbw (GB/s = 1e9 B/s)";
  p.log2SizeX = true;
  static const PlotSeries::Marker kMarkers[] = {
      PlotSeries::Marker::Square, PlotSeries::Marker::Triangle,
      PlotSeries::Marker::Diamond};
  for (size_t ti = 0; ti < r.tables.size(); ++ti) {
    const analysis::WhatIfTable &t = r.tables[ti];
    for (size_t a = 0; a < r.algorithms.size(); ++a) {
      PlotSeries s;
      // An algorithm keeps its colour in every scenario (the marker tells
      // the scenarios apart); options given on the command line are named
      // by what they change.
      s.color = kPalette[a % std::size(kPalette)];
      std::string scenario = t.scenario == "cli" && !t.detail.empty()
                                 ? legendText(t.detail)
                                 : t.scenario;
      s.name = ti == 0 ? r.algorithms[a]
                       : r.algorithms[a] + " (" + scenario + ")";
      s.dashed = a < r.competes.size() && !r.competes[a];
      s.marker = ti == 0 ? PlotSeries::Marker::Circle
                         : kMarkers[(ti - 1) % std::size(kMarkers)];
      bool any = false;
      for (const analysis::WhatIfRow &row : t.rows) {
        const analysis::WhatIfEstimate &c = row.cells[a];
        s.points.push_back(
            {row.bytes, c.applicable ? c.busbw / 1e9
                                     : std::numeric_limits<double>::quiet_NaN()});
        any |= c.applicable;
      }
      if (any)
        p.series.push_back(std::move(s));
    }
  }
  return p;
}

void writeWhatIfSvg(llvm::raw_ostream &os, const analysis::WhatIfReport &r) {
  writeSvgPlot(os, whatIfPlot(r));
}

} // namespace topocc::backends
