//===- ir/Fingerprint.h - Postcondition of exact schedules by hashing -*- C++
//-*-===//
//
// The collective's postcondition checked on fingerprints instead of symbolic
// sums, for exact schedules (every coefficient 1 and no lincomb: each value
// is a sum of input chunks, each counted a positive whole number of times).
//
// Input chunk c of rank r gets a weight w(r, c), a fixed pseudo-random
// residue modulo the Mersenne prime p = 2^61 - 1, and a slot holds the sum
// of the weights of its value's terms, each times its multiplicity, mod p.
// Ops run as in ir/Semantics.h (the same topological order, aliasing,
// undefined slots and message capture), with addition mod p in place of the
// union of terms. A right value has the required sum's fingerprint. A wrong
// one differs from it by a nonzero linear form in the weights with integer
// coefficients of magnitude below p (multiplicities are bounded by the op
// count), which vanishes for at most one value in p of any one weight:
// the chance that a wrong schedule passes is at most 1/p < 4.4e-19 over the
// weights, however many slots it has (a wrong schedule has a wrong slot;
// that slot alone must collide). The weights do not depend on the schedule.
//
// Cost: 8 bytes per slot and one addition per op and chunk. The symbolic
// sums hold about ranks / 8 bytes per partial sum and cost as much per op,
// which made them most of a 1024-rank compile; the verifier uses them only
// to name what is wrong once a fingerprint has found it (ir/Verifier.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_IR_FINGERPRINT_H
#define TOPOCC_IR_FINGERPRINT_H

#include "ir/Schedule.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <vector>

namespace topocc::ir {

struct CombinedGraph;

/// Whether every value of `s` is a sum of input chunks with positive
/// multiplicities: no lincomb, and every receive-reduce adds with
/// coefficients 1.
bool isExactSchedule(const Schedule &s);

/// The fingerprint modulus, 2^61 - 1.
inline constexpr uint64_t kFingerprintPrime = (uint64_t(1) << 61) - 1;

/// w(r, c): input chunk c of rank r's weight, in [0, kFingerprintPrime).
uint64_t fingerprintWeight(RankId r, int32_t c);

/// An output slot.
struct OutputSlot {
  RankId rank = 0;
  int32_t chunk = 0;
  friend bool operator==(const OutputSlot &, const OutputSlot &) = default;
};

/// Every constrained output slot (in rank, chunk order) whose fingerprint
/// differs from the postcondition's (expectedForm). REQUIRES:
/// isExactSchedule(s); `order` a topological order of `g` =
/// buildCombinedGraph(s) covering every op. Internal error when an op
/// receives a message that was never sent.
llvm::Expected<std::vector<OutputSlot>>
findWrongOutputsByFingerprint(const Schedule &s, const CombinedGraph &g,
                              const std::vector<uint32_t> &order);

} // namespace topocc::ir

#endif // TOPOCC_IR_FINGERPRINT_H
