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

} // namespace topocc::cerar
