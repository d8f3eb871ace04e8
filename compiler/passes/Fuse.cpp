//===- compiler/passes/Fuse.cpp - Fuse receive chains into MSCCL ops ------===//
//
// A rule fuses a producer `a` with a consumer `b` that depends on it directly
// when nothing else can observe the difference: no op lies between them in
// the happens-before order, no op between them in the list depends on `a`,
// no other receive from the same peer lies between them (FIFO order), and
// the slot they communicate through is not read by anyone else in between.
// The fused op takes `b`'s place in the list.
//
//===----------------------------------------------------------------------===//

#include "compiler/passes/Fuse.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <algorithm>
#include <cassert>

namespace topocc::passes {

using namespace ir;

namespace {

bool overlaps(const BufferRef &a, const BufferRef &b) {
  return a.isUsed() && b.isUsed() && a.buffer == b.buffer &&
         a.chunk < b.chunk + b.count && b.chunk < a.chunk + a.count;
}

/// Local slots an op reads.
llvm::SmallVector<BufferRef, 2> localReads(const Op &op) {
  llvm::SmallVector<BufferRef, 2> r;
  unsigned f = opFlags(op.kind);
  if (f & OF_RS)
    r.push_back(op.src);
  if (f & OF_RD)
    r.push_back(op.dst);
  if (f & OF_LC)
    for (const LinTerm &t : op.terms)
      r.push_back(t.src);
  return r;
}

bool isPlain(const Op &op) {
  return op.localCoeff == 1.0 && op.msgCoeff == 1.0;
}

/// Fuses the ops of one rank, one rule group at a time.
class RankFuser {
public:
  explicit RankFuser(RankProgram &rp) : ops(rp.ops) {}

  /// Applies `rule` to every candidate consumer; returns true if any fired.
  template <typename Rule> bool apply(Rule rule) {
    sortTopologically();
    computeOrder();
    indexReaders();
    removed.assign(ops.size(), false);
    redirect.assign(ops.size(), kNone);
    bool changed = false;
    for (OpId b = 0; b < static_cast<OpId>(ops.size()); ++b)
      if (!removed[b] && redirect[b] == kNone)
        changed |= rule(*this, b);
    if (changed)
      compact();
    return changed;
  }

  std::vector<Op> &ops;

  /// True if a happens before b through same-rank deps.
  bool hb(OpId a, OpId b) const {
    return (before[size_t(b) * words + size_t(a) / 64] >> (a % 64)) & 1;
  }

  /// The checks every producer/consumer fusion needs (see file comment).
  bool canFuse(OpId a, OpId b) const {
    if (a >= b || removed[a] || redirect[a] != kNone)
      return false;
    if (!isPlain(ops[a]) || !isPlain(ops[b]))
      return false;
    if (ops[a].channel != ops[b].channel)
      return false; // a lowering's channel choice (trees: one per chain)
    for (OpId d : ops[b].deps)
      if (d != a && hb(a, d))
        return false; // something happens between a and b
    for (OpId x = a + 1; x < b; ++x) {
      if (hb(a, x))
        return false; // would have to move after the fused op
      if (receives(ops[x].kind) && ops[x].recvPeer == ops[a].recvPeer)
        return false; // FIFO order with the same peer
    }
    return true;
  }

  /// Every op other than a and b that reads `slot` happens before a, or
  /// (when allowedAfter) after b.
  bool othersReadOnlyOutside(const BufferRef &slot, OpId a, OpId b,
                             bool allowedAfter) const {
    const ChunkReaders &byChunk = readers[static_cast<int>(slot.buffer)];
    for (int32_t c = slot.chunk; c < slot.chunk + slot.count; ++c) {
      for (OpId x : byChunk.of(c)) {
        if (x == a || x == b || removed[x])
          continue;
        if (!hb(x, a) && !(allowedAfter && hb(b, x)))
          return false;
      }
    }
    return true;
  }

  /// Replaces b by `fused` and drops a; dependents of a now depend on b.
  void merge(OpId a, OpId b, Op fused) {
    llvm::SmallVector<OpId, 4> deps;
    for (OpId d : ops[a].deps)
      deps.push_back(d);
    for (OpId d : ops[b].deps)
      if (d != a)
        deps.push_back(d);
    fused.deps.assign(deps.begin(), deps.end());
    fused.channel = ops[b].channel;
    fused.threadblock = ops[b].threadblock;
    ops[b] = std::move(fused);
    removed[a] = true;
    redirect[a] = b;
  }

private:
  /// Row b holds bit a when a happens before b: `words` 64-bit words per
  /// op in one array, reused by every round (one allocation, not one per
  /// op).
  std::vector<uint64_t> before;
  size_t words = 0;
  /// The ops that read each chunk of one buffer kind, in op order, as one
  /// array with an offset per chunk (rebuilt every round without an
  /// allocation per chunk).
  struct ChunkReaders {
    std::vector<uint32_t> begin; ///< chunk c: ops[begin[c], begin[c + 1])
    std::vector<OpId> ops;
    llvm::ArrayRef<OpId> of(int32_t c) const {
      if (c < 0 || static_cast<size_t>(c) + 1 >= begin.size())
        return {};
      return llvm::ArrayRef<OpId>(ops).slice(begin[c], begin[c + 1] - begin[c]);
    }
  };
  /// [buffer kind]: the readers of each chunk (at apply time).
  ChunkReaders readers[3];
  std::vector<bool> removed;
  std::vector<OpId> redirect;

  void computeOrder() {
    size_t n = ops.size();
    words = (n + 63) / 64;
    before.assign(n * words, 0);
    for (size_t i = 0; i < n; ++i) {
      uint64_t *row = &before[i * words];
      for (OpId d : ops[i].deps) {
        assert(static_cast<size_t>(d) < i && "deps point backwards");
        // d's row holds only ops before d: its first d / 64 + 1 words.
        const uint64_t *from = &before[size_t(d) * words];
        for (size_t w = 0; w <= size_t(d) / 64; ++w)
          row[w] |= from[w];
        row[size_t(d) / 64] |= uint64_t(1) << (d % 64);
      }
    }
  }

  void indexReaders() {
    // Count the readers of each chunk, then place them (counting sort).
    auto forEachRead = [&](auto visit) {
      for (OpId x = 0; x < static_cast<OpId>(ops.size()); ++x)
        for (const BufferRef &r : localReads(ops[x]))
          if (r.isUsed() && r.chunk >= 0)
            for (int32_t c = r.chunk; c < r.chunk + r.count; ++c)
              visit(readers[static_cast<int>(r.buffer)], c, x);
    };
    for (ChunkReaders &r : readers)
      r.begin.assign(1, 0);
    forEachRead([](ChunkReaders &r, int32_t c, OpId) {
      if (r.begin.size() < static_cast<size_t>(c) + 2)
        r.begin.resize(c + 2, 0);
      ++r.begin[c + 1];
    });
    for (ChunkReaders &r : readers) {
      for (size_t c = 1; c < r.begin.size(); ++c)
        r.begin[c] += r.begin[c - 1];
      r.ops.resize(r.begin.back());
    }
    std::vector<uint32_t> next[3];
    for (int k = 0; k < 3; ++k)
      next[k].assign(readers[k].begin.begin(), readers[k].begin.end());
    forEachRead([&](ChunkReaders &r, int32_t c, OpId x) {
      std::vector<uint32_t> &at = next[&r - readers];
      r.ops[at[c]++] = x;
    });
  }

  /// Stable topological order (by list position) so deps point backwards.
  void sortTopologically() {
    size_t n = ops.size();
    bool sorted = true;
    for (size_t i = 0; i < n && sorted; ++i)
      for (OpId d : ops[i].deps)
        if (static_cast<size_t>(d) >= i)
          sorted = false;
    if (sorted)
      return;
    std::vector<std::vector<OpId>> users(n);
    std::vector<int> pending(n, 0);
    for (size_t i = 0; i < n; ++i)
      for (OpId d : ops[i].deps) {
        users[d].push_back(static_cast<OpId>(i));
        ++pending[i];
      }
    std::vector<OpId> order, ready;
    for (size_t i = 0; i < n; ++i)
      if (!pending[i])
        ready.push_back(static_cast<OpId>(i));
    while (!ready.empty()) {
      auto it = std::min_element(ready.begin(), ready.end());
      OpId x = *it;
      ready.erase(it);
      order.push_back(x);
      for (OpId u : users[x])
        if (--pending[u] == 0)
          ready.push_back(u);
    }
    assert(order.size() == n && "same-rank deps are cyclic");
    std::vector<OpId> newId(n);
    for (size_t i = 0; i < n; ++i)
      newId[order[i]] = static_cast<OpId>(i);
    std::vector<Op> out;
    out.reserve(n);
    for (OpId x : order) {
      out.push_back(std::move(ops[x]));
      for (OpId &d : out.back().deps)
        d = newId[d];
    }
    ops = std::move(out);
  }

  void compact() {
    size_t n = ops.size();
    std::vector<OpId> newId(n, kNone);
    OpId next = 0;
    for (size_t i = 0; i < n; ++i)
      if (!removed[i])
        newId[i] = next++;
    std::vector<Op> out;
    out.reserve(next);
    for (size_t i = 0; i < n; ++i) {
      if (removed[i])
        continue;
      Op op = std::move(ops[i]);
      OpDeps deps;
      for (OpId d : op.deps) {
        while (removed[d])
          d = redirect[d];
        if (newId[d] != newId[i])
          deps.push_back(newId[d]);
      }
      llvm::sort(deps);
      deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
      op.deps = std::move(deps);
      out.push_back(std::move(op));
    }
    ops = std::move(out);
    sortTopologically();
  }
};

/// The producer among b's direct deps that satisfies `pred`, or kNone.
template <typename Pred>
OpId findProducer(const RankFuser &f, OpId b, Pred pred) {
  for (OpId a : f.ops[b].deps)
    if (pred(f.ops[a]) && f.canFuse(a, b))
      return a;
  return kNone;
}

Op recvReduceCopy(const Op &recv, BufferRef local, BufferRef dst) {
  Op op;
  op.kind = OpKind::RecvReduceCopy;
  op.src = local;
  op.dst = dst;
  op.recvPeer = recv.recvPeer;
  op.recvMsg = recv.recvMsg;
  return op;
}

bool fuseRecvReduce(RankFuser &f, OpId b) {
  const Op &red = f.ops[b];
  if (red.kind != OpKind::Reduce || overlaps(red.src, red.dst))
    return false;
  // recv(d) ; reduce(d += x) -> rrc(d = x + msg)
  OpId a = findProducer(f, b, [&](const Op &p) {
    return p.kind == OpKind::Recv && p.dst == red.dst;
  });
  if (a != kNone && f.othersReadOnlyOutside(red.dst, a, b, true)) {
    f.merge(a, b, recvReduceCopy(f.ops[a], red.src, red.dst));
    return true;
  }
  // recv(t) ; reduce(x += t) -> rrc(x = x + msg)   (t scratch, no other reader)
  a = findProducer(f, b, [&](const Op &p) {
    return p.kind == OpKind::Recv && p.dst == red.src &&
           p.dst.buffer == BufferKind::Scratch;
  });
  if (a != kNone && f.othersReadOnlyOutside(red.src, a, b, false)) {
    f.merge(a, b, recvReduceCopy(f.ops[a], red.dst, red.dst));
    return true;
  }
  return false;
}

bool fuseForward(RankFuser &f, OpId b) {
  const Op &send = f.ops[b];
  if (send.kind != OpKind::Send)
    return false;
  OpId a = findProducer(f, b, [&](const Op &p) {
    return (p.kind == OpKind::Recv || p.kind == OpKind::RecvReduceCopy) &&
           p.dst == send.src;
  });
  if (a == kNone)
    return false;
  Op fused = f.ops[a];
  // recv(d) ; send(d) -> rcs(d)
  // rrc(d = x + msg) ; send(d) -> rrcs(d = x + msg)
  fused.kind = fused.kind == OpKind::Recv ? OpKind::RecvCopySend
                                          : OpKind::RecvReduceCopySend;
  fused.sendPeer = send.sendPeer;
  fused.sendMsg = send.sendMsg;
  f.merge(a, b, std::move(fused));
  return true;
}

bool dropDeadScratch(RankFuser &f, OpId b) {
  Op &op = f.ops[b];
  // rrcs(t = x + msg) -> rrs(x + msg)   (t scratch, no other reader)
  if (op.kind != OpKind::RecvReduceCopySend ||
      op.dst.buffer != BufferKind::Scratch ||
      !f.othersReadOnlyOutside(op.dst, b, b, false))
    return false;
  op.kind = OpKind::RecvReduceSend;
  op.dst = BufferRef();
  return true;
}

} // namespace

void fuse(Schedule &s) {
  assert((s.stage == Stage::Lowered || s.stage == Stage::Fused) &&
         "fuse runs before channel assignment");
  for (RankProgram &rp : s.ranks) {
    RankFuser f(rp);
    f.apply(fuseRecvReduce);
    f.apply(fuseForward);
    bool changed =
        f.apply([](RankFuser &f, OpId b) { return dropDeadScratch(f, b); });
    (void)changed;
    int32_t scratchEnd = 0;
    for (const Op &op : rp.ops)
      for (const BufferRef *b : {&op.src, &op.dst})
        if (b->isUsed() && b->buffer == BufferKind::Scratch)
          scratchEnd = std::max(scratchEnd, b->chunk + b->count);
    rp.scratchChunks = scratchEnd;
  }
  s.stage = Stage::Fused;
}

} // namespace topocc::passes
