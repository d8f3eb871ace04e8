//===- compiler/algorithms/Cerar.cpp - CERAR code designs -----------------===//
//
// Constructions of docs/Algorithms-cerar.md section 3 in fp64 with Eigen:
//   exact (3.1)       p = p_c (canonical divisor of x^N - 1), R = I
//   vandermonde (3.2) E_k = Phi_c^-1, D_i = Phi, points 1 + eps(2m/(c-1) - 1)
//   perturbed (3.3)   p = (x^N - 1)^(q-1) p_r, column lN+a of R is
//                     eps^-l x^a (x^N - 1)^l (the confluent member, rho = 0)
//   optimized (3.4)   projected ALS from the perturbed code that meets
//                     kappaMax, keeping the best iterate by worst error
// Companion-family codes are E_k = C^k R, D_i = R^-1 C^(1-i) Q.
//
//===----------------------------------------------------------------------===//

#include "compiler/algorithms/Cerar.h"

#include "support/Diagnostics.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <limits>

namespace topocc::cerar {

namespace {

using Eigen::MatrixXd;

MatrixXd toEigen(const Matrix &m) {
  MatrixXd e(m.rows, m.cols);
  for (int r = 0; r < m.rows; ++r)
    for (int c = 0; c < m.cols; ++c)
      e(r, c) = m(r, c);
  return e;
}

Matrix fromEigen(const MatrixXd &e) {
  Matrix m(static_cast<int>(e.rows()), static_cast<int>(e.cols()));
  for (int r = 0; r < m.rows; ++r)
    for (int c = 0; c < m.cols; ++c)
      m(r, c) = e(r, c);
  return m;
}

/// Product of two polynomials given by coefficients (lowest degree first).
std::vector<double> polyMul(const std::vector<double> &a,
                            const std::vector<double> &b) {
  std::vector<double> out(a.size() + b.size() - 1, 0.0);
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t j = 0; j < b.size(); ++j)
      out[i + j] += a[i] * b[j];
  return out;
}

/// x^N - 1.
std::vector<double> rootsOfUnityPoly(int n) {
  std::vector<double> p(n + 1, 0.0);
  p[0] = -1;
  p[n] = 1;
  return p;
}

/// Singular values, largest first.
Eigen::VectorXd singularValues(const MatrixXd &m) {
  if (m.rows() >= m.cols())
    return Eigen::JacobiSVD<MatrixXd>(m).singularValues();
  return Eigen::JacobiSVD<MatrixXd>(m.transpose()).singularValues();
}

double condOf(const MatrixXd &m) {
  Eigen::VectorXd s = singularValues(m);
  if (s.size() == 0)
    return 1.0;
  double lo = s(s.size() - 1);
  if (!(lo > 0))
    return std::numeric_limits<double>::infinity();
  return s(0) / lo;
}

/// Companion matrix of monic p (degree c): C[j+1][j] = 1, C[j][c-1] = -p_j.
MatrixXd companion(const std::vector<double> &p) {
  int c = static_cast<int>(p.size()) - 1;
  MatrixXd C = MatrixXd::Zero(c, c);
  for (int j = 0; j + 1 < c; ++j)
    C(j + 1, j) = 1.0;
  for (int j = 0; j < c; ++j)
    C(j, c - 1) = -p[j];
  return C;
}

/// Fills a companion-family design from p and R.
void buildCompanion(Design &d, const std::vector<double> &p,
                    const MatrixXd &R) {
  int n = d.ranks, c = d.components, L = d.rounds;
  MatrixXd C = companion(p);
  MatrixXd Cinv = C.inverse();
  MatrixXd Rinv = R.inverse();
  // Q[:, t] = coeffs(x^t mod p); one more column for the tail of x^L.
  MatrixXd Q = MatrixXd::Zero(c, L + 1);
  Q(0, 0) = 1.0;
  for (int t = 1; t <= L; ++t)
    Q.col(t) = C * Q.col(t - 1);
  d.companion = true;
  d.poly = p;
  d.basis = fromEigen(R);
  d.encoders.clear();
  d.decoders.clear();
  d.decodeMaps.clear();
  MatrixXd Ck = MatrixXd::Identity(c, c);
  for (int k = 0; k < n; ++k) {
    d.encoders.push_back(fromEigen(Ck * R));
    Ck = C * Ck;
  }
  MatrixXd Cmi = MatrixXd::Identity(c, c); // C^-i
  for (int i = 0; i < n; ++i) {
    MatrixXd C1mi = C * Cmi; // C^(1-i)
    d.decoders.push_back(fromEigen(Rinv * C1mi * Q.leftCols(L)));
    d.decodeMaps.push_back(fromEigen(Rinv * Cmi));
    Cmi = Cinv * Cmi;
  }
  d.tail.clear();
  for (int t = c; t <= L; ++t) {
    std::vector<double> col(c);
    for (int j = 0; j < c; ++j)
      col[j] = Q(j, t);
    d.tail.push_back(std::move(col));
  }
}

/// Confluent perturbed code (also the exact one when c <= N).
void buildPerturbed(Design &d, double eps) {
  int n = d.ranks, c = d.components;
  int q = (c + n - 1) / n;
  int r = c - (q - 1) * n;
  std::vector<double> base = rootsOfUnityPoly(n);
  std::vector<double> p = canonicalDivisor(n, r);
  for (int l = 0; l + 1 < q; ++l)
    p = polyMul(p, base);
  MatrixXd R = MatrixXd::Zero(c, c);
  std::vector<double> layer{1.0}; // (x^N - 1)^l
  for (int l = 0; l < q; ++l) {
    double scale = std::pow(eps, -l);
    int classes = l + 1 < q ? n : r;
    for (int a = 0; a < classes; ++a)
      for (size_t j = 0; j < layer.size(); ++j)
        if (layer[j] != 0.0)
          R(int(j) + a, l * n + a) = scale * layer[j];
    layer = polyMul(layer, base);
  }
  buildCompanion(d, p, R);
}

void buildVandermonde(Design &d, double eps) {
  int n = d.ranks, c = d.components, L = d.rounds;
  MatrixXd Phi(c, L);
  for (int m = 0; m < c; ++m) {
    double x = c == 1 ? 1.0 : 1.0 + eps * (2.0 * m / (c - 1) - 1.0);
    double v = 1.0;
    for (int t = 0; t < L; ++t) {
      Phi(m, t) = v;
      v *= x;
    }
  }
  MatrixXd E = Phi.leftCols(c).inverse();
  d.companion = false;
  d.encoders.assign(n, fromEigen(E));
  d.decoders.assign(n, fromEigen(Phi));
}

/// Largest encoder condition number of the design (cheap: no error norms).
double maxEncoderCondition(const Design &d) {
  double k = 0;
  for (const Matrix &e : d.encoders)
    k = std::max(k, condOf(toEigen(e)));
  return k;
}

/// The rows s..s+c-1 placement: Z_s E is L x c with E at rows s..s+c-1.
MatrixXd shifted(const MatrixXd &E, int s, int L) {
  MatrixXd Z = MatrixXd::Zero(L, E.cols());
  Z.middleRows(s, E.rows()) = E;
  return Z;
}

/// Projected ALS of section 3.4, starting from `d` (perturbed). Keeps the
/// iterate with the smallest worst error (the start included).
void optimize(Design &d, double kappaMax, int iterations) {
  int n = d.ranks, c = d.components, L = d.rounds;
  std::vector<MatrixXd> E, D;
  for (const Matrix &m : d.encoders)
    E.push_back(toEigen(m));
  for (const Matrix &m : d.decoders)
    D.push_back(toEigen(m));
  auto mod = [n](int x) { return ((x % n) + n) % n; };
  const double lambda = 1e-12;
  auto dStep = [&] {
    for (int i = 0; i < n; ++i) {
      MatrixXd AAt = lambda * MatrixXd::Identity(L, L);
      MatrixXd AJt = MatrixXd::Zero(L, c);
      for (int h = 1; h < n; ++h) {
        MatrixXd Z = shifted(E[mod(i - h)], h - 1, L);
        AAt += Z * Z.transpose();
        AJt += Z;
      }
      D[i] = AAt.ldlt().solve(AJt).transpose();
    }
  };
  auto eStep = [&] {
    for (int k = 0; k < n; ++k) {
      MatrixXd MtM = MatrixXd::Zero(c, c), Mt = MatrixXd::Zero(c, c);
      for (int h = 1; h < n; ++h) {
        MatrixXd M = D[mod(k + h)].middleCols(h - 1, c);
        MtM += M.transpose() * M;
        Mt += M.transpose();
      }
      MatrixXd Ek = MtM.ldlt().solve(Mt);
      Eigen::JacobiSVD<MatrixXd> svd(Ek,
                                     Eigen::ComputeFullU | Eigen::ComputeFullV);
      Eigen::VectorXd s = svd.singularValues();
      double floor = s(0) / kappaMax;
      for (int j = 0; j < s.size(); ++j)
        s(j) = std::max(s(j), floor);
      E[k] = svd.matrixU() * s.asDiagonal() * svd.matrixV().transpose();
    }
  };
  auto store = [&](Design &out) {
    out.encoders.clear();
    out.decoders.clear();
    for (const MatrixXd &m : E)
      out.encoders.push_back(fromEigen(m));
    for (const MatrixXd &m : D)
      out.decoders.push_back(fromEigen(m));
  };
  Design best = d;
  computeMetrics(best);
  best.initialError = best.worstError;
  best.initialEps = d.eps;
  for (int it = 0; it < iterations; ++it) {
    dStep();
    eStep();
    dStep();
    Design cand = d;
    store(cand);
    computeMetrics(cand);
    bool finite =
        std::isfinite(cand.worstError) && std::isfinite(cand.maxCondition);
    if (finite && cand.worstError < best.worstError &&
        cand.maxCondition <= kappaMax * (1 + 1e-9)) {
      double init = best.initialError, initEps = best.initialEps;
      best = std::move(cand);
      best.initialError = init;
      best.initialEps = initEps;
    }
  }
  best.companion = false;
  best.poly.clear();
  best.basis = Matrix();
  best.decodeMaps.clear();
  best.tail.clear();
  d = std::move(best);
}

/// Shortest form of a double ("0.001", "1.5", "1e+06").
std::string g(double v) {
  return llvm::formatv("{0}", llvm::format("%g", v)).str();
}

llvm::Error beyondPrecision(const Design &d, llvm::StringRef what) {
  return makeUserError(llvm::formatv(
      "cerar: the {0} design for N={1}, c={2}{3} needs encoders with "
      "condition number {4}, beyond what double precision supports "
      "(limit {5}); {6}",
      constructionName(d.construction), d.ranks, d.components,
      d.eps > 0 ? ", eps=" + g(d.eps) : std::string(),
      llvm::formatv("{0:e2}", d.maxCondition).str(), g(kMaxCondition), what));
}

} // namespace

Matrix Matrix::identity(int n) {
  Matrix m(n, n);
  for (int i = 0; i < n; ++i)
    m(i, i) = 1.0;
  return m;
}

int Matrix::nonzeros(double tol) const {
  int k = 0;
  for (double v : data)
    k += std::fabs(v) > tol;
  return k;
}

llvm::StringRef constructionName(Construction c) {
  switch (c) {
  case Construction::Exact:
    return "exact";
  case Construction::Vandermonde:
    return "vandermonde";
  case Construction::Perturbed:
    return "perturbed";
  case Construction::Optimized:
    return "optimized";
  }
  return "?";
}

std::optional<Construction> constructionFromName(llvm::StringRef s) {
  for (Construction c : {Construction::Exact, Construction::Vandermonde,
                         Construction::Perturbed, Construction::Optimized})
    if (s == constructionName(c))
      return c;
  return std::nullopt;
}

std::vector<double> canonicalDivisor(int n, int r) {
  if (r == n)
    return rootsOfUnityPoly(n);
  std::vector<double> p{1.0};
  const double pi = std::acos(-1.0);
  for (int m = 1; 2 * m < n && int(p.size()) - 1 + 2 <= r; ++m) {
    double b = -2.0 * std::cos(2.0 * pi * m / n);
    if (std::fabs(b - std::round(b)) < 1e-12)
      b = std::round(b);
    p = polyMul(p, {1.0, b, 1.0});
  }
  if (int(p.size()) - 1 < r)
    p = polyMul(p, {-1.0, 1.0});
  if (int(p.size()) - 1 < r && n % 2 == 0)
    p = polyMul(p, {1.0, 1.0});
  return p;
}

void computeMetrics(Design &d) {
  int n = d.ranks, c = d.components;
  auto mod = [n](int x) { return ((x % n) + n) % n; };
  d.rankError.assign(n, 0.0);
  d.objective = 0;
  d.maxDecoderNorm = 0;
  d.decoderNnzPerRow = 0;
  std::vector<MatrixXd> E;
  for (const Matrix &m : d.encoders)
    E.push_back(toEigen(m));
  for (int i = 0; i < n; ++i) {
    MatrixXd Di = toEigen(d.decoders[i]);
    if (n > 1) {
      MatrixXd err(c, c * (n - 1));
      for (int h = 1; h < n; ++h) {
        MatrixXd blk =
            Di.middleCols(h - 1, c) * E[mod(i - h)] - MatrixXd::Identity(c, c);
        err.middleCols((h - 1) * c, c) = blk;
        d.objective += blk.squaredNorm();
      }
      d.rankError[i] = singularValues(err)(0);
    }
    d.maxDecoderNorm = std::max(d.maxDecoderNorm, singularValues(Di)(0));
    double tol = 1e-12 * std::max(1.0, Di.cwiseAbs().maxCoeff());
    d.decoderNnzPerRow =
        std::max(d.decoderNnzPerRow, double(d.decoders[i].nonzeros(tol)) / c);
  }
  d.worstError = *std::max_element(d.rankError.begin(), d.rankError.end());
  d.encoderCondition.clear();
  d.encoderNnzPerRow = 0;
  for (int k = 0; k < n; ++k) {
    d.encoderCondition.push_back(condOf(E[k]));
    double tol = 1e-12 * std::max(1.0, E[k].cwiseAbs().maxCoeff());
    d.encoderNnzPerRow =
        std::max(d.encoderNnzPerRow, double(d.encoders[k].nonzeros(tol)) / c);
  }
  d.maxCondition =
      *std::max_element(d.encoderCondition.begin(), d.encoderCondition.end());
}

llvm::Expected<Design> makeDesign(const DesignRequest &req) {
  int n = req.ranks, c = req.components;
  if (n < 2 || n > kMaxRanks)
    return makeUserError(llvm::formatv(
        "cerar: --ranks must be in [2, {0}], got {1}", kMaxRanks, n));
  if (c < 1 || c > kMaxComponents)
    return makeUserError(llvm::formatv(
        "cerar: --components must be in [1, {0}], got {1}", kMaxComponents, c));
  if (req.eps != 0 && !(req.eps > 0 && req.eps < 1))
    return makeUserError(
        llvm::formatv("cerar: --eps must be in (0, 1), got {0}", g(req.eps)));
  if (req.kappaMax != 0 && !(req.kappaMax > 1 && req.kappaMax <= kMaxCondition))
    return makeUserError(
        llvm::formatv("cerar: --kappa-max must be in (1, {0}], got {1}",
                      g(kMaxCondition), g(req.kappaMax)));
  if (req.eps != 0 && req.kappaMax != 0 &&
      req.construction != Construction::Optimized)
    return makeUserError("cerar: give either --eps or --kappa-max, not both");
  if (req.iterations < 0 || req.iterations > 1000)
    return makeUserError("cerar: ALS iterations must be in [0, 1000]");

  Design d;
  d.ranks = n;
  d.components = c;
  d.rounds = c + n - 2;
  d.construction = req.construction;
  d.kappaMax = req.kappaMax;

  // Builds the eps-parameterised design; picks eps from kappaMax if asked.
  auto build = [&](Design &x, double eps) {
    x.eps = eps;
    if (x.construction == Construction::Vandermonde)
      buildVandermonde(x, eps);
    else
      buildPerturbed(x, eps);
  };
  auto chooseEps = [&](Design &x, double kappaMax) -> llvm::Error {
    double lastOk = 0;
    for (int step = 1; step <= 400; ++step) {
      double eps = std::pow(10.0, -step / 20.0);
      build(x, eps);
      double k = maxEncoderCondition(x);
      if (!(k <= kappaMax))
        break;
      lastOk = eps;
    }
    if (lastOk == 0)
      return makeUserError(llvm::formatv(
          "cerar: no eps in (0, 1) gives a {0} code for N={1}, c={2} with "
          "condition number <= {3}",
          constructionName(x.construction), n, c, g(kappaMax)));
    build(x, lastOk);
    return llvm::Error::success();
  };

  switch (req.construction) {
  case Construction::Exact:
    if (c > n && n >= 3)
      return makeUserError(llvm::formatv(
          "cerar: no exact code exists for c > N (here c={0}, N={1}): "
          "exactness forces D_i Z_(h-1) = E^-1 with columns 0 and N "
          "equal; use c <= N, or an approximate construction",
          c, n));
    if (c <= n) {
      buildPerturbed(d, 1.0); // q = 1: p = p_c, R = I; eps unused
    } else {
      // N = 2 and c > 2: E = I, D = I (rate 1, no gain over the ring).
      d.companion = false;
      d.encoders.assign(n, Matrix::identity(c));
      d.decoders.assign(n, Matrix::identity(c));
    }
    d.eps = 0;
    break;
  case Construction::Vandermonde:
  case Construction::Perturbed:
    if (req.kappaMax > 0) {
      if (auto err = chooseEps(d, req.kappaMax))
        return err;
    } else {
      build(d, req.eps > 0 ? req.eps : 1e-2);
    }
    break;
  case Construction::Optimized: {
    double kappaMax = req.kappaMax > 0 ? req.kappaMax : 1e3;
    d.kappaMax = kappaMax;
    Design start = d;
    start.construction = Construction::Perturbed;
    if (req.eps > 0) {
      build(start, req.eps);
    } else if (auto err = chooseEps(start, kappaMax)) {
      return err;
    }
    start.maxCondition = maxEncoderCondition(start);
    if (!(start.maxCondition <= kMaxCondition)) {
      start.construction = Construction::Optimized;
      return beyondPrecision(start, "use a larger --eps");
    }
    start.construction = Construction::Optimized;
    optimize(start, kappaMax, req.iterations);
    d = std::move(start);
    break;
  }
  }
  if (req.construction != Construction::Optimized) {
    d.maxCondition = maxEncoderCondition(d);
    if (!(d.maxCondition <= kMaxCondition))
      return beyondPrecision(
          d, req.construction == Construction::Vandermonde
                 ? "use a larger --eps, fewer components, or the perturbed "
                   "construction"
                 : "use a larger --eps or fewer components per rank");
    computeMetrics(d);
  }
  if (!std::isfinite(d.worstError) || !std::isfinite(d.maxCondition) ||
      !std::isfinite(d.objective))
    return beyondPrecision(d, "its numbers are not finite");
  return d;
}

Trace simulate(const Design &d,
               const std::vector<std::vector<double>> &inputs) {
  int n = d.ranks, c = d.components, L = d.rounds;
  Trace tr;
  tr.injections.assign(n, std::vector<double>(c, 0.0));
  for (int k = 0; k < n; ++k)
    for (int t = 0; t < c; ++t)
      for (int j = 0; j < c; ++j)
        tr.injections[k][t] += d.encoders[k](t, j) * inputs[k][j];
  auto w = [&](int k, int t) {
    return t >= 0 && t < c ? tr.injections[k][t] : 0.0;
  };
  std::vector<double> prevY(n, 0.0);
  for (int t = 0; t < L; ++t) {
    std::vector<double> m(n), y(n);
    for (int k = 0; k < n; ++k)
      m[k] = w(k, t) + prevY[k];
    for (int k = 0; k < n; ++k)
      y[k] = m[(k + n - 1) % n] - w(k, t - n + 1);
    tr.messages.push_back(m);
    tr.cancelled.push_back(y);
    prevY = y;
  }
  tr.outputs.assign(n, std::vector<double>(c, 0.0));
  for (int k = 0; k < n; ++k)
    for (int j = 0; j < c; ++j) {
      double v = inputs[k][j];
      for (int t = 0; t < L; ++t)
        v += d.decoders[k](j, t) * tr.cancelled[t][k];
      tr.outputs[k][j] = v;
    }
  return tr;
}

double conditionNumber(const Matrix &m) { return condOf(toEigen(m)); }

double spectralNorm(const Matrix &m) {
  Eigen::VectorXd s = singularValues(toEigen(m));
  return s.size() ? s(0) : 0.0;
}

} // namespace topocc::cerar
