//===- ir/Schedule.h - Per-rank schedule IR --------------------*- C++ -*-===//
//
// The schedule IR: a flat program per rank, ops with explicit message pairing
// (every message has exactly one sending and one receiving op, by MsgId),
// same-rank dependencies, and the stage lowering has reached. Stage: all.
// Invariants are checked by ir/Verifier.h for the schedule's current stage.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_IR_SCHEDULE_H
#define TOPOCC_IR_SCHEDULE_H

#include "ir/Ids.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>
#include <vector>

namespace topocc::ir {

/// Effect flags of an op kind (columns of ir/OpKinds.def).
enum OpFlag : unsigned {
  OF_RS = 1u << 0, ///< reads src
  OF_RD = 1u << 1, ///< reads dst (reduce: dst = dst + src)
  OF_WD = 1u << 2, ///< writes dst
  OF_SN = 1u << 3, ///< sends a message
  OF_RV = 1u << 4, ///< receives a message
  OF_RE = 1u << 5, ///< combines the received message with src
  OF_LC = 1u << 6, ///< linear combination of `terms`
};

enum class OpKind : uint8_t {
#define TOPOCC_OP(Enum, Mnemonic, Msccl, Flags) Enum,
#include "ir/OpKinds.def"
};

constexpr unsigned kNumOpKinds = 0
#define TOPOCC_OP(Enum, Mnemonic, Msccl, Flags) +1
#include "ir/OpKinds.def"
    ;

llvm::StringRef mnemonic(OpKind k);
/// MSCCL step code ("s", "rrcs", ...); "" when MSCCL cannot express it.
llvm::StringRef mscclCode(OpKind k);
unsigned opFlags(OpKind k);
std::optional<OpKind> opKindFromMnemonic(llvm::StringRef s);
std::optional<OpKind> opKindFromMscclCode(llvm::StringRef s);

inline bool sends(OpKind k) { return opFlags(k) & OF_SN; }
inline bool receives(OpKind k) { return opFlags(k) & OF_RV; }
inline bool readsSrc(OpKind k) { return opFlags(k) & OF_RS; }
inline bool writesDst(OpKind k) { return opFlags(k) & OF_WD; }

enum class Collective : uint8_t {
  AllReduce,
  AllGather,
  ReduceScatter,
  Broadcast,
  Reduce,
  AllToAll,
};
/// "allreduce", "allgather", "reducescatter", "broadcast", "reduce",
/// "alltoall" (the MSCCL `coll` spellings).
llvm::StringRef collectiveName(Collective c);
std::optional<Collective> collectiveFromName(llvm::StringRef s);

enum class BufferKind : uint8_t { Input, Output, Scratch };
/// "in", "out", "sc" in the textual IR; 'i', 'o', 's' in MSCCL XML.
llvm::StringRef bufferName(BufferKind b);

/// A run of `count` consecutive chunks starting at `chunk` in one buffer.
/// Chunks are units of size / chunksPerLoop, as in MSCCL.
struct BufferRef {
  BufferKind buffer = BufferKind::Input;
  int32_t chunk = 0;
  int32_t count = 0; ///< 0 means "operand not used by this op"

  bool isUsed() const { return count > 0; }
  friend bool operator==(const BufferRef &, const BufferRef &) = default;
};

/// One source of a `lincomb`: coeff * src.
struct LinTerm {
  double coeff = 1.0;
  BufferRef src;
  friend bool operator==(const LinTerm &, const LinTerm &) = default;
};

/// Stages of lowering, in order. The verifier checks the invariants of the
/// schedule's stage and of every earlier one.
enum class Stage : uint8_t {
  Lowered,
  Fused,
  ChannelsAssigned,
  ThreadblocksAssigned,
  Legalized,
};
llvm::StringRef stageName(Stage s); // "lowered", "fused", "channels", ...
std::optional<Stage> stageFromName(llvm::StringRef s);

/// An op's same-rank dependencies. Most ops have one or two (a legalized
/// op at most one), which live inside the op: the list is the size of a
/// std::vector (24 bytes) and needs no heap block of its own until it
/// grows past two.
using OpDeps = llvm::SmallVector<OpId, 2>;
static_assert(sizeof(OpDeps) == sizeof(std::vector<OpId>));

struct Op {
  OpKind kind = OpKind::Nop;
  /// Read operand (OF_RS). For rrs/rrc/rrcs this is the LOCAL operand that the
  /// received message is combined with.
  BufferRef src;
  /// Written operand (OF_WD).
  BufferRef dst;
  /// Sources of a lincomb (OF_LC); empty otherwise.
  std::vector<LinTerm> terms;

  /// Peer and message of the outgoing message (OF_SN), else kNone.
  RankId sendPeer = kNone;
  MsgId sendMsg = kNone;
  /// Peer and message of the incoming message (OF_RV), else kNone.
  RankId recvPeer = kNone;
  MsgId recvMsg = kNone;
  /// Receiving side coefficients for coded schedules:
  /// result = localCoeff * src + msgCoeff * msg (or msgCoeff * msg for recv).
  /// Plain schedules use 1 and 1.
  double localCoeff = 1.0;
  double msgCoeff = 1.0;

  /// Same-rank happens-before edges: this op starts after each listed op.
  OpDeps deps;

  ChannelId channel = kNone;
  TbId threadblock = kNone;

  /// Number of chunks this op moves on the wire (send or receive count).
  int32_t wireCount() const;
};

/// Op constructors for lowerings (no deps, channel or threadblock yet).
Op makeSend(BufferRef src, RankId to, MsgId msg);
Op makeRecv(BufferRef dst, RankId from, MsgId msg);
/// A local op reading `src` and writing `dst`: copy, or reduce (dst += src).
Op makeLocal(OpKind kind, BufferRef dst, BufferRef src);

/// The ops of one rank. Before ThreadblocksAssigned only `deps` order ops;
/// from ThreadblocksAssigned on, ops of one threadblock execute in list order
/// (program order), and each threadblock's ops are listed in that order.
struct RankProgram {
  std::vector<Op> ops;
  /// Buffer sizes in chunks (MSCCL i_chunks/o_chunks/s_chunks semantics:
  /// nominal sizes; 0 for a buffer the rank never addresses).
  int32_t inputChunks = 0;
  int32_t outputChunks = 0;
  int32_t scratchChunks = 0;
};

/// Sets `rp`'s input and output sizes for collective `c` when the whole
/// buffer is `full` chunks and a rank's own share `local` (the all-gather
/// input, the reduce-scatter output): an in-place rank addresses its
/// output only through the input (all-reduce, reduce-scatter) or its input
/// through the output (all-gather), so that buffer is 0.
void setCollectiveBuffers(RankProgram &rp, Collective c, int32_t full,
                          int32_t local, bool inplace);
/// One past the highest scratch chunk `rp`'s ops address (0: none).
int32_t scratchExtent(const RankProgram &rp);

/// A whole schedule: plain data. Concurrent const access is safe (the rank
/// threads of runtime::Plan::run read one shared schedule); a write needs
/// exclusive access.
struct Schedule {
  std::string name;
  Collective collective = Collective::AllReduce;
  int32_t numRanks = 0;
  /// MSCCL nchunksperloop: the total buffer is cut into this many units.
  int32_t chunksPerLoop = 0;
  /// In-place: input and output alias as MSCCL defines per collective
  /// (allreduce: same memory; allgather: in[j] is out[rank*N/g + j];
  /// reducescatter: out[j] is in[rank*N/g + j]).
  bool inplace = false;
  /// Root rank of broadcast and reduce; kNone otherwise.
  RankId root = kNone;
  Stage stage = Stage::Lowered;
  /// Number of channels (valid from ChannelsAssigned on).
  int32_t numChannels = 0;
  std::vector<RankProgram> ranks;

  /// One past the largest message id in use.
  MsgId numMessages() const;
  /// Nominal buffer sizes of this collective (docs/MscclXmlFormat.md 2.7).
  int32_t nominalInputChunks() const;
  int32_t nominalOutputChunks() const;
};

/// Where a message's two ends live.
struct MsgEnds {
  RankId sender = kNone;
  OpId sendOp = kNone;
  RankId receiver = kNone;
  OpId recvOp = kNone;
};
/// Index of every message's ends; entries without a sender or receiver keep
/// kNone (the verifier reports them).
std::vector<MsgEnds> indexMessages(const Schedule &s);

} // namespace topocc::ir

#endif // TOPOCC_IR_SCHEDULE_H
