//===- compiler/algorithms/Cerar.h - CERAR code designs ---------*- C++ -*-===//
//
// Codes for CERAR, the coded approximate ring all-reduce
// (docs/Algorithms-cerar.md, whose section numbers are used below): N ranks
// on a unidirectional ring, each rank's buffer cut into c components,
// L = c + N - 2 rounds. Rank k injects W_k = E_k G_k (E_k: c x c) and decodes
// s_k = G_k + D_k Y_k (D_k: c x L). Constructions: the exact one for c <= N
// (section 3.1), the explicit Vandermonde one (3.2), the confluent
// multiplicative perturbation (3.3, recommended) and the
// condition-number-constrained optimisation by projected alternating least
// squares (3.4). Each design reports the per-rank error
// e_i = ||[D_i Z_{h-1} E_{i-h} - I]_h||_2, condition numbers and nonzeros per
// row. Eigen is used only inside Cerar.cpp. Library code: never prints;
// requests beyond what double precision supports are user errors.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_ALGORITHMS_CERAR_H
#define TOPOCC_COMPILER_ALGORITHMS_CERAR_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace topocc::cerar {

/// A dense row-major matrix of doubles (the interface type; Eigen stays in
/// the .cpp files).
struct Matrix {
  int rows = 0, cols = 0;
  std::vector<double> data;

  Matrix() = default;
  Matrix(int r, int c) : rows(r), cols(c), data(size_t(r) * size_t(c), 0.0) {}
  static Matrix identity(int n);
  double &operator()(int r, int c) { return data[size_t(r) * cols + c]; }
  double operator()(int r, int c) const { return data[size_t(r) * cols + c]; }
  /// Entries with |x| > tol.
  int nonzeros(double tol = 0.0) const;
};

enum class Construction { Exact, Vandermonde, Perturbed, Optimized };
/// "exact", "vandermonde", "perturbed", "optimized".
llvm::StringRef constructionName(Construction c);
std::optional<Construction> constructionFromName(llvm::StringRef s);

/// Limits of what a design may ask for (sizes keep the dense linear algebra
/// small; the condition limit keeps round-off below 1e-4 relative).
constexpr int kMaxRanks = 64;
constexpr int kMaxComponents = 256;
/// Largest encoder condition number accepted: fp64 round-off amplified by
/// kappa stays below 2.2e-16 * 1e11 ~ 2e-5.
constexpr double kMaxCondition = 1e11;

struct DesignRequest {
  int ranks = 0;      ///< N >= 2
  int components = 0; ///< c >= 1
  Construction construction = Construction::Perturbed;
  /// eps of the Vandermonde and perturbed constructions; 0 = derived from
  /// kappaMax when set, else 1e-2. Ignored by exact; the optimised design
  /// starts from the perturbed one with this eps when kappaMax is 0.
  double eps = 0;
  /// Condition-number limit on every E_k (0 = none). For vandermonde and
  /// perturbed it picks the smallest eps on the grid 10^(-x/20) that meets
  /// it; for optimized it is the constraint (default 1e3).
  double kappaMax = 0;
  int iterations = 30; ///< ALS iterations (optimized)
};

/// One code and its figures of merit.
struct Design {
  int ranks = 0, components = 0, rounds = 0; ///< N, c, L = c + N - 2
  Construction construction = Construction::Perturbed;
  double eps = 0;      ///< 0 for exact
  double kappaMax = 0; ///< the constraint (optimized; else as requested)
  std::vector<Matrix> encoders; ///< E_k, c x c, k = 0..N-1
  std::vector<Matrix> decoders; ///< D_i, c x L, i = 0..N-1

  /// Companion family (exact, perturbed): E_k = C^k R, D_i = R^-1 C^(1-i) Q.
  bool companion = false;
  std::vector<double> poly;       ///< monic p, coefficients p_0..p_c
  Matrix basis;                   ///< R
  std::vector<Matrix> decodeMaps; ///< M_i = R^-1 C^-i (in-place decode)
  /// tail[n - c] = coeffs(x^n mod p) for n = c..L (length c each).
  std::vector<std::vector<double>> tail;

  std::vector<double> rankError;        ///< e_i
  double worstError = 0;                ///< max_i e_i
  std::vector<double> encoderCondition; ///< kappa_2(E_k)
  double maxCondition = 0;
  double maxDecoderNorm = 0;   ///< max_i ||D_i||_2
  double objective = 0;        ///< F = sum_i sum_h ||Err_{i,h}||_F^2
  double encoderNnzPerRow = 0; ///< max_k nnz(E_k) / c
  double decoderNnzPerRow = 0; ///< max_i nnz(D_i) / c
  /// ALS: worst error of the starting (perturbed) code, and its eps.
  double initialError = 0, initialEps = 0;
  bool isExact(double tol = 1e-12) const { return worstError <= tol; }
};

/// Builds a design. User errors: N < 2, c < 1, sizes above the limits,
/// exact with c > N >= 3 (no exact code exists), eps outside (0, 1),
/// a kappaMax that no eps meets, and any design whose condition number
/// exceeds kMaxCondition or whose numbers are not finite ("beyond double
/// precision").
llvm::Expected<Design> makeDesign(const DesignRequest &req);

/// The canonical real divisor p_r of x^N - 1 of degree r (section 3.3.1),
/// monic, coefficients p_0..p_r. REQUIRES: 1 <= r <= N.
std::vector<double> canonicalDivisor(int n, int r);

/// Recomputes e_i, kappa, norms and nonzeros of `d` from its matrices.
void computeMetrics(Design &d);

/// The reference protocol of section 2.2 on scalar components (one value
/// per component): messages m_k(t), received-and-cancelled y_k(t),
/// injections W_k and outputs s_k = G_k + D_k Y_k.
struct Trace {
  std::vector<std::vector<double>> injections; ///< [k][tau]
  std::vector<std::vector<double>> messages;   ///< [t][k]: m_k(t)
  std::vector<std::vector<double>> cancelled;  ///< [t][k]: y_k(t)
  std::vector<std::vector<double>> outputs;    ///< [k][j]
};
/// REQUIRES: inputs.size() == N, each of length c.
Trace simulate(const Design &d, const std::vector<std::vector<double>> &inputs);

/// kappa_2 of a square matrix (infinity when singular).
double conditionNumber(const Matrix &m);
/// ||m||_2.
double spectralNorm(const Matrix &m);

} // namespace topocc::cerar

#endif // TOPOCC_COMPILER_ALGORITHMS_CERAR_H
