//===- ir/Fingerprint.cpp - Postcondition of exact schedules by hashing ---===//
//
// The semantics of ir/Semantics.cpp's Executor on fingerprints: a slot is
// kUndefined or a residue mod p. Keep the two in step: the verifier's
// verdict on an exact schedule is this file's, and Semantics names the
// values only when this file found a wrong one
// (tests/unit/ir/FingerprintTest.cpp runs both on damaged schedules).
//
//===----------------------------------------------------------------------===//

#include "ir/Fingerprint.h"

#include "ir/CombinedGraph.h"
#include "ir/Semantics.h"
#include "ir/SlotStore.h"

#include <algorithm>

namespace topocc::ir {

namespace {

constexpr uint64_t kUndefined = ~uint64_t(0); ///< not a residue
/// An expected value that no slot can hold (a term of an input chunk that
/// no rank has): never matches.
constexpr uint64_t kNever = kUndefined - 1;

/// (a + b) mod p for residues a, b < p; undefined when either is.
uint64_t add(uint64_t a, uint64_t b) {
  if (a == kUndefined || b == kUndefined)
    return kUndefined;
  uint64_t s = a + b; // < 2^62: no overflow
  return s >= kFingerprintPrime ? s - kFingerprintPrime : s;
}

/// SplitMix64's output function (Steele, Lea and Flood, OOPSLA 2014).
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

class FingerprintExecutor {
public:
  explicit FingerprintExecutor(const Schedule &s)
      : s(s), store(s, kUndefined) {}

  llvm::Error run(const CombinedGraph &g, const std::vector<uint32_t> &order) {
    for (RankId r = 0; r < s.numRanks; ++r)
      for (int32_t c = 0; c < s.nominalInputChunks(); ++c)
        store.write(r, BufferKind::Input, c, fingerprintWeight(r, c));
    for (uint32_t v : order) {
      RankId r = g.rankOf(v);
      OpId id = OpId(v - g.rankBase[r]);
      if (auto err = step(r, id, s.ranks[r].ops[id]))
        return err;
    }
    return llvm::Error::success();
  }

  uint64_t read(RankId r, BufferKind b, int64_t chunk) const {
    return store.read(r, b, chunk);
  }

private:
  using Store = SlotStore<uint64_t, 4>;
  using Values = Store::Values;
  llvm::Error step(RankId r, OpId id, const Op &op);

  const Schedule &s;
  Store store;
};

llvm::Error FingerprintExecutor::step(RankId r, OpId id, const Op &op) {
  unsigned f = opFlags(op.kind);
  if (f & OF_RV) {
    int32_t n = std::max(0, op.wireCount());
    auto msg = store.receive(r, id, op.recvMsg, n);
    if (!msg)
      return msg.takeError();
    Values result(msg->begin(), msg->begin() + n);
    if (f & OF_RE) {
      Values local = store.readRef(r, op.src);
      for (int32_t i = 0; i < n; ++i)
        result[i] =
            add(i < int32_t(local.size()) ? local[i] : kUndefined, result[i]);
    }
    if (f & OF_WD)
      store.writeRef(r, op.dst, result);
    if (f & OF_SN)
      store.send(op.sendMsg, std::move(result));
    return llvm::Error::success();
  }
  switch (op.kind) {
  case OpKind::Send:
    store.send(op.sendMsg, store.readRef(r, op.src));
    break;
  case OpKind::Copy:
    store.writeRef(r, op.dst, store.readRef(r, op.src));
    break;
  case OpKind::Reduce: {
    Values d = store.readRef(r, op.dst), v = store.readRef(r, op.src);
    for (size_t i = 0; i < d.size(); ++i)
      d[i] = add(d[i], i < v.size() ? v[i] : kUndefined);
    store.writeRef(r, op.dst, std::move(d));
    break;
  }
  default: // nop; lincomb is outside this file's REQUIRES
    break;
  }
  return llvm::Error::success();
}

} // namespace

bool isExactSchedule(const Schedule &s) {
  for (const RankProgram &rp : s.ranks)
    for (const Op &op : rp.ops)
      if (op.kind == OpKind::LinComb || op.localCoeff != 1.0 ||
          op.msgCoeff != 1.0)
        return false;
  return true;
}

uint64_t fingerprintWeight(RankId r, int32_t c) {
  // A fixed seed: the weights must not depend on the schedule.
  uint64_t key = (uint64_t(uint32_t(r)) << 32) | uint32_t(c);
  return (mix(key ^ 0x746f706f63630001ull) >> 3) % kFingerprintPrime;
}

llvm::Expected<std::vector<OutputSlot>>
findWrongOutputsByFingerprint(const Schedule &s, const CombinedGraph &g,
                              const std::vector<uint32_t> &order) {
  FingerprintExecutor e(s);
  if (auto err = e.run(g, order))
    return err;
  // The sums over ranks, per input chunk, built when first needed.
  std::vector<uint64_t> sums;
  auto sumOf = [&](int32_t c) {
    if (c < 0 || c >= s.nominalInputChunks())
      return kNever;
    if (sums.empty())
      sums.assign(size_t(s.nominalInputChunks()), kUndefined);
    uint64_t &v = sums[c];
    if (v == kUndefined) {
      v = 0;
      for (RankId r = 0; r < s.numRanks; ++r)
        v = add(v, fingerprintWeight(r, c));
    }
    return v;
  };
  std::vector<OutputSlot> wrong;
  const int32_t outChunks = std::max(0, s.nominalOutputChunks());
  for (RankId r = 0; r < s.numRanks; ++r) {
    if (!isConstrained(s, r))
      continue;
    for (int32_t c = 0; c < outChunks; ++c) {
      ExpectedForm f = expectedForm(s, r, c);
      uint64_t want = kUndefined;
      if (f.kind == ExpectedForm::Sum)
        want = sumOf(f.chunk);
      else if (f.kind == ExpectedForm::Input)
        want = f.rank >= 0 && f.rank < s.numRanks && f.chunk >= 0 &&
                       f.chunk < s.nominalInputChunks()
                   ? fingerprintWeight(f.rank, f.chunk)
                   : kNever;
      if (e.read(r, BufferKind::Output, c) != want)
        wrong.push_back(OutputSlot{r, c});
    }
  }
  return wrong;
}

} // namespace topocc::ir
