//===- ir/Target.h - What the output's runtime can execute ------*- C++ -*-===//
//
// The limits of the runtime a schedule is written for, as one value chosen
// from the output format (`--emit`): channels, steps per threadblock,
// threadblocks per rank, the width of dependency ids, and whether coded
// (linear-combination) ops may appear. Every pass and check reads its limit
// from here instead of a literal; the MSCCL executor's numbers are the
// constants below (docs/MscclXml.md lists where each comes from).
// Stage: all. A plain value type: safe to copy and share between threads.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_IR_TARGET_H
#define TOPOCC_IR_TARGET_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <limits>
#include <string>

namespace topocc::ir {

/// MSCCL connects channels 0..nchannels-1 with nchannels <= 32 (MAXCHANNELS).
constexpr int32_t kMscclMaxChannels = 32;
/// The most rings (--channels) a ring schedule or the ring search takes
/// where the output has no channel limit (plan JSON, the textual IR).
constexpr int32_t kMaxRingChannels = 64;
/// The most chunks per loop (units) a lowering emits: MSCCL stores offsets
/// and counts in 16 signed bits.
constexpr int64_t kMaxChunksPerLoop = 32767;
/// The lowerings' message when `units` exceeds kMaxChunksPerLoop:
/// "PRODUCT = UNITS units exceeds 32767 (MSCCL stores offsets in 16 bits);
/// ADVICE"; empty when it fits.
std::string tooManyUnits(int64_t units, llvm::StringRef product,
                         llvm::StringRef advice);
/// MSCCL_MAX_NUM_STEPS of a default msccl-executor-nccl build.
constexpr int32_t kMscclMaxSteps = 64;
/// A step's dependency id is stored in 8 signed bits.
constexpr int32_t kMscclMaxDependencyTarget = 127;
/// Threadblocks per rank the XML encoding allows.
constexpr int32_t kMscclMaxThreadblocks = 1024;
/// Chunks one step may move: cnt < MSCCL_MAX_COUNT = 72.
constexpr int32_t kMscclMaxStepCount = 71;
/// SMs of the GPU `topocc compile` assumes without --sm-count when there is
/// no topology to take the GPU model from (--run-pass; an A100).
constexpr int32_t kDefaultSmCount = 108;
/// RCCL's built-in MSCCL: MSCCL_MAX_NUM_THREAD_BLOCKS and
/// MSCCL_MAX_NUM_STEPS of src/include/msccl/msccl_struct.h, fixed when RCCL
/// is built (docs/MscclXml.md, "MSCCL runtimes").
constexpr int32_t kRcclMaxThreadblocks = 64;
constexpr int32_t kRcclMaxSteps = 64;

/// The runtime that executes an MSCCL XML file: msccl-executor-nccl (NVIDIA
/// GPUs) or RCCL's built-in MSCCL (AMD GPUs).
enum class MscclRuntime : uint8_t { MscclExecutor, Rccl };

/// "msccl-executor", "rccl"; a user error naming them otherwise.
llvm::Expected<MscclRuntime> parseMscclRuntime(llvm::StringRef name);
llvm::StringRef mscclRuntimeName(MscclRuntime r);
/// Threadblocks per rank the runtime's parser accepts (0: only the XML
/// encoding's kMscclMaxThreadblocks) and the largest steps per threadblock
/// it can be built with (TargetLimits::kNoLimit: a build-time choice, given
/// as --max-steps).
int32_t mscclRuntimeMaxThreadblocks(MscclRuntime r);
int32_t mscclRuntimeMaxSteps(MscclRuntime r);

/// The formats `topocc compile --emit` writes.
enum class OutputFormat : uint8_t { MscclXml, Ir, NcclGraph, Plan };

/// "msccl-xml", "ir", "nccl-graph", "plan"; a user error naming them
/// otherwise.
llvm::Expected<OutputFormat> parseOutputFormat(llvm::StringRef name);
llvm::StringRef outputFormatName(OutputFormat f);

struct TargetLimits {
  static constexpr int32_t kNoLimit = std::numeric_limits<int32_t>::max();

  /// The format these limits are for. The default value is the textual IR
  /// held to MSCCL's encoding limits (so that it also converts to MSCCL
  /// XML) without a residency limit: what library callers get unless they
  /// choose a format.
  OutputFormat format = OutputFormat::Ir;

  /// Channels the output has; 0 means no limit.
  int32_t maxChannels = kMscclMaxChannels;
  /// Steps one threadblock may hold (MSCCL_MAX_NUM_STEPS of the runtime).
  int32_t maxStepsPerThreadblock = kMscclMaxSteps;
  /// Threadblocks one rank may launch at once: the MSCCL executor's blocks
  /// spin-wait on each other, so they must all be resident, one per SM; a
  /// schedule over the limit would hang. 0 means no limit.
  int32_t maxThreadblocksPerRank = 0;
  /// Threadblocks per rank the encoding can number.
  int32_t maxThreadblocks = kMscclMaxThreadblocks;
  /// Largest step index a dependency may name.
  int32_t maxDependencyTarget = kMscclMaxDependencyTarget;
  /// Chunks one op may move (an MSCCL step's cnt).
  int32_t maxStepCount = kMscclMaxStepCount;
  /// Whether coded schedules (lincomb ops with coefficients) can be
  /// written; MSCCL XML and NCCL graph files cannot carry them.
  bool codedOps = true;
  /// MSCCL XML: the runtime the file is for, and the SM count of the GPU
  /// (0: none given); maxThreadblocksPerRank is the smaller of the SM count
  /// and the runtime's limit.
  MscclRuntime runtime = MscclRuntime::MscclExecutor;
  int32_t smCount = 0;

  /// The limits of `format`: MSCCL XML has MSCCL's encoding limits and
  /// launches at most `smCount` threadblocks per rank (0: no limit); an
  /// NCCL graph file lists at most MSCCL's channel count of rings; plan
  /// JSON and the textual IR have no limits and carry coded schedules.
  /// `maxSteps` is the runtime's steps per threadblock for every format.
  /// MSCCL XML run by `runtime` launches at most min(smCount, the
  /// runtime's threadblock limit) threadblocks per rank.
  static TargetLimits
  forFormat(OutputFormat format, int32_t smCount, int32_t maxSteps,
            MscclRuntime runtime = MscclRuntime::MscclExecutor) {
    TargetLimits t;
    t.format = format;
    t.maxStepsPerThreadblock = maxSteps;
    switch (format) {
    case OutputFormat::MscclXml: {
      t.runtime = runtime;
      t.smCount = smCount;
      const int32_t cap = mscclRuntimeMaxThreadblocks(runtime);
      t.maxThreadblocksPerRank =
          cap > 0 && (smCount <= 0 || cap < smCount) ? cap : smCount;
      t.codedOps = false;
      break;
    }
    case OutputFormat::NcclGraph:
      t.codedOps = false;
      break;
    case OutputFormat::Ir:
    case OutputFormat::Plan:
      t.maxChannels = 0;
      t.maxThreadblocks = kNoLimit;
      t.maxDependencyTarget = kNoLimit;
      t.maxStepCount = kNoLimit;
      break;
    }
    return t;
  }

  /// Whether maxThreadblocksPerRank is the runtime's limit rather than the
  /// GPU's SM count.
  bool threadblocksLimitedByRuntime() const {
    return maxThreadblocksPerRank > 0 &&
           maxThreadblocksPerRank == mscclRuntimeMaxThreadblocks(runtime) &&
           (smCount <= 0 || smCount > maxThreadblocksPerRank);
  }

  /// maxChannels as a count to compare against (kNoLimit for none).
  int32_t channelLimit() const {
    return maxChannels > 0 ? maxChannels : kNoLimit;
  }

  /// The largest --channels (rings) for this output: MSCCL's 32 for MSCCL
  /// XML and NCCL graph files, kMaxRingChannels for plans and the IR.
  int32_t ringChannelLimit() const {
    return channelLimit() < kMaxRingChannels ? channelLimit()
                                             : kMaxRingChannels;
  }
};

} // namespace topocc::ir

#endif // TOPOCC_IR_TARGET_H
