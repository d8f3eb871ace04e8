//===- ir/SlotStore.h - Slot values and messages of an execution -*- C++
//-*-===//
//
// What the symbolic semantics (ir/Semantics.cpp) and the fingerprints
// (ir/Fingerprint.cpp) keep while they run a schedule: one value per buffer
// slot after in-place aliasing (a flat array by SlotIndex, a map for slots
// outside it), and the values of each message between its send and its
// receive. The two differ only in the value type and in how ops combine
// values. Private to ir/.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_IR_SLOTSTORE_H
#define TOPOCC_IR_SLOTSTORE_H

#include "ir/CombinedGraph.h"
#include "ir/Schedule.h"
#include "support/Diagnostics.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/Twine.h"

#include <vector>

namespace topocc::ir {

/// Values of type V per slot and per message in flight; `undefined` is the
/// value of a slot never written. N: inline values of a ref (most ops move
/// one chunk or a few).
template <class V, unsigned N> class SlotStore {
public:
  using Values = llvm::SmallVector<V, N>;

  SlotStore(const Schedule &s, V undefined)
      : s(s), undefined(undefined),
        slots(static_cast<size_t>(index.numSlots()), undefined) {}

  V read(RankId r, BufferKind b, int64_t chunk) const {
    CanonicalSlot c = canonicalSlot(s, r, b, chunk);
    if (int64_t i = index.index(r, c); i >= 0)
      return slots[i];
    auto it = overflow.find(slotKey(r, c));
    return it == overflow.end() ? undefined : it->second;
  }
  void write(RankId r, BufferKind b, int64_t chunk, V v) {
    CanonicalSlot c = canonicalSlot(s, r, b, chunk);
    if (int64_t i = index.index(r, c); i >= 0)
      slots[i] = std::move(v);
    else
      overflow[slotKey(r, c)] = std::move(v);
  }
  /// The ref's `count` values.
  Values readRef(RankId r, const BufferRef &ref) const {
    if (ref.count < 1)
      return {};
    const CanonicalSlot c = canonicalSlot(s, r, ref.buffer, ref.chunk);
    if (int64_t i = index.runIndex(r, c, ref.count); i >= 0)
      return Values(slots.begin() + i, slots.begin() + i + ref.count);
    Values vals;
    for (int32_t i = 0; i < ref.count; ++i)
      vals.push_back(read(r, ref.buffer, int64_t(ref.chunk) + i));
    return vals;
  }
  /// Writes the ref's `count` slots; those `vals` lacks become undefined.
  void writeRef(RankId r, const BufferRef &ref, Values vals) {
    if (ref.count < 1)
      return;
    const CanonicalSlot c = canonicalSlot(s, r, ref.buffer, ref.chunk);
    auto value = [&](int32_t i) {
      return i < int32_t(vals.size()) ? std::move(vals[i]) : undefined;
    };
    if (int64_t first = index.runIndex(r, c, ref.count); first >= 0) {
      for (int32_t i = 0; i < ref.count; ++i)
        slots[first + i] = value(i);
      return;
    }
    for (int32_t i = 0; i < ref.count; ++i)
      write(r, ref.buffer, int64_t(ref.chunk) + i, value(i));
  }

  void send(MsgId m, Values vals) { messages[m] = std::move(vals); }
  /// Message m's values, padded with undefined values to at least `count`;
  /// an internal error naming rank r's op `id` when m was never sent.
  llvm::Expected<Values> receive(RankId r, OpId id, MsgId m, int32_t count) {
    auto it = messages.find(m);
    if (it == messages.end())
      return makeInternalError("semantics: rank " + llvm::Twine(r) + " %" +
                               llvm::Twine(id) + " receives message " +
                               llvm::Twine(m) + ", which was never sent");
    Values vals = std::move(it->second);
    messages.erase(it);
    if (vals.size() < size_t(std::max(0, count)))
      vals.resize(size_t(count), undefined);
    return vals;
  }

  /// Every slot undefined and no message in flight, keeping the slots'
  /// memory.
  void clear() {
    std::fill(slots.begin(), slots.end(), undefined);
    overflow.clear();
    messages.clear();
  }

private:
  const Schedule &s;
  V undefined;
  SlotIndex index{s};
  /// By SlotIndex; slots outside it (malformed operands) in `overflow`.
  std::vector<V> slots;
  llvm::DenseMap<uint64_t, V> overflow;
  llvm::DenseMap<MsgId, Values> messages;
};

} // namespace topocc::ir

#endif // TOPOCC_IR_SLOTSTORE_H
