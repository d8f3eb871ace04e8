//===- compiler/Pipeline.cpp - The ordered pass pipeline ------------------===//
//
// Modelled on Halide's lower_impl: compile() lists every stage and pass,
// one line each, with a comment saying why it is there. The algorithms'
// front ends are in compiler/lowerings/, the passes in compiler/passes/
// behind the table of compiler/Passes.def.
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipeline.h"

#include "compiler/PassRegistry.h"
#include "compiler/SelectAlgorithm.h"
#include "compiler/lowerings/Lowering.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "support/Diagnostics.h"
#include "support/Progress.h"

#include "llvm/Support/FormatVariadic.h"

#include <chrono>
#include <optional>

namespace topocc {

using ir::Schedule;

namespace {

/// An internal error: `pass` turned `before` (absent for a lowering) into a
/// schedule the verifier rejects.
llvm::Error passBroke(llvm::StringRef pass,
                      const std::optional<Schedule> &before,
                      const Schedule &after, llvm::Error problems) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "the schedule is invalid after pass '" << pass
     << "' (a bug in topocc):\n"
     << llvm::toString(std::move(problems)) << '\n';
  if (before) {
    os << "--- IR before " << pass << " ---\n";
    ir::printSchedule(*before, os);
  }
  os << "--- IR after " << pass << " ---\n";
  ir::printSchedule(after, os);
  os.flush();
  return makeInternalError(text);
}

/// Runs `step`, recording its wall time under `name`.
template <typename Step>
llvm::Error timed(PassLogger &log, llvm::StringRef name, Step step) {
  ProgressTask progress(name);
  auto start = std::chrono::steady_clock::now();
  llvm::Error err = step();
  log.recordTime(name, std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - start)
                           .count());
  return err;
}

/// How a pass's result is checked: not at all, verified, or verified with
/// a copy of its input kept for the report.
enum class Check { None, Verify, VerifyKeepInput };

/// Runs table pass `pass` on `s`: times it, logs the IR, and verifies the
/// result as `check` says.
llvm::Error runPass(const PassInfo &pass, Schedule &s, PassLogger &log,
                    Check check, const PassOptions &options,
                    const ir::VerifyOptions &vopts = {}) {
  const bool verify = check != Check::None;
  std::optional<Schedule> before;
  if (check == Check::VerifyKeepInput)
    before = s;
  if (llvm::Error err =
          timed(log, pass.name, [&] { return pass.run(s, options); }))
    return err;
  log.afterPass(pass.name, s);
  if (verify)
    if (llvm::Error problems = ir::verifySchedule(s, vopts))
      return passBroke(pass.name, before, s, std::move(problems));
  return llvm::Error::success();
}

/// One compileStages() call: the schedule between its stages, and what the
/// algorithm's lowering asks of the passes after it.
class Compilation {
public:
  Compilation(const CompileRequest &req, lowerings::Lowering &lowering,
              PassLogger &log)
      : req(req), lowering(lowering), log(log) {
    options.target = req.target;
    options.threadblocks = &threadblocks;
  }

  /// The lowering's work before it emits ops, timed on its own.
  llvm::Error prepare() {
    llvm::StringRef step = lowering.prepareStep();
    if (step.empty())
      return lowering.prepare();
    return timed(log, step, [&] { return lowering.prepare(); });
  }

  /// The lowering itself: its structure checked, the whole of it with
  /// verifyEach (a verified compile that fails its final check is compiled
  /// again so, to name the stage that broke it: compileOn).
  llvm::Error lower() {
    vopts = lowering.verifyOptions();
    options.coalesce = lowering.mayCoalesce();
    llvm::StringRef name = lowering.passName();
    if (llvm::Error err = timed(log, name, [&]() -> llvm::Error {
          auto out = lowering.lower();
          if (!out)
            return out.takeError();
          lowered = std::move(*out);
          s = std::move(lowered.schedule);
          return llvm::Error::success();
        }))
      return err;
    log.afterPass(name, s);
    if (!req.verify)
      return llvm::Error::success();
    // The passes index with the schedule's values: its structure (operands
    // in their buffers, matched messages) is checked here always, at a
    // fraction of the whole check, which comes at the end.
    ir::VerifyOptions checked = vopts;
    if (!req.verifyEach) {
      checked.checkDeadlock = false;
      checked.checkRaces = false;
      checked.checkSemantics = false;
    } else if (llvm::Error err = verifiable(name)) {
      return err;
    }
    if (llvm::Error problems = ir::verifySchedule(s, checked))
      return passBroke(name, std::nullopt, s, std::move(problems));
    return llvm::Error::success();
  }

  /// Too large to verify is the request's limit, not a bug: a user error
  /// before the verifier would report it. `after`: the stage that made `s`.
  llvm::Error verifiable(llvm::StringRef after) const {
    if (int64_t slots = ir::verifiedSlots(s); slots > ir::kMaxVerifiedSlots)
      return makeUserError(llvm::formatv(
          "{0} ({1} ranks) would hold {2} buffer chunks over all ranks, more "
          "than the {3} the verifier checks; use fewer --chunks or channels",
          after, s.numRanks, slots, ir::kMaxVerifiedSlots));
    return llvm::Error::success();
  }

  /// A pass of the table; its user errors say what the lowering chose.
  llvm::Error run(PassId id, Check check) {
    llvm::Error err = runPass(passInfo(id), s, log, check, options, vopts);
    if (!err || err.isA<InternalError>())
      return err;
    std::string context = lowering.errorContext();
    if (context.empty())
      return err;
    return makeUserError(context + errorMessages(std::move(err), "; "));
  }

  /// Whether the final whole-schedule check is left to the caller
  /// (CompileRequest::deferFinalCheck, checkCompiled()): not for coded
  /// lowerings, whose finish() executes the code of a checked schedule.
  bool defersFinalCheck() const {
    return req.verify && req.deferFinalCheck && !req.verifyEach &&
           !lowering.coded();
  }

  /// The lowering's final check, and what the result reports.
  llvm::Expected<CompileResult> finish() {
    CompileResult result;
    if (llvm::Error err = lowering.finish(s, result))
      return err;
    result.schedule = std::move(s);
    result.verified = req.verify;
    if (defersFinalCheck()) {
      result.verified = false;
      result.pendingCheck = req;
      result.pendingCheck->deferFinalCheck = false;
    }
    result.algorithm = req.algorithm;
    result.rings = std::move(lowered.rings);
    result.searched = std::move(lowered.searched);
    result.summary = std::move(lowered.summary);
    if (threadblocks.coalesced)
      result.summary +=
          llvm::formatv("; coalesced for MSCCL XML: {0} chains in {1} "
                        "groups on {2} channels",
                        threadblocks.chains, threadblocks.groups,
                        result.schedule.numChannels)
              .str();
    result.explain = std::move(lowered.explain);
    return result;
  }

private:
  const CompileRequest &req;
  lowerings::Lowering &lowering;
  PassLogger &log;
  Schedule s;
  lowerings::Lowered lowered;
  ir::VerifyOptions vopts;
  PassOptions options;
  passes::ThreadblockInfo threadblocks;
};

llvm::Expected<CompileResult> compileStages(const topo::Topology *t,
                                            int32_t numRanks,
                                            const CompileRequest &req,
                                            PassLogger &log) {
  if (llvm::Error err = checkCompileRequest(req))
    return err;
  // auto is a choice among the others, each compiled by this function.
  if (req.algorithm == Algorithm::Auto)
    return selectAlgorithm(t, req, log);
  auto lowering = lowerings::makeLowering(req.algorithm, {t, numRanks, &req});
  Compilation c(req, *lowering, log);
  const Check each =
      req.verifyEach && req.verify ? Check::VerifyKeepInput : Check::None;

  // The algorithm's structure: the trees' packing, the CERAR code.
  if (llvm::Error err = c.prepare())
    return err;
  // Algorithm -> unfused send/recv/reduce chains, one chain per channel.
  if (llvm::Error err = c.lower())
    return err;
  // MSCCL's fused primitives (rcs, rrs, rrc, rrcs) halve steps and copies.
  if (llvm::Error err = c.run(PassId::Fuse, each))
    return err;
  // Each ring gets its own MSCCL channel (its own connections and FIFOs).
  if (llvm::Error err = c.run(PassId::AssignChannels, each))
    return err;
  // Chains longer than the step limit (large rings) continue on extra
  // channels, each segment in its own threadblock.
  if (llvm::Error err = c.run(PassId::SplitChannels, each))
    return err;
  // One send and one receive peer per threadblock, within the target's
  // threadblock and step limits.
  if (llvm::Error err = c.run(PassId::AssignThreadblocks, each))
    return err;
  // MSCCL steps carry one dependency; the rest become nops. Verified:
  // this schedule is the product.
  if (req.verify)
    if (llvm::Error err =
            c.verifiable(passInfo(PassId::AssignThreadblocks).name))
      return err;
  if (llvm::Error err = c.run(PassId::LegalizeDependencies,
                              !req.verify || c.defersFinalCheck() ? Check::None
                              : each != Check::None ? Check::VerifyKeepInput
                                                    : Check::Verify))
    return err;
  // A coded schedule must still implement its code after every pass.
  return c.finish();
}

/// `err`, the final check's report on what `req` compiled, or the report
/// of compiling `req` again verified after every stage, which names the
/// stage that broke the schedule (when that run reproduces the bug).
llvm::Error locate(const topo::Topology *t, int32_t numRanks,
                   const CompileRequest &req, llvm::Error err) {
  CompileRequest each = req;
  each.verify = true;
  each.verifyEach = true;
  each.deferFinalCheck = false;
  PassLogger quiet;
  auto located = compileStages(t, numRanks, each, quiet);
  if (located)
    return err; // not reproduced: the first report stands
  llvm::consumeError(std::move(err));
  return located.takeError();
}

/// compileStages, verified once at the end (verifying the lowering's
/// larger, unfused schedule as well took most of a 1024-rank compile).
/// When that check finds a bug, the request is compiled again verified
/// after every stage, so that the error names the stage that made it, with
/// its IR; the same request gives the same schedules.
llvm::Expected<CompileResult> compileOn(const topo::Topology *t,
                                        int32_t numRanks,
                                        const CompileRequest &req,
                                        PassLogger &log) {
  auto result = compileStages(t, numRanks, req, log);
  if (result || !req.verify || req.verifyEach ||
      req.algorithm == Algorithm::Auto)
    return result;
  llvm::Error err = result.takeError();
  if (!err.isA<InternalError>())
    return err;
  return locate(t, numRanks, req, std::move(err));
}

} // namespace

llvm::Error checkCompiled(const topo::Topology *t, int32_t numRanks,
                          const CompileRequest &pending,
                          const ir::Schedule &s) {
  llvm::Error problems = ir::verifySchedule(s);
  if (!problems)
    return problems;
  // As compileOn: the report of the final check, or of the stage that
  // broke the schedule.
  return locate(t, numRanks, pending,
                passBroke(passInfo(PassId::LegalizeDependencies).name,
                          std::nullopt, s, std::move(problems)));
}

llvm::Expected<CompileResult>
compile(int32_t numRanks, const CompileRequest &req, PassLogger &log) {
  return compileOn(nullptr, numRanks, req, log);
}

llvm::Expected<CompileResult> compile(const topo::Topology &t,
                                      const CompileRequest &req,
                                      PassLogger &log) {
  return compileOn(&t, t.numRanks(), req, log);
}

std::vector<llvm::StringRef> passNames() {
  std::vector<llvm::StringRef> names;
  for (const PassInfo &p : passTable())
    names.push_back(p.name);
  return names;
}

llvm::Expected<Schedule> runSinglePass(llvm::StringRef name, Schedule s,
                                       const CompileRequest &req,
                                       PassLogger &log) {
  auto pass = findPass(name);
  if (!pass)
    return pass.takeError();
  if (llvm::Error err = checkCompileRequest(req))
    return err;
  if (llvm::Error err = checkPassStage(**pass, s))
    return err;
  // The passes assume a valid input; a failure afterwards is then theirs.
  if (llvm::Error problems = ir::verifySchedule(s))
    return makeUserError("the input schedule is invalid:\n" +
                         llvm::toString(std::move(problems)));
  if (llvm::Error err = checkPassDependencies(**pass, s))
    return err;
  PassOptions options;
  options.target = req.target;
  if (llvm::Error err =
          runPass(**pass, s, log, Check::VerifyKeepInput, options))
    return err;
  return s;
}

} // namespace topocc
