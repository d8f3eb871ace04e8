//===- compiler/passes/SplitChannels.h - Fit long chains in steps -*- C++ -*-===//
//
// MSCCL runs at most 64 steps per threadblock, and a ring over N ranks needs
// about 2N steps per chunk on every rank. This pass cuts each (rank, channel)
// op chain that is longer than the step limit into segments that run on extra
// channels (channel c + numChannels * segment), so each segment gets its own
// threadblock. A message belongs to the segment of its sending op; an op that
// receives in one segment and sends in the next is split into its receiving
// half and a `send` that depends on it. Stage: ChannelsAssigned (unchanged).
// Schedules whose chains already fit are returned unchanged.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_PASSES_SPLITCHANNELS_H
#define TOPOCC_COMPILER_PASSES_SPLITCHANNELS_H

#include "ir/Schedule.h"
#include "ir/Target.h"

#include "llvm/Support/Error.h"

namespace topocc::passes {

/// REQUIRES: s.stage is ChannelsAssigned and every dependency points to an
/// earlier op of its rank (list order is a topological order). A user error
/// when the segments would need more than `maxChannels` channels.
llvm::Error splitChannels(ir::Schedule &s, int32_t maxSteps,
                          int32_t maxChannels = ir::kMscclMaxChannels);

} // namespace topocc::passes

#endif // TOPOCC_COMPILER_PASSES_SPLITCHANNELS_H
