//===- ir/Semantics.h - Symbolic execution of a schedule -------*- C++ -*-===//
//
// Symbolic semantics: every (rank, buffer, chunk) slot holds a linear
// combination of input chunks. Ops run in a topological order of the combined
// graph; a send captures the value at send time. Checks the postcondition of
// the schedule's collective. REQUIRES: an acyclic schedule with matched
// messages (run the structural verifier first).
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_IR_SEMANTICS_H
#define TOPOCC_IR_SEMANTICS_H

#include "ir/Schedule.h"

#include "llvm/Support/Error.h"

#include <map>
#include <string>
#include <vector>

namespace topocc::ir {

/// coeff * (input chunk `chunk` of rank `rank`).
struct Term {
  RankId rank = 0;
  int32_t chunk = 0;
  double coeff = 0.0;
  friend bool operator==(const Term &, const Term &) = default;
};

/// A linear combination of input chunks: terms sorted by (rank, chunk),
/// no zero coefficients, no duplicates.
struct SymValue {
  std::vector<Term> terms;
  bool isUndefined = true; ///< slot never written (and not an input)
  friend bool operator==(const SymValue &, const SymValue &) = default;
};

/// Final contents of every rank's output (and in-place aliased) chunks.
struct SymbolicResult {
  /// [rank][chunk] of the output buffer as the collective defines it
  /// (for in-place schedules, read through the aliasing).
  std::vector<std::vector<SymValue>> output;
};

/// Executes the schedule symbolically. Fails (internal error) when the
/// schedule has a cycle or an unmatched message.
llvm::Expected<SymbolicResult> execute(const Schedule &s);

/// The value the collective requires at out[rank][chunk]. For reduce, the
/// outputs of ranks other than the root are unconstrained: undefined.
SymValue expectedOutput(const Schedule &s, RankId rank, int32_t chunk);

/// Per rank, the largest absolute coefficient difference between the computed
/// and the required output over all chunks (0 for an exact schedule). For
/// coded schedules this is the error measure e_i.
std::vector<double> outputError(const Schedule &s, const SymbolicResult &r);

/// Error::success() when every output chunk equals the postcondition exactly
/// (within `tolerance` on coefficients); otherwise an error naming the first
/// wrong slots with computed and expected values.
llvm::Error checkPostcondition(const Schedule &s, double tolerance = 1e-9);

/// "r0[2] + 2*r1[2]"; "undef" for an undefined value, "0" for no terms.
std::string formatValue(const SymValue &v);

/// Whether `got` equals `want` within `tolerance` on every coefficient (an
/// undefined value only matches an undefined one).
bool valuesMatch(const SymValue &got, const SymValue &want, double tolerance);

/// One output chunk that differs from the postcondition.
struct WrongOutput {
  RankId rank = kNone;
  int32_t chunk = 0;
  SymValue got;
  SymValue expected;
};

/// Every output chunk of `r` that differs from expectedOutput, in (rank,
/// chunk) order. Chunks the collective leaves unconstrained (reduce: the
/// outputs of ranks other than the root) are skipped.
std::vector<WrongOutput> findWrongOutputs(const Schedule &s,
                                          const SymbolicResult &r,
                                          double tolerance = 1e-9);

/// "rank 1 out[2]: got r0[2] + 2*r1[2], expected r0[2] + r1[2] + r2[2]".
std::string describeWrongOutput(const WrongOutput &w);

} // namespace topocc::ir

#endif // TOPOCC_IR_SEMANTICS_H
