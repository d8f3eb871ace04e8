//===- compiler/passes/AssignChannels.h - Channel per op --------*- C++ -*-===//
//
// Gives every op a channel: the independent sub-schedules of a lowering (one
// per ring; ops connected by same-rank deps or by a message) each get their
// own channel, numbered in order of first appearance on rank 0, 1, ...
// Channels a lowering already set are kept, per op; an op without one takes
// the channel of its sub-schedule. Stage: Fused -> ChannelsAssigned.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_PASSES_ASSIGNCHANNELS_H
#define TOPOCC_COMPILER_PASSES_ASSIGNCHANNELS_H

#include "ir/Schedule.h"
#include "ir/Target.h"

#include "llvm/Support/Error.h"

namespace topocc::passes {

/// REQUIRES: s.stage is Fused; every message has both ends. A user error
/// when more than `maxChannels` channels would be needed.
llvm::Error assignChannels(ir::Schedule &s,
                           int32_t maxChannels = ir::kMscclMaxChannels);

} // namespace topocc::passes

#endif // TOPOCC_COMPILER_PASSES_ASSIGNCHANNELS_H
