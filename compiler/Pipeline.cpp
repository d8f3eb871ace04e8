//===- compiler/Pipeline.cpp - The ordered pass pipeline ------------------===//
//
// Modelled on Halide's lower_impl: one function lists every pass, one line
// each, with a comment saying why it is there.
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipeline.h"

#include "compiler/passes/AssignChannels.h"
#include "compiler/passes/AssignThreadblocks.h"
#include "compiler/passes/Fuse.h"
#include "compiler/passes/LegalizeDependencies.h"
#include "compiler/passes/LowerRing.h"
#include "compiler/passes/SplitChannels.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "support/Diagnostics.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <chrono>
#include <functional>
#include <optional>

namespace topocc {

using ir::Schedule;
using ir::Stage;

void PassLogger::afterPass(llvm::StringRef pass, const Schedule &s) {
  if (!printAfterAll || !irOut)
    return;
  *irOut << "// *** IR Dump After " << pass << " ***\n";
  ir::printSchedule(s, *irOut);
}

void PassLogger::recordTime(llvm::StringRef pass, double seconds) {
  if (timePasses)
    times.emplace_back(pass.str(), seconds);
}

void PassLogger::printTimings(llvm::raw_ostream &os) const {
  if (!timePasses)
    return;
  os << "===-- pass execution timing report --===\n";
  os << "  wall time (s)  pass\n";
  double total = 0;
  for (const auto &[name, secs] : times) {
    os << llvm::formatv("  {0,12:f6}  {1}\n", secs, name);
    total += secs;
  }
  os << llvm::formatv("  {0,12:f6}  total\n", total);
}

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

/// Runs one transform on `s`: times it, logs the IR, and verifies the result
/// when `verify` (keeping a copy of the input for the report).
llvm::Error runPass(llvm::StringRef name, Schedule &s, PassLogger &log,
                    bool verify,
                    const std::function<llvm::Error(Schedule &)> &pass) {
  std::optional<Schedule> before;
  if (verify)
    before = s;
  auto start = std::chrono::steady_clock::now();
  llvm::Error err = pass(s);
  log.recordTime(name, std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - start)
                           .count());
  if (err)
    return err;
  log.afterPass(name, s);
  if (verify)
    if (llvm::Error problems = ir::verifySchedule(s))
      return passBroke(name, before, s, std::move(problems));
  return llvm::Error::success();
}

llvm::Error checkRequest(const CompileRequest &req) {
  if (req.algorithm != "ring")
    return makeUserError("unknown --algorithm '" + req.algorithm +
                         "'; expected 'ring'");
  if (req.proto != "Simple" && req.proto != "LL" && req.proto != "LL128")
    return makeUserError("unknown --proto '" + req.proto +
                         "'; expected 'Simple', 'LL' or 'LL128'");
  if (req.maxSteps < 1)
    return makeUserError(
        llvm::formatv("--max-steps must be at least 1, got {0}", req.maxSteps));
  return llvm::Error::success();
}

const llvm::StringRef kPassNames[] = {"fuse", "assign-channels",
                                     "split-channels", "assign-threadblocks",
                                     "legalize-dependencies"};

/// The transform registered under `name` (one of kPassNames).
std::function<llvm::Error(Schedule &)> passNamed(llvm::StringRef name,
                                                 const CompileRequest &req) {
  passes::ThreadblockLimits limits;
  limits.maxSteps = req.maxSteps;
  if (name == "fuse")
    return [](Schedule &s) {
      passes::fuse(s);
      return llvm::Error::success();
    };
  if (name == "assign-channels")
    return [](Schedule &s) { return passes::assignChannels(s); };
  if (name == "split-channels")
    return [maxSteps = req.maxSteps](Schedule &s) {
      return passes::splitChannels(s, maxSteps);
    };
  if (name == "assign-threadblocks")
    return
        [limits](Schedule &s) { return passes::assignThreadblocks(s, limits); };
  assert(name == "legalize-dependencies" && "unknown pass");
  return [](Schedule &s) {
    passes::legalizeDependencies(s);
    return llvm::Error::success();
  };
}

} // namespace

llvm::Expected<CompiledPlan>
compile(int32_t numRanks, const CompileRequest &req, PassLogger &log) {
  if (auto err = checkRequest(req))
    return err;
  passes::RingOptions ring{req.collective, numRanks,      req.channels,
                           req.chunks,     req.ringOrder, req.inplace,
                           req.name};
  const bool each = req.verifyEach;
  Schedule s;
  auto run = [&](llvm::StringRef pass, bool verify) {
    return runPass(pass, s, log, verify, passNamed(pass, req));
  };
  auto lower = [&](Schedule &out) -> llvm::Error {
    auto lowered = passes::lowerRing(ring);
    if (!lowered)
      return lowered.takeError();
    out = std::move(*lowered);
    return llvm::Error::success();
  };

  // Ring order -> unfused send/recv/reduce chains, one chain per channel.
  if (auto err = runPass("lower-ring", s, log, /*verify=*/false, lower))
    return err;
  // Always: a lowering bug must be caught where it is made, with its IR.
  if (llvm::Error problems = ir::verifySchedule(s))
    return passBroke("lower-ring", std::nullopt, s, std::move(problems));
  // MSCCL's fused primitives (rcs, rrs, rrc, rrcs) halve steps and copies.
  if (auto err = run("fuse", each))
    return err;
  // Each ring gets its own MSCCL channel (its own connections and FIFOs).
  if (auto err = run("assign-channels", each))
    return err;
  // Chains longer than the step limit (large rings) continue on extra
  // channels, each segment in its own threadblock.
  if (auto err = run("split-channels", each))
    return err;
  // One send and one receive peer per threadblock; enforces the step limits.
  if (auto err = run("assign-threadblocks", each))
    return err;
  // MSCCL steps carry one dependency; the rest become nops. Always verified:
  // it is cheap, and this schedule is the product.
  if (auto err = run("legalize-dependencies", /*verify=*/true))
    return err;
  return CompiledPlan{std::move(s), req.algorithm};
}

llvm::ArrayRef<llvm::StringRef> passNames() { return kPassNames; }

llvm::Expected<Schedule> runSinglePass(llvm::StringRef name, Schedule s,
                                       const CompileRequest &req,
                                       PassLogger &log) {
  if (!llvm::is_contained(kPassNames, name)) {
    std::string hint = nearestMatch(name, kPassNames);
    std::string names;
    for (llvm::StringRef n : kPassNames)
      names += (names.empty() ? "" : ", ") + n.str();
    return makeUserError(
        "unknown pass '" + name + "'" +
        (hint.empty() ? "" : "; did you mean '" + hint + "'?") +
        " (passes: " + names + ")");
  }
  if (auto err = checkRequest(req))
    return err;
  Stage expected = name == "fuse"              ? Stage::Lowered
                   : name == "assign-channels" ? Stage::Fused
                   : name == "assign-threadblocks" || name == "split-channels"
                       ? Stage::ChannelsAssigned
                       : Stage::ThreadblocksAssigned;
  if (s.stage != expected && !(name == "fuse" && s.stage == Stage::Fused))
    return makeUserError("pass '" + name + "' expects a schedule at stage '" +
                         ir::stageName(expected) +
                         "', the input is at stage '" + ir::stageName(s.stage) +
                         "'");
  // The passes assume a valid input; a failure afterwards is then theirs.
  if (llvm::Error problems = ir::verifySchedule(s))
    return makeUserError("the input schedule is invalid:\n" +
                         llvm::toString(std::move(problems)));
  for (size_t r = 0; r < s.ranks.size(); ++r)
    for (size_t i = 0; i < s.ranks[r].ops.size(); ++i)
      for (ir::OpId d : s.ranks[r].ops[i].deps)
        if (static_cast<size_t>(d) >= i && name != "fuse")
          return makeUserError(llvm::formatv(
              "rank {0} %{1} depends on the later op %{2}: pass '{3}' needs "
              "every dependency to point to an earlier op",
              r, i, d, name));
  if (auto err = runPass(name, s, log, /*verify=*/true, passNamed(name, req)))
    return err;
  return s;
}

} // namespace topocc
