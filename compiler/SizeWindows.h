//===- compiler/SizeWindows.h - compile --sizes: one schedule per window -*- C++
//-*-===//
//
// `topocc compile --sizes MIN:MAX`: --algorithm auto at every power of two
// from MIN to MAX (and at MIN and MAX themselves), consecutive sizes whose
// choice is the same schedule grouped into windows that tile [MIN, MAX].
// The windows' bounds are inclusive at both ends, as the MSCCL runtimes
// compare a call's nBytes with minBytes and maxBytes (docs/MscclXml.md,
// "Size windows"). Stage: after compile(); every window's schedule is
// verified (compile() verifies it). Never prints; deterministic.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_SIZEWINDOWS_H
#define TOPOCC_COMPILER_SIZEWINDOWS_H

#include "backends/PlanJson.h"
#include "compiler/CompileRequest.h"
#include "compiler/PassLogger.h"
#include "compiler/topology/Topology.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace topocc {

/// --sizes MIN:MAX, each a size as --size reads it (support/ByteSize.h) in
/// whole bytes, MIN <= MAX. User errors name --sizes.
llvm::Expected<std::pair<int64_t, int64_t>>
parseSizeWindowRange(llvm::StringRef text);

/// The sizes --sizes MIN:MAX runs auto at: MIN, every power of two above
/// it and below MAX, and MAX (ascending, without duplicates).
/// REQUIRES: 0 < minBytes <= maxBytes.
std::vector<int64_t> sizeWindowSamples(int64_t minBytes, int64_t maxBytes);

struct SizeWindow {
  /// Bytes, both inclusive: [first sample, next window's first sample - 1],
  /// the first window from MIN and the last to MAX.
  int64_t minBytes = 0;
  int64_t maxBytes = 0;
  /// The sizes whose auto choice this is (ascending, inside the window).
  std::vector<int64_t> samples;
  /// The choice at the first sample (its schedule, algorithm, flags);
  /// every other sample chose the same schedule.
  CompileResult result;
};

/// Runs compile() with `req` (REQUIRES: req.algorithm is Auto) at every
/// sample of [minBytes, maxBytes], req.bytes set to the sample, and groups
/// consecutive samples that chose the same schedule (same algorithm, same
/// chosen flags, same schedule content) into windows. With
/// `mustServePowersOfTwo` auto considers, at each power-of-two sample, only
/// candidates whose MSCCL file serves that size (CompileRequest::
/// autoMustServe), so each window's file serves every power of two of its
/// window. User errors: the range (not 0 < MIN <= MAX), and compile()'s.
llvm::Expected<std::vector<SizeWindow>>
compileSizeWindows(const topo::Topology &t, const CompileRequest &req,
                   int64_t minBytes, int64_t maxBytes,
                   bool mustServePowersOfTwo);

/// Names window i's schedule as `compile --sizes` does:
/// TOPOLOGY_ALGORITHM_COLLECTIVE_MODE_wI (MODE inplace or outofplace).
void nameSizeWindows(std::vector<SizeWindow> &windows, const topo::Topology &t,
                     bool inplace);

/// Each window's plan metadata: `meta` with the window's algorithm and, for
/// coded schedules, its error bound and roundoff gain.
std::vector<backends::PlanMeta>
sizeWindowMetas(llvm::ArrayRef<SizeWindow> windows,
                const backends::PlanMeta &meta);

/// The windows as one plan set (`compile --emit plan --sizes`):
/// backends::planSetToJson of the windows' bounds, schedules and
/// sizeWindowMetas(windows, meta).
llvm::Expected<std::string>
sizeWindowPlanSet(llvm::ArrayRef<SizeWindow> windows,
                  const backends::PlanMeta &meta);

} // namespace topocc

#endif // TOPOCC_COMPILER_SIZEWINDOWS_H
