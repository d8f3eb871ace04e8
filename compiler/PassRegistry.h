//===- compiler/PassRegistry.h - The passes after lowering ------*- C++ -*-===//
//
// The table of compiler/Passes.def as data: each pass's name, the stage it
// expects and the function that runs it with the target's limits. The
// pipeline (compiler/Pipeline.cpp) runs them in order; --run-pass looks one
// up by name. The table is immutable: safe to read from several threads.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_PASSREGISTRY_H
#define TOPOCC_COMPILER_PASSREGISTRY_H

#include "compiler/passes/AssignThreadblocks.h"
#include "ir/Schedule.h"
#include "ir/Target.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace topocc {

enum class PassId : uint8_t {
#define TOPOCC_PASS(Enum, Name, Input, Rerun, ForwardDeps, Function) Enum,
#include "compiler/Passes.def"
};

/// What every pass may read: the target's limits, and for tree schedules
/// written as MSCCL XML the permission to coalesce threadblocks (then the
/// channel limit is assign-threadblocks' alone: it merges the trees' roles
/// to fit it). assign-threadblocks reports what it chose to `threadblocks`.
struct PassOptions {
  ir::TargetLimits target;
  bool coalesce = false;
  passes::ThreadblockInfo *threadblocks = nullptr;
};

struct PassInfo {
  PassId id;
  llvm::StringRef name;
  ir::Stage input;
  bool rerun;       ///< also accepts the stage after `input` (its own output)
  bool forwardDeps; ///< its input may depend on later ops of a rank
  llvm::Error (*run)(ir::Schedule &, const PassOptions &);
};

/// Every pass, in pipeline order.
llvm::ArrayRef<PassInfo> passTable();
const PassInfo &passInfo(PassId id);
/// The pass named `name`; a user error naming the passes (with the nearest
/// one) otherwise.
llvm::Expected<const PassInfo *> findPass(llvm::StringRef name);
/// A user error when `s` is not at a stage `pass` accepts.
llvm::Error checkPassStage(const PassInfo &pass, const ir::Schedule &s);
/// A user error when `s` has a dependency on a later op and `pass` needs
/// every dependency to point to an earlier one.
llvm::Error checkPassDependencies(const PassInfo &pass, const ir::Schedule &s);

} // namespace topocc

#endif // TOPOCC_COMPILER_PASSREGISTRY_H
