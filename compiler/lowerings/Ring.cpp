//===- compiler/lowerings/Ring.cpp - --algorithm ring ---------------------===//
//
// Rings in an explicit order (--ring), in rank order, or the bandwidth-aware
// ring search's rings (compiler/algorithms/RingSearch.h) with their data
// shares as chunk counts; lowered by compiler/passes/LowerRing.h.
//
//===----------------------------------------------------------------------===//

#include "compiler/lowerings/Lowering.h"

#include "compiler/algorithms/RingSearch.h"
#include "compiler/passes/LowerRing.h"
#include "support/Diagnostics.h"

namespace topocc::lowerings {

namespace {

/// --channels auto: the most rings whose chains still fit the target once
/// split-channels cuts them into segments of the runtime's steps per
/// threadblock (a ring of n ranks has (n - 1) steps per chunk and phase;
/// segments are filled to about 3/4, as split-channels leaves room for the
/// steps a cut adds).
int32_t autoRingLimit(const CompileRequest &req, int32_t numRanks) {
  int32_t limit = std::min(req.target.channelLimit(), ir::kMscclMaxChannels);
  int32_t maxSteps = req.target.maxStepsPerThreadblock;
  if (maxSteps <= 1 || maxSteps == ir::TargetLimits::kNoLimit)
    return limit;
  int64_t phases = req.collective == ir::Collective::AllReduce ? 2 : 1;
  int64_t steps = phases * (numRanks - 1) * std::max(1, req.chunks) + 1;
  int64_t perSegment = std::max<int64_t>(1, maxSteps * 3 / 4);
  int64_t segments = (steps + perSegment - 1) / perSegment;
  return static_cast<int32_t>(std::max<int64_t>(1, limit / segments));
}

class RingLowering final : public Lowering {
public:
  using Lowering::Lowering;

  llvm::StringRef passName() const override { return "lower-ring"; }

  llvm::Expected<Lowered> lower() override {
    Lowered out;
    passes::RingOptions ring{req.collective, numRanks,      req.channels,
                             req.chunks,     req.ringOrder, req.inplace,
                             req.name};
    const bool search = topology && req.ringOrder.empty() && !req.rankOrder;
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
      auto found = algorithms::searchRings(*topology, m, so);
      if (!found)
        return found.takeError();
      // --channels auto: no more rings than the target can hold.
      int32_t limit = autoRingLimit(req, numRanks);
      if (req.channels == 0 &&
          found->rings.size() > static_cast<size_t>(limit)) {
        so.channels = limit;
        found = algorithms::searchRings(*topology, m, so);
        if (!found)
          return found.takeError();
      }
      ring = passes::searchedRingOptions(found->rings, req.collective,
                                         numRanks, req.chunks);
      ring.inplace = req.inplace;
      ring.name = req.name;
      out.searched = found->rings;
      out.summary = "ring search (" + found->method + ")";
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
      out.rings.push_back(std::move(cr));
    }
    return out;
  }
};

} // namespace

std::unique_ptr<Lowering> makeRingLowering(const LoweringInput &in) {
  return std::make_unique<RingLowering>(in);
}

llvm::Expected<AutoCandidate> RingLoweringCandidate(const AutoContext &ctx) {
  AutoCandidate c;
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
      c.variants.push_back({"--channels " + std::to_string(n), v});
    }
  // Inside a node the search's rings carry unequal shares (NDv2's double-
  // and single-link cycles: 1/3, 1/3, 1/6, 1/6), which one chunk per
  // channel cannot express: finer chunking realizes them (chunksForShares);
  // across nodes the rails' rings carry equal shares.
  if (ctx.request.channels == 0 && ctx.request.ringOrder.empty() &&
      !ctx.request.rankOrder && !ctx.multiNode)
    for (int32_t k : {2, 4, 8}) {
      CompileRequest v = *c.request;
      v.chunks = k;
      c.variants.push_back({"--chunks " + std::to_string(k), v});
    }
  return c;
}

} // namespace topocc::lowerings
