//===- ir/Ids.h - Dense ids used by the schedule IR ------------*- C++ -*-===//
//
// Plain integer ids. Ranks, ops (per rank), messages (per schedule), channels
// and threadblocks are dense from 0; -1 means "none" or "not yet assigned".
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_IR_IDS_H
#define TOPOCC_IR_IDS_H

#include <cstdint>

namespace topocc::ir {

using RankId = int32_t;    ///< 0 .. numRanks-1
using OpId = int32_t;      ///< index into RankProgram::ops
using MsgId = int32_t;     ///< unique per schedule; one sender, one receiver
using ChannelId = int32_t; ///< -1 until AssignChannels
using TbId = int32_t;      ///< -1 until AssignThreadblocks

constexpr int32_t kNone = -1;

} // namespace topocc::ir

#endif // TOPOCC_IR_IDS_H
