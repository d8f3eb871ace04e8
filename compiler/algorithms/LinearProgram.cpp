//===- compiler/algorithms/LinearProgram.cpp - Small packing LPs ----------===//
//
// Column-stored tableau simplex from the slack basis. The slack columns of
// the tableau are the basis inverse, so a column added later enters as
// B^-1 a; a reduced cost is c_j - y.a_j, and a slack's reduced cost is
// minus its row's dual.
//
//===----------------------------------------------------------------------===//

#include "compiler/algorithms/LinearProgram.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace topocc::algorithms {

namespace {

constexpr double kCostTol = 1e-9;  ///< reduced costs below this are zero
constexpr double kPivotTol = 1e-9; ///< smaller column entries never pivot
constexpr int kDegenerateRun = 30; ///< then Bland's rule until progress
/// Relative perturbation of row i's bound: kPerturb * (1 + (i * phi mod 1)),
/// distinct per row, so ties in the ratio test (degenerate vertices, many
/// rings saturating the same links) are rare.
constexpr double kPerturb = 1e-9;

double perturbation(int row) {
  double f = std::fmod(row * 0.6180339887498949, 1.0);
  return 1 + kPerturb * (1 + f);
}

} // namespace

PackingSimplex::PackingSimplex(std::vector<double> bounds,
                               const std::vector<int> &perturbKeys)
    : m(static_cast<int>(bounds.size())), b(std::move(bounds)) {
  assert((perturbKeys.empty() || perturbKeys.size() == b.size()) &&
         "one perturbation key per row");
  slack.assign(m, std::vector<double>(m, 0.0));
  rhs.resize(m);
  basis.resize(m);
  redSlack.assign(m, 0.0);
  for (int i = 0; i < m; ++i) {
    assert(b[i] >= 0 && "packing LP needs b >= 0");
    slack[i][i] = 1;
    rhs[i] = b[i] * perturbation(perturbKeys.empty() ? i : perturbKeys[i]);
    basis[i] = -1 - i;
  }
}

int PackingSimplex::addColumn(
    const std::vector<std::pair<int, double>> &entries, double c) {
  std::vector<double> t(m, 0.0);
  double r = c;
  for (auto [i, v] : entries) {
    assert(i >= 0 && i < m && "row out of range");
    if (v == 0)
      continue;
    const std::vector<double> &s = slack[i];
    for (int row = 0; row < m; ++row)
      t[row] += v * s[row];
    r += v * redSlack[i];
  }
  col.push_back(std::move(t));
  cost.push_back(c);
  red.push_back(r);
  return static_cast<int>(col.size()) - 1;
}

void PackingSimplex::pivot(int p, int q) {
  // The entering column (structural q >= 0, slack -1 - q otherwise).
  const std::vector<double> e = q >= 0 ? col[q] : slack[-1 - q];
  const double piv = e[p];
  const double re = q >= 0 ? red[q] : redSlack[-1 - q];
  auto update = [&](std::vector<double> &v, double &reduced) {
    double f = v[p];
    if (f == 0)
      return;
    f /= piv;
    for (int i = 0; i < m; ++i)
      v[i] -= f * e[i];
    v[p] = f;
    reduced -= re * f;
  };
  for (size_t j = 0; j < col.size(); ++j)
    update(col[j], red[j]);
  for (int i = 0; i < m; ++i)
    update(slack[i], redSlack[i]);
  double dummy = 0;
  update(rhs, dummy);
  for (int i = 0; i < m; ++i)
    if (rhs[i] < 0 && rhs[i] > -1e-12)
      rhs[i] = 0;
  if (q >= 0) {
    std::fill(col[q].begin(), col[q].end(), 0.0);
    col[q][p] = 1;
    red[q] = 0;
  } else {
    std::fill(slack[-1 - q].begin(), slack[-1 - q].end(), 0.0);
    slack[-1 - q][p] = 1;
    redSlack[-1 - q] = 0;
  }
  basis[p] = q;
  ++numPivots;
}

bool PackingSimplex::solve(int64_t maxPivots) {
  isUnbounded = false;
  const int n = static_cast<int>(col.size());
  // Variable order for Bland's rule: structurals, then slacks.
  auto key = [&](int v) { return v >= 0 ? v : n + (-1 - v); };
  bool bland = false;
  int degenerate = 0;
  for (int64_t done = 0;; ++done) {
    int q = 0;
    bool found = false;
    double best = kCostTol;
    auto consider = [&](int v, double r) {
      if (r <= kCostTol)
        return;
      if (bland) {
        if (!found || key(v) < key(q)) {
          q = v;
          found = true;
        }
      } else if (r > best) {
        best = r;
        q = v;
        found = true;
      }
    };
    for (int j = 0; j < n; ++j)
      consider(j, red[j]);
    for (int i = 0; i < m; ++i)
      consider(-1 - i, redSlack[i]);
    if (!found)
      return true;
    if (done >= maxPivots)
      return false;
    const std::vector<double> &e = q >= 0 ? col[q] : slack[-1 - q];
    int p = -1;
    double ratio = 0;
    for (int i = 0; i < m; ++i) {
      if (e[i] <= kPivotTol)
        continue;
      double r = rhs[i] / e[i];
      if (p < 0 || r < ratio - 1e-15 ||
          (r <= ratio + 1e-15 && key(basis[i]) < key(basis[p]))) {
        p = i;
        ratio = r;
      }
    }
    if (p < 0) {
      isUnbounded = true;
      return false;
    }
    double gain = (q >= 0 ? red[q] : redSlack[-1 - q]) * ratio;
    pivot(p, q);
    if (gain <= 1e-13) {
      if (++degenerate >= kDegenerateRun)
        bland = true;
    } else {
      degenerate = 0;
      bland = false;
    }
  }
}

std::vector<double> PackingSimplex::primal() const {
  // x_B = B^-1 b on the caller's (unperturbed) b.
  std::vector<double> x(col.size(), 0.0);
  for (int row = 0; row < m; ++row) {
    if (basis[row] < 0)
      continue;
    double v = 0;
    for (int i = 0; i < m; ++i)
      v += slack[i][row] * b[i];
    x[basis[row]] = std::max(0.0, v);
  }
  return x;
}

double PackingSimplex::objective() const {
  std::vector<double> x = primal();
  double s = 0;
  for (size_t j = 0; j < x.size(); ++j)
    s += cost[j] * x[j];
  return s;
}

std::vector<double> PackingSimplex::duals() const {
  std::vector<double> y(m);
  for (int i = 0; i < m; ++i)
    y[i] = std::max(0.0, -redSlack[i]);
  return y;
}

LpSolution solvePackingLp(const PackingLp &lp, int64_t maxPivots) {
  assert(lp.a.size() == static_cast<size_t>(lp.rows) * lp.cols &&
         "bad LP matrix");
  assert(lp.c.size() == static_cast<size_t>(lp.cols) && "bad LP costs");
  PackingSimplex s(lp.b);
  for (int j = 0; j < lp.cols; ++j) {
    std::vector<std::pair<int, double>> entries;
    for (int i = 0; i < lp.rows; ++i)
      if (double v = lp.a[static_cast<size_t>(i) * lp.cols + j]; v != 0)
        entries.emplace_back(i, v);
    s.addColumn(entries, lp.c[j]);
  }
  LpSolution sol;
  sol.optimal = s.solve(maxPivots);
  sol.unbounded = s.unbounded();
  sol.pivots = s.pivots();
  if (sol.unbounded)
    return sol;
  sol.x = s.primal();
  sol.y = s.duals();
  sol.objective = s.objective();
  return sol;
}

} // namespace topocc::algorithms
