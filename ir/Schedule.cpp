//===- ir/Schedule.cpp - Per-rank schedule IR -----------------------------===//
//
// The tables generated from ir/OpKinds.def, the name tables of collectives,
// buffers and stages, and the small queries on Op and Schedule.
//
//===----------------------------------------------------------------------===//

#include "ir/Schedule.h"

#include <cassert>

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/ErrorHandling.h"

#include <algorithm>

namespace topocc::ir {

namespace {

struct OpKindInfo {
  llvm::StringLiteral mnemonic;
  llvm::StringLiteral msccl;
  unsigned flags;
};

constexpr OpKindInfo kOpKindInfo[] = {
#define TOPOCC_OP(Enum, Mnemonic, Msccl, Flags)                                \
  {llvm::StringLiteral(Mnemonic), llvm::StringLiteral(Msccl), (Flags)},
#include "ir/OpKinds.def"
};

static_assert(sizeof(kOpKindInfo) / sizeof(kOpKindInfo[0]) == kNumOpKinds,
              "op table and enum disagree");

const OpKindInfo *info(OpKind k) {
  unsigned i = static_cast<unsigned>(k);
  return i < kNumOpKinds ? &kOpKindInfo[i] : nullptr;
}

} // namespace

llvm::StringRef mnemonic(OpKind k) {
  const OpKindInfo *i = info(k);
  return i ? llvm::StringRef(i->mnemonic) : llvm::StringRef("<invalid>");
}

llvm::StringRef mscclCode(OpKind k) {
  const OpKindInfo *i = info(k);
  return i ? llvm::StringRef(i->msccl) : llvm::StringRef();
}

unsigned opFlags(OpKind k) {
  const OpKindInfo *i = info(k);
  return i ? i->flags : 0;
}

std::optional<OpKind> opKindFromMnemonic(llvm::StringRef s) {
  for (unsigned i = 0; i < kNumOpKinds; ++i)
    if (kOpKindInfo[i].mnemonic == s)
      return static_cast<OpKind>(i);
  return std::nullopt;
}

std::optional<OpKind> opKindFromMscclCode(llvm::StringRef s) {
  if (s.empty())
    return std::nullopt;
  for (unsigned i = 0; i < kNumOpKinds; ++i)
    if (kOpKindInfo[i].msccl == s)
      return static_cast<OpKind>(i);
  return std::nullopt;
}

llvm::StringRef collectiveName(Collective c) {
  switch (c) {
  case Collective::AllReduce:
    return "allreduce";
  case Collective::AllGather:
    return "allgather";
  case Collective::ReduceScatter:
    return "reducescatter";
  case Collective::Broadcast:
    return "broadcast";
  case Collective::Reduce:
    return "reduce";
  case Collective::AllToAll:
    return "alltoall";
  }
  return "<invalid>";
}

std::optional<Collective> collectiveFromName(llvm::StringRef s) {
  return llvm::StringSwitch<std::optional<Collective>>(s)
      .Case("allreduce", Collective::AllReduce)
      .Case("allgather", Collective::AllGather)
      .Case("reducescatter", Collective::ReduceScatter)
      .Case("broadcast", Collective::Broadcast)
      .Case("reduce", Collective::Reduce)
      .Case("alltoall", Collective::AllToAll)
      .Default(std::nullopt);
}

llvm::StringRef bufferName(BufferKind b) {
  switch (b) {
  case BufferKind::Input:
    return "in";
  case BufferKind::Output:
    return "out";
  case BufferKind::Scratch:
    return "sc";
  }
  return "<invalid>";
}

llvm::StringRef stageName(Stage s) {
  switch (s) {
  case Stage::Lowered:
    return "lowered";
  case Stage::Fused:
    return "fused";
  case Stage::ChannelsAssigned:
    return "channels";
  case Stage::ThreadblocksAssigned:
    return "threadblocks";
  case Stage::Legalized:
    return "legalized";
  }
  return "<invalid>";
}

std::optional<Stage> stageFromName(llvm::StringRef s) {
  return llvm::StringSwitch<std::optional<Stage>>(s)
      .Case("lowered", Stage::Lowered)
      .Case("fused", Stage::Fused)
      .Case("channels", Stage::ChannelsAssigned)
      .Case("threadblocks", Stage::ThreadblocksAssigned)
      .Case("legalized", Stage::Legalized)
      .Default(std::nullopt);
}

int32_t Op::wireCount() const {
  unsigned f = opFlags(kind);
  // A receiving op moves as many chunks as it writes (rrs writes nothing
  // locally and sends what it reads); a pure send moves its source.
  if (f & OF_RV)
    return (f & OF_WD) ? dst.count : src.count;
  if (f & OF_SN)
    return src.count;
  return 0;
}

MsgId Schedule::numMessages() const {
  MsgId maxId = kNone;
  for (const RankProgram &rp : ranks)
    for (const Op &op : rp.ops)
      maxId = std::max({maxId, op.sendMsg, op.recvMsg});
  return maxId + 1;
}

void setCollectiveBuffers(RankProgram &rp, Collective c, int32_t full,
                          int32_t local, bool inplace) {
  switch (c) {
  case Collective::AllReduce:
    rp.inputChunks = full;
    rp.outputChunks = inplace ? 0 : full;
    break;
  case Collective::AllGather:
    rp.inputChunks = inplace ? 0 : local;
    rp.outputChunks = full;
    break;
  default:
    rp.inputChunks = full;
    rp.outputChunks = inplace ? 0 : local;
    break;
  }
}

int32_t scratchExtent(const RankProgram &rp) {
  int32_t end = 0;
  for (const Op &op : rp.ops)
    for (const BufferRef *b : {&op.src, &op.dst})
      if (b->isUsed() && b->buffer == BufferKind::Scratch)
        end = std::max(end, b->chunk + b->count);
  return end;
}

int32_t Schedule::nominalInputChunks() const {
  if (collective == Collective::AllGather)
    return numRanks > 0 ? chunksPerLoop / numRanks : 0;
  return chunksPerLoop;
}

int32_t Schedule::nominalOutputChunks() const {
  if (collective == Collective::ReduceScatter)
    return numRanks > 0 ? chunksPerLoop / numRanks : 0;
  return chunksPerLoop;
}

std::vector<MsgEnds> indexMessages(const Schedule &s) {
  std::vector<MsgEnds> ends(static_cast<size_t>(std::max(0, s.numMessages())));
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    const std::vector<Op> &ops = s.ranks[r].ops;
    for (size_t i = 0; i < ops.size(); ++i) {
      const Op &op = ops[i];
      // The first end wins; the verifier reports duplicates.
      if (op.sendMsg >= 0 && ends[op.sendMsg].sendOp == kNone) {
        ends[op.sendMsg].sender = static_cast<RankId>(r);
        ends[op.sendMsg].sendOp = static_cast<OpId>(i);
      }
      if (op.recvMsg >= 0 && ends[op.recvMsg].recvOp == kNone) {
        ends[op.recvMsg].receiver = static_cast<RankId>(r);
        ends[op.recvMsg].recvOp = static_cast<OpId>(i);
      }
    }
  }
  return ends;
}

Op makeSend(BufferRef src, RankId to, MsgId msg) {
  Op op;
  op.kind = OpKind::Send;
  op.src = src;
  op.sendPeer = to;
  op.sendMsg = msg;
  return op;
}

Op makeRecv(BufferRef dst, RankId from, MsgId msg) {
  Op op;
  op.kind = OpKind::Recv;
  op.dst = dst;
  op.recvPeer = from;
  op.recvMsg = msg;
  return op;
}

Op makeLocal(OpKind kind, BufferRef dst, BufferRef src) {
  assert((kind == OpKind::Copy || kind == OpKind::Reduce) &&
         "makeLocal builds copy and reduce");
  Op op;
  op.kind = kind;
  op.src = src;
  op.dst = dst;
  return op;
}

} // namespace topocc::ir
