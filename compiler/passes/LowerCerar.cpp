//===- compiler/passes/LowerCerar.cpp - CERAR all-reduce to schedule IR ---===//
//
// Message of round t sent by ring position p: id t*N + p. Every rank is one
// dependency chain (each op depends on the one before it), which orders
// every buffer reuse and puts each round's send before its receive, so the
// schedule is race- and deadlock-free by construction.
//
// In-place worker (docs/Algorithms-cerar.md 2.6), per rank with logical
// index i:
//   V <- E_i G                       (lincombs; in place via PLU for inplace)
//   H[0] <- V[0]
//   round t: send (t < c ? V[t] : yb); rb <- recv, minus H[t-N+1] when
//            0 <= t-N+1 <= c-2 (rrc lc=-1); free yb (t >= c);
//            t+1 < c: H[t+1] <- V[t+1] (t+1 <= c-2), V[t+1] += rb, free rb
//            else:    V[j] += tail[t+1]_j * rb, yb <- rb
//   V <- M_i V                       (M_i = R^-1 C^-i, in place via PLU)
// Generic worker (2.7): W <- E_i G in scratch, acc = G (the output buffer),
//   round t: send W[t] + y(t-1) (or y(t-1) once t >= c), y(t) <- recv minus
//   W[t-N+1], acc[j] += D_i[j,t] y(t).
//
//===----------------------------------------------------------------------===//

#include "compiler/passes/LowerCerar.h"

#include "support/Diagnostics.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numeric>
#include <set>

namespace topocc::passes {

using namespace ir;

namespace {

/// Pivoted LU of a square matrix: P M = L U with L unit lower triangular.
/// perm[j] is the row of M that became row j.
struct Plu {
  int n = 0;
  std::vector<double> lu; ///< L below the diagonal, U on and above
  std::vector<int> perm;
  double at(int r, int c) const { return lu[size_t(r) * n + c]; }
};

Plu factor(const cerar::Matrix &m) {
  Plu f;
  f.n = m.rows;
  f.lu = m.data;
  f.perm.resize(f.n);
  std::iota(f.perm.begin(), f.perm.end(), 0);
  int n = f.n;
  auto a = [&](int r, int c) -> double & { return f.lu[size_t(r) * n + c]; };
  for (int k = 0; k < n; ++k) {
    int piv = k;
    for (int r = k + 1; r < n; ++r)
      if (std::fabs(a(r, k)) > std::fabs(a(piv, k)))
        piv = r;
    if (piv != k) {
      for (int c = 0; c < n; ++c)
        std::swap(a(k, c), a(piv, c));
      std::swap(f.perm[k], f.perm[piv]);
    }
    double d = a(k, k);
    if (d == 0.0)
      continue; // singular; the caller checks the design first
    for (int r = k + 1; r < n; ++r) {
      double l = a(r, k) / d;
      a(r, k) = l;
      if (l != 0.0)
        for (int c = k + 1; c < n; ++c)
          a(r, c) -= l * a(k, c);
    }
  }
  return f;
}

class CerarLowering {
public:
  CerarLowering(Schedule &s, const CerarRingSpec &spec, ChainState &st)
      : spec(spec), d(*spec.design), ring(spec.ring), n(d.ranks),
        c(d.components), L(d.rounds), s(s), st(st) {}

  CerarLoweringInfo run();

private:
  const CerarRingSpec &spec;
  const cerar::Design &d;
  const std::vector<RankId> &ring;
  int32_t n, c, L;
  Schedule &s;
  ChainState &st;
  RankId rank = 0;             ///< rank being emitted
  std::set<int32_t> freeSlots; ///< scratch pool of the rank being emitted
  int32_t scratchEnd = 0;

  bool inplace() const { return spec.input == spec.result; }
  MsgId msg(int32_t t, int32_t pos) const {
    return st.nextMsg + t * n + ((pos % n) + n) % n;
  }
  BufferRef user(int32_t j) const {
    return {spec.result, spec.firstChunk + j, 1};
  }
  BufferRef in(int32_t j) const { return {spec.input, spec.firstChunk + j, 1}; }

  BufferRef get() {
    int32_t slot;
    if (freeSlots.empty()) {
      slot = scratchEnd++;
    } else {
      slot = *freeSlots.begin();
      freeSlots.erase(freeSlots.begin());
    }
    return {BufferKind::Scratch, slot, 1};
  }
  void put(BufferRef b) {
    assert(b.buffer == BufferKind::Scratch);
    freeSlots.insert(b.chunk);
  }

  void emit(Op op) {
    OpId &last = st.last[rank];
    if (last != kNone)
      op.deps.push_back(last);
    std::vector<Op> &ops = s.ranks[rank].ops;
    ops.push_back(std::move(op));
    last = static_cast<OpId>(ops.size()) - 1;
  }
  void lincomb(BufferRef dst, std::vector<LinTerm> terms) {
    Op op;
    op.kind = OpKind::LinComb;
    op.dst = dst;
    op.terms = std::move(terms);
    emit(std::move(op));
  }
  void copy(BufferRef dst, BufferRef src) {
    emit(makeLocal(OpKind::Copy, dst, src));
  }
  /// dst <- recv (- cancel when given).
  void recv(BufferRef dst, RankId from, MsgId m,
            std::optional<BufferRef> cancel) {
    if (!cancel) {
      emit(makeRecv(dst, from, m));
      return;
    }
    Op op;
    op.kind = OpKind::RecvReduceCopy;
    op.src = *cancel;
    op.dst = dst;
    op.recvPeer = from;
    op.recvMsg = m;
    op.localCoeff = -1.0;
    op.msgCoeff = 1.0;
    emit(std::move(op));
  }

  /// v <- M v in place over the slots `v`, through P M = L U.
  void applyInPlace(const cerar::Matrix &m, const std::vector<BufferRef> &v);
  /// dst[r] <- sum_j M[r][j] src[j] (distinct buffers).
  void applyOutOfPlace(const cerar::Matrix &m,
                       const std::vector<BufferRef> &dst,
                       const std::vector<BufferRef> &src);

  void lowerInPlaceWorker(int32_t pos);
  void lowerGenericWorker(int32_t pos);
};

void CerarLowering::applyOutOfPlace(const cerar::Matrix &m,
                                    const std::vector<BufferRef> &dst,
                                    const std::vector<BufferRef> &src) {
  for (int r = 0; r < m.rows; ++r) {
    std::vector<LinTerm> terms;
    for (int j = 0; j < m.cols; ++j)
      if (m(r, j) != 0.0)
        terms.push_back(LinTerm{m(r, j), src[j]});
    if (terms.empty())
      terms.push_back(LinTerm{0.0, src[0]}); // a zero row still writes dst
    lincomb(dst[r], std::move(terms));
  }
}

void CerarLowering::applyInPlace(const cerar::Matrix &m,
                                 const std::vector<BufferRef> &v) {
  Plu f = factor(m);
  int k = f.n;
  // v <- U v: row j reads v[j..], still unchanged in ascending order.
  for (int j = 0; j < k; ++j) {
    std::vector<LinTerm> terms;
    for (int x = j; x < k; ++x)
      if (f.at(j, x) != 0.0)
        terms.push_back(LinTerm{f.at(j, x), v[x]});
    if (terms.size() == 1 && terms[0].coeff == 1.0 && terms[0].src == v[j])
      continue;
    if (terms.empty())
      terms.push_back(LinTerm{0.0, v[j]});
    lincomb(v[j], std::move(terms));
  }
  // v <- L v (unit diagonal): row j reads v[..j-1], descending.
  for (int j = k - 1; j >= 1; --j) {
    std::vector<LinTerm> terms{LinTerm{1.0, v[j]}};
    for (int x = 0; x < j; ++x)
      if (f.at(j, x) != 0.0)
        terms.push_back(LinTerm{f.at(j, x), v[x]});
    if (terms.size() > 1)
      lincomb(v[j], std::move(terms));
  }
  // v <- P^T v: the value now in slot j belongs in slot perm[j]. Follow
  // each cycle with one temporary.
  std::vector<bool> done(k, false);
  for (int start = 0; start < k; ++start) {
    if (done[start] || f.perm[start] == start) {
      done[start] = true;
      continue;
    }
    BufferRef tmp = get();
    // Cycle: slot start -> perm[start] -> perm[perm[start]] -> ... -> start.
    copy(tmp, v[start]);
    int cur = start;
    // Walk backwards: the slot whose value goes to `cur` is pre(cur).
    std::vector<int> pre(k);
    for (int j = 0; j < k; ++j)
      pre[f.perm[j]] = j;
    while (pre[cur] != start) {
      copy(v[cur], v[pre[cur]]);
      done[cur] = true;
      cur = pre[cur];
    }
    copy(v[cur], tmp);
    done[cur] = true;
    done[start] = true;
    put(tmp);
  }
}

void CerarLowering::lowerInPlaceWorker(int32_t pos) {
  int32_t i = cerarLogicalIndex(pos, n, spec.seamOffset);
  RankId next = ring[(pos + 1) % n], prev = ring[(pos + n - 1) % n];
  std::vector<BufferRef> V, G;
  for (int32_t j = 0; j < c; ++j) {
    V.push_back(user(j));
    G.push_back(in(j));
  }
  if (inplace())
    applyInPlace(d.encoders[i], V);
  else
    applyOutOfPlace(d.encoders[i], V, G);
  std::vector<BufferRef> H(std::max(c - 1, 0));
  if (c >= 2) {
    H[0] = get();
    copy(H[0], V[0]);
  }
  BufferRef yb;
  for (int32_t t = 0; t < L; ++t) {
    BufferRef out = t < c ? V[t] : yb;
    BufferRef rb = get();
    emit(makeSend(out, next, msg(t, pos)));
    int32_t tau = t - n + 1;
    std::optional<BufferRef> cancel;
    if (tau >= 0 && tau <= c - 2)
      cancel = H[tau];
    recv(rb, prev, msg(t, pos - 1), cancel);
    if (cancel)
      put(*cancel);
    if (t >= c)
      put(yb);
    if (t + 1 < c) {
      if (t + 1 <= c - 2) {
        H[t + 1] = get();
        copy(H[t + 1], V[t + 1]);
      }
      emit(makeLocal(OpKind::Reduce, V[t + 1], rb));
      put(rb);
    } else {
      const std::vector<double> &tail = d.tail[t + 1 - c];
      for (int32_t j = 0; j < c; ++j)
        if (tail[j] != 0.0)
          lincomb(V[j], {LinTerm{1.0, V[j]}, LinTerm{tail[j], rb}});
      yb = rb;
    }
  }
  put(yb);
  applyInPlace(d.decodeMaps[i], V);
}

void CerarLowering::lowerGenericWorker(int32_t pos) {
  int32_t i = cerarLogicalIndex(pos, n, spec.seamOffset);
  RankId next = ring[(pos + 1) % n], prev = ring[(pos + n - 1) % n];
  std::vector<BufferRef> W, G, acc;
  for (int32_t j = 0; j < c; ++j) {
    W.push_back(get());
    G.push_back(in(j));
    acc.push_back(user(j));
  }
  applyOutOfPlace(d.encoders[i], W, G);
  if (!inplace())
    for (int32_t j = 0; j < c; ++j)
      copy(acc[j], G[j]);
  const cerar::Matrix &D = d.decoders[i];
  BufferRef prevY;
  for (int32_t t = 0; t < L; ++t) {
    BufferRef out;
    std::optional<BufferRef> msgSlot;
    if (t == 0) {
      out = W[0];
    } else if (t < c) {
      msgSlot = get();
      lincomb(*msgSlot, {LinTerm{1.0, W[t]}, LinTerm{1.0, prevY}});
      out = *msgSlot;
    } else {
      out = prevY;
    }
    emit(makeSend(out, next, msg(t, pos)));
    if (msgSlot)
      put(*msgSlot);
    if (t > 0)
      put(prevY);
    BufferRef y = get();
    int32_t tau = t - n + 1;
    std::optional<BufferRef> cancel;
    if (tau >= 0 && tau < c)
      cancel = W[tau];
    recv(y, prev, msg(t, pos - 1), cancel);
    for (int32_t j = 0; j < c; ++j)
      if (D(j, t) != 0.0)
        lincomb(acc[j], {LinTerm{1.0, acc[j]}, LinTerm{D(j, t), y}});
    prevY = y;
  }
}

CerarLoweringInfo CerarLowering::run() {
  CerarLoweringInfo info;
  info.inPlaceWorker = d.companion && !spec.forceGeneric;
  info.rounds = L;
  for (int32_t pos = 0; pos < n; ++pos) {
    rank = ring[pos];
    freeSlots.clear();
    const int32_t base = st.scratchEnd[rank];
    scratchEnd = base;
    if (info.inPlaceWorker)
      lowerInPlaceWorker(pos);
    else
      lowerGenericWorker(pos);
    st.scratchEnd[rank] = scratchEnd;
    info.peakScratch = std::max(info.peakScratch, scratchEnd - base);
  }
  st.nextMsg += L * n;
  return info;
}

} // namespace

llvm::Error checkCerarDesign(const cerar::Design &d) {
  int32_t n = d.ranks, c = d.components;
  if (n < 2 || c < 1 || d.rounds != c + n - 2 ||
      d.encoders.size() != size_t(n) || d.decoders.size() != size_t(n))
    return makeUserError(llvm::formatv(
        "cerar lowering: the code is incomplete (N={0}, c={1}, {2} encoders, "
        "{3} decoders)",
        n, c, d.encoders.size(), d.decoders.size()));
  for (int32_t k = 0; k < n; ++k)
    if (d.encoders[k].rows != c || d.encoders[k].cols != c ||
        d.decoders[k].rows != c || d.decoders[k].cols != d.rounds)
      return makeUserError(llvm::formatv(
          "cerar lowering: E_{0} or D_{0} has the wrong shape for N={1}, "
          "c={2}",
          k, n, c));
  if (d.companion && (d.decodeMaps.size() != size_t(n) ||
                      d.tail.size() != size_t(d.rounds - c + 1)))
    return makeUserError("cerar lowering: the companion code lacks its "
                         "decode maps or tail rows");
  return llvm::Error::success();
}

llvm::Expected<Schedule> lowerCerar(const CerarLowerOptions &opts,
                                    CerarLoweringInfo *info) {
  const cerar::Design &d = opts.design;
  int32_t n = d.ranks, c = d.components;
  if (auto err = checkCerarDesign(d))
    return err;
  std::vector<RankId> ring = opts.ringOrder;
  if (ring.empty()) {
    ring.resize(n);
    std::iota(ring.begin(), ring.end(), 0);
  }
  std::vector<RankId> sorted = ring;
  std::sort(sorted.begin(), sorted.end());
  bool perm = int32_t(ring.size()) == n;
  for (int32_t k = 0; perm && k < n; ++k)
    perm = sorted[k] == k;
  if (!perm)
    return makeUserError(llvm::formatv(
        "cerar lowering: the ring order must be a permutation of 0..{0} "
        "(the code has N={1})",
        n - 1, n));
  Schedule s;
  s.collective = Collective::AllReduce;
  s.numRanks = n;
  s.chunksPerLoop = c;
  s.inplace = opts.inplace;
  s.stage = Stage::Lowered;
  s.name = opts.name.empty()
               ? llvm::formatv("cerar{0}_allreduce_c{1}_{2}_{3}", n, c,
                               cerar::constructionName(d.construction),
                               opts.inplace ? "inplace" : "outofplace")
                     .str()
               : opts.name;
  s.ranks.resize(n);
  CerarRingSpec spec;
  spec.design = &opts.design;
  spec.ring = std::move(ring);
  spec.seamOffset = opts.seamOffset;
  spec.input = BufferKind::Input;
  spec.result = opts.inplace ? BufferKind::Input : BufferKind::Output;
  spec.forceGeneric = opts.forceGeneric;
  ChainState st(n);
  CerarLoweringInfo got = emitCerarRing(s, spec, st);
  for (RankId r = 0; r < n; ++r) {
    RankProgram &rp = s.ranks[r];
    rp.scratchChunks = st.scratchEnd[r];
    setCollectiveBuffers(rp, Collective::AllReduce, c, c, opts.inplace);
  }
  if (info)
    *info = got;
  return s;
}

CerarLoweringInfo emitCerarRing(Schedule &s, const CerarRingSpec &spec,
                                ChainState &st) {
  return CerarLowering(s, spec, st).run();
}

} // namespace topocc::passes
