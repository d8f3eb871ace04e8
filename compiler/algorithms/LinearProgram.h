//===- compiler/algorithms/LinearProgram.h - Small packing LPs -*- C++ -*-===//
//
// A simplex for the packing linear programs of the algorithm synthesis
// (ring packing, compiler/algorithms/RingPacking.h):
//   maximise c.x  subject to  A x <= b,  x >= 0,  with b >= 0,
// so the all-slack basis is feasible and no phase one is needed. Columns
// can be added between solves (column generation): a new column enters
// the current tableau through the basis inverse that the slack columns
// hold, so a re-solve starts from the last optimal basis. Degeneracy (many
// rings tie on a link) is broken by a tiny deterministic perturbation of b
// (relative 1e-9 per row), with Bland's rule after a run of degenerate
// pivots. Sized for a few hundred rows and columns (the tableau is dense).
// Deterministic; never prints.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_ALGORITHMS_LINEARPROGRAM_H
#define TOPOCC_COMPILER_ALGORITHMS_LINEARPROGRAM_H

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace topocc::algorithms {

/// max c.x s.t. A x <= b, x >= 0, built column by column.
class PackingSimplex {
public:
  /// One row per entry of `b` (each >= 0). `perturbKeys`, when given (one
  /// per row), number the rows for the perturbation of b instead of their
  /// places: a caller that leaves out rows no column uses (their slacks
  /// never leave the basis) then pivots exactly as with them.
  explicit PackingSimplex(std::vector<double> b,
                          const std::vector<int> &perturbKeys = {});

  /// Adds column (row, value) entries with objective coefficient `cost`;
  /// returns its index. Rows out of range are a bug.
  int addColumn(const std::vector<std::pair<int, double>> &entries,
                double cost);

  /// Pivots from the current basis until optimal, unbounded or
  /// `maxPivots` more pivots; true when optimal.
  bool solve(int64_t maxPivots = 200000);

  bool unbounded() const { return isUnbounded; }
  int64_t pivots() const { return numPivots; }
  int rows() const { return m; }
  int cols() const { return static_cast<int>(cost.size()); }
  /// c.x of primal(), on the unperturbed b.
  double objective() const;
  /// x per column; at most rows() are nonzero.
  std::vector<double> primal() const;
  /// Row duals (>= 0 at optimum).
  std::vector<double> duals() const;

private:
  void pivot(int row, int col);
  int m;
  std::vector<double> b;            ///< the caller's right-hand side
  std::vector<std::vector<double>> col; ///< tableau columns: structurals
  std::vector<std::vector<double>> slack; ///< tableau columns of slacks
  std::vector<double> rhs;          ///< tableau right-hand side (perturbed)
  std::vector<double> cost;         ///< c per structural
  std::vector<double> red;          ///< reduced costs of the structurals
  std::vector<double> redSlack;     ///< reduced costs of the slacks
  std::vector<int> basis;           ///< per row: structural j, or -1 - row
  bool isUnbounded = false;
  int64_t numPivots = 0;
};

/// The LP as one dense matrix, for callers that have all columns at once.
struct PackingLp {
  int rows = 0, cols = 0;
  std::vector<double> a; ///< rows * cols, row-major
  std::vector<double> b; ///< rows, each >= 0
  std::vector<double> c; ///< cols

  double &at(int row, int col) {
    return a[static_cast<size_t>(row) * cols + col];
  }
};

struct LpSolution {
  /// false when the pivot budget ran out or the LP is unbounded.
  bool optimal = false;
  bool unbounded = false;
  double objective = 0;
  std::vector<double> x; ///< cols
  std::vector<double> y; ///< rows: duals, >= 0, y.b = objective at optimum
  int64_t pivots = 0;
};

/// REQUIRES: lp.a.size() == rows * cols, b.size() == rows, c.size() ==
/// cols, every b >= 0.
LpSolution solvePackingLp(const PackingLp &lp, int64_t maxPivots = 200000);

} // namespace topocc::algorithms

#endif // TOPOCC_COMPILER_ALGORITHMS_LINEARPROGRAM_H
