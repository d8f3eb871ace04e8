//===- compiler/SizeWindows.cpp - compile --sizes: one schedule per window ===//

#include "compiler/SizeWindows.h"

#include "backends/PlanJson.h"
#include "compiler/Pipeline.h"
#include "support/ByteSize.h"
#include "support/Diagnostics.h"
#include "support/Progress.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

namespace topocc {

llvm::Expected<std::pair<int64_t, int64_t>>
parseSizeWindowRange(llvm::StringRef text) {
  llvm::SmallVector<llvm::StringRef, 3> parts;
  text.split(parts, ':');
  if (parts.size() != 2)
    return makeUserError("invalid --sizes '" + text +
                         "' (expected MIN:MAX, e.g. 1K:64M: one schedule per "
                         "window of sizes from MIN to MAX)");
  int64_t bounds[2];
  for (int i = 0; i < 2; ++i) {
    auto b = parseByteSize(parts[i], "--sizes");
    if (!b)
      return b.takeError();
    if (*b != std::floor(*b) || *b >= 9.0e18)
      return makeUserError("invalid --sizes '" + text +
                           "': " + (i ? "MAX" : "MIN") + " " + parts[i] +
                           " is not a whole number of bytes");
    bounds[i] = static_cast<int64_t>(*b);
  }
  if (bounds[0] > bounds[1])
    return makeUserError(llvm::formatv(
        "invalid --sizes '{0}': MIN ({1}) is larger than MAX ({2})", text,
        sizeText(double(bounds[0])), sizeText(double(bounds[1]))));
  return std::make_pair(bounds[0], bounds[1]);
}

std::vector<int64_t> sizeWindowSamples(int64_t minBytes, int64_t maxBytes) {
  std::vector<int64_t> samples{minBytes};
  for (uint64_t p = llvm::PowerOf2Ceil(uint64_t(minBytes));
       p < uint64_t(maxBytes); p *= 2)
    if (int64_t(p) > minBytes)
      samples.push_back(int64_t(p));
  if (maxBytes > minBytes)
    samples.push_back(maxBytes);
  return samples;
}

llvm::Expected<std::vector<SizeWindow>>
compileSizeWindows(const topo::Topology &t, const CompileRequest &req,
                   int64_t minBytes, int64_t maxBytes,
                   bool mustServePowersOfTwo) {
  if (req.algorithm != Algorithm::Auto)
    return makeInternalError("compileSizeWindows needs --algorithm auto");
  if (!(minBytes > 0 && minBytes <= maxBytes))
    return makeUserError(
        llvm::formatv("--sizes MIN:MAX needs 0 < MIN <= MAX, got {0}:{1} bytes",
                      minBytes, maxBytes));
  const std::vector<int64_t> samples = sizeWindowSamples(minBytes, maxBytes);
  std::vector<SizeWindow> windows;
  uint64_t lastHash = 0;
  ProgressTask progress("compile --sizes", samples.size(), "sizes");
  for (size_t i = 0; i < samples.size(); ++i) {
    const int64_t bytes = samples[i];
    progress.set(i);
    CompileRequest sub = req;
    sub.bytes = double(bytes);
    sub.autoMustServe =
        mustServePowersOfTwo && llvm::isPowerOf2_64(uint64_t(bytes));
    PassLogger quiet;
    auto result = compile(t, sub, quiet);
    if (!result) {
      llvm::Error err = result.takeError();
      if (err.isA<InternalError>())
        return err;
      return makeUserError("--sizes: at " + llvm::Twine(bytes) +
                           " B: " + llvm::toString(std::move(err)));
    }
    const uint64_t hash = backends::planContentHash(result->schedule);
    if (!windows.empty() &&
        windows.back().result.algorithm == result->algorithm &&
        windows.back().result.chosenFlags == result->chosenFlags &&
        lastHash == hash) {
      windows.back().samples.push_back(bytes);
      continue;
    }
    if (!windows.empty())
      windows.back().maxBytes = bytes - 1;
    SizeWindow w;
    w.minBytes = bytes;
    w.samples.push_back(bytes);
    w.result = std::move(*result);
    windows.push_back(std::move(w));
    lastHash = hash;
  }
  windows.back().maxBytes = maxBytes;
  return windows;
}

void nameSizeWindows(std::vector<SizeWindow> &windows, const topo::Topology &t,
                     bool inplace) {
  for (size_t i = 0; i < windows.size(); ++i) {
    ir::Schedule &s = windows[i].result.schedule;
    s.name = llvm::formatv("{0}_{1}_{2}_{3}_w{4}", t.name(),
                           algorithmName(windows[i].result.algorithm),
                           ir::collectiveName(s.collective),
                           inplace ? "inplace" : "outofplace", i)
                 .str();
  }
}

std::vector<backends::PlanMeta>
sizeWindowMetas(llvm::ArrayRef<SizeWindow> windows,
                const backends::PlanMeta &meta) {
  std::vector<backends::PlanMeta> metas;
  for (const SizeWindow &w : windows) {
    backends::PlanMeta m = meta;
    m.algorithm = algorithmName(w.result.algorithm).str();
    w.result.setCodedMeta(m);
    metas.push_back(std::move(m));
  }
  return metas;
}

llvm::Expected<std::string>
sizeWindowPlanSet(llvm::ArrayRef<SizeWindow> windows,
                  const backends::PlanMeta &meta) {
  std::vector<backends::PlanWindow> planWindows;
  std::vector<const ir::Schedule *> schedules;
  for (const SizeWindow &w : windows) {
    planWindows.push_back({w.minBytes, w.maxBytes});
    schedules.push_back(&w.result.schedule);
  }
  return backends::planSetToJson(planWindows, schedules,
                                 sizeWindowMetas(windows, meta));
}

} // namespace topocc
