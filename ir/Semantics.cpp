//===- ir/Semantics.cpp - Symbolic execution of a schedule ----------------===//
//
// Every (rank, buffer, chunk) slot holds a linear combination of input chunks.
// Slots are keyed after in-place aliasing (ir/CombinedGraph.h), so an
// in-place schedule reads and writes one value through either buffer name.
// Ops run in a topological order of the combined graph; a message's value is
// captured when its sending op runs. A slot never written (and not an input)
// is "undefined", and anything computed from it stays undefined.
//
//===----------------------------------------------------------------------===//

#include "ir/Semantics.h"

#include "ir/CombinedGraph.h"
#include "ir/Fingerprint.h"
#include "ir/PrinterUtil.h"
#include "ir/SlotStore.h"
#include "ir/Verifier.h"
#include "support/Diagnostics.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>

namespace topocc::ir {

namespace {
/// Sets bit `i` of `bits`; false when it was set already (a rank twice).
bool setOnce(std::vector<uint64_t> &bits, size_t i) {
  uint64_t bit = uint64_t(1) << (i % 64);
  if (bits[i / 64] & bit)
    return false;
  bits[i / 64] |= bit;
  return true;
}
} // namespace

std::shared_ptr<const SharedTerms::Body>
SharedTerms::compactOf(const std::vector<Term> &t) {
  if (t.size() < kCompactTerms)
    return nullptr;
  for (size_t i = 0; i < t.size(); ++i)
    if (t[i].coeff != 1.0 || t[i].chunk != t.front().chunk ||
        (i > 0 && t[i].rank <= t[i - 1].rank))
      return nullptr;
  // Sorted by (rank, chunk) with one chunk: ranks strictly increase.
  auto b = std::make_shared<Body>();
  b->compact = true;
  b->count = t.size();
  b->chunk = t.front().chunk;
  b->base = t.front().rank;
  b->bits.assign(static_cast<size_t>(t.back().rank - b->base) / 64 + 1, 0);
  for (const Term &x : t)
    setOnce(b->bits, static_cast<size_t>(x.rank - b->base));
  return b;
}

SharedTerms::SharedTerms(std::vector<Term> &&t) {
  if (t.empty())
    return;
  if (auto c = compactOf(t)) {
    p = std::move(c);
    return;
  }
  auto b = std::make_shared<Body>();
  b->count = t.size();
  b->terms = std::move(t);
  b->expanded = true;
  p = std::move(b);
}

const std::vector<Term> &SharedTerms::get() const {
  static const std::vector<Term> none;
  if (!p)
    return none;
  if (!p->expanded) {
    p->terms.reserve(p->count);
    for (size_t w = 0; w < p->bits.size(); ++w)
      for (uint64_t x = p->bits[w]; x; x &= x - 1)
        p->terms.push_back(
            Term{p->base + static_cast<RankId>(w * 64 + __builtin_ctzll(x)),
                 p->chunk, 1.0});
    p->expanded = true;
  }
  return p->terms;
}

bool operator==(const SharedTerms &a, const SharedTerms &b) {
  if (a.p == b.p)
    return true;
  if (a.size() != b.size())
    return false;
  if (a.p && b.p && a.p->compact && b.p->compact)
    return a.p->chunk == b.p->chunk && a.p->base == b.p->base &&
           a.p->bits == b.p->bits;
  // A compact list equals only a compact one (equal lists have the same
  // form), except the empty list, handled above.
  if (a.p && b.p && a.p->compact != b.p->compact)
    return false;
  return a.get() == b.get();
}

std::optional<SharedTerms> SharedTerms::unionOfDisjoint(const SharedTerms &x,
                                                        const SharedTerms &y) {
  if (!x.p || !y.p)
    return std::nullopt;
  // Each operand as (chunk, sorted ranks or bits): compact, or explicit
  // and short with unit coefficients on one chunk.
  auto uniform = [](const Body &b) {
    if (b.compact)
      return true;
    for (const Term &t : b.terms)
      if (t.coeff != 1.0 || t.chunk != b.terms.front().chunk)
        return false;
    return true;
  };
  auto chunkOf = [](const Body &b) {
    return b.compact ? b.chunk : b.terms.front().chunk;
  };
  auto lowest = [](const Body &b) {
    return b.compact ? b.base : b.terms.front().rank;
  };
  auto highest = [](const Body &b) {
    if (!b.compact)
      return b.terms.back().rank;
    return b.base + static_cast<RankId>((b.bits.size() - 1) * 64 + 63 -
                                        __builtin_clzll(b.bits.back()));
  };
  const Body &a = *x.p, &b = *y.p;
  if (!uniform(a) || !uniform(b) || chunkOf(a) != chunkOf(b))
    return std::nullopt;
  if (!a.compact && !b.compact && a.count + b.count < kCompactTerms)
    return std::nullopt; // small: the caller's merge is as cheap
  auto out = std::make_shared<Body>();
  out->compact = true;
  out->chunk = chunkOf(a);
  out->base = std::min(lowest(a), lowest(b));
  out->count = a.count + b.count;
  out->bits.assign(
      static_cast<size_t>(std::max(highest(a), highest(b)) - out->base) / 64 +
          1,
      0);
  for (const Body *src : {&a, &b}) {
    if (src->compact) {
      // Shift src's words by (src->base - out->base) bits.
      auto shift = static_cast<size_t>(src->base - out->base);
      size_t words = shift / 64, bitsOff = shift % 64;
      for (size_t w = 0; w < src->bits.size(); ++w) {
        uint64_t v = src->bits[w];
        uint64_t lo = v << bitsOff;
        if (out->bits[w + words] & lo)
          return std::nullopt; // overlapping ranks: coefficient 2
        out->bits[w + words] |= lo;
        if (bitsOff && (v >> (64 - bitsOff))) {
          uint64_t hi = v >> (64 - bitsOff);
          if (out->bits[w + words + 1] & hi)
            return std::nullopt;
          out->bits[w + words + 1] |= hi;
        }
      }
    } else {
      for (const Term &t : src->terms)
        if (!setOnce(out->bits, static_cast<size_t>(t.rank - out->base)))
          return std::nullopt; // a rank in both: coefficient 2
    }
  }
  SharedTerms r;
  r.p = std::move(out);
  return r;
}

namespace {

SymValue undefined() { return SymValue{}; }

/// A value with terms of chunks outside the executed batch.
SymValue opaque() { return SymValue{{}, false, true}; }

SymValue inputChunk(RankId r, int32_t c) {
  return SymValue{{Term{r, c, 1.0}}, false};
}

/// a*x + b*y; undefined when an operand with a nonzero weight is undefined.
SymValue combine(double a, const SymValue &x, double b, const SymValue &y) {
  if ((a != 0.0 && x.isUndefined) || (b != 0.0 && y.isUndefined))
    return undefined();
  if ((a != 0.0 && x.isOpaque) || (b != 0.0 && y.isOpaque))
    return opaque();
  // x + 0*y and 0*x + y keep x's (y's) shared terms.
  if (b == 0.0 && a == 1.0)
    return x;
  if (a == 0.0 && b == 1.0)
    return y;
  if (a == 1.0 && b == 1.0)
    if (auto u = SharedTerms::unionOfDisjoint(x.terms, y.terms))
      return SymValue{std::move(*u), false};
  std::vector<Term> terms;
  terms.reserve(x.terms.size() + y.terms.size());
  auto key = [](const Term &t) { return std::make_pair(t.rank, t.chunk); };
  size_t i = 0, j = 0;
  const std::vector<Term> &xs = x.terms.get(), &ys = y.terms.get();
  auto push = [&](RankId r, int32_t c, double v) {
    if (v != 0.0)
      terms.push_back(Term{r, c, v});
  };
  while (i < xs.size() || j < ys.size()) {
    if (j == ys.size() || (i < xs.size() && key(xs[i]) < key(ys[j]))) {
      if (a != 0.0)
        push(xs[i].rank, xs[i].chunk, a * xs[i].coeff);
      ++i;
    } else if (i == xs.size() || key(ys[j]) < key(xs[i])) {
      if (b != 0.0)
        push(ys[j].rank, ys[j].chunk, b * ys[j].coeff);
      ++j;
    } else {
      push(xs[i].rank, xs[i].chunk, a * xs[i].coeff + b * ys[j].coeff);
      ++i;
      ++j;
    }
  }
  return SymValue{SharedTerms(std::move(terms)), false};
}

SymValue scale(double a, const SymValue &x) {
  return combine(a, x, 0.0, SymValue{{}, false});
}

/// The terms of `v` on input chunks (rounding-event terms, on rank
/// numRanks, dropped).
SharedTerms inputTerms(const SymValue &v, RankId numRanks) {
  bool events = false;
  for (const Term &t : v.terms)
    events |= t.rank >= numRanks;
  if (!events)
    return v.terms;
  std::vector<Term> out;
  for (const Term &t : v.terms)
    if (t.rank < numRanks)
      out.push_back(t);
  return SharedTerms(std::move(out));
}

class Executor {
public:
  explicit Executor(const Schedule &s,
                    std::vector<RoundingEvent> *events = nullptr,
                    ChunkBatch batch = {})
      : s(s), events(events), batch(batch) {}
  /// In `order` of `g` (both null: computed here); with `next`, that batch
  /// (the slots of an earlier run are cleared first).
  llvm::Expected<SymbolicResult>
  run(const CombinedGraph *g = nullptr,
      const std::vector<uint32_t> *order = nullptr,
      std::optional<ChunkBatch> next = std::nullopt) {
    SymbolicResult res;
    if (auto err = runInto(res, g, order, next))
      return err;
    return res;
  }
  /// run() into `res`, whose vectors are reused: batch after batch, the
  /// outputs (ranks x chunks values, hundreds of MiB at 1024 ranks) are
  /// then not allocated, and their pages faulted in, again.
  llvm::Error runInto(SymbolicResult &res, const CombinedGraph *g,
                      const std::vector<uint32_t> *order,
                      std::optional<ChunkBatch> next);

private:
  const Schedule &s;
  /// Rounding events (executeWithRounding), or null.
  std::vector<RoundingEvent> *events;
  ChunkBatch batch; ///< input chunks whose terms are tracked
  /// A ref's values: one for most ops, without a heap allocation.
  using Store = SlotStore<SymValue, 1>;
  using Values = Store::Values;
  Store store{s, undefined()};

  SymValue read(RankId r, BufferKind b, int64_t chunk) const {
    return store.read(r, b, chunk);
  }
  void write(RankId r, BufferKind b, int64_t chunk, SymValue v) {
    store.write(r, b, chunk, std::move(v));
  }
  Values readRef(RankId r, const BufferRef &ref) const {
    return store.readRef(r, ref);
  }
  void writeRef(RankId r, const BufferRef &ref, Values vals) {
    store.writeRef(r, ref, std::move(vals));
  }
  llvm::Error step(RankId r, OpId id, const Op &op);
  /// A coefficient as the runtime's kernels use it: cast to fp32 when
  /// rounding is modelled (the cast is then exact in the symbols, not a
  /// rounding), as written otherwise.
  double coeff(double c) const {
    return events ? double(static_cast<float>(c)) : c;
  }
  /// `v` (= sum_j terms[j].first * *terms[j].second, computed in this
  /// order by the runtime's kernels) plus a fresh rounding symbol, when
  /// events are recorded and the combination rounds (RoundingEvent).
  SymValue rounded(SymValue v,
                   llvm::ArrayRef<std::pair<double, const SymValue *>> terms);
};

SymValue
Executor::rounded(SymValue v,
                  llvm::ArrayRef<std::pair<double, const SymValue *>> terms) {
  if (!events || v.isUndefined)
    return v;
  RoundingEvent e;
  int k = 0;
  for (auto [c, x] : terms)
    k += c != 0.0;
  // The partial sums of the sequential accumulation.
  SymValue partial{{}, false};
  int j = 0;
  for (auto [c, x] : terms) {
    if (c == 0.0)
      continue;
    if (std::fabs(c) != 1.0) // the product (c is already fp32's)
      e.parts.push_back({std::fabs(c), inputTerms(*x, s.numRanks), false});
    partial = combine(1.0, partial, c, *x);
    if (j > 0) // the addition
      e.parts.push_back({1.0, inputTerms(partial, s.numRanks), false});
    ++j;
  }
  if (e.parts.empty() && k <= 1)
    return v; // a copy, or a unit-coefficient receive: exact
  e.parts.push_back({1.0, inputTerms(v, s.numRanks), true});
  int32_t id = static_cast<int32_t>(events->size());
  events->push_back(std::move(e));
  return combine(1.0, v, 1.0, SymValue{{Term{s.numRanks, id, 1.0}}, false});
}

llvm::Error Executor::step(RankId r, OpId id, const Op &op) {
  unsigned f = opFlags(op.kind);
  Values result;
  if (f & OF_RV) {
    int32_t n = op.wireCount();
    auto received = store.receive(r, id, op.recvMsg, n);
    if (!received)
      return received.takeError();
    Values &msg = *received;
    if (f & OF_RE) {
      Values local = readRef(r, op.src);
      for (int32_t i = 0; i < n; ++i) {
        SymValue l = i < int32_t(local.size()) ? local[i] : undefined();
        result.push_back(
            rounded(combine(coeff(op.localCoeff), l, coeff(op.msgCoeff),
                            msg[i]),
                    {{coeff(op.localCoeff), &l}, {coeff(op.msgCoeff), &msg[i]}}));
      }
    } else {
      for (int32_t i = 0; i < n; ++i)
        result.push_back(rounded(scale(coeff(op.msgCoeff), msg[i]),
                                 {{coeff(op.msgCoeff), &msg[i]}}));
    }
    if (f & OF_WD)
      writeRef(r, op.dst, result);
    if (f & OF_SN)
      store.send(op.sendMsg, std::move(result));
    return llvm::Error::success();
  }
  switch (op.kind) {
  case OpKind::Send:
    store.send(op.sendMsg, readRef(r, op.src));
    break;
  case OpKind::Copy:
    writeRef(r, op.dst, readRef(r, op.src));
    break;
  case OpKind::Reduce: {
    Values d = readRef(r, op.dst), v = readRef(r, op.src);
    for (size_t i = 0; i < d.size(); ++i) {
      SymValue y = i < v.size() ? v[i] : undefined();
      d[i] = rounded(combine(1.0, d[i], 1.0, y), {{1.0, &d[i]}, {1.0, &y}});
    }
    writeRef(r, op.dst, std::move(d));
    break;
  }
  case OpKind::LinComb: {
    Values acc(std::max(0, op.dst.count), SymValue{{}, false});
    std::vector<Values> srcs;
    for (const LinTerm &t : op.terms) {
      srcs.push_back(readRef(r, t.src));
      Values &v = srcs.back();
      v.resize(std::max(v.size(), acc.size()), undefined());
      for (size_t i = 0; i < acc.size(); ++i)
        acc[i] = combine(1.0, acc[i], coeff(t.coeff), v[i]);
    }
    if (events) {
      std::vector<std::pair<double, const SymValue *>> terms;
      for (size_t i = 0; i < acc.size(); ++i) {
        terms.clear();
        for (size_t j = 0; j < op.terms.size(); ++j)
          terms.push_back({coeff(op.terms[j].coeff), &srcs[j][i]});
        acc[i] = rounded(std::move(acc[i]), terms);
      }
    }
    writeRef(r, op.dst, std::move(acc));
    break;
  }
  default:
    break;
  }
  return llvm::Error::success();
}

llvm::Error Executor::runInto(SymbolicResult &res, const CombinedGraph *given,
                              const std::vector<uint32_t> *order,
                              std::optional<ChunkBatch> next) {
  if (next) {
    batch = *next;
    store.clear();
  }
  if (s.numRanks < 0 || static_cast<size_t>(s.numRanks) != s.ranks.size())
    return makeInternalError("semantics: ranks=" + llvm::Twine(s.numRanks) +
                             " but the schedule has " +
                             llvm::Twine(s.ranks.size()) + " rank programs");
  for (RankId r = 0; r < s.numRanks; ++r)
    for (int32_t c = 0; c < s.nominalInputChunks(); ++c)
      write(r, BufferKind::Input, c,
            batch.contains(c) ? inputChunk(r, c) : opaque());

  std::optional<CombinedGraph> own;
  std::vector<uint32_t> ownOrder;
  if (!given || !order) {
    own = buildCombinedGraph(s);
    if (!topologicalOrder(*own, ownOrder))
      return makeInternalError(
          "semantics: the schedule has a dependency cycle");
    given = &*own;
    order = &ownOrder;
  }
  const CombinedGraph &g = *given;
  for (uint32_t v : *order) {
    RankId r = g.rankOf(v);
    OpId id = OpId(v - g.rankBase[r]);
    if (auto err = step(r, id, s.ranks[r].ops[id]))
      return err;
  }
  res.output.resize(s.numRanks);
  const int32_t outChunks = std::max(0, s.nominalOutputChunks());
  for (RankId r = 0; r < s.numRanks; ++r) {
    std::vector<SymValue> &out = res.output[r];
    out.resize(static_cast<size_t>(outChunks));
    for (int32_t c = 0; c < outChunks; ++c)
      out[c] = read(r, BufferKind::Output, c);
  }
  return llvm::Error::success();
}

SymValue sumOver(const Schedule &s, int32_t chunk) {
  std::vector<Term> terms;
  for (RankId q = 0; q < s.numRanks; ++q)
    terms.push_back(Term{q, chunk, 1.0});
  return SymValue{SharedTerms(std::move(terms)), false};
}

double maxDifference(const SymValue &a, const SymValue &b) {
  if (a.isUndefined || b.isUndefined)
    return a.isUndefined == b.isUndefined ? 0.0 : INFINITY;
  if (a.isOpaque || b.isOpaque)
    return INFINITY; // not comparable within the batch: never a match
  SymValue d = combine(1.0, a, -1.0, b);
  double m = 0.0;
  for (const Term &t : d.terms)
    m = std::max(m, std::fabs(t.coeff));
  return m;
}

} // namespace

bool isConstrained(const Schedule &s, RankId rank) {
  return s.collective != Collective::Reduce || rank == s.root;
}

llvm::Expected<SymbolicResult> execute(const Schedule &s, ChunkBatch batch) {
  return Executor(s, nullptr, batch).run();
}

llvm::Error executeBatches(
    const Schedule &s, llvm::ArrayRef<ChunkBatch> batches,
    const CombinedGraph &g, const std::vector<uint32_t> &order,
    llvm::function_ref<bool(ChunkBatch, const SymbolicResult &)> check) {
  Executor e(s);
  SymbolicResult res; // reused by every batch
  for (const ChunkBatch &batch : batches) {
    if (auto err = e.runInto(res, &g, &order, batch))
      return err;
    if (!check(batch, res))
      break;
  }
  return llvm::Error::success();
}

llvm::Expected<SymbolicResult>
executeWithRounding(const Schedule &s, std::vector<RoundingEvent> &events) {
  events.clear();
  return Executor(s, &events).run();
}

ExpectedForm expectedForm(const Schedule &s, RankId rank, int32_t chunk) {
  int32_t per = s.numRanks > 0 ? s.chunksPerLoop / s.numRanks : 0;
  auto input = [](RankId r, int32_t c) {
    return ExpectedForm{ExpectedForm::Input, r, c};
  };
  auto sum = [](int32_t c) { return ExpectedForm{ExpectedForm::Sum, 0, c}; };
  switch (s.collective) {
  case Collective::AllReduce:
    return sum(chunk);
  case Collective::AllGather:
    if (per <= 0)
      return {};
    return input(chunk / per, chunk % per);
  case Collective::ReduceScatter:
    return sum(rank * per + chunk);
  case Collective::Broadcast:
    return input(s.root, chunk);
  case Collective::Reduce:
    return rank == s.root ? sum(chunk) : ExpectedForm{};
  case Collective::AllToAll:
    if (per <= 0)
      return {};
    return input(chunk / per, rank * per + chunk % per);
  }
  return {};
}

SymValue expectedOutput(const Schedule &s, RankId rank, int32_t chunk) {
  ExpectedForm f = expectedForm(s, rank, chunk);
  switch (f.kind) {
  case ExpectedForm::Input:
    return inputChunk(f.rank, f.chunk);
  case ExpectedForm::Sum:
    return sumOver(s, f.chunk);
  case ExpectedForm::Undefined:
    break;
  }
  return undefined();
}

bool valuesMatch(const SymValue &got, const SymValue &want, double tolerance) {
  if (got.isUndefined == want.isUndefined && !got.isOpaque && !want.isOpaque &&
      got.terms == want.terms)
    return true; // no difference to build
  double d = maxDifference(got, want);
  return d <= tolerance;
}

namespace {
/// expectedOutput with the reductions' sums built once per chunk (they do
/// not depend on the rank), so checking N ranks' outputs does not build N
/// copies of every N-term sum.
class ExpectedOutputs {
public:
  explicit ExpectedOutputs(const Schedule &s) : s(s) {}
  /// The input chunk of out[rank][chunk]'s expected terms (0 when it has
  /// none), without building a sum.
  int32_t inputChunk(RankId rank, int32_t chunk) const {
    ExpectedForm f = expectedForm(s, rank, chunk);
    return f.kind == ExpectedForm::Undefined ? 0 : f.chunk;
  }
  SymValue get(RankId rank, int32_t chunk) {
    ExpectedForm f = expectedForm(s, rank, chunk);
    if (f.kind != ExpectedForm::Sum)
      return expectedOutput(s, rank, chunk);
    auto [it, fresh] = sums.try_emplace(f.chunk);
    if (fresh)
      it->second = sumOver(s, f.chunk);
    return it->second;
  }

private:
  const Schedule &s;
  std::map<int32_t, SymValue> sums;
};
} // namespace

std::vector<double> outputError(const Schedule &s, const SymbolicResult &r) {
  std::vector<double> err(r.output.size(), 0.0);
  ExpectedOutputs expected(s);
  for (size_t q = 0; q < r.output.size(); ++q) {
    if (!isConstrained(s, static_cast<RankId>(q)))
      continue;
    for (size_t c = 0; c < r.output[q].size(); ++c) {
      SymValue want =
          expected.get(static_cast<RankId>(q), static_cast<int32_t>(c));
      const SymValue &got = r.output[q][c];
      if (got.isUndefined == want.isUndefined && !got.isOpaque &&
          got.terms == want.terms)
        continue; // equal: difference 0
      err[q] = std::max(err[q], maxDifference(got, want));
    }
  }
  return err;
}

std::vector<WrongOutput> findWrongOutputs(const Schedule &s,
                                          const SymbolicResult &r,
                                          double tolerance, ChunkBatch batch) {
  std::vector<WrongOutput> wrong;
  ExpectedOutputs expected(s);
  for (size_t q = 0; q < r.output.size(); ++q) {
    if (!isConstrained(s, static_cast<RankId>(q)))
      continue;
    for (size_t c = 0; c < r.output[q].size(); ++c) {
      if (!batch.contains(expected.inputChunk(static_cast<RankId>(q),
                                              static_cast<int32_t>(c))))
        continue;
      SymValue want =
          expected.get(static_cast<RankId>(q), static_cast<int32_t>(c));
      if (!valuesMatch(r.output[q][c], want, tolerance))
        wrong.push_back(WrongOutput{static_cast<RankId>(q),
                                    static_cast<int32_t>(c), r.output[q][c],
                                    std::move(want)});
    }
  }
  return wrong;
}

std::string describeWrongOutput(const WrongOutput &w) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << "rank " << w.rank << " out[" << w.chunk
     << "]: got " << formatValue(w.got) << ", expected "
     << formatValue(w.expected);
  os.flush();
  return out;
}

llvm::Error checkPostcondition(const Schedule &s, double tolerance) {
  auto res = execute(s);
  if (!res)
    return res.takeError();
  std::vector<WrongOutput> wrong = findWrongOutputs(s, *res, tolerance);
  if (wrong.empty())
    return llvm::Error::success();
  constexpr size_t kShown = 5;
  std::string msg = "schedule @" + s.name + " does not compute " +
                    collectiveName(s.collective).str() + ":";
  for (size_t i = 0; i < wrong.size() && i < kShown; ++i)
    msg += "\n  " + describeWrongOutput(wrong[i]);
  if (wrong.size() > kShown)
    msg += "\n  (and " + std::to_string(wrong.size() - kShown) +
           " more wrong output chunks)";
  return makeUserError(msg);
}

std::string formatValue(const SymValue &v) {
  if (v.isUndefined)
    return "undef";
  if (v.isOpaque)
    return "a combination that includes other chunks";
  if (v.terms.empty())
    return "0";
  std::string out;
  llvm::raw_string_ostream os(out);
  for (size_t i = 0; i < v.terms.size(); ++i) {
    const Term &t = v.terms[i];
    double c = t.coeff;
    if (i > 0) {
      os << (c < 0 ? " - " : " + ");
      c = std::fabs(c);
    } else if (c == -1.0) {
      os << '-';
      c = 1.0;
    }
    if (c != 1.0)
      os << formatDouble(c) << '*';
    os << 'r' << t.rank << '[' << t.chunk << ']';
  }
  os.flush();
  return out;
}

} // namespace topocc::ir
