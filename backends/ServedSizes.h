//===- backends/ServedSizes.h - Which calls an MSCCL file serves -*- C++ -*-===//
//
// Both MSCCL runtimes (msccl-executor-nccl and RCCL's MSCCL) use a file for
// a call only when count * m is a multiple of nchunksperloop (m = ngpus for
// allgather, reducescatter and alltoall, 1 otherwise) and nBytes = count *
// sizeof(type) * m is inside [minBytes, maxBytes] (maxBytes 0: unbounded);
// other calls silently run the runtime's own algorithms
// (docs/MscclXmlFormat.md 1.3). So a file serves exactly the sizes nBytes
// that are multiples of L * sizeof(type), L = lcm(nchunksperloop, m),
// inside its window. nBytes is the size nccl-tests reports (the whole
// output of an allgather, the whole input of a reducescatter).
// Stage: back end. Never prints; deterministic.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_BACKENDS_SERVEDSIZES_H
#define TOPOCC_BACKENDS_SERVEDSIZES_H

#include "ir/Schedule.h"

#include <cstdint>
#include <string>

namespace topocc::backends {

struct ServedSizes {
  /// L: a call is served when its element count (times m) is a multiple of
  /// this.
  int64_t elementMultiple = 1;
  int64_t minBytes = 0;
  int64_t maxBytes = 0; ///< 0: no upper limit

  /// Whether every power of two at least elementMultiple * elementSize is
  /// served (inside the window): L is a power of two.
  bool powersOfTwo() const;
  /// Whether a call of `bytes` bytes of a type of `elementSize` bytes
  /// selects the file.
  bool serves(int64_t bytes, int64_t elementSize) const;
  /// The smallest served size for `elementSize`: the first multiple of
  /// L * elementSize at or above minBytes (0 when it is above maxBytes).
  int64_t smallest(int64_t elementSize) const;
};

/// What a file of `coll` over `ngpus` ranks with `nchunksPerLoop` units and
/// the window [minBytes, maxBytes] serves.
ServedSizes servedSizes(ir::Collective coll, int64_t ngpus,
                        int64_t nchunksPerLoop, int64_t minBytes = 0,
                        int64_t maxBytes = 0);
/// The same for the MSCCL XML file of `s` (its chunksPerLoop and ranks).
ServedSizes servedSizes(const ir::Schedule &s, int64_t minBytes = 0,
                        int64_t maxBytes = 0);

/// One line for people, for the usual element sizes (fp32 4 B, fp16/bf16
/// 2 B, int8 1 B, fp64 8 B): "every power of two from 32 B (fp32), 16 B
/// (fp16/bf16), 8 B (int8), 64 B (fp64) up, and every multiple of those" or
/// "multiples of 5312 B (fp32), ...; no power of two", with the window when
/// there is one (also for a window that holds no power of two).
std::string describeServedSizes(const ServedSizes &s);

} // namespace topocc::backends

#endif // TOPOCC_BACKENDS_SERVEDSIZES_H
