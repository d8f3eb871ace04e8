//===- compiler/SizeWindows.cpp - compile --sizes: one schedule per window ===//

#include "compiler/SizeWindows.h"

#include "backends/PlanJson.h"
#include "compiler/Pipeline.h"
#include "support/Diagnostics.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

namespace topocc {

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
                   bool mustServePowersOfTwo,
                   const SizeWindowProgress &progress) {
  if (req.algorithm != Algorithm::Auto)
    return makeInternalError("compileSizeWindows needs --algorithm auto");
  if (!(minBytes > 0 && minBytes <= maxBytes))
    return makeUserError(
        llvm::formatv("--sizes MIN:MAX needs 0 < MIN <= MAX, got {0}:{1} bytes",
                      minBytes, maxBytes));
  const std::vector<int64_t> samples = sizeWindowSamples(minBytes, maxBytes);
  std::vector<SizeWindow> windows;
  uint64_t lastHash = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    const int64_t bytes = samples[i];
    if (progress)
      progress(i, samples.size(), bytes);
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

} // namespace topocc
