//===- backends/PlanJson.h - The executable plan (JSON) ---------*- C++ -*-===//
//
// Emits and loads the plan the topocc runtime executes (docs/PlanFormat.md):
// versioned JSON carrying the generator, the topology's content hash, the
// collective, dtype rules, buffer sizes in chunks and every rank's ops.
// Stage: after compile() (any verified schedule). Loading validates every
// field (errors name the file and the JSON path) and re-verifies the schedule.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_BACKENDS_PLANJSON_H
#define TOPOCC_BACKENDS_PLANJSON_H

#include "ir/Schedule.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace topocc::backends {

/// The plan format version this code writes and reads.
constexpr int kPlanFormatVersion = 1;

/// What a plan records besides the schedule.
/// The dtype names of PlanMeta::roundoffGain's entries, in order.
inline constexpr const char *kRoundoffDtypes[3] = {"fp32", "fp16", "bf16"};

struct PlanMeta {
  std::string generator = "topocc"; ///< e.g. "topocc 0.1.0"
  std::string topologyName;         ///< empty when not compiled from a file
  uint64_t topologyHash = 0;        ///< topologyHash() of it, 0 when none
  std::string algorithm;            ///< "ring", ...
  /// Coded (CERAR) plans: the error contract of docs/Algorithms-cerar.md
  /// section 8, ||y_r - sum_Q x_Q||_2 <= bound * ||x||_2 for every rank r
  /// (x: all ranks' inputs). errorBound: the largest per-rank error
  /// operator norm in exact arithmetic, which also bounds every output
  /// coefficient's deviation from the exact collective; 0 for exact plans
  /// (the full postcondition is checked).
  double errorBound = 0;
  /// Coded plans: the rounding of the runtime's kernels, per dtype
  /// (index kRoundoffDtypes: fp32, fp16, bf16). Run in a dtype with unit
  /// roundoff u, bound = errorBound + u * roundoffGain[dtype] under the
  /// probabilistic model of rounding (runtime::valueErrorBound, the
  /// contract), and errorBound + u * roundoffGainWorst[dtype] for every
  /// rounding. 0 for exact plans.
  std::array<double, 3> roundoffGain{};
  std::array<double, 3> roundoffGainWorst{};
};

/// The check every plan goes through when written, loaded or run: the full
/// verifier (ir::verifySchedule) for exact plans; for coded ones
/// (errorBound > 0) structure, deadlock and races, then every output
/// coefficient within errorBound of the collective's.
llvm::Error verifyPlanSchedule(const ir::Schedule &s, double errorBound);

/// A loaded plan: the (re-verified) schedule, its metadata and the hash of
/// its schedule content (planContentHash), which ranks compare at run time.
/// Plain data: concurrent const access is safe (runtime::Plan shares one
/// between rank threads).
struct PlanFile {
  ir::Schedule schedule;
  PlanMeta meta;
  uint64_t contentHash = 0;
};

/// A stable 64-bit FNV-1a hash of the schedule's canonical textual IR.
uint64_t planContentHash(const ir::Schedule &s);

/// "0x" followed by 16 lower-case hex digits.
std::string formatHash(uint64_t h);

/// How planToJson checks its schedule: verifyPlanSchedule, or, for an exact
/// schedule (errorBound 0) that compile() has just verified as it is
/// (CompileResult::verified), not a second time.
enum class PlanCheck { Verify, VerifiedByCompile };

/// The plan as JSON text (deterministic, ends with a newline).
/// REQUIRES: `s` passes ir::verifySchedule (else an error, nothing written).
llvm::Expected<std::string> planToJson(const ir::Schedule &s,
                                       const PlanMeta &meta,
                                       PlanCheck check = PlanCheck::Verify);

/// planToJson in two steps, for a plan written straight to a file (a plan
/// of millions of ops is gigabytes of text): the check, which writes
/// nothing, then the text on `os`, the same bytes as planToJson's.
llvm::Error checkPlan(const ir::Schedule &s, const PlanMeta &meta,
                      PlanCheck check = PlanCheck::Verify);
/// REQUIRES: checkPlan(s, meta) succeeded.
void printPlanJson(llvm::raw_ostream &os, const ir::Schedule &s,
                   const PlanMeta &meta);

/// Parses and validates plan text; `fileName` prefixes every diagnostic
/// ("FILE: JSON.PATH: message").
llvm::Expected<PlanFile> parsePlanJson(llvm::StringRef text,
                                         llvm::StringRef fileName);
llvm::Expected<PlanFile> loadPlanFile(llvm::StringRef path);

//===-- plan sets (compile --emit plan --sizes)
//----------------------------===//
//
// A plan set carries one plan per size window ("variants", each a plan
// object with "minBytes" and "maxBytes"); the runtime runs the variant whose
// window holds the call's size (runtime::Plan::select). docs/Runtime.md,
// "Plan sets".

/// The calls a variant serves: message sizes in bytes as nccl-tests reports
/// them (allreduce: the buffer; allgather: the whole output; reducescatter:
/// the whole input), both bounds inclusive, maxBytes 0 without an upper
/// limit: the MSCCL runtimes' rule for minBytes/maxBytes.
struct PlanWindow {
  int64_t minBytes = 0;
  int64_t maxBytes = 0;
  bool contains(int64_t bytes) const {
    return bytes >= minBytes && (maxBytes == 0 || bytes <= maxBytes);
  }
};

/// User error unless the windows, in order, tile one range: each has
/// minBytes <= maxBytes (maxBytes 0, unbounded, only on the last) and
/// starts at the previous maxBytes + 1. The errors name the two variants
/// that overlap or leave a gap, and the bytes concerned.
llvm::Error checkPlanWindows(llvm::ArrayRef<PlanWindow> windows);

/// The "format" of a plan set.
inline constexpr llvm::StringLiteral kPlanSetFormat = "topocc-plan-set";

/// User error unless every plan is of the first's collective, rank count
/// and in-place mode.
llvm::Error
checkPlanVariantsAgree(llvm::ArrayRef<const ir::Schedule *> schedules);

struct PlanVariant {
  PlanWindow window;
  PlanFile plan;
};

/// A loaded plan file of either kind: a plan file is one variant with the
/// window {0, 0} (every size) and isSet false.
struct PlanSetFile {
  bool isSet = false;
  std::vector<PlanVariant> variants;
};

/// The plan set as JSON text (deterministic): windows[i] with
/// schedules[i] and metas[i]. Errors: checkPlanWindows, variants of
/// different collectives, rank counts or in-place modes, and planToJson's.
llvm::Expected<std::string>
planSetToJson(llvm::ArrayRef<PlanWindow> windows,
              llvm::ArrayRef<const ir::Schedule *> schedules,
              llvm::ArrayRef<PlanMeta> metas);

/// Reads a plan file or a plan set (the same checks as parsePlanJson for
/// every variant, then the windows and the variants' agreement).
llvm::Expected<PlanSetFile> parsePlanSetJson(llvm::StringRef text,
                                             llvm::StringRef fileName);
llvm::Expected<PlanSetFile> loadPlanSetFile(llvm::StringRef path);

} // namespace topocc::backends

#endif // TOPOCC_BACKENDS_PLANJSON_H
