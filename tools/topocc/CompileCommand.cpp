//===- tools/topocc/CompileCommand.cpp - `topocc compile` -----------------===//
//
// `topocc compile TOPO.yaml --collective C --algorithm ring|hier-ring|trees|
// cerar|hier-cerar|auto ...
// --emit msccl-xml|ir|nccl-graph -o FILE` runs the pipeline
// (compiler/Pipeline.h) on the topology: the ring algorithm uses the ring
// search's rings for --size unless --ring gives an order (or rank-order);
// trees packs ForestColl spanning trees (--trees-per-root K or the optimum);
// `topocc compile --run-pass NAME --input-ir FILE -o FILE` runs one pass on
// textual IR. Only verified schedules are written.
//
//===----------------------------------------------------------------------===//

#include "tools/topocc/Driver.h"

#include "backends/MscclTarget.h"
#include "backends/MscclXml.h"
#include "backends/MscclXmlImport.h"
#include "backends/NcclGraphRings.h"
#include "backends/PlanJson.h"
#include "backends/ServedSizes.h"
#include "backends/TopologyHash.h"
#include "compiler/Pipeline.h"
#include "compiler/SizeWindows.h"
#include "compiler/algorithms/ForestColl.h"
#include "compiler/analysis/CostModel.h"
#include "compiler/analysis/Prediction.h"
#include "compiler/passes/LowerDbTree.h"
#include "compiler/topology/Scenario.h"
#include "compiler/topology/TopologyParser.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "support/ByteSize.h"
#include "support/Diagnostics.h"
#include "support/Progress.h"

#include "CLI/CLI.hpp"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"

#include <chrono>
#include <cmath>
#include <future>
#include <map>
#include <memory>
#include <set>

namespace topocc::driver {

namespace {

struct CompileOptions {
  std::string topology;
  std::string collective;
  /// Empty: auto with a topology (the fastest candidate by the runtime
  /// model; coded plans only with --tolerance), else ring.
  std::string algorithm;
  std::string channels; ///< empty: 1, or auto for --algorithm auto
  int chunks = 1;
  std::string ring;
  std::string treesPerRoot = "auto";
  std::string treeGraph = "physical";
  std::string ringSteps = "pipelined";
  int components = 0;
  double tolerance = 0;
  std::string wireDtype = "fp32";
  double kappaMax = 0;
  int seam = 0;
  bool explain = false;
  std::string size = "64M";
  bool sizeGiven = false; ///< --size was on the command line
  bool chunksGiven = false; ///< --chunks was on the command line
  /// --sizes MIN:MAX: one schedule per size window (compileSizeWindows).
  std::string sizes;
  bool inplace = false;
  bool outofplace = false;
  std::string proto = "Simple";
  int maxSteps = ir::kMscclMaxSteps;
  std::string scenario;
  std::string emit = "msccl-xml";
  std::string format = "text"; ///< the report on stdout: text or json
  /// SMs of the target GPU; -1: from the topology's GPU model
  /// (ir::kDefaultSmCount without a topology).
  int smCount = -1;
  std::string mscclRuntime; ///< empty: from the GPU vendor
  std::string output;
  bool printAfterAll = false;
  bool timePasses = false;
  bool verifyEach = false;
  std::string runPass;
  std::string inputIr;
};

llvm::Expected<std::vector<ir::RankId>> parseRingOrder(llvm::StringRef text) {
  std::vector<ir::RankId> ring;
  if (text.empty())
    return ring;
  llvm::SmallVector<llvm::StringRef, 16> parts;
  text.split(parts, ',');
  for (llvm::StringRef p : parts) {
    int r;
    if (p.trim().getAsInteger(10, r))
      return makeUserError("invalid --ring '" + text + "': '" + p +
                           "' is not a rank number (expected a comma-separated "
                           "list such as 0,3,2,1)");
    ring.push_back(r);
  }
  return ring;
}

/// --channels: 1 to 32, or auto (0).
llvm::Expected<int32_t> parseChannels(llvm::StringRef text) {
  if (text == "auto")
    return 0;
  int32_t c;
  if (text.getAsInteger(10, c) || c < 1)
    return makeUserError("invalid --channels '" + text +
                         "' (expected a positive number or auto)");
  return c;
}

/// The NCCL_GRAPH_FILE of a compiled ring plan; notes go to `notes`.
llvm::Expected<std::string> renderNcclGraph(const topo::Topology &t,
                                            const CompileResult &plan,
                                            const CompileRequest &req,
                                            std::vector<std::string> &notes) {
  if (plan.algorithm != Algorithm::Ring)
    return makeUserError(
        "--emit nccl-graph cannot express --algorithm " +
        algorithmName(plan.algorithm) +
        ": an NCCL_GRAPH_FILE only lists ring (and tree) channel orders, and "
        "NCCL runs its own algorithm over them; use --emit msccl-xml");
  std::vector<analysis::RingChannel> rings = plan.searched;
  if (rings.empty())
    for (const ChannelRing &cr : plan.rings) {
      analysis::RingChannel rc;
      rc.order.assign(cr.order.begin(), cr.order.end());
      rc.share = 1.0 / plan.rings.size();
      rings.push_back(std::move(rc));
    }
  analysis::LinkModel m(t);
  auto xml =
      backends::ncclGraphForRings(t, rings, req.collective, req.bytes, m);
  if (!xml)
    return xml.takeError();
  notes = xml->notes;
  bool equal = true;
  for (const ChannelRing &cr : plan.rings)
    equal = equal && cr.chunks == plan.rings[0].chunks;
  if (!equal) {
    std::vector<std::string> counts;
    for (const ChannelRing &cr : plan.rings)
      counts.push_back(std::to_string(cr.chunks));
    notes.push_back("NCCL splits the data evenly over the channels; the "
                    "chosen unequal shares (chunks per channel " +
                    llvm::join(counts, ",") +
                    ") are only in the MSCCL XML (--emit msccl-xml)");
  }
  if (req.chunks != 1)
    notes.push_back("--chunks has no effect on an NCCL graph file (NCCL "
                    "chooses its own chunk size)");
  return xml->xml;
}

/// The bounds a compile's prediction is measured against, computed on a
/// thread of their own while the compile runs. That thread's progress sink
/// shows nothing and asks the bounds to stop when the compile fails first
/// (the error is then printed at once, not after the bounds).
class BoundsBeside {
public:
  BoundsBeside() = default;
  BoundsBeside(const BoundsBeside &) = delete;
  BoundsBeside &operator=(const BoundsBeside &) = delete;
  ~BoundsBeside() {
    stop.requestStop();
    if (result.valid())
      result.wait();
  }
  /// `t` must outlive this object.
  void start(const topo::Topology &t) {
    result = std::async(std::launch::async, [this, &t] {
      setProgressSink(&stop);
      return analysis::computeTopologyBounds(t, analysis::SimMode::Runtime);
    });
  }
  bool started() const { return result.valid(); }
  analysis::TopologyBounds get() { return result.get(); }

private:
  StopSink stop;
  std::future<analysis::TopologyBounds> result;
};

/// The text to write for `s` in the requested form; MSCCL XML with the
/// selection window `window` (none: every size).
llvm::Expected<std::string>
render(const ir::Schedule &s, ir::OutputFormat emit, const CompileOptions &opts,
       const backends::PlanMeta &meta, backends::PlanWindow window = {},
       backends::PlanCheck check = backends::PlanCheck::Verify) {
  if (emit == ir::OutputFormat::Ir)
    return ir::scheduleToString(s);
  if (emit == ir::OutputFormat::Plan)
    return backends::planToJson(s, meta, check);
  backends::MscclXmlOptions xml;
  xml.proto = opts.proto;
  xml.maxSteps = opts.maxSteps;
  xml.minBytes = window.minBytes;
  xml.maxBytes = window.maxBytes;
  return backends::mscclXmlToString(s, xml);
}

/// The prediction at each of `sizes` of the file `s` is written as
/// (`text`, the rendered file, named `fileName`): MSCCL XML is imported
/// back, so that the numbers are the simulated times of what the file says
/// (Prediction.h). `bounds`: computeTopologyBounds(t) when the caller has
/// them, else computed here.
llvm::Expected<std::vector<analysis::Prediction>>
predictFile(const topo::Topology &t, const ir::Schedule &s,
            ir::OutputFormat emit, llvm::StringRef text,
            llvm::StringRef fileName, llvm::ArrayRef<double> sizes,
            std::optional<analysis::TopologyBounds> bounds = std::nullopt) {
  std::optional<ir::Schedule> imported;
  if (emit == ir::OutputFormat::MscclXml) {
    auto back = backends::importMscclXml(text, fileName);
    if (!back)
      return back.takeError();
    imported = std::move(*back);
  }
  std::vector<analysis::Prediction> out;
  // The bounds once per file (the realizable graph is a max-flow per pair).
  if (!bounds)
    bounds = analysis::computeTopologyBounds(t, analysis::SimMode::Runtime);
  for (double bytes : sizes) {
    auto p = analysis::predictSchedule(t, imported ? *imported : s, bytes,
                                       analysis::SimMode::Runtime, &*bounds);
    if (!p)
      return p.takeError();
    out.push_back(std::move(*p));
  }
  return out;
}

/// A schedule's shape as the summary line and --format json report it.
struct ScheduleStats {
  size_t threadblocks = 0, steps = 0, maxTbs = 0, maxSteps = 0;
};
ScheduleStats scheduleStats(const ir::Schedule &s) {
  ScheduleStats st;
  for (const ir::RankProgram &rp : s.ranks) {
    std::map<ir::TbId, size_t> perTb;
    for (const ir::Op &op : rp.ops)
      ++perTb[op.threadblock];
    st.threadblocks += perTb.size();
    st.maxTbs = std::max(st.maxTbs, perTb.size());
    for (auto &[tb, n] : perTb)
      st.maxSteps = std::max(st.maxSteps, n);
    st.steps += rp.ops.size();
  }
  return st;
}

/// "ring allreduce, 4 ranks, 1 channel, 4 threadblocks (1 per rank), 28
/// steps (at most 7 per threadblock), nchunksperloop 4"
std::string scheduleSummary(const ir::Schedule &s, llvm::StringRef algorithm,
                            const ir::TargetLimits &target) {
  ScheduleStats st = scheduleStats(s);
  return llvm::formatv("{0} {1}, {2} ranks, {3} channel{4}, {5} "
                       "threadblocks ({6} per rank at most), {7} steps ({8} "
                       "per threadblock at most), nchunksperloop {9}{10}",
                       algorithm, ir::collectiveName(s.collective), s.numRanks,
                       s.numChannels, s.numChannels == 1 ? "" : "s",
                       st.threadblocks, st.maxTbs, st.steps, st.maxSteps,
                       s.chunksPerLoop,
                       target.format == ir::OutputFormat::MscclXml
                           ? "; for " + backends::describeMscclTarget(target)
                           : std::string())
      .str();
}

/// The --format json form of scheduleSummary.
llvm::json::Object scheduleJson(const ir::Schedule &s) {
  ScheduleStats st = scheduleStats(s);
  return llvm::json::Object{
      {"collective", ir::collectiveName(s.collective)},
      {"ranks", s.numRanks},
      {"channels", s.numChannels},
      {"threadblocks", int64_t(st.threadblocks)},
      {"maxThreadblocksPerRank", int64_t(st.maxTbs)},
      {"steps", int64_t(st.steps)},
      {"maxStepsPerThreadblock", int64_t(st.maxSteps)},
      {"nchunksperloop", s.chunksPerLoop},
  };
}

/// What a served-sizes line says, as JSON.
llvm::json::Object servedJson(const backends::ServedSizes &served) {
  return llvm::json::Object{
      {"elementMultiple", served.elementMultiple},
      {"powersOfTwo", served.powersOfTwo()},
      {"text", backends::describeServedSizes(served)},
  };
}

/// "wrote FILE: " and scheduleSummary.
std::string summary(const ir::Schedule &s, const CompileOptions &opts,
                    llvm::StringRef algorithm, const ir::TargetLimits &target) {
  return "wrote " + opts.output + ": " + scheduleSummary(s, algorithm, target) +
         "\n";
}

/// "  auto chose ring --channels 2" (auto's choice beyond the algorithm's
/// defaults, when there is one) and "  ring: SUMMARY; channels: 0,1,2,3 (1
/// chunk)", each with its newline. `compact`: a run of equal channels once,
/// with its count ("0,1,2,3 (1 chunk) x 32").
std::string choiceLines(const CompileResult &plan, bool compact = false) {
  std::string line =
      "  " + algorithmName(plan.algorithm).str() + ": " + plan.summary;
  if (!plan.rings.empty()) {
    std::vector<std::string> chans;
    std::string last; ///< chans.back() without its count
    size_t run = 0;   ///< equal channels in a row so far
    for (const ChannelRing &cr : plan.rings) {
      std::vector<std::string> order;
      for (ir::RankId r : cr.order)
        order.push_back(std::to_string(r));
      std::string chan =
          llvm::join(order, ",") + " (" + std::to_string(cr.chunks) + " chunk" +
          (cr.chunks == 1 ? "" : "s") +
          (cr.stepChunks > 1
               ? ", " + std::to_string(cr.stepChunks) + " per step"
               : "") +
          ")";
      if (compact && !chans.empty() && chan == last) {
        chans.back() = chan + " x " + std::to_string(++run);
        continue;
      }
      chans.push_back(chan);
      last = std::move(chan);
      run = 1;
    }
    line += "; channels: " + llvm::join(chans, "; ");
  }
  line += "\n";
  if (!plan.chosenFlags.empty())
    line = "  auto chose " + algorithmName(plan.algorithm).str() + " " +
           plan.chosenFlags + "\n" + line;
  return line;
}

//===-- --sizes MIN:MAX: one schedule per size window ---------------------===//

/// "1K", "64M", "3000": a size as a file name part.
std::string sizeName(int64_t b) {
  const struct {
    int64_t scale;
    const char *unit;
  } units[] = {{int64_t(1) << 40, "T"},
               {int64_t(1) << 30, "G"},
               {int64_t(1) << 20, "M"},
               {int64_t(1) << 10, "K"}};
  for (const auto &u : units)
    if (b >= u.scale && b % u.scale == 0)
      return std::to_string(b / u.scale) + u.unit;
  return std::to_string(b);
}

/// One window as rendered and predicted, before anything is written.
struct RenderedWindow {
  SizeWindow window;
  std::string file; ///< MSCCL XML: the file name inside the directory
  std::string text; ///< MSCCL XML: the file's text
  std::vector<analysis::Prediction> predictions; ///< one per sample
};

/// "  predicted (runtime model; % of the realizable bound): 1 KiB 0.014 ms
/// busbw 0.13 GB/s (0.1%); 2 KiB ..."
std::string windowPredictionLine(const RenderedWindow &w) {
  std::vector<std::string> parts;
  for (const analysis::Prediction &p : w.predictions) {
    std::string part =
        llvm::formatv("{0} {1:F3} ms busbw {2:F2} GB/s", sizeText(p.bytes),
                      p.sim.time * 1e3, p.sim.busbw / 1e9)
            .str();
    if (p.bound)
      part += llvm::formatv(" ({0:F1}%)", 100.0 * p.fractionOfBound()).str();
    parts.push_back(std::move(part));
  }
  return "  predicted (runtime model; % of the realizable bound): " +
         llvm::join(parts, "; ") + "\n";
}

/// "  window 1024 to 4095 B: auto's choice at 1 KiB, 2 KiB"
std::string windowLine(const SizeWindow &w) {
  std::vector<std::string> at;
  for (int64_t b : w.samples)
    at.push_back(sizeText(double(b)));
  return llvm::formatv("  window {0} to {1} B: auto's choice at {2}\n",
                       w.minBytes, w.maxBytes, llvm::join(at, ", "))
      .str();
}

/// The index of a window set (DIR/index/STEM.json; also what --sizes
/// --format json prints).
llvm::json::Object windowIndexJson(const topo::Topology &t,
                                   const CompileOptions &opts,
                                   int64_t minBytes, int64_t maxBytes,
                                   const ir::TargetLimits &target,
                                   llvm::ArrayRef<RenderedWindow> windows) {
  llvm::json::Array list;
  for (const RenderedWindow &w : windows) {
    const ir::Schedule &s = w.window.result.schedule;
    llvm::json::Array predicted;
    for (const analysis::Prediction &p : w.predictions) {
      llvm::json::Object o{{"bytes", static_cast<int64_t>(p.bytes)},
                           {"timeSeconds", p.sim.time},
                           {"algbwGBps", p.sim.algbw / 1e9},
                           {"busbwGBps", p.sim.busbw / 1e9}};
      if (p.bound)
        o["fractionOfRealizableBound"] = p.fractionOfBound();
      predicted.push_back(std::move(o));
    }
    llvm::json::Object o{
        {"minBytes", w.window.minBytes},
        {"maxBytes", w.window.maxBytes},
        {"algorithm", algorithmName(w.window.result.algorithm)},
        {"flags", w.window.result.chosenFlags},
        {"nchunksperloop", s.chunksPerLoop},
        {"predicted", std::move(predicted)},
    };
    if (!w.text.empty()) { // MSCCL XML: a file of the directory
      o["file"] = w.file;
      o["serves"] = servedJson(
          backends::servedSizes(s, w.window.minBytes, w.window.maxBytes));
    }
    list.push_back(std::move(o));
  }
  return llvm::json::Object{
      {"generator", std::string("topocc ") + TOPOCC_VERSION},
      {"topology", t.name()},
      {"collective", opts.collective},
      {"inplace", opts.inplace},
      {"target", backends::describeMscclTarget(target)},
      {"minBytes", minBytes},
      {"maxBytes", maxBytes},
      {"bounds", "minBytes and maxBytes inclusive, as the MSCCL runtimes "
                 "compare nBytes (nccl-tests' size)"},
      {"windows", std::move(list)},
  };
}

/// `v` as indented JSON text with a final newline.
std::string jsonText(llvm::json::Value v) {
  return llvm::formatv("{0:2}\n", v).str();
}

/// Whether `name` is a window file of the set named `stem` ("NN-STEM-...",
/// STEM the collective and "-inplace" for in-place sets).
bool isWindowFileOf(llvm::StringRef name, llvm::StringRef stem) {
  llvm::StringRef rest = name.drop_while(llvm::isDigit);
  if (rest.size() == name.size() || !rest.consume_front("-") ||
      !name.endswith(".xml") || !rest.startswith((stem + "-").str()))
    return false;
  // "allreduce-" also starts the in-place set's names.
  return stem.endswith("-inplace") ||
         !rest.startswith((stem + "-inplace-").str());
}

/// -o DIR for --sizes: created when missing; user error when it is not a
/// directory or holds window files of the set `stem` other than `ours`
/// (both runtimes read every regular file of MSCCL_ALGO_DIR, so a stale
/// window of an earlier run would overlap these). Other sets' files (other
/// collectives, the other in-place mode) never match the same call and stay.
llvm::Error prepareWindowDirectory(llvm::StringRef dir, llvm::StringRef stem,
                                   llvm::ArrayRef<std::string> ours) {
  namespace fs = llvm::sys::fs;
  if (!fs::exists(dir)) {
    if (std::error_code ec = fs::create_directories(dir))
      return makeUserError("cannot create directory '" + dir +
                           "': " + ec.message());
    return llvm::Error::success();
  }
  if (!fs::is_directory(dir))
    return makeUserError("--sizes writes a directory of MSCCL XML files, but "
                         "-o " +
                         dir + " exists and is not a directory");
  std::vector<std::string> stale;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    std::string name = llvm::sys::path::filename(it->path()).str();
    if (it->type() != fs::file_type::directory_file &&
        isWindowFileOf(name, stem) && !llvm::is_contained(ours, name))
      stale.push_back(name);
  }
  if (ec)
    return makeUserError("cannot list directory '" + dir +
                         "': " + ec.message());
  if (!stale.empty()) {
    llvm::sort(stale);
    return makeUserError(
        "-o " + dir + " holds other " + stem + " window files (" +
        llvm::join(stale, ", ") +
        "); MSCCL reads every file of MSCCL_ALGO_DIR, so they would be "
        "selected beside these windows: remove them or choose another "
        "directory");
  }
  return llvm::Error::success();
}

/// compile --sizes MIN:MAX: auto at every sampled size, one verified
/// schedule per window; MSCCL XML: a directory with one file per window
/// and index/STEM.json (STEM: the collective, "-inplace" when in place);
/// plan: one plan set.
llvm::Error compileSizes(const topo::Topology &t, const CompileRequest &req,
                         const CompileOptions &opts, ir::OutputFormat emit,
                         backends::PlanMeta meta) {
  auto range = parseSizeWindowRange(opts.sizes);
  if (!range)
    return range.takeError();
  const bool xml = emit == ir::OutputFormat::MscclXml;
  auto windows = compileSizeWindows(t, req, range->first, range->second, xml);
  if (!windows)
    return windows.takeError();
  const size_t width =
      std::max<size_t>(2, std::to_string(windows->size() - 1).size());
  // The set's name: files NN-STEM-ALGORITHM-FIRST-LAST.xml, index
  // index/STEM.json.
  const std::string stem = ir::collectiveName(req.collective).str() +
                           (opts.inplace ? "-inplace" : "");
  nameSizeWindows(*windows, t, opts.inplace);
  // The plan set before the windows move into `rendered`.
  std::optional<std::string> planSet;
  if (!xml) {
    auto text = sizeWindowPlanSet(*windows, meta);
    if (!text)
      return text.takeError();
    planSet = std::move(*text);
  }
  std::vector<RenderedWindow> rendered;
  for (size_t i = 0; i < windows->size(); ++i) {
    RenderedWindow w;
    w.window = std::move((*windows)[i]);
    ir::Schedule &s = w.window.result.schedule;
    const std::string algo = algorithmName(w.window.result.algorithm).str();
    std::string index = std::to_string(i);
    std::string range = sizeName(w.window.samples.front());
    if (w.window.samples.size() > 1)
      range += "-" + sizeName(w.window.samples.back());
    w.file = std::string(width - index.size(), '0') + index + "-" + stem + "-" +
             algo + "-" + range + ".xml";
    std::vector<double> sizes(w.window.samples.begin(), w.window.samples.end());
    if (xml) {
      auto text =
          render(s, emit, opts, meta, {w.window.minBytes, w.window.maxBytes});
      if (!text)
        return text.takeError();
      w.text = std::move(*text);
    }
    auto predicted = predictFile(t, s, emit, w.text, w.file, sizes);
    if (!predicted)
      return predicted.takeError();
    w.predictions = std::move(*predicted);
    rendered.push_back(std::move(w));
  }

  std::string report;
  std::vector<std::string> written; ///< every file, in write order
  auto windowReport = [&](const RenderedWindow &w) {
    report += windowLine(w.window);
    if (xml)
      report +=
          "  serves: " +
          backends::describeServedSizes(backends::servedSizes(
              w.window.result.schedule, w.window.minBytes, w.window.maxBytes)) +
          "\n";
    report += choiceLines(w.window.result, /*compact=*/true) +
              windowPredictionLine(w);
    if (opts.explain)
      for (const std::string &line : w.window.result.explain)
        report += line + "\n";
  };
  if (xml) {
    std::vector<std::string> names;
    for (const RenderedWindow &w : rendered)
      names.push_back(w.file);
    if (auto err = prepareWindowDirectory(opts.output, stem, names))
      return err;
    for (const RenderedWindow &w : rendered) {
      llvm::SmallString<256> path(opts.output);
      llvm::sys::path::append(path, w.file);
      if (auto err = writeOutputFile(path, w.text))
        return err;
      written.push_back(path.str().str());
      report += "wrote " + path.str().str() + ": " +
                scheduleSummary(w.window.result.schedule,
                                algorithmName(w.window.result.algorithm),
                                req.target) +
                "\n";
      windowReport(w);
    }
    // The index lives in a subdirectory: the runtimes read every regular
    // file of MSCCL_ALGO_DIR as an algorithm but skip directories.
    llvm::SmallString<256> indexDir(opts.output);
    llvm::sys::path::append(indexDir, "index");
    if (std::error_code ec = llvm::sys::fs::create_directories(indexDir))
      return makeUserError("cannot create directory '" + indexDir +
                           "': " + ec.message());
    llvm::SmallString<256> indexPath(indexDir);
    llvm::sys::path::append(indexPath, stem + ".json");
    if (auto err = writeOutputFile(
            indexPath,
            jsonText(windowIndexJson(t, opts, range->first, range->second,
                                     req.target, rendered))))
      return err;
    written.push_back(indexPath.str().str());
    report += llvm::formatv("wrote {0}: {1} window{2} tiling {3} to {4} B; "
                            "install with export MSCCL_ALGO_DIR={5}\n",
                            indexPath, rendered.size(),
                            rendered.size() == 1 ? "" : "s", range->first,
                            range->second, opts.output)
                  .str();
  } else {
    if (auto err = writeOutputFile(opts.output, *planSet))
      return err;
    written.push_back(opts.output);
    report += llvm::formatv("wrote {0}: plan set of {1} variant{2} tiling {3} "
                            "to {4} B\n",
                            opts.output, rendered.size(),
                            rendered.size() == 1 ? "" : "s", range->first,
                            range->second)
                  .str();
    for (size_t i = 0; i < rendered.size(); ++i) {
      report += llvm::formatv("variant {0}: ", i).str() +
                scheduleSummary(
                    rendered[i].window.result.schedule,
                    algorithmName(rendered[i].window.result.algorithm),
                    req.target) +
                "\n";
      windowReport(rendered[i]);
    }
  }
  if (opts.format == "json") {
    llvm::json::Object o =
        windowIndexJson(t, opts, range->first, range->second, req.target,
                        rendered);
    llvm::json::Array files;
    for (std::string &f : written)
      files.push_back(std::move(f));
    o["written"] = std::move(files);
    o["emit"] = opts.emit;
    if (llvm::json::Array *ws = o.getArray("windows"))
      for (size_t i = 0; i < ws->size(); ++i)
        if (llvm::json::Object *wo = (*ws)[i].getAsObject())
          (*wo)["schedule"] = scheduleJson(rendered[i].window.result.schedule);
    llvm::outs() << jsonText(std::move(o));
  } else {
    llvm::outs() << report;
  }
  return llvm::Error::success();
}

llvm::Error runCompile(const CompileOptions &given) {
  CompileOptions opts = given;
  // With a topology the default is the fastest schedule by the runtime
  // model (auto), unless --ring names the ring's order or the output is an
  // NCCL graph file (rings only).
  if (opts.algorithm.empty())
    opts.algorithm =
        (!opts.topology.empty() && opts.ring.empty() &&
         opts.emit != "nccl-graph") ||
                opts.tolerance > 0
            ? "auto"
            : "ring";
  auto emit = ir::parseOutputFormat(opts.emit);
  if (!emit)
    return emit.takeError();
  if (auto err = checkFormat(opts.format))
    return err;
  if (opts.format == "json" && opts.output == "-")
    return makeUserError("--format json prints the report on stdout; write "
                         "the schedule to a file with -o FILE");
  if (!opts.sizes.empty()) {
    if (!opts.runPass.empty() || opts.topology.empty())
      return makeUserError("--sizes compiles a topology (not --run-pass)");
    if (opts.sizeGiven)
      return makeUserError("--size and --sizes exclude each other: --sizes "
                           "MIN:MAX runs auto at every power of two from MIN "
                           "to MAX");
    if (*emit != ir::OutputFormat::MscclXml && *emit != ir::OutputFormat::Plan)
      return makeUserError(
          "--sizes writes MSCCL XML (a directory, one file "
          "per window) or a plan set (--emit plan), not --emit " +
          opts.emit);
    if (opts.algorithm != "auto" || !opts.ring.empty())
      return makeUserError("--sizes chooses the algorithm at every size "
                           "(--algorithm auto); drop --algorithm and --ring");
    if (opts.output == "-")
      return makeUserError("--sizes writes files: -o DIR (MSCCL XML) or -o "
                           "FILE.json (--emit plan), not '-'");
  }
  if (opts.inplace && opts.outofplace)
    return makeUserError("--inplace and --outofplace exclude each other");
  CompileRequest req;
  auto algorithm = parseAlgorithm(opts.algorithm);
  if (!algorithm)
    return algorithm.takeError();
  req.algorithm = *algorithm;
  // auto and dbtree default to --channels auto (dbtree: a tree pair per
  // GPU of a node).
  auto channels = parseChannels(
      !opts.channels.empty() ? opts.channels
      : (req.algorithm == Algorithm::Auto || req.algorithm == Algorithm::DbTree)
          ? "auto"
          : "1");
  if (!channels)
    return channels.takeError();
  req.channels = *channels;
  req.chunks = opts.chunks;
  auto bytes = parseByteSize(opts.size, "--size");
  if (!bytes)
    return bytes.takeError();
  req.bytes = *bytes;
  req.inplace = opts.inplace;
  req.proto = opts.proto;
  req.verifyEach = opts.verifyEach;
  auto treesPerRoot = algorithms::parseTreesPerRoot(opts.treesPerRoot);
  if (!treesPerRoot)
    return treesPerRoot.takeError();
  req.treesPerRoot = *treesPerRoot;
  auto treeGraph = parseTreeGraph(opts.treeGraph);
  if (!treeGraph)
    return treeGraph.takeError();
  req.treeGraph = *treeGraph;
  auto ringSteps = parseRingSteps(opts.ringSteps);
  if (!ringSteps)
    return ringSteps.takeError();
  req.ringSteps = *ringSteps;
  req.components = opts.components;
  req.tolerance = opts.tolerance;
  req.wireDtype = opts.wireDtype;
  req.kappaMax = opts.kappaMax;
  req.seamOffset = opts.seam;
  if (opts.smCount < -1)
    return makeUserError("--sm-count must not be negative");
  backends::MscclTargetOptions targetOpts;
  if (opts.smCount >= 0)
    targetOpts.smCount = opts.smCount;
  if (!opts.mscclRuntime.empty()) {
    auto runtime = ir::parseMscclRuntime(opts.mscclRuntime);
    if (!runtime)
      return runtime.takeError();
    targetOpts.runtime = *runtime;
  }
  targetOpts.maxSteps = opts.maxSteps;
  req.target = ir::TargetLimits::forFormat(
      *emit, targetOpts.smCount.value_or(ir::kDefaultSmCount), opts.maxSteps,
      targetOpts.runtime.value_or(ir::MscclRuntime::MscclExecutor));
  if (auto err = checkCompileRequest(req))
    return err;
  PassLogger log(&llvm::errs(), opts.printAfterAll, opts.timePasses);

  ir::Schedule result;
  bool verified = false; ///< `result` passed the verifier as it is
  backends::PlanMeta meta;
  meta.generator = std::string("topocc ") + TOPOCC_VERSION;
  meta.algorithm = opts.algorithm;
  std::string text, ringsLine, explainLines, predictionLine;
  std::optional<analysis::Prediction> prediction;
  /// --algorithm auto's simulation of `result` (CompileResult::predictedRun).
  std::optional<analysis::SimResult> autoRun;
  /// For --format json: what auto chose and the algorithm's summary.
  std::string chosenFlags, planSummary;
  llvm::json::Array ringsJson, explainJson;
  std::optional<topo::Topology> topology; ///< kept for the prediction
  /// computeTopologyBounds(*topology), started beside the compile; declared
  /// after `topology`, so that it is waited for before that goes.
  BoundsBeside boundsAhead;
  std::vector<std::string> notes;
  size_t ncclChannels = 0;
  bool timingsPending = false;
  // A plan or IR file is printed straight into the output file (it can be
  // gigabytes); MSCCL XML is rendered in memory, as the prediction imports
  // the text back. The file is opened before the compile (an output that
  // cannot be written fails at once) under a temporary name; it is written
  // on a second thread while the final check and the prediction run, and
  // renamed to the output only when both succeeded (OutputFile).
  const bool streamed =
      *emit == ir::OutputFormat::Plan || *emit == ir::OutputFormat::Ir;
  std::unique_ptr<OutputFile> out;
  if (streamed && opts.sizes.empty()) {
    auto opened = OutputFile::open(opts.output);
    if (!opened)
      return opened.takeError();
    out = std::move(*opened);
    req.deferFinalCheck = out->renamed();
  }
  /// CompileResult::pendingCheck: compile()'s final check, run here.
  std::optional<CompileRequest> pendingCheck;
  if (!opts.runPass.empty()) {
    if (*emit == ir::OutputFormat::NcclGraph)
      return makeUserError("--emit nccl-graph needs a topology, not "
                           "--run-pass");
    if (opts.inputIr.empty())
      return makeUserError("--run-pass needs --input-ir FILE");
    if (!opts.topology.empty())
      return makeUserError("--run-pass reads --input-ir, not a topology file");
    auto input = ir::parseScheduleFile(opts.inputIr);
    if (!input)
      return input.takeError();
    auto s = runSinglePass(opts.runPass, std::move(*input), req, log);
    log.printTimings(llvm::errs());
    if (!s)
      return s.takeError();
    result = std::move(*s);
    verified = true; // runSinglePass verifies its result
  } else {
    if (!opts.inputIr.empty())
      return makeUserError("--input-ir is only used with --run-pass");
    if (opts.topology.empty())
      return makeUserError("compile needs a topology file (or --run-pass NAME "
                           "--input-ir FILE)");
    if (opts.collective.empty())
      return makeUserError("compile needs --collective allreduce, allgather "
                           "or reducescatter");
    auto coll = parseCollective(opts.collective);
    if (!coll)
      return coll.takeError();
    req.collective = *coll;
    if (opts.ring == "rank-order") {
      req.rankOrder = true;
    } else {
      auto ring = parseRingOrder(opts.ring);
      if (!ring)
        return ring.takeError();
      req.ringOrder = std::move(*ring);
    }
    auto topo = loadTopology(opts.topology, opts.scenario);
    if (!topo)
      return topo.takeError();
    if (*emit == ir::OutputFormat::MscclXml) {
      // The GPU model's SMs and the vendor's runtime, unless given.
      auto target = backends::mscclTargetFor(&*topo, targetOpts);
      if (!target)
        return target.takeError();
      req.target = *target;
      if (auto err = checkCompileRequest(req))
        return err;
    }
    // dbtree without --chunks: the units that fill the target's steps, as
    // auto's dbtree candidate.
    if (req.algorithm == Algorithm::DbTree && !opts.chunksGiven)
      req.chunks =
          passes::dbTreeDefaultUnits(req.target.maxStepsPerThreadblock);
    meta.topologyName = topo->name().str();
    meta.topologyHash = backends::topologyHash(*topo);
    req.name =
        llvm::formatv("{0}_{1}_{2}_{3}", topo->name(), opts.algorithm,
                      opts.collective, opts.inplace ? "inplace" : "outofplace")
            .str();
    if (!opts.sizes.empty())
      return compileSizes(*topo, req, opts, *emit, meta);
    topology.emplace(std::move(*topo));
    const topo::Topology &tp = *topology;
    // The bounds the prediction is measured against depend on the topology
    // only: they are computed on a second thread while auto compiles (the
    // realizable bound is 20 to 50 s of a 4096-GPU compile).
    if (*emit != ir::OutputFormat::NcclGraph)
      boundsAhead.start(tp);
    auto plan = compile(tp, req, log);
    if (!plan) {
      log.printTimings(llvm::errs());
      return plan.takeError();
    }
    timingsPending = true;
    verified = plan->verified;
    pendingCheck = std::move(plan->pendingCheck);
    meta.algorithm = algorithmName(plan->algorithm).str();
    plan->setCodedMeta(meta);
    if (opts.explain)
      for (const std::string &line : plan->explain) {
        explainLines += line + "\n";
        explainJson.push_back(line);
      }
    chosenFlags = plan->chosenFlags;
    autoRun = std::move(plan->predictedRun);
    planSummary = plan->summary;
    for (const ChannelRing &cr : plan->rings) {
      llvm::json::Array order;
      for (ir::RankId r : cr.order)
        order.push_back(int64_t(r));
      ringsJson.push_back(llvm::json::Object{{"order", std::move(order)},
                                             {"chunks", cr.chunks},
                                             {"stepChunks", cr.stepChunks}});
    }
    if (plan->coded)
      explainLines += llvm::formatv("coded schedule: worst per-rank error "
                                    "operator norm {0:e}\n",
                                    plan->codedError)
                          .str();
    if (*emit == ir::OutputFormat::NcclGraph) {
      auto xml = renderNcclGraph(tp, *plan, req, notes);
      if (!xml)
        return xml.takeError();
      text = std::move(*xml);
      ncclChannels = plan->rings.size();
    }
    ringsLine = choiceLines(*plan);
    result = std::move(plan->schedule);
    // auto's file is named after the algorithm it chose.
    if (opts.algorithm == "auto")
      result.name =
          llvm::formatv("{0}_{1}_{2}_{3}", tp.name(),
                        algorithmName(plan->algorithm), opts.collective,
                        opts.inplace ? "inplace" : "outofplace")
              .str();
  }
  auto writeStreamed = [&](llvm::raw_ostream &os) {
    auto start = std::chrono::steady_clock::now();
    if (*emit == ir::OutputFormat::Plan)
      backends::printPlanJson(os, result, meta);
    else
      ir::printSchedule(result, os);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start)
        .count();
  };
  // The second thread only reads `result` and `meta`, as the checks and
  // the prediction below do. Declared after them: an early return waits
  // for it before they go.
  std::future<double> writer;
  if (out && out->renamed())
    writer = std::async(std::launch::async,
                        [&] { return writeStreamed(out->os()); });
  if (*emit != ir::OutputFormat::NcclGraph) {
    auto start = std::chrono::steady_clock::now();
    llvm::Error err = [&]() -> llvm::Error {
      if (pendingCheck) {
        if (llvm::Error err =
                checkCompiled(topology ? &*topology : nullptr, result.numRanks,
                              *pendingCheck, result))
          return err;
        verified = true;
      }
      const backends::PlanCheck check =
          verified ? backends::PlanCheck::VerifiedByCompile
                   : backends::PlanCheck::Verify;
      if (*emit == ir::OutputFormat::Plan)
        return backends::checkPlan(result, meta, check);
      if (streamed)
        return llvm::Error::success();
      auto rendered = render(result, *emit, opts, meta, {}, check);
      if (!rendered)
        return rendered.takeError();
      text = std::move(*rendered);
      return llvm::Error::success();
    }();
    log.recordTime("emit " + opts.emit,
                   std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count());
    if (err) {
      if (timingsPending)
        log.printTimings(llvm::errs());
      return err;
    }
    // The bounds started beside the compile, waited for.
    std::optional<analysis::TopologyBounds> bounds;
    if (boundsAhead.started()) {
      ProgressTask wait("bounds (computed beside the compile)");
      bounds = boundsAhead.get();
    }
    if (topology && autoRun && *emit != ir::OutputFormat::MscclXml) {
      // A plan or IR file holds `result` as it is, the schedule auto
      // simulated to choose it: that simulation is the file's prediction.
      // (An MSCCL XML file is imported back and simulated: the file is
      // what runs.)
      // (predictionOf computes the bounds when none were started.)
      prediction = analysis::predictionOf(
          *topology, result, std::move(*autoRun), analysis::SimMode::Runtime,
          bounds ? &*bounds : nullptr);
    } else if (topology) {
      auto p = predictFile(*topology, result, *emit, text, opts.output,
                           {req.bytes}, std::move(bounds));
      if (!p) {
        if (timingsPending)
          log.printTimings(llvm::errs());
        return p.takeError();
      }
      prediction = std::move(p->front());
    }
    if (prediction) {
      predictionLine = "  predicted at " + sizeText(req.bytes) +
                       " (runtime model): " +
                       analysis::predictionText(*prediction) + "\n";
    }
  }
  if (streamed) {
    // Printed on the second thread (waited for here), or here.
    ProgressTask writing("write " + opts.output);
    const double seconds =
        writer.valid() ? writer.get() : writeStreamed(out->os());
    llvm::Error err = out->commit();
    log.recordTime("write " + opts.emit, seconds);
    if (err) {
      if (timingsPending)
        log.printTimings(llvm::errs());
      return err;
    }
  }
  // Pass timings, with the emission when compiling a topology.
  if (timingsPending)
    log.printTimings(llvm::errs());
  if (!streamed)
    if (auto err = writeOutputFile(opts.output, text))
      return err;
  if (opts.format == "json") {
    llvm::json::Object o{
        {"generator", std::string("topocc ") + TOPOCC_VERSION},
        {"written", llvm::json::Array{opts.output}},
        {"emit", opts.emit},
        {"algorithm", meta.algorithm},
        {"schedule", scheduleJson(result)},
    };
    if (topology) {
      o["topology"] = topology->name();
      o["inplace"] = opts.inplace;
      o["chosenFlags"] = chosenFlags;
      o["summary"] = planSummary;
      if (!ringsJson.empty())
        o["rings"] = std::move(ringsJson);
    }
    if (*emit == ir::OutputFormat::MscclXml) {
      o["target"] = backends::describeMscclTarget(req.target);
      o["serves"] = servedJson(backends::servedSizes(result));
    }
    if (*emit == ir::OutputFormat::NcclGraph)
      o["ncclChannels"] = int64_t(ncclChannels);
    if (prediction) {
      llvm::json::Object p = analysis::predictionJson(*prediction);
      p["bytes"] = req.bytes;
      o["prediction"] = std::move(p);
    }
    if (opts.explain)
      o["explain"] = std::move(explainJson);
    llvm::json::Array noteList;
    for (const std::string &n : notes)
      noteList.push_back(n);
    o["notes"] = std::move(noteList);
    if (meta.errorBound > 0) {
      o["codedErrorBound"] = meta.errorBound;
      for (auto [key, gains] :
           {std::pair{"roundoffGain", &meta.roundoffGain},
            std::pair{"roundoffGainWorst", &meta.roundoffGainWorst}}) {
        llvm::json::Object g;
        for (size_t d = 0; d < gains->size(); ++d)
          g[backends::kRoundoffDtypes[d]] = (*gains)[d];
        o[key] = std::move(g);
      }
    }
    llvm::outs() << jsonText(std::move(o));
    return llvm::Error::success();
  }
  if (opts.output != "-" && *emit == ir::OutputFormat::NcclGraph)
    llvm::outs() << llvm::formatv(
        "wrote {0}: NCCL_GRAPH_FILE, {1} ring channel{2} of a verified {3} "
        "{4} schedule over {5} ranks\n",
        opts.output, ncclChannels, ncclChannels == 1 ? "" : "s",
        opts.algorithm, ir::collectiveName(result.collective),
        result.numRanks);
  else if (opts.output != "-")
    llvm::outs() << summary(result, opts, meta.algorithm, req.target);
  if (opts.output != "-" && *emit == ir::OutputFormat::MscclXml)
    llvm::outs() << "  serves: "
                 << backends::describeServedSizes(backends::servedSizes(result))
                 << '\n';
  if (opts.output != "-")
    llvm::outs() << ringsLine << predictionLine << explainLines;
  for (const std::string &n : notes)
    llvm::errs() << "note: " << n << '\n';
  return llvm::Error::success();
}

} // namespace

void registerCompileCommand(CLI::App &app) {
  auto opts = std::make_shared<CompileOptions>();
  CLI::App *cmd = app.add_subcommand(
      "compile", "Compile a collective for a topology into a verified schedule "
                 "(MSCCL XML or schedule IR)");
  cmd->add_option("topology", opts->topology, "Topology YAML file");
  cmd->add_option("--collective", opts->collective,
                  "REQUIRED (except with --run-pass): allreduce, allgather "
                  "or reducescatter");
  cmd->add_option(
      "--algorithm", opts->algorithm,
      "Algorithm: ring, hier-ring (multi-node: rails and intra-node rings), "
      "trees (ForestColl spanning trees), cerar (coded "
      "all-reduce), hier-cerar (exact intra-node phases, CERAR "
      "across nodes), dims (all-reduce along each dimension of "
      "a generated grid), matching (greedy link-chunk matching on "
      "direct GPU links), dbtree (NCCL's double binary tree "
      "all-reduce) or auto (the fastest candidate by the "
      "runtime model); default auto");
  cmd->add_option("--sm-count", opts->smCount,
                  "SMs (CUs) of the target GPU: MSCCL XML may launch at most "
                  "this many threadblocks per rank (they must all be "
                  "resident; 0: no limit); default: the topology's GPU model "
                  "(docs/MscclXml.md, GPU models)");
  cmd->add_option("--msccl-runtime", opts->mscclRuntime,
                  "Runtime of the MSCCL XML: msccl-executor "
                  "(msccl-executor-nccl) or rccl (RCCL's MSCCL: at most 64 "
                  "threadblocks per rank and 64 steps per threadblock); "
                  "default: rccl for AMD GPUs, msccl-executor otherwise");
  cmd->add_option("--channels", opts->channels,
                  "Rings (one channel each): 1 to 32 for msccl-xml and "
                  "nccl-graph (MAXCHANNELS), 1 to 64 for plan and ir; or "
                  "auto (the ring search chooses, auto also prices 2 to "
                  "32); dbtree: tree pairs (auto: one per GPU of a node); "
                  "default 1, auto with --algorithm auto or dbtree");
  cmd->add_option("--size", opts->size,
                  "Message size the rings are chosen for (K/M/G/T are "
                  "powers of 1024; docs/CLI.md, Sizes)")
      ->capture_default_str();
  cmd->add_option("--sizes", opts->sizes,
                  "MIN:MAX: auto at every power of two from MIN to MAX (and "
                  "MIN, MAX), one schedule per window of sizes with the same "
                  "choice; MSCCL XML: -o is a directory (one file per "
                  "window, index/COLLECTIVE.json), plan: a plan set "
                  "(docs/CLI.md, compile)");
  cmd->add_option("--chunks", opts->chunks,
                  "Chunks per rank per channel (pipelining); trees: pieces "
                  "per tree; dbtree: units per tree (default 64, within the "
                  "target's steps per threadblock)")
      ->capture_default_str();
  cmd->add_option("--ring", opts->ring,
                  "Ring order for every channel, a permutation of the ranks "
                  "(e.g. 0,3,2,1), or rank-order; default: the ring search's "
                  "rings");
  cmd->add_option("--ring-steps", opts->ringSteps,
                  "Ring search: a ring's share of k chunks moves as k "
                  "pipelined chunks of one step each (pipelined), or in one "
                  "step per --chunks piece (wide: unequal shares fit the "
                  "runtime's steps per threadblock)")
      ->capture_default_str();
  cmd->add_option("--trees-per-root", opts->treesPerRoot,
                  "Trees algorithm: spanning trees per root K (the best "
                  "schedule with exactly K), or auto (the optimum's k)")
      ->capture_default_str();
  cmd->add_option("--tree-graph", opts->treeGraph,
                  "Trees algorithm: pack on the physical links (ForestColl's "
                  "graph), on one rate per rank pair that the runtime's "
                  "routes carry (routes), or on that graph over one node, "
                  "joined across nodes (hier)")
      ->capture_default_str();
  cmd->add_option("--components", opts->components,
                  "CERAR: components c (0: chosen by the policy from the "
                  "ring's bandwidth and the size)")
      ->capture_default_str();
  cmd->add_option("--tolerance", opts->tolerance,
                  "CERAR/auto: relative error allowed (0: exact algorithms "
                  "only; auto considers CERAR only above 0)")
      ->capture_default_str();
  cmd->add_option("--wire-dtype", opts->wireDtype,
                  "CERAR: dtype on the wire (fp32, fp16, bf16)")
      ->capture_default_str();
  cmd->add_option("--kappa-max", opts->kappaMax,
                  "CERAR: condition-number limit of the code (0: none)")
      ->capture_default_str();
  cmd->add_option("--cerar-rotate-seam", opts->seam,
                  "CERAR: seam offset K (ring position p uses index p+K; "
                  "vary it across calls to spread the error over ranks)")
      ->capture_default_str();
  cmd->add_flag("--explain", opts->explain,
                "Print why this algorithm and parameters were chosen (auto: "
                "every candidate's predicted time; CERAR: the policy)");
  cmd->add_flag("--inplace", opts->inplace, "Emit the in-place variant");
  cmd->add_flag("--outofplace", opts->outofplace,
                "Emit the out-of-place variant (default)");
  cmd->add_option("--proto", opts->proto, "MSCCL protocol: Simple, LL, LL128")
      ->capture_default_str();
  cmd->add_option("--max-steps", opts->maxSteps,
                  "Steps per threadblock (MSCCL_MAX_NUM_STEPS of the runtime)")
      ->capture_default_str();
  cmd->add_option("--scenario", opts->scenario,
                  "Apply this named scenario of the topology first");
  cmd->add_option("--format", opts->format,
                  "Report on stdout: text or json (what was written, the "
                  "algorithm, its shape and the prediction; needs -o FILE)");
  cmd->add_option("--emit", opts->emit, "Output: msccl-xml, ir, nccl-graph or plan (topocc runtime)")
      ->capture_default_str();
  cmd->add_option("-o,--output", opts->output,
                  "Output file ('-' for stdout); with --sizes and MSCCL XML "
                  "a directory")
      ->required();
  cmd->add_flag("--print-after-all", opts->printAfterAll,
                "Print the IR after every pass to stderr");
  cmd->add_flag("--time-passes", opts->timePasses,
                "Print the wall time of every pass to stderr");
  cmd->add_flag("--verify-each", opts->verifyEach,
                "Verify the schedule after every pass");
  cmd->add_option("--run-pass", opts->runPass,
                  "Run only this pass (" + llvm::join(passNames(), ", ") +
                      ") on --input-ir");
  cmd->add_option("--input-ir", opts->inputIr,
                  "Textual schedule IR for --run-pass");
  cmd->callback([opts, cmd] {
    opts->sizeGiven = cmd->count("--size") > 0;
    opts->chunksGiven = cmd->count("--chunks") > 0;
    finishCommand(runCompile(*opts));
  });
}

} // namespace topocc::driver
