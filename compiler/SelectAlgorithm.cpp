//===- compiler/SelectAlgorithm.cpp - --algorithm auto --------------------===//

#include "compiler/SelectAlgorithm.h"

#include "backends/ServedSizes.h"
#include "compiler/Pipeline.h"
#include "compiler/analysis/ComputeModel.h"
#include "compiler/analysis/Simulator.h"
#include "compiler/lowerings/Lowering.h"
#include "ir/Verifier.h"
#include "support/Diagnostics.h"
#include "support/Progress.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <limits>

namespace topocc {

namespace {

/// The ops of every rank.
int64_t opCount(const ir::Schedule &s) {
  int64_t ops = 0;
  for (const ir::RankProgram &rank : s.ranks)
    ops += static_cast<int64_t>(rank.ops.size());
  return ops;
}

/// "4.2 million" from a million up, else the count.
std::string opsText(int64_t ops) {
  if (ops >= 1000000)
    return llvm::formatv("{0:F1} million", ops / 1e6).str();
  return std::to_string(ops);
}

/// The predicted time of a candidate's final schedule, whatever its size:
/// the simulator in the runtime model (Prediction.h: the number compile
/// prints) unless the request names a mode (whatif's auto column). It sees
/// what the cost model cannot: trees that share a link do not each get
/// their fluid share of it, stages that do not overlap, and every
/// threadblock and loop iteration's time. (Above 200 000 ops auto once
/// priced by the cost model, which rated the 1024-chip torus's dims
/// variants alike and kept one the simulator puts at 50% of the bound.)
llvm::Expected<analysis::SimResult> price(const topo::Topology &t,
                                          const CompileRequest &req,
                                          const ir::Schedule &s) {
  return analysis::simulateRun(
      t, s, req.bytes, req.autoSimMode.value_or(analysis::SimMode::Runtime),
      req.autoReduceBandwidth);
}

/// With req.verify: why the verifier could not check `s` (the winner is
/// compiled again, verified), so auto must not choose it; empty when it
/// can.
std::string notVerifiable(const CompileRequest &req, const ir::Schedule &s) {
  if (!req.verify)
    return "";
  const int64_t slots = ir::verifiedSlots(s);
  if (slots <= ir::kMaxVerifiedSlots)
    return "";
  return llvm::formatv("skipped: it holds {0} buffer chunks over all ranks, "
                       "more than the {1} the verifier checks",
                       slots, ir::kMaxVerifiedSlots)
      .str();
}

/// A candidate replaces the best so far only when it is faster by more
/// than 0.1%: on ties the earlier one (registry order, fewer channels,
/// smaller k) wins, which uses fewer threadblocks.
bool faster(double time, double best) { return time < best * (1 - 1e-3); }

/// "auto: NAME not applicable (first line of the error)", or the error
/// itself when it is a bug.
llvm::Expected<std::string> notApplicable(llvm::StringRef what,
                                          llvm::Error err,
                                          llvm::StringRef then = "") {
  if (err.isA<InternalError>())
    return err;
  std::string why = llvm::toString(std::move(err));
  return ("auto: " + what + " not applicable (" +
          llvm::StringRef(why).split('\n').first + ")" + then)
      .str();
}

/// With req.autoMustServe: why an MSCCL runtime would not select the file
/// of `s` for a call of req.bytes fp32 bytes; empty when it would.
std::string notServed(const CompileRequest &req, const ir::Schedule &s) {
  if (!req.autoMustServe)
    return "";
  const auto bytes = static_cast<int64_t>(req.bytes);
  const backends::ServedSizes served = backends::servedSizes(s);
  if (served.serves(bytes, 4))
    return "";
  return llvm::formatv("skipped: the MSCCL runtimes would not select its "
                       "file for a {0} B fp32 call ({1} elements, not a "
                       "multiple of {2}; nchunksperloop {3})",
                       bytes, bytes / 4, served.elementMultiple,
                       s.chunksPerLoop)
      .str();
}

/// Why auto must not choose `s`: notServed, then notVerifiable; empty when
/// it may.
std::string whyNot(const CompileRequest &req, const ir::Schedule &s) {
  std::string why = notServed(req, s);
  return why.empty() ? notVerifiable(req, s) : why;
}

/// Why auto did not compile candidate `c` of algorithm `a`, larger than
/// its budget, once `bestName` was priced at `bestTime`: its size, and
/// what the least latency of its chains says about its time.
std::string notConsideredLarge(const topo::Topology &t,
                               const CompileRequest &req, Algorithm a,
                               const lowerings::AutoCandidate &c,
                               const std::string &bestName, double bestTime) {
  std::string line = llvm::formatv(
      "auto: {0} not considered (about {1} ops; auto compiles schedules of up "
      "to {2} ops when another applies; --algorithm {0} builds it)",
      algorithmName(a), opsText(c.estimatedOps),
      opsText(req.autoMaxVariantOps));
  if (c.chainMessages <= 0)
    return line;
  const analysis::SimMode mode =
      req.autoSimMode.value_or(analysis::SimMode::Runtime);
  const double floor = analysis::leastChainTime(t, c.chainMessages, mode);
  const bool cannotWin = !faster(floor, bestTime);
  return line + llvm::formatv("; its chunks cross {0} messages in turn: at "
                              "least {1:F3} us in the {2} model, {3} {4}'s "
                              "{5:F3} us",
                              c.chainMessages, floor * 1e6,
                              analysis::simModeName(mode),
                              cannotWin ? "no faster than" : "against",
                              bestName, bestTime * 1e6)
                    .str();
}

} // namespace

llvm::Expected<CompileResult> selectAlgorithm(const topo::Topology *t,
                                              const CompileRequest &req,
                                              PassLogger &log) {
  if (!t)
    return makeUserError("--algorithm auto compares the algorithms on the "
                         "topology; give one");
  lowerings::AutoContext ctx{*t, req, lowerings::nodeRanks(*t).size() >= 2,
                             {}};
  std::vector<std::string> lines;
  std::optional<CompileResult> best;
  std::optional<CompileRequest> bestRequest;
  double bestTime = std::numeric_limits<double>::infinity();
  analysis::SimResult bestRun;
  std::string bestFlags; ///< the winning variant's flags, or empty
  ProgressTask progress("auto", loweringAlgorithms().size(), "algorithms");
  // Compiles and prices one candidate and its variants.
  auto consider = [&](Algorithm a,
                      lowerings::AutoCandidate &candidate) -> llvm::Error {
    ProgressTask schedules(algorithmName(a), 1 + candidate.variants.size(),
                           "schedules");
    CompileRequest sub = *candidate.request;
    sub.verify = false; // the winner is compiled again, verified
    PassLogger quiet;
    auto result = compile(*t, sub, quiet);
    if (!result && candidate.fallback && !candidate.mustCompile) {
      auto line = notApplicable(candidate.fallbackWhat, result.takeError(),
                                "; " + candidate.fallbackHow);
      if (!line)
        return line.takeError();
      lines.push_back(std::move(*line));
      sub = *candidate.fallback;
      sub.verify = false;
      result = compile(*t, sub, quiet);
    }
    double algoBest = std::numeric_limits<double>::infinity();
    // The base schedule's size, to estimate its variants' sizes.
    const int64_t baseOps = result ? opCount(result->schedule) : 0;
    if (!result) {
      if (candidate.mustCompile)
        return result.takeError();
      auto line = notApplicable(algorithmName(a), result.takeError());
      if (!line)
        return line.takeError();
      lines.push_back(std::move(*line));
      // Its variants may still apply (fewer chunks, other channel counts).
    } else {
      std::string skip = whyNot(req, result->schedule);
      auto run = price(*t, req, result->schedule);
      if (!run)
        return run.takeError();
      const double cost = run->time;
      algoBest = cost;
      lines.push_back(
          llvm::formatv("auto: {0} predicted {1:F3} us (simulated){2}",
                        algorithmName(a), cost * 1e6,
                        skip.empty() ? "" : "; " + skip)
              .str());
      if (skip.empty() && faster(cost, bestTime)) {
        bestTime = cost;
        bestRun = std::move(*run);
        best = std::move(*result);
        bestRequest = std::move(sub);
        bestFlags.clear();
      }
    }
    schedules.advance();
    const int64_t baseWidth = int64_t(sub.chunks) * sub.channels;
    for (auto &[flags, variant, estimate] : candidate.variants) {
      if (estimate == 0 && baseOps > 0 && baseWidth > 0 && variant.channels > 0)
        estimate = baseOps * variant.chunks * variant.channels / baseWidth;
      if (estimate > req.autoMaxVariantOps) {
        schedules.advance();
        lines.push_back(
            llvm::formatv("auto: {0} {1} not considered (about {2} ops; auto "
                          "compiles variants of up to {3} ops; --algorithm "
                          "{0} {1} builds it)",
                          algorithmName(a), flags, opsText(estimate),
                          opsText(req.autoMaxVariantOps))
                .str());
        continue;
      }
      variant.verify = false;
      auto v = compile(*t, variant, quiet);
      schedules.advance();
      if (!v) {
        auto line = notApplicable((algorithmName(a) + " " + flags).str(),
                                  v.takeError());
        if (!line)
          return line.takeError();
        lines.push_back(std::move(*line));
        continue;
      }
      std::string vskip = whyNot(req, v->schedule);
      auto vrun = price(*t, req, v->schedule);
      if (!vrun)
        return vrun.takeError();
      const double vc = vrun->time;
      algoBest = std::min(algoBest, vc);
      lines.push_back(llvm::formatv("auto: {0} {1} predicted {2:F3} us "
                                    "(simulated){3}",
                                    algorithmName(a), flags, vc * 1e6,
                                    vskip.empty() ? "" : "; " + vskip)
                          .str());
      if (vskip.empty() && faster(vc, bestTime)) {
        bestTime = vc;
        bestRun = std::move(*vrun);
        best = std::move(*v);
        bestRequest = variant;
        bestFlags = flags;
      }
    }
    if (algoBest < std::numeric_limits<double>::infinity())
      ctx.priced[a] = algoBest;
    return llvm::Error::success();
  };
  // Candidates larger than the budget (AutoCandidate::estimatedOps) wait
  // until the others are priced and are compiled only when none applies.
  std::vector<std::pair<Algorithm, lowerings::AutoCandidate>> large;
  for (Algorithm a : loweringAlgorithms()) {
    progress.advance();
    auto candidate = lowerings::autoCandidate(a, ctx);
    if (!candidate)
      return candidate.takeError();
    lines.insert(lines.end(), candidate->lines.begin(), candidate->lines.end());
    if (!candidate->request)
      continue;
    if (candidate->estimatedOps > req.autoMaxVariantOps) {
      large.emplace_back(a, std::move(*candidate));
      continue;
    }
    if (llvm::Error err = consider(a, *candidate))
      return err;
  }
  // "dbtree" or "ring --channels 8": the best so far and its flags.
  auto bestLabel = [&] {
    return (algorithmName(best->algorithm) +
            (bestFlags.empty() ? "" : " " + bestFlags))
        .str();
  };
  for (auto &[a, candidate] : large) {
    if (best) {
      lines.push_back(
          notConsideredLarge(*t, req, a, candidate, bestLabel(), bestTime));
      continue;
    }
    if (llvm::Error err = consider(a, candidate))
      return err;
  }
  if (!best)
    return makeUserError("--algorithm auto: no algorithm applies:\n" +
                         llvm::join(lines, "\n"));
  lines.push_back("auto: chose " + bestLabel());
  // The candidates were compiled quietly and unverified (verifying every
  // one was most of auto's time and memory at scale). An exact winner is
  // verified as it is, as compile() verifies its product; a coded one (its
  // lowering's own checks), one that fails (to name the stage that broke
  // it) and any when the caller prints the IR or times the passes are
  // compiled again, verified and logged. The same request gives the same
  // schedule.
  // With req.deferFinalCheck the check of an exact winner as it is is
  // left to the caller (CompileResult::pendingCheck), as compile() leaves
  // its own.
  bestRequest->verify = true;
  const bool asIs = log.isQuiet() && !best->coded &&
                    ir::verifiedSlots(best->schedule) <= ir::kMaxVerifiedSlots;
  if (asIs && req.deferFinalCheck) {
    best->verified = false;
    best->pendingCheck = *bestRequest;
    best->pendingCheck->deferFinalCheck = false;
  } else if (ProgressTask winner("the winner, verified: " + bestLabel());
             asIs && ir::findProblems(best->schedule).empty()) {
    best->verified = true;
  } else {
    auto again = compile(*t, *bestRequest, log);
    if (!again)
      return again.takeError();
    best = std::move(*again);
  }
  best->chosenFlags = bestFlags;
  best->predictedTime = bestTime;
  if (!req.autoSimMode && !req.autoReduceBandwidth)
    best->predictedRun = std::move(bestRun);
  best->explain.insert(best->explain.begin(), lines.begin(), lines.end());
  return std::move(*best);
}

} // namespace topocc
