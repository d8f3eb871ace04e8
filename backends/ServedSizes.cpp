//===- backends/ServedSizes.cpp - Which calls an MSCCL file serves --------===//

#include "backends/ServedSizes.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <numeric>
#include <vector>

namespace topocc::backends {

namespace {

/// The element sizes a call may have, with the types people know them by.
struct ElementSize {
  int64_t bytes;
  const char *types;
};
const ElementSize kElementSizes[] = {
    {4, "fp32"}, {2, "fp16/bf16"}, {1, "int8"}, {8, "fp64"}};

/// "256 B", "4 KiB", "1 MiB", "3 GiB" (exact binary units only).
std::string bytesText(int64_t b) {
  const struct {
    int64_t scale;
    const char *unit;
  } units[] = {{int64_t(1) << 30, "GiB"}, {int64_t(1) << 20, "MiB"},
               {int64_t(1) << 10, "KiB"}};
  for (const auto &u : units)
    if (b >= u.scale && b % u.scale == 0)
      return llvm::formatv("{0} {1}", b / u.scale, u.unit).str();
  return llvm::formatv("{0} B", b).str();
}

bool multiplierIsRanks(ir::Collective c) {
  return c == ir::Collective::AllGather ||
         c == ir::Collective::ReduceScatter || c == ir::Collective::AllToAll;
}

} // namespace

bool ServedSizes::powersOfTwo() const {
  return elementMultiple > 0 && llvm::isPowerOf2_64(elementMultiple);
}

bool ServedSizes::serves(int64_t bytes, int64_t elementSize) const {
  if (bytes <= 0 || elementSize <= 0 || bytes % elementSize != 0)
    return false;
  if (bytes < minBytes || (maxBytes > 0 && bytes > maxBytes))
    return false;
  return (bytes / elementSize) % elementMultiple == 0;
}

int64_t ServedSizes::smallest(int64_t elementSize) const {
  const int64_t unit = elementMultiple * elementSize;
  int64_t first = std::max<int64_t>(1, (minBytes + unit - 1) / unit) * unit;
  if (maxBytes > 0 && first > maxBytes)
    return 0;
  return first;
}

ServedSizes servedSizes(ir::Collective coll, int64_t ngpus,
                        int64_t nchunksPerLoop, int64_t minBytes,
                        int64_t maxBytes) {
  ServedSizes s;
  const int64_t m = multiplierIsRanks(coll) ? std::max<int64_t>(ngpus, 1) : 1;
  s.elementMultiple = std::lcm(std::max<int64_t>(nchunksPerLoop, 1), m);
  s.minBytes = std::max<int64_t>(minBytes, 0);
  s.maxBytes = std::max<int64_t>(maxBytes, 0);
  return s;
}

ServedSizes servedSizes(const ir::Schedule &s, int64_t minBytes,
                        int64_t maxBytes) {
  return servedSizes(s.collective, s.numRanks, s.chunksPerLoop, minBytes,
                     maxBytes);
}

std::string describeServedSizes(const ServedSizes &s) {
  std::vector<std::string> parts;
  bool anyPowerOfTwo = false; ///< inside the window, for some element size
  for (const ElementSize &e : kElementSizes) {
    int64_t first = s.smallest(e.bytes);
    if (s.powersOfTwo() && first > 0)
      first = static_cast<int64_t>(llvm::PowerOf2Ceil(first));
    if (first > 0 && s.maxBytes > 0 && first > s.maxBytes)
      first = 0;
    anyPowerOfTwo = anyPowerOfTwo || first > 0;
    parts.push_back(first > 0 ? llvm::formatv("{0} ({1})", bytesText(first),
                                              e.types)
                                    .str()
                              : llvm::formatv("none ({0})", e.types).str());
  }
  std::string list = llvm::join(parts, ", ");
  std::string upTo =
      s.maxBytes > 0 ? " up to " + bytesText(s.maxBytes) : std::string(" up");
  // A window without a power of two (compile --sizes at a MAX that is not
  // one) is described by its multiples.
  if (s.powersOfTwo() && anyPowerOfTwo)
    return "every power of two from " + list + upTo +
           ", and every multiple of those";
  std::string window;
  if (s.minBytes > 0 || s.maxBytes > 0)
    window = " from " + bytesText(s.minBytes) +
             (s.maxBytes > 0 ? " to " + bytesText(s.maxBytes)
                             : std::string(" up"));
  std::vector<std::string> multiples;
  for (const ElementSize &e : kElementSizes)
    multiples.push_back(llvm::formatv("{0} ({1})",
                                      bytesText(s.elementMultiple * e.bytes),
                                      e.types)
                            .str());
  return "multiples of " + llvm::join(multiples, ", ") + window +
         "; no power of two";
}

} // namespace topocc::backends
