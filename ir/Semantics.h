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

/// The value the collective requires at out[rank][chunk].
SymValue expectedOutput(const Schedule &s, RankId rank, int32_t chunk);

/// Per rank, the largest absolute coefficient difference between the computed
/// and the required output over all chunks (0 for an exact schedule). For
/// coded schedules this is the error measure e_i.
std::vector<double> outputError(const Schedule &s, const SymbolicResult &r);

/// Error::success() when every output chunk equals the postcondition exactly
/// (within `tolerance` on coefficients); otherwise an error naming the first
/// wrong slots with computed and expected values.
llvm::Error checkPostcondition(const Schedule &s, double tolerance = 1e-9);

std::string formatValue(const SymValue &v);

} // namespace topocc::ir

#endif // TOPOCC_IR_SEMANTICS_H
