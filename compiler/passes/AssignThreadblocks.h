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
// ids < 128, 1024 threadblocks). Stage: ChannelsAssigned ->
// ThreadblocksAssigned.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_PASSES_ASSIGNTHREADBLOCKS_H
#define TOPOCC_COMPILER_PASSES_ASSIGNTHREADBLOCKS_H

#include "ir/Schedule.h"

#include "llvm/Support/Error.h"

namespace topocc::passes {

struct ThreadblockLimits {
  int32_t maxSteps = 64;          ///< MSCCL_MAX_NUM_STEPS of the runtime
  int32_t maxDepTarget = 127;     ///< depid is stored in 8 signed bits
  int32_t maxThreadblocks = 1024; ///< per rank
};

/// REQUIRES: s.stage is ChannelsAssigned; deps point to earlier ops in the
/// list. A user error saying which limit is exceeded and what to change.
llvm::Error assignThreadblocks(ir::Schedule &s,
                               const ThreadblockLimits &limits = {});

} // namespace topocc::passes

#endif // TOPOCC_COMPILER_PASSES_ASSIGNTHREADBLOCKS_H
