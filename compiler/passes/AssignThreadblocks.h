//===- compiler/passes/AssignThreadblocks.h - Threadblock per op -*- C++
//-*-===//
//
// Packs each rank's ops into MSCCL threadblocks: one send peer and one receive
// peer per threadblock, all on one channel; independent sub-schedules (ops
// not joined by deps or messages, e.g. different trees) get their own
// threadblocks unless a connection forces them together; ids dense from 0 in
// order of first use, except that when a dependency target would get an id
// above maxDepTarget the dependency targets are numbered first; each
// threadblock runs its ops in list order. Enforces the MSCCL limits
// on the legalized result (steps per threadblock with nops, dependency-target
// ids < 128, 1024 threadblocks, and, when given, the SM count and the channel
// count). Coalescing (MSCCL XML of tree schedules, docs/Algorithms-trees.md, "Coalescing"): when
// that one-sub-schedule-per-threadblock shape exceeds a limit, the channels
// are chosen again per chain of messages and ops with the same (channel, send
// peer, receive peer) merge into one threadblock across sub-schedules, in list
// order. Stage: ChannelsAssigned -> ThreadblocksAssigned.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_PASSES_ASSIGNTHREADBLOCKS_H
#define TOPOCC_COMPILER_PASSES_ASSIGNTHREADBLOCKS_H

#include "ir/Schedule.h"
#include "ir/Target.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace topocc::passes {

struct ThreadblockLimits {
  int32_t maxSteps = ir::kMscclMaxSteps; ///< steps per threadblock
  /// Largest step a dependency may name (MSCCL: 8 signed bits).
  int32_t maxDepTarget = ir::kMscclMaxDependencyTarget;
  int32_t maxThreadblocks = ir::kMscclMaxThreadblocks; ///< per rank
  /// Threadblocks one rank may launch: MSCCL's blocks spin-wait on each
  /// other and must all be resident, one per SM (--sm-count); 0: no limit.
  int32_t smCount = 0;
  /// Whether smCount is the runtime's threadblock limit (RCCL's MSCCL: 64)
  /// rather than the GPU's SMs: a file over it is rejected when loaded.
  bool smCountIsRuntimeLimit = false;
  /// Channels the output has (MSCCL XML: 32); 0: no limit. Checked here
  /// only with coalesce (assign-channels and split-channels check it
  /// otherwise).
  int32_t maxChannels = 0;
  /// Tree schedules for MSCCL XML: when the separate-threadblock shape does
  /// not fit the limits above, re-assign the channels and merge roles across
  /// sub-schedules (coalescing) instead of failing.
  bool coalesce = false;
};

/// What assignThreadblocks chose, for reports and tests.
struct ThreadblockInfo {
  bool coalesced = false; ///< the coalesced shape was needed
  /// Coalesced: chains of messages (one tree chain in one piece) and the
  /// groups of them (same chain in every segment and piece) given one
  /// channel each.
  int32_t chains = 0, groups = 0;
  /// Why the separate-threadblock shape did not fit (coalesced only).
  std::string whyCoalesced;
};

/// REQUIRES: s.stage is ChannelsAssigned; deps point to earlier ops in the
/// list. A user error saying which limit is exceeded and what to change.
llvm::Error assignThreadblocks(ir::Schedule &s,
                               const ThreadblockLimits &limits = {},
                               ThreadblockInfo *info = nullptr);

/// The threadblock of every op and the stage of a schedule, to undo an
/// assignment tried in place (assignThreadblocks sets nothing else).
class ThreadblockUndo {
public:
  explicit ThreadblockUndo(const ir::Schedule &s);
  void restore(ir::Schedule &s) const;

private:
  std::vector<std::vector<ir::TbId>> threadblocks;
  ir::Stage stage;
};

} // namespace topocc::passes

#endif // TOPOCC_COMPILER_PASSES_ASSIGNTHREADBLOCKS_H
