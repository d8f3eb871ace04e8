//===- compiler/PassRegistry.cpp - The passes after lowering --------------===//

#include "compiler/PassRegistry.h"

#include "compiler/passes/AssignChannels.h"
#include "compiler/passes/Fuse.h"
#include "compiler/passes/LegalizeDependencies.h"
#include "compiler/passes/SplitChannels.h"
#include "support/Diagnostics.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

namespace topocc {

namespace {

llvm::Error runFuse(ir::Schedule &s, const PassOptions &) {
  passes::fuse(s);
  return llvm::Error::success();
}

/// Coalescing trees choose their channels in assign-threadblocks.
int32_t channelLimit(const PassOptions &o) {
  return o.coalesce ? ir::TargetLimits::kNoLimit : o.target.channelLimit();
}

llvm::Error runAssignChannels(ir::Schedule &s, const PassOptions &o) {
  return passes::assignChannels(s, channelLimit(o));
}

llvm::Error runSplitChannels(ir::Schedule &s, const PassOptions &o) {
  return passes::splitChannels(s, o.target.maxStepsPerThreadblock,
                               channelLimit(o));
}

llvm::Error runAssignThreadblocks(ir::Schedule &s, const PassOptions &o) {
  passes::ThreadblockLimits limits;
  limits.maxSteps = o.target.maxStepsPerThreadblock;
  limits.maxDepTarget = o.target.maxDependencyTarget;
  limits.maxThreadblocks = o.target.maxThreadblocks;
  limits.smCount = std::max(o.target.maxThreadblocksPerRank, 0);
  limits.smCountIsRuntimeLimit = o.target.threadblocksLimitedByRuntime();
  limits.maxChannels = std::max(o.target.maxChannels, 0);
  limits.coalesce = o.coalesce;
  return passes::assignThreadblocks(s, limits, o.threadblocks);
}

llvm::Error runLegalizeDependencies(ir::Schedule &s, const PassOptions &) {
  passes::legalizeDependencies(s);
  return llvm::Error::success();
}

const PassInfo kPasses[] = {
#define TOPOCC_PASS(Enum, Name, Input, Rerun, ForwardDeps, Function)           \
  {PassId::Enum, Name, ir::Stage::Input, Rerun, ForwardDeps, Function},
#include "compiler/Passes.def"
};

} // namespace

llvm::ArrayRef<PassInfo> passTable() { return kPasses; }

const PassInfo &passInfo(PassId id) {
  return kPasses[static_cast<size_t>(id)];
}

llvm::Expected<const PassInfo *> findPass(llvm::StringRef name) {
  std::vector<llvm::StringRef> names;
  for (const PassInfo &p : kPasses) {
    if (p.name == name)
      return &p;
    names.push_back(p.name);
  }
  std::string hint = nearestMatch(name, names);
  return makeUserError(
      "unknown pass '" + name + "'" +
      (hint.empty() ? "" : "; did you mean '" + hint + "'?") +
      " (passes: " + llvm::join(names, ", ") + ")");
}

llvm::Error checkPassStage(const PassInfo &pass, const ir::Schedule &s) {
  const auto next =
      static_cast<ir::Stage>(static_cast<uint8_t>(pass.input) + 1);
  if (s.stage != pass.input && !(pass.rerun && s.stage == next))
    return makeUserError("pass '" + pass.name + "' expects a schedule at stage '" +
                         ir::stageName(pass.input) +
                         "', the input is at stage '" + ir::stageName(s.stage) +
                         "'");
  return llvm::Error::success();
}

llvm::Error checkPassDependencies(const PassInfo &pass, const ir::Schedule &s) {
  if (pass.forwardDeps)
    return llvm::Error::success();
  for (size_t r = 0; r < s.ranks.size(); ++r)
    for (size_t i = 0; i < s.ranks[r].ops.size(); ++i)
      for (ir::OpId d : s.ranks[r].ops[i].deps)
        if (static_cast<size_t>(d) >= i)
          return makeUserError(llvm::formatv(
              "rank {0} %{1} depends on the later op %{2}: pass '{3}' needs "
              "every dependency to point to an earlier op",
              r, i, d, pass.name));
  return llvm::Error::success();
}

} // namespace topocc
