//===- backends/MscclVerify.cpp - `topocc verify` on MSCCL XML files ------===//

#include "backends/MscclVerify.h"

#include "backends/MscclXmlImport.h"
#include "backends/ServedSizes.h"
#include "compiler/analysis/CostModel.h"
#include "compiler/topology/GpuModels.h"
#include "support/InputFile.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <set>

namespace topocc::backends {

namespace {

llvm::json::Value findingToJson(const MscclFinding &f) {
  auto orNull = [](int x) -> llvm::json::Value {
    if (x < 0)
      return nullptr;
    return x;
  };
  auto lc = [](unsigned x) -> llvm::json::Value {
    if (x == 0)
      return nullptr;
    return int64_t(x);
  };
  return llvm::json::Object{
      {"file", f.diag.loc.file},
      {"line", lc(f.diag.loc.line)},
      {"col", lc(f.diag.loc.col)},
      {"rule", f.rule},
      {"consequence",
       f.consequence
           ? llvm::json::Value(mscclConsequenceKey(*f.consequence).str())
           : llvm::json::Value(nullptr)},
      {"rank", orNull(f.rank)},
      {"tb", orNull(f.tb)},
      {"step", orNull(f.step)},
      {"message", f.diag.message},
  };
}

llvm::json::Value toJson(const MscclVerifyOptions &opts,
                         const MscclVerifyReport &report) {
  const std::vector<MscclFileResult> &rs = report.files;
  const std::vector<Diagnostic> &overlaps = report.overlaps;
  llvm::json::Array files;
  unsigned accepted = 0;
  for (const MscclFileResult &r : rs) {
    const MscclVerdict &v = r.verdict;
    accepted += r.accepted();
    llvm::json::Object o{{"file", r.file},
                         {"verdict", r.accepted() ? "accept" : "reject"}};
    if (!r.ioError.empty())
      o["ioError"] = r.ioError;
    if (v.algo) {
      const MscclAlgoInfo &a = *v.algo;
      o["algo"] = llvm::json::Object{
          {"name", a.name},
          {"coll", a.meta.coll},
          {"ngpus", a.meta.ngpus},
          {"proto", a.proto},
          {"nchannels", a.nchannels},
          {"nchunksperloop", a.nchunksperloop},
          {"inplace", a.meta.inplace},
          {"outofplace", a.meta.outofplace},
          {"minBytes", int64_t(a.meta.minBytes)},
          {"maxBytes", int64_t(a.meta.maxBytes)},
          {"serves", mscclServesText(a)},
      };
    } else {
      o["algo"] = nullptr;
    }
    o["properties"] = llvm::json::Object{
        {"formatOk", v.formatOk},
        {"deadlockFree", v.deadlockFree},
        {"raceFree", v.raceFree},
        {"computesCollective", v.computesCollective},
    };
    llvm::json::Array errors, warnings;
    for (const MscclFinding &f : v.findings)
      errors.push_back(findingToJson(f));
    for (const MscclFinding &f : v.warningFindings)
      warnings.push_back(findingToJson(f));
    o["errors"] = std::move(errors);
    o["warnings"] = std::move(warnings);
    if (opts.topology) {
      llvm::json::Object t{{"file", opts.topologyFile},
                           {"sizeBytes", opts.bytes}};
      if (!r.topologyError.empty())
        t["error"] = r.topologyError;
      if (r.sim && r.prediction) {
        t["simulation"] = analysis::predictionJson(*r.prediction);
      } else {
        t["simulation"] = nullptr;
        if (!r.simError.empty())
          t["simulation_error"] = r.simError;
      }
      o["topology"] = std::move(t);
    }
    files.push_back(std::move(o));
  }
  llvm::json::Array ov;
  for (const Diagnostic &d : overlaps)
    ov.push_back(
        llvm::json::Object{{"file", d.loc.file}, {"message", d.message}});
  return llvm::json::Object{
      {"files", std::move(files)},
      {"windowOverlaps", std::move(ov)},
      {"summary", llvm::json::Object{{"files", int64_t(rs.size())},
                                     {"accepted", accepted},
                                     {"rejected", rs.size() - accepted}}},
  };
}

/// Simulates an accepted file on the topology at `bytes` in the model of
/// --mode (the runtime model by default: the number `compile` prints for
/// the same file, compiler/analysis/Prediction.h) and puts the realizable
/// and physical bounds of the same call beside it. `bounds` are computed
/// once for all files.
void simulateOnTopology(llvm::StringRef text, const topo::Topology &topology,
                        double bytes, analysis::SimMode mode,
                        std::optional<analysis::TopologyBounds> &bounds,
                        MscclFileResult &r) {
  auto s = importMscclXml(text, r.file);
  if (!s) {
    r.simError = llvm::toString(s.takeError());
    return;
  }
  // Every message joins a routed pair: where GPUs relay (a torus, a
  // rail-only fabric) a pair without a route needs a GPU between them to
  // receive and send, which the schedule must say.
  std::set<std::pair<ir::RankId, ir::RankId>> pairs;
  for (ir::RankId q = 0; q < s->numRanks; ++q)
    for (const ir::Op &op : s->ranks[q].ops)
      if (ir::sends(op.kind))
        pairs.insert({q, op.sendPeer});
  for (auto [a, b] : pairs)
    if (a < topology.numRanks() && b < topology.numRanks() &&
        !topology.route(a, b).found()) {
      r.topologyError = llvm::formatv(
          "rank {0} ({1}) sends to rank {2} ({3}), but the topology has no "
          "route between them: only a GPU between them can relay (receive "
          "and send), and the schedule does not",
          a, topology.rankName(a), b, topology.rankName(b));
      return;
    }
  if (!bounds)
    bounds.emplace(analysis::computeTopologyBounds(topology, mode));
  auto p = analysis::predictSchedule(topology, *s, bytes, mode, &*bounds);
  if (!p) {
    r.simError = llvm::toString(p.takeError());
    return;
  }
  r.boundError = p->boundError;
  r.sim = p->sim;
  r.bound = p->bound;
  r.prediction = std::move(*p);
}

} // namespace

/// "  serves: ..." (backends/ServedSizes.h) for a file whose <algo> was
/// read.
std::string mscclServesText(const MscclAlgoInfo &a) {
  auto coll = ir::collectiveFromName(a.meta.coll);
  return describeServedSizes(
      servedSizes(coll ? *coll : ir::Collective::AllReduce, a.meta.ngpus,
                  a.nchunksperloop, a.meta.minBytes, a.meta.maxBytes));
}

llvm::Expected<MscclVerifyReport>
verifyMscclFiles(llvm::ArrayRef<std::string> files,
                 const MscclVerifyOptions &opts) {
  if (opts.maxSteps < 1)
    return makeUserError("--max-steps must be at least 1");
  if (opts.smCount < -1)
    return makeUserError("--sm-count must not be negative");
  MscclCheckOptions co;
  co.maxSteps = opts.maxSteps;
  co.smCount = opts.smCount >= 0 ? static_cast<unsigned>(opts.smCount) : 108;
  if (opts.smCount < 0 && opts.topology) {
    // The SMs of the topology's GPU model (as `topocc compile`).
    auto sms = topo::targetSmCount(*opts.topology);
    if (!sms)
      return sms.takeError();
    co.smCount = static_cast<unsigned>(*sms);
  }
  co.legacy = opts.legacy;

  MscclVerifyReport report;
  std::vector<MscclFileResult> &results = report.files;
  std::vector<MscclAlgoMeta> metas;
  std::optional<analysis::TopologyBounds> bound;
  for (const std::string &file : files) {
    MscclFileResult r;
    r.file = file;
    auto buf = readInputFile(file, InputKind::Schedule, "MSCCL XML file");
    if (!buf) {
      r.ioError = errorMessages(buf.takeError());
      results.push_back(std::move(r));
      continue;
    }
    r.verdict = verifyMscclXml((*buf)->getBuffer(), file, co);
    if (r.verdict.algo)
      metas.push_back(r.verdict.algo->meta);
    if (opts.topology) {
      int ranks = opts.topology->numRanks();
      if (!r.verdict.algo)
        r.topologyError = "cannot compare with --topology: the <algo> "
                          "element could not be read";
      else if (r.verdict.algo->meta.ngpus != ranks)
        r.topologyError =
            llvm::formatv("--topology {0} has {1} ranks but the file has "
                          "ngpus={2}; the executor uses a file only on "
                          "communicators of exactly ngpus ranks",
                          opts.topologyFile, ranks, r.verdict.algo->meta.ngpus)
                .str();
    }
    if (opts.topology && r.topologyError.empty() && r.verdict.accepted())
      simulateOnTopology((*buf)->getBuffer(), *opts.topology, opts.bytes,
                         opts.mode, bound, r);
    results.push_back(std::move(r));
  }
  report.overlaps = checkMscclWindowOverlaps(metas);
  return report;
}

void printMscclVerifyJson(llvm::raw_ostream &os,
                          const MscclVerifyReport &report,
                          const MscclVerifyOptions &opts) {
  os << llvm::formatv("{0:2}", toJson(opts, report)) << '\n';
}

} // namespace topocc::backends
