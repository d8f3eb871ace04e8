//===- compiler/lowerings/Ring.cpp - --algorithm ring ---------------------===//
//
// Rings in an explicit order (--ring), in rank order, or the bandwidth-aware
// ring search's rings (compiler/algorithms/RingSearch.h) with their data
// shares as chunk counts; lowered by compiler/passes/LowerRing.h.
//
//===----------------------------------------------------------------------===//

#include "compiler/lowerings/Lowering.h"

#include "compiler/algorithms/RingSearch.h"
#include "compiler/analysis/CostModel.h"
#include "compiler/passes/AssignChannels.h"
#include "compiler/passes/Fuse.h"
#include "compiler/passes/LowerRing.h"
#include "compiler/passes/SplitChannels.h"
#include "support/Diagnostics.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <optional>

namespace topocc::lowerings {

namespace {

/// --channels auto: the most rings, a power of two, whose chains still fit
/// the target once split-channels cuts them into segments of the runtime's
/// steps per threadblock (a ring of n ranks has (n - 1) steps per chunk and
/// phase; segments are filled to about 3/4, as split-channels leaves room
/// for the steps a cut adds).
int32_t autoRingLimit(const CompileRequest &req, int32_t numRanks) {
  int32_t limit = std::min(req.target.channelLimit(), ir::kMscclMaxChannels);
  int32_t maxSteps = req.target.maxStepsPerThreadblock;
  if (maxSteps <= 1 || maxSteps == ir::TargetLimits::kNoLimit)
    return limit;
  int64_t steps = int64_t(analysis::ringSteps(req.collective, numRanks)) *
                      std::max(1, req.chunks) +
                  1;
  int64_t perSegment = std::max<int64_t>(1, maxSteps * 3 / 4);
  int64_t segments = (steps + perSegment - 1) / perSegment;
  // A power of two, so that equal rings get equal power-of-two units
  // (chunksForShares) and the longest channel is no longer than the rest.
  return static_cast<int32_t>(llvm::PowerOf2Floor(
      static_cast<uint64_t>(std::max<int64_t>(1, limit / segments))));
}

/// Whether `ring` fits the target once split-channels has cut its chains
/// into the runtime's steps per threadblock. A chunk costs each rank at
/// least phases * (n - 1) and at most phases * (n - 1) + 1 steps on its
/// channel, and split-channels gives every channel as many segments as the
/// longest needs: those bounds decide most sets; the rest run the passes
/// that decide it (fuse, assign-channels, split-channels) on a trial copy.
bool fitsTarget(const passes::RingOptions &ring, const CompileRequest &req) {
  const int64_t maxSteps = req.target.maxStepsPerThreadblock;
  const int32_t limit = req.target.channelLimit();
  if (maxSteps == ir::TargetLimits::kNoLimit || maxSteps <= 1)
    return true;
  int64_t longest = 0;
  for (size_t c = 0; c < ring.channelChunks.size(); ++c)
    longest = std::max<int64_t>(
        longest, ring.channelChunks[c] /
                     (ring.channelWidths.empty() ? 1 : ring.channelWidths[c]));
  const int64_t perChunk =
      (req.collective == ir::Collective::AllReduce ? 2 : 1) *
      (ring.numRanks - 1);
  if (ring.channels <= limit && longest * (perChunk + 1) + 1 <= maxSteps)
    return true; // no cut needed
  if (ring.channels * ((longest * perChunk + maxSteps - 1) / maxSteps) > limit)
    return false; // the segments alone need more channels
  auto s = passes::lowerRing(ring);
  if (!s) {
    llvm::consumeError(s.takeError());
    return false;
  }
  passes::fuse(*s);
  if (llvm::Error e = passes::assignChannels(*s, limit)) {
    llvm::consumeError(std::move(e));
    return false;
  }
  if (llvm::Error e = passes::splitChannels(*s, maxSteps, limit)) {
    llvm::consumeError(std::move(e));
    return false;
  }
  return true;
}

class RingLowering final : public Lowering {
public:
  using Lowering::Lowering;

  llvm::StringRef passName() const override { return "lower-ring"; }

  /// Refuses, before building it, a ring whose chains cannot fit the
  /// target's steps per threadblock: one chunk's chain on its channel has
  /// phases x (ranks - 1) x chunks steps, split-channels cuts it into
  /// segments of at most maxSteps - 1 steps each on a channel of its own,
  /// and more segments than the target has channels fail there anyway
  /// (after minutes and gigabytes of lowering at thousands of ranks).
  llvm::Error checkSegments() const {
    const int64_t maxSteps = req.target.maxStepsPerThreadblock;
    const int64_t limit = req.target.channelLimit();
    if (maxSteps <= 2 || maxSteps == ir::TargetLimits::kNoLimit ||
        limit == ir::TargetLimits::kNoLimit)
      return llvm::Error::success();
    const int64_t steps = int64_t(analysis::ringSteps(req.collective,
                                                      numRanks)) *
                          std::max<int32_t>(1, req.chunks);
    const int64_t segments = (steps + maxSteps - 2) / (maxSteps - 1);
    if (segments <= limit)
      return llvm::Error::success();
    return makeUserError(llvm::formatv(
        "the schedule needs at least {0} steps per threadblock on one "
        "channel; splitting it into segments of at most {1} steps would use "
        "at least {2} channels, more than MSCCL's {3}; use fewer --chunks, "
        "or raise --max-steps if the runtime was built with a larger "
        "MSCCL_MAX_NUM_STEPS",
        steps, maxSteps, segments, limit));
  }

  llvm::Expected<Lowered> lower() override {
    if (llvm::Error err = checkSegments())
      return err;
    Lowered out;
    passes::RingOptions ring{req.collective, numRanks,      req.channels,
                             req.chunks,     req.ringOrder, req.inplace,
                             req.name};
    const bool search = topology && req.ringOrder.empty() && !req.rankOrder;
    const bool wide = req.ringSteps == CompileRequest::RingSteps::Wide;
    if (wide && !search)
      return makeUserError(
          "--ring-steps wide applies to the ring search's rings, whose "
          "shares differ; with --ring or without a topology every channel "
          "carries an equal share");
    if (!search && req.channels == 0)
      return makeUserError(
          "--channels auto lets the ring search choose the rings; give a "
          "number of channels with --ring or without a topology");
    if (search) {
      algorithms::RingSearchOptions so;
      so.collective = req.collective;
      so.bytes = req.bytes;
      so.channels = req.channels;
      so.sameLocalOrder = req.target.format == ir::OutputFormat::NcclGraph;
      // The search sizes its channel sets for MSCCL's channels, whatever
      // the output (larger sets gained nothing on the library).
      so.maxChannels = ir::kMscclMaxChannels;
      analysis::LinkModel m(*topology);
      // The search quantises a flat ring set's shares to units of a power-of-
      // two total; a large total may not fit the target's steps. Fewer
      // units until the rings fit, and with --channels auto, the rings
      // spread over more channels first (algorithms::padRings: the longest
      // channel, which sets how many segments split-channels cuts every
      // channel into, gets shorter).
      const int32_t limit = autoRingLimit(req, numRanks);
      std::optional<algorithms::RingSearchResult> chosen;
      for (int units = 64; units >= 1 && !chosen; units /= 2) {
        so.maxUnits = units;
        auto found = algorithms::searchRings(*topology, m, so);
        if (!found)
          return found.takeError();
        // --channels auto: no more rings than the target can hold.
        if (req.channels == 0 &&
            found->rings.size() > static_cast<size_t>(limit)) {
          so.channels = limit;
          found = algorithms::searchRings(*topology, m, so);
          so.channels = 0;
          if (!found)
            return found.takeError();
        }
        std::vector<int32_t> counts{
            static_cast<int32_t>(found->rings.size())};
        bool quantised = !found->rings.empty();
        for (const analysis::RingChannel &rc : found->rings)
          quantised = quantised && rc.units > 0;
        if (req.channels == 0 && quantised)
          for (int32_t c = 8; c <= limit; c *= 2)
            if (c > counts.front())
              counts.push_back(c);
        for (int32_t c : counts) {
          std::vector<analysis::RingChannel> rings = found->rings;
          algorithms::padRings(rings, c);
          passes::RingOptions trial = passes::searchedRingOptions(
              rings, req.collective, numRanks, req.chunks, wide);
          if (!quantised || fitsTarget(trial, req)) {
            found->rings = std::move(rings);
            chosen = std::move(*found);
            break;
          }
        }
        // Below one unit per channel the sets no longer change; the passes
        // then report what does not fit.
        if (!chosen && (!quantised || units == 1 || units <= req.channels))
          chosen = std::move(*found);
      }
      ring = passes::searchedRingOptions(chosen->rings, req.collective,
                                         numRanks, req.chunks, wide);
      ring.inplace = req.inplace;
      ring.name = req.name;
      out.searched = chosen->rings;
      out.summary = "ring search (" + chosen->method + ")";
    } else {
      out.summary = req.ringOrder.empty() ? "rank order" : "--ring";
    }
    auto lowered = passes::lowerRing(ring);
    if (!lowered)
      return lowered.takeError();
    out.schedule = std::move(*lowered);
    for (int32_t c = 0; c < ring.channels; ++c) {
      ChannelRing cr;
      if (!ring.channelOrders.empty())
        cr.order = ring.channelOrders[c];
      else if (!ring.ringOrder.empty())
        cr.order = ring.ringOrder;
      else
        for (int32_t r = 0; r < numRanks; ++r)
          cr.order.push_back(r);
      cr.chunks =
          ring.channelChunks.empty() ? req.chunks : ring.channelChunks[c];
      cr.stepChunks = ring.channelWidths.empty() ? 1 : ring.channelWidths[c];
      out.rings.push_back(std::move(cr));
    }
    return out;
  }
};

} // namespace

std::unique_ptr<Lowering> makeRingLowering(const LoweringInput &in) {
  return std::make_unique<RingLowering>(in);
}

/// Ranks of a generated grid above which auto tries at most one ring
/// channel (docs/Algorithms.md, section 6).
constexpr int kAutoGridRingMaxRanks = 256;

llvm::Expected<AutoCandidate> RingLoweringCandidate(const AutoContext &ctx) {
  AutoCandidate c;
  const topo::Topology &t = ctx.topology;
  // Every ring schedule has about ranks x channels x ring steps x chunks
  // ops (selectAlgorithm skips those over its budget), and a chunk's
  // chain crosses every ring step.
  c.chainMessages = analysis::ringSteps(ctx.request.collective, t.numRanks());
  const int64_t opsPerChannel = int64_t(t.numRanks()) * c.chainMessages *
                                std::max<int32_t>(1, ctx.request.chunks);
  c.estimatedOps = opsPerChannel * std::max<int32_t>(1, ctx.request.channels);
  // A large generated grid: one ring uses two links of each chip and every
  // variant is a search and a compile over thousands of ranks. Where dims
  // applies it is not tried; elsewhere one channel (the grid's snake cycle).
  if (!t.grid().empty() && t.numRanks() > kAutoGridRingMaxRanks) {
    const bool dims = ctx.request.collective == ir::Collective::AllReduce &&
                      whyNoDimsGrid(t).empty();
    if (dims) {
      c.lines.push_back(llvm::formatv(
          "auto: ring not considered on a generated grid of {0} ranks where "
          "dims applies (a ring uses two links of each chip; --algorithm "
          "ring builds it)",
          t.numRanks()));
      return c;
    }
    c.request = candidateRequest(ctx.request, Algorithm::Ring);
    if (c.request->channels == 0)
      c.request->channels = 1;
    return c;
  }
  c.request = candidateRequest(ctx.request, Algorithm::Ring);
  // --channels auto: the search's own count, and fixed counts beside it
  // (the runtime model prices what the search's fluid model cannot: the
  // threadblocks each channel adds, the pipelining of its loop).
  if (ctx.request.channels == 0 && ctx.request.ringOrder.empty() &&
      !ctx.request.rankOrder)
    for (int32_t n : {2, 4, 8, 16, 32}) {
      if (n > ctx.request.target.channelLimit())
        break;
      CompileRequest v = *c.request;
      v.channels = n;
      c.variants.push_back(
          {"--channels " + std::to_string(n), v, opsPerChannel * n});
    }
  // Inside a node the search's rings carry unequal shares (NDv2's double-
  // and single-link cycles: 1/3, 1/3, 1/6, 1/6), which one chunk per
  // channel cannot express: finer chunking realizes them (chunksForShares);
  // across nodes the rails' rings carry equal shares.
  if (ctx.request.channels == 0 && ctx.request.ringOrder.empty() &&
      !ctx.request.rankOrder && !ctx.multiNode) {
    for (int32_t k : {2, 4, 8}) {
      CompileRequest v = *c.request;
      v.chunks = k;
      c.variants.push_back({"--chunks " + std::to_string(k), v});
    }
    // Or each share in one step (wide): at most `ringSteps` steps per
    // channel, so the finest shares (64 units) fit where the pipelined
    // chunks of an all-reduce would not (mi250-gcd-mesh at 1 GiB: 90.4%
    // of the bound against 82.9%, docs/Algorithms-rings.md).
    CompileRequest v = *c.request;
    v.ringSteps = CompileRequest::RingSteps::Wide;
    c.variants.push_back({"--ring-steps wide", v});
  }
  return c;
}

} // namespace topocc::lowerings
