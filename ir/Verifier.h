//===- ir/Verifier.h - Structure, matching and deadlock freedom -*- C++ -*-===//
//
// Checks a Schedule against the invariants of its stage: operands in range,
// every message matched once with equal counts, FIFO order per (sender,
// receiver, channel), an acyclic combined graph (deadlock freedom; a cycle is
// reported as IR text), no unordered read/write of one slot, and the stage
// invariants (one send and one receive peer per threadblock and channel; at
// most one cross-threadblock dependency per op after legalization).
// verifySchedule also runs the symbolic semantics and checks the collective's
// postcondition unless options.checkSemantics is false.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_IR_VERIFIER_H
#define TOPOCC_IR_VERIFIER_H

#include "ir/Schedule.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace topocc::ir {

/// The most chunk slots (input, output at least nominal, and scratch, summed
/// over ranks) a schedule may declare: the race check and the semantics keep
/// state per slot. 2^26: a 1024-rank all-reduce with 32768 chunks per loop.
inline constexpr int64_t kMaxVerifiedSlots = int64_t(1) << 26;

/// The chunk slots the verifier keeps state for: every rank's input and
/// output (at least the collective's nominal sizes) and scratch.
int64_t verifiedSlots(const Schedule &s);

/// Phases can be switched off; with checkStructure off the schedule
/// REQUIRES well-formed operands, peers and messages (the other phases index
/// with them).
struct VerifyOptions {
  bool checkStructure = true;
  bool checkDeadlock = true;
  bool checkRaces = true;
  bool checkSemantics = true;
  /// Limit on listed problems (the first ones, in a deterministic order).
  unsigned maxProblems = 20;
};

/// One problem found, with enough context to locate it in the printed IR.
struct VerifyProblem {
  RankId rank = kNone;
  OpId op = kNone;
  std::string message;
};

/// Every problem found (empty when the schedule is valid).
std::vector<VerifyProblem> findProblems(const Schedule &s,
                                        const VerifyOptions &opts = {});

/// "rank R %OP: message", "rank R: message" or "message" (without a rank).
std::string formatProblem(const VerifyProblem &p);

/// Error::success() when valid; otherwise an error listing the problems as
/// "rank R %OP: message" lines.
llvm::Error verifySchedule(const Schedule &s, const VerifyOptions &opts = {});

} // namespace topocc::ir

#endif // TOPOCC_IR_VERIFIER_H
