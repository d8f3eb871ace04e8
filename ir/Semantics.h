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

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <climits>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace topocc::ir {

struct CombinedGraph;

/// coeff * (input chunk `chunk` of rank `rank`).
struct Term {
  RankId rank = 0;
  int32_t chunk = 0;
  double coeff = 0.0;
  friend bool operator==(const Term &, const Term &) = default;
};

/// An immutable, shared list of terms: copying a value (a send, a copy, a
/// broadcast down a tree) copies a pointer, not the terms, so symbolic
/// execution of schedules whose values have one term per rank stays linear
/// in the terms it creates. Reads like a const std::vector<Term>.
///
/// A list of at least kCompactTerms terms that all have coefficient 1 on
/// one chunk (a partial sum of an exact reduction) is held compactly, as
/// that chunk and a bit set of ranks: an all-reduce's partial sums are
/// O(ranks) terms each and O(ranks x chunks) of them are alive at once, so
/// explicit terms made verification cubic in the ranks (3.3 GB at 256
/// ranks). get() expands a compact list on first use and keeps the
/// expansion; size(), ==, and unionOfDisjoint() do not expand.
class SharedTerms {
public:
  static constexpr size_t kCompactTerms = 4;

  SharedTerms() = default;
  SharedTerms(std::initializer_list<Term> t)
      : SharedTerms(std::vector<Term>(t)) {}
  explicit SharedTerms(std::vector<Term> &&t);

  const std::vector<Term> &get() const;
  size_t size() const { return p ? p->count : 0; }
  /// The chunk of the first term, without expanding a compact list.
  /// REQUIRES: !empty().
  int32_t chunkOfFirst() const {
    return p->compact ? p->chunk : get()[0].chunk;
  }
  bool empty() const { return size() == 0; }
  const Term &operator[](size_t i) const { return get()[i]; }
  std::vector<Term>::const_iterator begin() const { return get().begin(); }
  std::vector<Term>::const_iterator end() const { return get().end(); }
  /// Same terms (a shared list compares in O(1), compact ones by their
  /// bits).
  friend bool operator==(const SharedTerms &a, const SharedTerms &b);
  /// Identity of the shared list (null when empty), for memoising checks.
  const void *identity() const { return p.get(); }
  /// x + y when both are coefficient-1 terms of one chunk on disjoint rank
  /// sets (compact, or explicit and short), without expanding either;
  /// nullopt otherwise (the caller merges the terms).
  static std::optional<SharedTerms> unionOfDisjoint(const SharedTerms &x,
                                                    const SharedTerms &y);

private:
  struct Body {
    size_t count = 0;
    bool compact = false;
    int32_t chunk = 0;          ///< compact: the chunk of every term
    RankId base = 0;            ///< compact: rank of bit 0 (a member)
    std::vector<uint64_t> bits; ///< compact: ranks base + i, last word != 0
    /// Explicit terms, or a compact body's expansion once get() asked.
    mutable std::vector<Term> terms;
    mutable bool expanded = false;
  };
  /// The compact form of `t` when it has one; null otherwise.
  static std::shared_ptr<const Body> compactOf(const std::vector<Term> &t);
  std::shared_ptr<const Body> p;
};

/// A linear combination of input chunks: terms sorted by (rank, chunk),
/// no zero coefficients, no duplicates.
struct SymValue {
  SharedTerms terms;
  bool isUndefined = true; ///< slot never written (and not an input)
  /// Executed for a ChunkBatch: the value has terms of input chunks outside
  /// the batch (`terms` then empty). It matches no expected value.
  bool isOpaque = false;
  friend bool operator==(const SymValue &, const SymValue &) = default;
};

/// Input chunk indexes [begin, end): execute() tracks the terms of these
/// chunks only, every other input is opaque. Exact (all coefficients 1,
/// no lincomb) schedules combine one chunk's terms into each value, so
/// checking the outputs whose expected chunk is in the batch, batch by
/// batch, checks the same as one execution, with the memory of a batch:
/// an all-reduce's partial sums are ranks / 8 bytes each, one per slot.
struct ChunkBatch {
  int32_t begin = 0;
  int32_t end = INT32_MAX;
  bool contains(int32_t chunk) const { return chunk >= begin && chunk < end; }
};

/// Final contents of every rank's output (and in-place aliased) chunks.
struct SymbolicResult {
  /// [rank][chunk] of the output buffer as the collective defines it
  /// (for in-place schedules, read through the aliasing).
  std::vector<std::vector<SymValue>> output;
};

/// Executes the schedule symbolically (the terms of the input chunks in
/// `batch`). Fails (internal error) when the schedule has a cycle or an
/// unmatched message.
llvm::Expected<SymbolicResult> execute(const Schedule &s,
                                       ChunkBatch batch = {});
/// execute() for each of `batches` in `order`, a topological order of `g`
/// = buildCombinedGraph(s) that the caller has (the verifier's deadlock
/// check computes it), on one set of slots; `check` sees each batch's
/// result and returns false to stop.
llvm::Error executeBatches(
    const Schedule &s, llvm::ArrayRef<ChunkBatch> batches,
    const CombinedGraph &g, const std::vector<uint32_t> &order,
    llvm::function_ref<bool(ChunkBatch, const SymbolicResult &)> check);

/// One op result's rounding in the runtime's kernels (runtime/DType.cpp):
/// an op that computes sum_j c_j s_j does it in fp32, term by term in the
/// op's order, with fp32 coefficients, and stores the result once in the
/// buffer's type. To first order its result differs from the exact
/// combination of its (computed) sources, with the coefficients cast to
/// fp32 as the kernels cast them (exactly: the symbols carry the cast
/// coefficients), by independent roundings, one per part: the product of
/// every coefficient other than +-1 (at most u_fp32 |c_j s_j|), every
/// addition (u_fp32 |S_i|, S_i the
/// partial sum it produces) and the store (u_buffer |result|; none for fp32
/// buffers, whose accumulator is the stored value). A part's magnitude at
/// element position p is at most its unit roundoff times
/// |scale * form . x(p)|, x(p) every rank's input at position p of every
/// input chunk. Copies and unit-coefficient receives do not round.
struct RoundingPart {
  double scale = 1;
  SharedTerms form; ///< the exact linear form (input chunks only)
  bool store = false; ///< the store in the buffer's type (else fp32)
};
struct RoundingEvent {
  std::vector<RoundingPart> parts;
};

/// execute() with the kernels' fp32 coefficients that also gives every
/// rounding op result its own symbol:
/// a value's terms on rank s.numRanks are rounding events, chunk = the
/// index into `events`, coefficient = how the event enters the value. The
/// terms on ranks below s.numRanks are execute()'s with fp32 coefficients.
llvm::Expected<SymbolicResult>
executeWithRounding(const Schedule &s, std::vector<RoundingEvent> &events);

/// What the collective requires at out[rank][chunk], without building it:
/// input chunk `chunk` of `rank` (Input), the sum over all ranks of input
/// chunk `chunk` (Sum), or nothing (Undefined: for reduce, the outputs of
/// ranks other than the root are unconstrained).
struct ExpectedForm {
  enum Kind { Undefined, Input, Sum } kind = Undefined;
  RankId rank = 0;
  int32_t chunk = 0;
};
ExpectedForm expectedForm(const Schedule &s, RankId rank, int32_t chunk);

/// Whether the postcondition constrains out[rank][*] at all.
bool isConstrained(const Schedule &s, RankId rank);

/// The value the collective requires at out[rank][chunk] (expectedForm).
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
/// outputs of ranks other than the root) are skipped, and so are those
/// whose expected value is of an input chunk outside `batch` (an expected
/// value with no terms belongs to the batch that starts at 0).
std::vector<WrongOutput> findWrongOutputs(const Schedule &s,
                                          const SymbolicResult &r,
                                          double tolerance = 1e-9,
                                          ChunkBatch batch = {});

/// "rank 1 out[2]: got r0[2] + 2*r1[2], expected r0[2] + r1[2] + r2[2]".
std::string describeWrongOutput(const WrongOutput &w);

} // namespace topocc::ir

#endif // TOPOCC_IR_SEMANTICS_H
