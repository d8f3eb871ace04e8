//===- compiler/algorithms/CodedErrorBound.cpp - The error contract -------===//

#include "compiler/algorithms/CodedErrorBound.h"

#include "compiler/algorithms/Cerar.h"
#include "ir/Semantics.h"
#include "support/Diagnostics.h"

#include "llvm/Support/FormatVariadic.h"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>

namespace topocc::cerar {

namespace {
constexpr WireDtype kDtypes[] = {WireDtype::FP32, WireDtype::FP16,
                                 WireDtype::BF16};

double termNorm(const ir::SharedTerms &f) {
  double sq = 0;
  for (const ir::Term &t : f)
    sq += t.coeff * t.coeff;
  return std::sqrt(sq);
}

/// The unit roundoff of a part of a rounding in dtype `w` (0: the store of
/// an fp32 buffer, which is its fp32 accumulator).
double partRoundoff(const ir::RoundingPart &p, WireDtype w) {
  if (!p.store)
    return unitRoundoff(WireDtype::FP32);
  return w == WireDtype::FP32 ? 0 : unitRoundoff(w);
}

/// Whether any part of the weighted events is a store.
bool hasStoreParts(const std::vector<ir::RoundingEvent> &events,
                 const std::vector<std::pair<int32_t, double>> &weights) {
  for (auto [k, wk] : weights)
    for (const ir::RoundingPart &p : events[size_t(k)].parts)
      if (p.store)
        return true;
  return false;
}

/// sqrt(lambda_max(H)) / u_w per dtype w, H = sum_k weight_k sum_i u_i^2
/// f_ki f_ki^T (the header), over `dim` = ranks x inChunks input symbols;
/// the trace instead of lambda_max above kMaxGramDim. Sets `formed`.
std::array<double, 3>
probableGains(const std::vector<ir::RoundingEvent> &events,
              const std::vector<std::pair<int32_t, double>> &weights,
              int inChunks, int dim, bool &formed) {
  std::array<double, 3> out{};
  formed = dim <= kMaxGramDim;
  if (!formed) {
    for (auto [k, wk] : weights)
      for (const ir::RoundingPart &p : events[size_t(k)].parts) {
        double n = p.scale * termNorm(p.form);
        for (size_t d = 0; d < 3; ++d) {
          double u = partRoundoff(p, kDtypes[d]);
          out[d] += wk * u * u * n * n;
        }
      }
    for (size_t d = 0; d < 3; ++d)
      out[d] = std::sqrt(out[d]) / unitRoundoff(kDtypes[d]);
    return out;
  }
  // Two Gram matrices, of the fp32 parts (unit u_fp32^2) and of the stores
  // (unit u_T^2), by rank-k updates with batches of dense columns.
  Eigen::MatrixXd h32 = Eigen::MatrixXd::Zero(dim, dim);
  Eigen::MatrixXd hStore = Eigen::MatrixXd::Zero(dim, dim);
  constexpr int kBatch = 256;
  // Forms of at most this many terms are added as sparse outer products
  // (m^2 work) rather than dense columns (dim^2 work in the rank update).
  constexpr size_t kSparseTerms = 48;
  Eigen::MatrixXd cols32(dim, kBatch), colsStore(dim, kBatch);
  int n32 = 0, nStore = 0;
  auto flush = [](Eigen::MatrixXd &cols, int &n, Eigen::MatrixXd &h) {
    if (n > 0)
      h.selfadjointView<Eigen::Lower>().rankUpdate(cols.leftCols(n));
    n = 0;
  };
  for (auto [k, wk] : weights)
    for (const ir::RoundingPart &p : events[size_t(k)].parts) {
      Eigen::MatrixXd &cols = p.store ? colsStore : cols32;
      Eigen::MatrixXd &h = p.store ? hStore : h32;
      int &n = p.store ? nStore : n32;
      const double sc = std::sqrt(wk) * p.scale;
      if (p.form.size() <= kSparseTerms) {
        // A short form: its outer product directly (lower triangle).
        for (const ir::Term &a : p.form)
          for (const ir::Term &b : p.form) {
            int i = a.rank * inChunks + a.chunk, j = b.rank * inChunks + b.chunk;
            if (i >= j)
              h(i, j) += sc * sc * a.coeff * b.coeff;
          }
        continue;
      }
      cols.col(n).setZero();
      for (const ir::Term &t : p.form)
        cols(t.rank * inChunks + t.chunk, n) = sc * t.coeff;
      if (++n == kBatch)
        flush(cols, n, h);
    }
  flush(cols32, n32, h32);
  flush(colsStore, nStore, hStore);
  // lambda_max(u32^2 H32 + u^2 HStore) <= u32^2 lambda_max(H32) +
  // u^2 lambda_max(HStore) (Weyl): two eigenvalue problems for three
  // dtypes, exact for fp32 (whose stores do not round).
  auto top = [](const Eigen::MatrixXd &h) {
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(h,
                                                      Eigen::EigenvaluesOnly);
    return es.eigenvalues().size() ? std::max(0.0, es.eigenvalues().maxCoeff())
                                   : 0.0;
  };
  const double top32 = top(h32);
  const double topStore = hasStoreParts(events, weights) ? top(hStore) : 0.0;
  const double u32 = unitRoundoff(WireDtype::FP32);
  for (size_t d = 0; d < 3; ++d) {
    const double u =
        kDtypes[d] == WireDtype::FP32 ? 0 : unitRoundoff(kDtypes[d]);
    out[d] = std::sqrt(u32 * u32 * top32 + u * u * topStore) /
             unitRoundoff(kDtypes[d]);
  }
  return out;
}

size_t dtypeIndex(WireDtype w) {
  return w == WireDtype::FP32 ? 0 : w == WireDtype::FP16 ? 1 : 2;
}
} // namespace

double unitRoundoff(WireDtype w) {
  switch (w) {
  case WireDtype::FP32:
    return std::ldexp(1.0, -24);
  case WireDtype::FP16:
    return std::ldexp(1.0, -11);
  case WireDtype::BF16:
    return std::ldexp(1.0, -8);
  }
  return 0;
}

double ErrorContract::exactBound() const {
  double m = 0;
  for (double e : exact)
    m = std::max(m, e);
  return m;
}

double ErrorContract::roundoff(int rank, WireDtype w, bool worstCase) const {
  if (!worstCase)
    // Both bounds hold under the probabilistic model: the smaller one.
    return std::min(kProbableLambda * unitRoundoff(w) *
                        probable[size_t(rank)][dtypeIndex(w)],
                    roundoff(rank, w, /*worstCase=*/true));
  const double u = unitRoundoff(WireDtype::FP32);
  // An fp32 buffer is the accumulator itself: its store does not round.
  const double v = w == WireDtype::FP32 ? 0 : unitRoundoff(w);
  double sq = 0;
  for (const Chunk &c : chunks[size_t(rank)]) {
    double g = u * c.a + v * c.s;
    sq += g * g;
  }
  return std::sqrt(sq);
}

double ErrorContract::bound(WireDtype w, bool worstCase) const {
  double m = 0;
  for (size_t r = 0; r < exact.size(); ++r)
    m = std::max(m, exact[r] + roundoff(int(r), w, worstCase));
  return m;
}

double ErrorContract::roundoffGain(WireDtype w, bool worstCase) const {
  return std::max(0.0, bound(w, worstCase) - exactBound()) / unitRoundoff(w);
}

llvm::Expected<ErrorContract> analyzeErrorContract(const ir::Schedule &s) {
  if (s.collective != ir::Collective::AllReduce)
    return makeUserError("error contract: expected an allreduce schedule, "
                         "got " +
                         ir::collectiveName(s.collective).str());
  std::vector<ir::RoundingEvent> events;
  auto res = ir::executeWithRounding(s, events);
  if (!res)
    return res.takeError();
  const int n = s.numRanks;
  const int inChunks = s.nominalInputChunks();
  const int dim = n * inChunks;
  // Per event: sum_i ||f_ki|| over its fp32 parts, and its store's.
  std::vector<double> norm32(events.size()), normStore(events.size());
  for (size_t k = 0; k < events.size(); ++k)
    for (const ir::RoundingPart &p : events[k].parts)
      (p.store ? normStore : norm32)[k] += p.scale * termNorm(p.form);
  ErrorContract c;
  c.exact.assign(size_t(n), 0);
  c.chunks.assign(size_t(n), {});
  c.probable.assign(size_t(n), {});
  std::vector<double> weight(events.size(), 0);
  for (int r = 0; r < n; ++r) {
    const std::vector<ir::SymValue> &out = res->output[size_t(r)];
    const int rows = static_cast<int>(out.size());
    Matrix e(rows, dim);
    c.chunks[size_t(r)].assign(size_t(rows), {});
    std::vector<std::pair<int32_t, double>> weights;
    for (int j = 0; j < rows; ++j) {
      if (out[size_t(j)].isUndefined)
        return makeUserError(llvm::formatv(
            "error contract: rank {0} out[{1}] is undefined", r, j));
      ir::SymValue want = ir::expectedOutput(s, ir::RankId(r), j);
      for (const ir::Term &t : want.terms)
        if (t.chunk >= 0 && t.chunk < inChunks)
          e(j, t.rank * inChunks + t.chunk) -= t.coeff;
      ErrorContract::Chunk &ch = c.chunks[size_t(r)][size_t(j)];
      for (const ir::Term &t : out[size_t(j)].terms) {
        if (t.rank == n && t.chunk >= 0 && size_t(t.chunk) < events.size()) {
          const size_t k = size_t(t.chunk);
          ch.a += std::fabs(t.coeff) * norm32[k];
          ch.s += std::fabs(t.coeff) * normStore[k];
          if (weight[k] == 0)
            weights.push_back({t.chunk, 0});
          weight[k] += t.coeff * t.coeff;
        } else if (t.rank >= 0 && t.rank < n && t.chunk >= 0 &&
                   t.chunk < inChunks) {
          e(j, t.rank * inChunks + t.chunk) += t.coeff;
        } else {
          return makeInternalError(llvm::formatv(
              "error contract: rank {0} out[{1}] reads input chunk {2} of "
              "rank {3}, outside the schedule",
              r, j, t.chunk, t.rank));
        }
      }
    }
    for (auto &[k, wk] : weights) {
      wk = weight[size_t(k)];
      weight[size_t(k)] = 0;
    }
    bool formed = true;
    c.probable[size_t(r)] =
        probableGains(events, weights, inChunks, dim, formed);
    c.gramFormed = c.gramFormed && formed;
    c.exact[size_t(r)] = spectralNorm(e);
  }
  return c;
}

} // namespace topocc::cerar
