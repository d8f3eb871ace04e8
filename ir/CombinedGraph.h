//===- ir/CombinedGraph.h - The happens-before graph of a schedule -*- C++ -*-===//
//
// The combined graph the verifier and the semantics share: one node per op of
// every rank; edges for same-rank deps, program order inside a threadblock
// (from ThreadblocksAssigned on) and send -> receive of each message. Also the
// in-place aliasing of buffer slots. Stage: any.
// REQUIRES: nothing; out-of-range deps and unmatched messages add no edge.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_IR_COMBINEDGRAPH_H
#define TOPOCC_IR_COMBINEDGRAPH_H

#include "ir/Schedule.h"

#include <cstdint>
#include <vector>

namespace topocc::ir {

struct CombinedGraph {
  /// Node of (rank r, op i) is rankBase[r] + i; rankBase has numRanks + 1
  /// entries.
  std::vector<uint32_t> rankBase;
  /// Successors and predecessors in CSR form.
  std::vector<uint32_t> succStart, succ, predStart, pred;

  uint32_t numNodes() const { return rankBase.empty() ? 0 : rankBase.back(); }
  uint32_t node(RankId r, OpId i) const { return rankBase[r] + i; }
  RankId rankOf(uint32_t n) const;
  OpId opOf(uint32_t n) const { return n - rankBase[rankOf(n)]; }
};

CombinedGraph buildCombinedGraph(const Schedule &s);

/// A topological order (Kahn's algorithm, FIFO, deterministic). Returns false
/// when the graph has a cycle; `order` then holds the nodes that could be
/// ordered.
bool topologicalOrder(const CombinedGraph &g, std::vector<uint32_t> &order);

/// One cycle, in edge order, among the nodes that `order` (a partial order
/// from topologicalOrder) misses. Iterative.
std::vector<uint32_t> findCycle(const CombinedGraph &g,
                                const std::vector<uint32_t> &order);

/// Per rank and op: its sub-schedule, the smallest global op id (ops of
/// rank 0 first, then rank 1, ...) of the class of ops joined by same-rank
/// deps and messages: one ring channel, or one tree's piece.
std::vector<std::vector<size_t>> subSchedules(const Schedule &s);

/// A buffer slot after in-place aliasing is resolved
/// (docs/MscclXmlFormat.md 2.6).
struct CanonicalSlot {
  BufferKind buffer;
  int64_t chunk;
};
/// The aliasing keeps a buffer's chunks in order: chunk + i of `b` is the
/// canonical slot of `chunk`, plus i, in the same buffer.
CanonicalSlot canonicalSlot(const Schedule &s, RankId r, BufferKind b,
                            int64_t chunk);
/// A dense key for (rank, canonical slot); chunk must be in [0, 2^32).
inline uint64_t slotKey(RankId r, CanonicalSlot c) {
  return (static_cast<uint64_t>(r) << 34) |
         (static_cast<uint64_t>(c.buffer) << 32) |
         static_cast<uint64_t>(c.chunk & 0xffffffffu);
}

/// A dense number for every (rank, canonical slot) of a schedule: rank r's
/// input, output and scratch chunks, each buffer as large as the larger of
/// its declared and nominal sizes, so the verifier and the semantics keep
/// per-slot state in flat arrays instead of hash maps. -1 outside (a
/// malformed operand): callers keep such slots elsewhere.
class SlotIndex {
public:
  explicit SlotIndex(const Schedule &s);
  int64_t index(RankId r, CanonicalSlot c) const {
    if (r < 0 || r >= numRanks || c.chunk < 0 ||
        static_cast<unsigned>(c.buffer) > 2)
      return -1;
    size_t b = static_cast<size_t>(r) * 3 + static_cast<size_t>(c.buffer);
    return c.chunk < size[b] ? base[b] + c.chunk : -1;
  }
  /// The index of slot c when it and the `count` - 1 slots after it lie
  /// in the index (their indices follow c's); -1 otherwise.
  int64_t runIndex(RankId r, CanonicalSlot c, int64_t count) const {
    int64_t i = index(r, c);
    if (i < 0 || count < 1)
      return -1;
    size_t b = static_cast<size_t>(r) * 3 + static_cast<size_t>(c.buffer);
    return c.chunk + count <= size[b] ? i : -1;
  }
  int64_t numSlots() const { return total; }

private:
  RankId numRanks = 0;
  std::vector<int64_t> base, size; ///< per (rank, buffer)
  int64_t total = 0;
};

} // namespace topocc::ir

#endif // TOPOCC_IR_COMBINEDGRAPH_H
