//===- compiler/passes/AssignThreadblocksImpl.h - Shared parts --*- C++ -*-===//
//
// Private to the assign-threadblocks pass: what its two shapes share.
// AssignThreadblocks.cpp holds the pass entry and the packer of the
// separate shape (one sub-schedule per threadblock), with the helpers
// below; CoalesceThreadblocks.cpp holds the coalescer (the coalesced
// shape for MSCCL XML of tree schedules), which the entry runs when the
// separate shape breaks a limit.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_PASSES_ASSIGNTHREADBLOCKSIMPL_H
#define TOPOCC_COMPILER_PASSES_ASSIGNTHREADBLOCKSIMPL_H

#include "compiler/passes/AssignThreadblocks.h"
#include "ir/Schedule.h"

#include "llvm/Support/Error.h"

namespace topocc::passes::detail {

// AssignThreadblocks.cpp (comments at the definitions).
void numberTargetsFirst(ir::RankProgram &rp, ir::TbId maxTarget);
llvm::Error checkLimits(const ir::Schedule &s, const ThreadblockLimits &limits);
llvm::Error checkResident(const ir::Schedule &s,
                          const ThreadblockLimits &limits);

// CoalesceThreadblocks.cpp.
/// The coalesced shape of `s` (ChannelsAssigned): channels chosen again per
/// group of chains, roles with the same (channel, send peer, receive peer)
/// merged into one threadblock; fills info's chains and groups. A user
/// error when it does not fit the limits either.
llvm::Error coalesceThreadblocks(ir::Schedule &s,
                                 const ThreadblockLimits &limits,
                                 ThreadblockInfo *info);

} // namespace topocc::passes::detail

#endif // TOPOCC_COMPILER_PASSES_ASSIGNTHREADBLOCKSIMPL_H
