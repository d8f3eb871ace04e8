//===- compiler/algorithms/CodedErrorBound.h - The error contract -*- C++ -*-===//
//
// The error contract of a coded all-reduce schedule (CERAR, hier-CERAR;
// docs/Algorithms-cerar.md section 8): for inputs x_0..x_{N-1} (x the
// vector of all of them) every rank r's output y_r satisfies
//   ||y_r - sum_Q x_Q||_2 <= (e_r + Gamma_r(T)) ||x||_2
// when the plan runs in dtype T. e_r is the spectral norm of rank r's error
// operator in exact arithmetic (output chunks over every rank's input
// chunks, minus the all-reduce): it holds for every input. Gamma_r(T)
// bounds the rounding of the runtime's kernels to first order in the unit
// roundoffs (ir::executeWithRounding): op result k rounds by independent
// parts i, each at most u_i |f_ki . x(p)| at element position p (f_ki a
// linear form over the inputs at p, u_i the unit roundoff of fp32 or of
// T), and enters out[r][j] with coefficient J_jk. Two bounds follow:
//   - worst case, for every input and every rounding (Cauchy-Schwarz on
//     every part):
//       Gamma_r = || (sum_k |J_jk| sum_i u_i ||f_ki||)_j ||_2;
//   - probable, the contract: under the standard probabilistic model of
//     rounding (independent, mean-zero errors; Higham and Mary, SIAM J.
//     Sci. Comput. 41(5), 2019) Hoeffding's inequality bounds out[r][j]'s
//     error at p by lambda sqrt(sum_k J_jk^2 sum_i u_i^2 (f_ki . x(p))^2)
//     with probability at least 1 - 2 exp(-lambda^2 / 2) per element, so
//     summed over chunks and positions
//       Gamma_r = lambda sqrt(lambda_max(H_r)),
//       H_r = sum_k (sum_j J_jk^2) sum_i u_i^2 f_ki f_ki^T
//     for every input. kProbableLambda = 9 makes the per-element bounds
//     hold for all of 2^36 output elements at once (64 ranks x 2^30) with
//     probability above 1 - 1e-6. Above kMaxGramDim input symbols H_r is not
//     formed and its trace, an upper bound of lambda_max, is used. The
//     contract takes the smaller of the two (with few roundings per output
//     the worst case is the smaller).
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_ALGORITHMS_CODEDERRORBOUND_H
#define TOPOCC_COMPILER_ALGORITHMS_CODEDERRORBOUND_H

#include "compiler/algorithms/CerarPolicy.h"
#include "ir/Schedule.h"

#include "llvm/Support/Error.h"

#include <array>
#include <vector>

namespace topocc::cerar {

/// The unit roundoff of `w` (fp32 2^-24, fp16 2^-11, bf16 2^-8).
double unitRoundoff(WireDtype w);

/// lambda of the probable rounding bound (the file comment).
constexpr double kProbableLambda = 9.0;
/// Largest number of input symbols (ranks x input chunks) for which H_r is
/// formed (dim^2 doubles per rank, one eigenvalue problem per dtype).
constexpr int kMaxGramDim = 512;

struct ErrorContract {
  /// e_r: ||E_r||_2 per rank, E_r = O_r - [I ... I] over all input chunks.
  std::vector<double> exact;
  /// Worst case, per rank and output chunk: sum_k |J_jk| sum_i ||f_ki||
  /// over the fp32 parts (a) and the stores (s).
  struct Chunk {
    double a = 0, s = 0;
  };
  std::vector<std::vector<Chunk>> chunks;
  /// Probable, per rank: sqrt(lambda_max(H_r)) / (the dtype's unit
  /// roundoff), by dtype (fp32, fp16, bf16): Gamma_r = lambda u_T x this.
  std::vector<std::array<double, 3>> probable;
  bool gramFormed = true; ///< false: traces (above kMaxGramDim)

  /// max_r e_r.
  double exactBound() const;
  /// Gamma_r(w): the contract's (the smaller of the probable bound and the
  /// worst case, which also holds under the probabilistic model), or the
  /// worst case.
  double roundoff(int rank, WireDtype w, bool worstCase = false) const;
  /// max_r (e_r + Gamma_r(w)): the contract's bound in `w` (probable
  /// rounding), or the worst case.
  double bound(WireDtype w, bool worstCase = false) const;
  /// The plan's roundoffGain for `w` (worstCase: roundoffGainWorst):
  /// (bound(w) - exactBound()) / u_w, so that exactBound() + u_w g =
  /// bound(w) (runtime::valueErrorBound).
  double roundoffGain(WireDtype w, bool worstCase = false) const;
};

/// Executes `s` (a structurally valid all-reduce) with rounding events and
/// measures its contract. O(ops x terms) time; one SVD per rank.
llvm::Expected<ErrorContract> analyzeErrorContract(const ir::Schedule &s);

} // namespace topocc::cerar

#endif // TOPOCC_COMPILER_ALGORITHMS_CODEDERRORBOUND_H
