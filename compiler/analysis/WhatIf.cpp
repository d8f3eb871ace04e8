//===- compiler/analysis/WhatIf.cpp - What-if tables -----------------------===//
//
// Registry, size parsing, the sweep and the three output formats.
//
//===----------------------------------------------------------------------===//

#include "compiler/analysis/WhatIf.h"

#include "compiler/analysis/Bound.h"
#include "compiler/analysis/ComputeModel.h"
#include "compiler/analysis/NcclModel.h"
#include "compiler/analysis/RealizableGraph.h"
#include "support/ByteSize.h"
#include "support/Diagnostics.h"
#include "support/Progress.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <cassert>
#include <chrono>
#include <cmath>
#include <functional>

namespace topocc::analysis {

WhatIfEvaluator::~WhatIfEvaluator() = default;

namespace {

class SimulatedEvaluator : public WhatIfEvaluator {
public:
  SimulatedEvaluator(RoutedSchedule rs, LinkModel &m,
                     const WhatIfSettings &set)
      : s(std::move(rs.schedule)), m(m), runs(set.timingRuns) {
    opts.mode = set.mode;
    opts.reduceBandwidth = set.reduceBandwidth;
    opts.fold = set.fold;
    opts.routeHints = std::move(rs.routeHints);
  }
  llvm::Expected<WhatIfEstimate> estimate(double bytes) override {
    opts.bytes = bytes;
    std::vector<double> times;
    auto r = timed(times);
    if (!r)
      return r.takeError();
    for (int i = 1; i < runs; ++i) {
      auto again = timed(times);
      if (!again)
        return again.takeError();
    }
    WhatIfEstimate e;
    if (runs > 0) {
      llvm::sort(times);
      e.simSeconds = times[times.size() / 2];
      e.simEvents = r->events;
    }
    e.applicable = true;
    e.time = r->time;
    e.algbw = r->algbw;
    e.busbw = r->busbw;
    return e;
  }

  llvm::Expected<std::optional<SimResult>>
  traceRun(double bytes, size_t maxTransfers) override {
    SimOptions o = opts;
    o.bytes = bytes;
    o.recordTransfers = true;
    o.maxTransfers = maxTransfers;
    auto r = simulate(s, m, o);
    if (!r)
      return r.takeError();
    return std::optional<SimResult>(std::move(*r));
  }

  llvm::Expected<std::optional<WhatIfBreakdown>>
  breakdown(double bytes) override {
    SimOptions o = opts;
    o.bytes = bytes;
    auto r = simulate(s, m, o);
    if (!r)
      return r.takeError();
    WhatIfBreakdown b;
    b.simTime = r->time;
    b.pathOps = r->criticalPath.size();
    for (const SimStep &st : r->criticalPath) {
      b.pathCompute += st.end - st.start;
      b.pathMessages += st.viaMessage >= 0;
    }
    b.pathNetwork = r->time - b.pathCompute;
    for (const SimLinkStats &l : r->links)
      if (l.busy > b.busiestBusy) {
        b.busiestBusy = l.busy;
        b.busiestBytes = l.bytes;
        b.busiestLink = m.resourceName(l.resource);
      }
    std::vector<double> mem = memoryBandwidthsFor(
        m.topology(), o.reduceBandwidth
                          ? std::optional<double>(3 * *o.reduceBandwidth)
                          : std::nullopt);
    double unit = bytes / s.chunksPerLoop;
    for (size_t q = 0; q < s.ranks.size(); ++q) {
      double sum = 0;
      for (const ir::Op &op : s.ranks[q].ops)
        sum += computeTime(op, unit, mem[q]);
      b.rankCompute = std::max(b.rankCompute, sum);
    }
    auto cm = estimateSchedule(s, m, bytes);
    if (!cm)
      return cm.takeError();
    b.model = std::move(*cm);
    return std::optional<WhatIfBreakdown>(std::move(b));
  }

private:
  llvm::Expected<SimResult> timed(std::vector<double> &times) {
    auto t0 = std::chrono::steady_clock::now();
    auto r = simulate(s, m, opts);
    times.push_back(std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - t0)
                        .count());
    return r;
  }

  ir::Schedule s;
  LinkModel &m;
  int runs = 0;
  SimOptions opts;
};

class NcclEvaluator : public WhatIfEvaluator {
public:
  NcclEvaluator(const topo::Topology &t, ir::Collective c) : t(t), c(c) {}
  llvm::Expected<WhatIfEstimate> estimate(double bytes) override {
    NcclModelResult r = ncclEstimate(t, c, bytes);
    const NcclEstimate *best = nullptr;
    for (const NcclEstimate *e : {&r.ring, &r.tree})
      if (e->applicable && (!best || e->time < best->time))
        best = e;
    WhatIfEstimate w;
    if (!best) {
      w.detail = "no NCCL algorithm applies";
      return w;
    }
    w.applicable = true;
    w.time = best->time;
    w.algbw = best->algbw;
    w.busbw = best->busbw;
    w.detail = best->algorithm + " " + best->protocol;
    return w;
  }

private:
  const topo::Topology &t;
  ir::Collective c;
};

class BoundEvaluator : public WhatIfEvaluator {
public:
  BoundEvaluator(llvm::Expected<BoundResult> b, ir::Collective c) : c(c) {
    if (b)
      bound = std::move(*b);
    else
      why = llvm::toString(b.takeError());
  }
  llvm::Expected<WhatIfEstimate> estimate(double bytes) override {
    WhatIfEstimate w;
    if (!bound) {
      w.detail = why;
      return w;
    }
    BoundNumbers n = boundNumbers(*bound, c, bytes);
    w.applicable = true;
    w.time = n.time;
    w.algbw = n.algbw;
    w.busbw = n.busbw;
    return w;
  }

private:
  std::optional<BoundResult> bound;
  std::string why;
  ir::Collective c;
};

} // namespace

WhatIfAlgorithm routedSimulatedAlgorithm(std::string name,
                                         std::string description,
                                         WhatIfRoutedBuilder build) {
  WhatIfAlgorithm a;
  a.name = std::move(name);
  a.description = std::move(description);
  a.make = [build = std::move(build)](const WhatIfContext &ctx)
      -> llvm::Expected<std::unique_ptr<WhatIfEvaluator>> {
    auto s = build(ctx);
    if (!s)
      return s.takeError();
    return std::make_unique<SimulatedEvaluator>(std::move(*s), ctx.links,
                                                ctx.settings);
  };
  return a;
}

WhatIfAlgorithm simulatedAlgorithm(std::string name, std::string description,
                                   WhatIfScheduleBuilder build) {
  return routedSimulatedAlgorithm(
      std::move(name), std::move(description),
      [build = std::move(build)](
          const WhatIfContext &ctx) -> llvm::Expected<RoutedSchedule> {
        auto s = build(ctx);
        if (!s)
          return s.takeError();
        return RoutedSchedule{std::move(*s), {}};
      });
}

void WhatIfRegistry::add(WhatIfAlgorithm a) {
  assert(!find(a.name) && "algorithm registered twice");
  algos.push_back(std::move(a));
}

const WhatIfAlgorithm *WhatIfRegistry::find(llvm::StringRef name) const {
  for (const WhatIfAlgorithm &a : algos)
    if (a.name == name)
      return &a;
  return nullptr;
}

llvm::Expected<std::vector<const WhatIfAlgorithm *>>
WhatIfRegistry::select(llvm::ArrayRef<std::string> names) const {
  std::vector<const WhatIfAlgorithm *> out;
  std::vector<llvm::StringRef> known;
  for (const WhatIfAlgorithm &a : algos)
    known.push_back(a.name);
  for (const std::string &n : names) {
    const WhatIfAlgorithm *a = find(n);
    if (!a) {
      std::string hint = nearestMatch(n, known);
      return makeUserError("unknown algorithm '" + n + "'" +
                           (hint.empty() ? "" : "; did you mean '" + hint +
                                                    "'?") +
                           " (known: " + llvm::join(known, ", ") + ")");
    }
    if (llvm::is_contained(out, a))
      return makeUserError("algorithm '" + n + "' is listed twice");
    out.push_back(a);
  }
  if (out.empty())
    return makeUserError("no algorithm selected (known: " +
                         llvm::join(known, ", ") + ")");
  return out;
}

void addAnalysisAlgorithms(WhatIfRegistry &r) {
  WhatIfAlgorithm nccl;
  nccl.name = "nccl-model";
  nccl.description = "NCCL 2.30's own estimate (the better of ring and tree)";
  nccl.make = [](const WhatIfContext &ctx)
      -> llvm::Expected<std::unique_ptr<WhatIfEvaluator>> {
    return std::make_unique<NcclEvaluator>(ctx.topology,
                                           ctx.settings.collective);
  };
  r.add(std::move(nccl));
  // Reference columns, never the winner.
  auto boundColumn =
      [&](std::string name, std::string description,
          std::function<llvm::Expected<BoundResult>(const WhatIfContext &)>
              compute) {
        WhatIfAlgorithm a;
        a.name = std::move(name);
        a.description = std::move(description);
        a.competes = false;
        a.make = [compute](const WhatIfContext &ctx)
            -> llvm::Expected<std::unique_ptr<WhatIfEvaluator>> {
          return std::make_unique<BoundEvaluator>(compute(ctx),
                                                  ctx.settings.collective);
        };
        r.add(std::move(a));
      };
  boundColumn("bound",
              "the physical cut bound on effective rates, every path "
              "(reference, never the winner)",
              [](const WhatIfContext &ctx) {
                return computeBound(ctx.topology, CapacityKind::Effective);
              });
  boundColumn("realizable",
              "the cut bound on the paths the runtime gives each message "
              "(reference, never the winner)",
              [](const WhatIfContext &ctx) {
                RealizableOptions o;
                o.ncclNetRule = ctx.settings.mode == SimMode::Runtime;
                return computeRealizableBound(ctx.topology, o);
              });
}

llvm::Expected<std::vector<double>> parseSizes(llvm::StringRef text) {
  return parseByteSizeRanges(text, "--sizes");
}

llvm::Expected<WhatIfTable>
runWhatIf(const topo::Topology &t,
          llvm::ArrayRef<const WhatIfAlgorithm *> algos,
          llvm::ArrayRef<double> sizes, const WhatIfSettings &settings,
          llvm::StringRef scenario, llvm::StringRef detail) {
  WhatIfTable table;
  table.scenario = scenario.str();
  table.detail = detail.str();
  table.ranks = t.numRanks();
  table.nodes = t.numNodes();
  LinkModel m(t);
  WhatIfContext ctx{t, m, settings,
                    sizes.empty() ? 0.0 : *std::max_element(sizes.begin(),
                                                            sizes.end())};
  std::vector<std::unique_ptr<WhatIfEvaluator>> evals;
  for (const WhatIfAlgorithm *a : algos) {
    auto e = a->make(ctx);
    if (!e)
      return makeUserError("algorithm '" + a->name + "' on " +
                           (scenario == "base" ? std::string("the base topology")
                                               : "scenario '" + scenario.str() +
                                                     "'") +
                           ": " + llvm::toString(e.takeError()));
    evals.push_back(std::move(*e));
  }
  ProgressTask progress("whatif " + scenario.str(), sizes.size() * algos.size(),
                        "cells");
  for (double bytes : sizes) {
    WhatIfRow row;
    row.bytes = bytes;
    for (size_t i = 0; i < algos.size(); ++i) {
      auto e = evals[i]->estimate(bytes);
      if (!e)
        return e.takeError();
      row.cells.push_back(std::move(*e));
      const WhatIfEstimate &c = row.cells.back();
      if (algos[i]->competes && c.applicable &&
          (row.winner < 0 || c.time < row.cells[row.winner].time))
        row.winner = static_cast<int>(i);
      progress.advance();
    }
    table.rows.push_back(std::move(row));
  }
  return table;
}

namespace {

const double kGB = 1e9;

int64_t countOf(double bytes) { return static_cast<int64_t>(bytes / 4); }

/// The base row at the same size, or nullptr.
const WhatIfRow *baseRow(const WhatIfReport &r, size_t i) {
  if (r.tables.empty() || i >= r.tables[0].rows.size())
    return nullptr;
  return &r.tables[0].rows[i];
}

std::string winnerName(const WhatIfReport &r, const WhatIfRow &row) {
  return row.winner >= 0 ? r.algorithms[row.winner] : "-";
}

std::string header(const WhatIfReport &r) {
  std::string s = llvm::formatv("# topocc whatif: {0}, {1}, ", r.topology,
                                ir::collectiveName(r.settings.collective))
                      .str();
  s += "schedules simulated in the ";
  s += simModeName(r.settings.mode);
  s += llvm::formatv(" model with {0} chunk{1} per rank", r.settings.chunks,
                     r.settings.chunks == 1 ? "" : "s")
           .str();
  if (r.settings.reduceBandwidth)
    s += llvm::formatv(", reduce bandwidth {0:F1} GB/s",
                       *r.settings.reduceBandwidth / kGB)
             .str();
  return s + "\n";
}

} // namespace

void printWhatIfTable(llvm::raw_ostream &os, const WhatIfReport &r) {
  os << header(r);
  size_t na = r.algorithms.size();
  for (size_t ti = 0; ti < r.tables.size(); ++ti) {
    const WhatIfTable &t = r.tables[ti];
    os << "#\n# " << (ti == 0 ? "base topology" : "scenario '" + t.scenario + "'");
    if (!t.detail.empty())
      os << ": " << t.detail;
    os << llvm::formatv(" ({0} ranks, {1} node{2})\n", t.ranks, t.nodes,
                        t.nodes == 1 ? "" : "s");
    os << "#" << std::string(23, ' ');
    for (const std::string &a : r.algorithms)
      os << llvm::formatv("{0,28}", a);
    os << "\n#" << llvm::formatv("{0,11}{1,12}", "size", "count");
    for (size_t i = 0; i < na; ++i)
      os << llvm::formatv("{0,12}{1,8}{2,8}", "time", "algbw", "busbw");
    os << "  winner\n#" << llvm::formatv("{0,11}{1,12}", "(B)", "(elements)");
    for (size_t i = 0; i < na; ++i)
      os << llvm::formatv("{0,12}{1,8}{2,8}", "(us)", "(GB/s)", "(GB/s)");
    os << '\n';
    for (const WhatIfRow &row : t.rows) {
      os << llvm::formatv("{0,12}{1,12}", static_cast<int64_t>(row.bytes),
                          countOf(row.bytes));
      for (const WhatIfEstimate &c : row.cells) {
        if (!c.applicable) {
          os << llvm::formatv("{0,12}{1,8}{2,8}", "n/a", "n/a", "n/a");
          continue;
        }
        os << llvm::formatv("{0,12:F2}{1,8:F2}{2,8:F2}", c.time * 1e6,
                            c.algbw / kGB, c.busbw / kGB);
      }
      os << "  " << winnerName(r, row) << '\n';
    }
    if (ti == 0)
      continue;
    os << "#\n# scenario '" << t.scenario
       << "' vs base: time ratio (scenario / base; above 1 is slower)\n#"
       << llvm::formatv("{0,11}", "size");
    for (const std::string &a : r.algorithms)
      os << llvm::formatv("{0,12}", a);
    os << "  winner (base -> scenario)\n";
    for (size_t i = 0; i < t.rows.size(); ++i) {
      const WhatIfRow &row = t.rows[i];
      const WhatIfRow *b = baseRow(r, i);
      os << llvm::formatv("{0,12}", static_cast<int64_t>(row.bytes));
      for (size_t k = 0; k < na; ++k) {
        if (!b || !row.cells[k].applicable || !b->cells[k].applicable ||
            !(b->cells[k].time > 0)) {
          os << llvm::formatv("{0,12}", "n/a");
          continue;
        }
        os << llvm::formatv("{0,11:F3}x",
                            row.cells[k].time / b->cells[k].time);
      }
      os << "  " << (b ? winnerName(r, *b) : "-") << " -> "
         << winnerName(r, row) << '\n';
    }
  }
}

void printWhatIfCsv(llvm::raw_ostream &os, const WhatIfReport &r) {
  os << "scenario,size,count";
  for (const std::string &a : r.algorithms)
    os << ',' << a << "_time_us," << a << "_algbw_GBps," << a << "_busbw_GBps";
  os << ",winner,winner_time_vs_base\n";
  for (const WhatIfTable &t : r.tables)
    for (size_t i = 0; i < t.rows.size(); ++i) {
      const WhatIfRow &row = t.rows[i];
      os << t.scenario << ',' << static_cast<int64_t>(row.bytes) << ','
         << countOf(row.bytes);
      for (const WhatIfEstimate &c : row.cells) {
        if (!c.applicable) {
          os << ",,,";
          continue;
        }
        os << llvm::formatv(",{0:F3},{1:F3},{2:F3}", c.time * 1e6,
                            c.algbw / kGB, c.busbw / kGB);
      }
      os << ',' << winnerName(r, row) << ',';
      const WhatIfRow *b = baseRow(r, i);
      if (b && row.winner >= 0 && b->winner >= 0 &&
          b->cells[b->winner].time > 0)
        os << llvm::formatv("{0:F4}", row.cells[row.winner].time /
                                          b->cells[b->winner].time);
      os << '\n';
    }
}

void printWhatIfJson(llvm::raw_ostream &os, const WhatIfReport &r) {
  llvm::json::Array algos;
  for (size_t i = 0; i < r.algorithms.size(); ++i)
    algos.push_back(llvm::json::Object{{"name", r.algorithms[i]},
                                       {"competes", bool(r.competes[i])}});
  llvm::json::Array tables;
  for (const WhatIfTable &t : r.tables) {
    llvm::json::Array rows;
    for (size_t i = 0; i < t.rows.size(); ++i) {
      const WhatIfRow &row = t.rows[i];
      llvm::json::Object results;
      for (size_t k = 0; k < row.cells.size(); ++k) {
        const WhatIfEstimate &c = row.cells[k];
        if (!c.applicable) {
          results[r.algorithms[k]] =
              llvm::json::Object{{"applicable", false}, {"why", c.detail}};
          continue;
        }
        llvm::json::Object o{{"applicable", true},
                             {"time_s", c.time},
                             {"algbw", c.algbw},
                             {"busbw", c.busbw}};
        if (!c.detail.empty())
          o["detail"] = c.detail;
        results[r.algorithms[k]] = std::move(o);
      }
      llvm::json::Object o{{"bytes", static_cast<int64_t>(row.bytes)},
                           {"count", countOf(row.bytes)},
                           {"results", std::move(results)},
                           {"winner", row.winner >= 0
                                          ? llvm::json::Value(
                                                r.algorithms[row.winner])
                                          : llvm::json::Value(nullptr)}};
      const WhatIfRow *b = baseRow(r, i);
      if (b && row.winner >= 0 && b->winner >= 0 &&
          b->cells[b->winner].time > 0)
        o["winner_time_vs_base"] =
            row.cells[row.winner].time / b->cells[b->winner].time;
      rows.push_back(std::move(o));
    }
    tables.push_back(llvm::json::Object{{"scenario", t.scenario},
                                        {"detail", t.detail},
                                        {"ranks", t.ranks},
                                        {"nodes", t.nodes},
                                        {"rows", std::move(rows)}});
  }
  llvm::json::Object root{
      {"topology", r.topology},
      {"collective", ir::collectiveName(r.settings.collective)},
      {"mode", simModeName(r.settings.mode)},
      {"chunks", r.settings.chunks},
      {"algorithms", std::move(algos)},
      {"scenarios", std::move(tables)}};
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << '\n';
}

void printWhatIfBreakdowns(
    llvm::raw_ostream &os, double bytes,
    llvm::ArrayRef<std::pair<std::string, WhatIfBreakdown>> rows) {
  auto us = [](double t) { return llvm::formatv("{0:f1}", t * 1e6).str(); };
  os << llvm::formatv("#\n# explain at {0} B (base topology): simulator "
                      "vs cost model (estimateSchedule), times in us\n",
                      static_cast<int64_t>(bytes));
  for (const auto &[name, b] : rows) {
    const CostReport &c = b.model;
    os << "# " << name << ": simulated " << us(b.simTime)
       << "; critical path " << b.pathOps << " ops, " << b.pathMessages
       << " messages: compute " << us(b.pathCompute) << ", network "
       << us(b.pathNetwork) << "\n";
    os << "#   busiest link " << b.busiestLink << ": busy "
       << us(b.busiestBusy) << " ("
       << llvm::formatv("{0:f1}", b.simTime > 0
                                      ? 100 * b.busiestBusy / b.simTime
                                      : 0.0)
       << "% of the run), "
       << llvm::formatv("{0:f1}", b.busiestBytes / 1e6)
       << " MB; most local work on one rank " << us(b.rankCompute) << "\n";
    os << "#   cost model " << us(c.time) << " = bandwidth "
       << us(c.bandwidthTime) << " (" << c.bottleneckName << ") + latency "
       << us(c.latencyTime) << " + compute " << us(c.computeTime) << "\n";
  }
}

} // namespace topocc::analysis
