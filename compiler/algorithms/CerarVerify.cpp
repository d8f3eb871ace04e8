//===- compiler/algorithms/CerarVerify.cpp - Verify lowered CERAR ---------===//

#include "compiler/algorithms/CerarVerify.h"

#include "ir/Semantics.h"
#include "ir/Verifier.h"
#include "support/Diagnostics.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>

namespace topocc::cerar {

namespace {

/// E_r as a matrix, and the largest |entry| of its own block.
Matrix errorOperator(const ir::Schedule &s, const ir::SymbolicResult &res,
                     int r, int c, double *own) {
  int n = s.numRanks;
  Matrix e(c, n * c);
  for (int j = 0; j < c; ++j) {
    for (int q = 0; q < n; ++q)
      e(j, q * c + j) = -1.0;
    const ir::SymValue &v = res.output[r][j];
    for (const ir::Term &t : v.terms)
      if (t.rank >= 0 && t.rank < n && t.chunk >= 0 && t.chunk < c)
        e(j, t.rank * c + t.chunk) += t.coeff;
  }
  *own = 0;
  for (int j = 0; j < c; ++j)
    for (int m = 0; m < c; ++m)
      *own = std::max(*own, std::fabs(e(j, r * c + m)));
  return e;
}

llvm::Expected<ir::SymbolicResult> execute(const ir::Schedule &s, int c) {
  if (s.collective != ir::Collective::AllReduce || s.chunksPerLoop != c)
    return makeUserError(llvm::formatv(
        "cerar verification: expected an allreduce with {0} chunks, got {1} "
        "with {2}",
        c, ir::collectiveName(s.collective), s.chunksPerLoop));
  ir::VerifyOptions vo;
  vo.checkSemantics = false;
  if (auto err = ir::verifySchedule(s, vo))
    return err;
  auto res = ir::execute(s);
  if (!res)
    return res.takeError();
  for (int r = 0; r < s.numRanks; ++r)
    for (int j = 0; j < c; ++j)
      if (res->output[r][j].isUndefined)
        return makeUserError(llvm::formatv(
            "cerar verification: rank {0} out[{1}] is undefined", r, j));
  return res;
}

} // namespace

llvm::Expected<std::vector<double>> measuredRankErrors(const ir::Schedule &s,
                                                       int components) {
  auto res = execute(s, components);
  if (!res)
    return res.takeError();
  std::vector<double> out;
  for (int r = 0; r < s.numRanks; ++r) {
    double own;
    out.push_back(spectralNorm(errorOperator(s, *res, r, components, &own)));
  }
  return out;
}

llvm::Expected<CerarCheck> verifyCerarSchedule(const ir::Schedule &s,
                                               const Design &d,
                                               llvm::ArrayRef<int> ringOrder,
                                               int seamOffset) {
  int n = d.ranks, c = d.components;
  if (s.numRanks != n)
    return makeUserError(llvm::formatv(
        "cerar verification: the schedule has {0} ranks, the code {1}",
        s.numRanks, n));
  auto res = execute(s, c);
  if (!res)
    return res.takeError();
  std::vector<int> ring(ringOrder.begin(), ringOrder.end());
  if (ring.empty())
    for (int k = 0; k < n; ++k)
      ring.push_back(k);
  CerarCheck chk;
  chk.tolerance = 1e-9 * std::max(1.0, d.maxCondition);
  chk.measured.assign(n, 0);
  chk.expected.assign(n, 0);
  chk.ownBlock.assign(n, 0);
  for (int pos = 0; pos < n; ++pos) {
    int r = ring[pos];
    int i = (((pos + seamOffset) % n) + n) % n;
    double own;
    Matrix e = errorOperator(s, *res, r, c, &own);
    chk.measured[r] = spectralNorm(e);
    chk.expected[r] = d.rankError[i];
    chk.ownBlock[r] = own;
  }
  for (int r = 0; r < n; ++r) {
    if (chk.ownBlock[r] > chk.tolerance)
      return makeUserError(llvm::formatv(
          "cerar verification: rank {0}'s own input is not reproduced "
          "exactly (largest own-block error {1:e})",
          r, chk.ownBlock[r]));
    if (std::fabs(chk.measured[r] - chk.expected[r]) > chk.tolerance)
      return makeUserError(llvm::formatv(
          "cerar verification: rank {0}: the schedule's error operator has "
          "norm {1:e}, the design's e_i is {2:e} (tolerance {3:e})",
          r, chk.measured[r], chk.expected[r], chk.tolerance));
  }
  return chk;
}

llvm::Expected<HierCerarCheck>
verifyHierCerarSchedule(const ir::Schedule &s, const Design &d,
                        const HierCerarLayout &layout) {
  const int m = static_cast<int>(layout.nodes.size());
  if (m < 2 || d.ranks != m)
    return makeUserError(llvm::formatv(
        "hier-cerar verification: the code has N = {0}, the layout {1} nodes",
        d.ranks, m));
  const int g = static_cast<int>(layout.nodes[0].size()), c = d.components;
  const int n = s.numRanks, units = g * c, rounds = d.rounds;
  // Node position and local index of every rank.
  std::vector<int> nodeOf(n, -1), localOf(n, -1);
  for (int p = 0; p < m; ++p) {
    if (static_cast<int>(layout.nodes[p].size()) != g)
      return makeUserError("hier-cerar verification: nodes of different "
                           "sizes");
    for (int l = 0; l < g; ++l) {
      int r = layout.nodes[p][l];
      if (r < 0 || r >= n || nodeOf[r] >= 0)
        return makeUserError(llvm::formatv(
            "hier-cerar verification: rank {0} is out of range or repeated",
            r));
      nodeOf[r] = p;
      localOf[r] = l;
    }
  }
  for (int r = 0; r < n; ++r)
    if (nodeOf[r] < 0)
      return makeUserError(
          llvm::formatv("hier-cerar verification: rank {0} is on no node", r));
  auto res = execute(s, units);
  if (!res)
    return res.takeError();
  // block[i][h]: the operator of logical index i on the sender at ring
  // distance h (h = 0: the own block, the identity).
  std::vector<std::vector<Matrix>> block(m, std::vector<Matrix>(m));
  for (int i = 0; i < m; ++i) {
    block[i][0] = Matrix::identity(c);
    for (int h = 1; h < m; ++h) {
      const Matrix &D = d.decoders[i], &E = d.encoders[((i - h) % m + m) % m];
      Matrix b(c, c);
      for (int a = 0; a < c; ++a)
        for (int x = 0; x < c; ++x) {
          double v = 0;
          for (int tau = 0; tau < c && tau + h - 1 < rounds; ++tau)
            v += D(a, tau + h - 1) * E(tau, x);
          b(a, x) = v;
        }
      block[i][h] = std::move(b);
    }
  }
  HierCerarCheck chk;
  chk.tolerance = 1e-9 * std::max(1.0, d.maxCondition);
  std::vector<double> actual(size_t(n) * units), expected(size_t(n) * units);
  for (int r = 0; r < n; ++r) {
    const int p = nodeOf[r];
    for (int u = 0; u < units; ++u) {
      const int rail = u / c, j = u % c;
      const int seam =
          layout.staggerSeams ? layout.seamOffset + rail : layout.seamOffset;
      const int i = ((p + seam) % m + m) % m;
      std::fill(actual.begin(), actual.end(), 0.0);
      std::fill(expected.begin(), expected.end(), 0.0);
      for (const ir::Term &t : res->output[r][u].terms)
        if (t.rank >= 0 && t.rank < n && t.chunk >= 0 && t.chunk < units)
          actual[size_t(t.rank) * units + t.chunk] += t.coeff;
      for (int q = 0; q < n; ++q) {
        const int h = ((p - nodeOf[q]) % m + m) % m;
        for (int x = 0; x < c; ++x)
          expected[size_t(q) * units + rail * c + x] = block[i][h](j, x);
      }
      for (int q = 0; q < n; ++q)
        for (int v = 0; v < units; ++v) {
          size_t k = size_t(q) * units + v;
          double exact = v == u ? 1.0 : 0.0;
          chk.maxCoeffError =
              std::max(chk.maxCoeffError, std::fabs(actual[k] - exact));
          double dev = std::fabs(actual[k] - expected[k]);
          chk.maxDeviation = std::max(chk.maxDeviation, dev);
          if (dev > chk.tolerance)
            return makeUserError(llvm::formatv(
                "hier-cerar verification: rank {0} (node {1}, GPU {2}) "
                "out[{3}] (rail {4}, component {5}): the coefficient on rank "
                "{6} in[{7}] is {8:e}, the composed operator's is {9:e} "
                "(tolerance {10:e})",
                r, p, localOf[r], u, rail, j, q, v, actual[k], expected[k],
                chk.tolerance));
        }
    }
  }
  return chk;
}

} // namespace topocc::cerar
