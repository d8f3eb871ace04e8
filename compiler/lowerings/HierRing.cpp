//===- compiler/lowerings/HierRing.cpp - --algorithm hier-ring ------------===//
//
// The hierarchical ring: an intra-node ring (the ring search's order over
// node 0's GPUs; with several channels, the ring packing's rings over
// them, one per channel) and one inter-node ring per rail, lowered by
// compiler/passes/LowerHierRing.h. Multi-node all-reduce, all-gather and
// reduce-scatter.
//
//===----------------------------------------------------------------------===//

#include "compiler/lowerings/Lowering.h"

#include "compiler/passes/LowerHierRing.h"
#include "support/Diagnostics.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

namespace topocc::lowerings {

namespace {

llvm::Expected<Lowered> lowerHierRing(const topo::Topology *t,
                                      const CompileRequest &req) {
  if (!t)
    return makeUserError("--algorithm hier-ring needs the topology's nodes");
  if (req.channels == 0)
    return makeUserError("--channels auto applies to --algorithm ring; give "
                         "hier-ring a number of channels");
  if (!req.ringOrder.empty() || req.rankOrder)
    return makeUserError("--ring applies to --algorithm ring, not hier-ring");
  // All-gather and reduce-scatter run the rails on channels of their own
  // (passes::lowerHierRing), so each --channels takes two.
  if (req.collective != ir::Collective::AllReduce &&
      2 * int64_t(req.channels) > req.target.channelLimit())
    return makeUserError(llvm::formatv(
        "--algorithm hier-ring {0} runs its rails on channels of their own: "
        "--channels {1} needs {2} channels, more than the {3} of --emit {4}; "
        "use --channels {5} or fewer",
        ir::collectiveName(req.collective), req.channels, 2 * req.channels,
        req.target.channelLimit(), ir::outputFormatName(req.target.format),
        req.target.channelLimit() / 2));
  passes::HierRingOptions o;
  o.collective = req.collective;
  o.numRanks = t->numRanks();
  o.nodes = nodeRanks(*t);
  if (o.nodes.size() >= 2)
    o.localOrder = hierLocalOrder(*t, o.nodes[0], req.collective, req.bytes);
  if (o.nodes.size() >= 2)
    o.channelOrders = hierChannelOrders(*t, o.nodes[0], req.channels);
  o.channels = req.channels;
  o.chunks = req.chunks;
  o.inplace = req.inplace;
  o.name = req.name;
  auto lowered = passes::lowerHierRing(o);
  if (!lowered)
    return lowered.takeError();
  Lowered out;
  out.schedule = std::move(*lowered);
  // The intra-node rings: one order, or one per channel.
  auto orderText = [](const std::vector<int32_t> &order) {
    std::vector<std::string> parts;
    for (int32_t l : order)
      parts.push_back(std::to_string(l));
    return llvm::join(parts, ",");
  };
  std::string intra = "intra-node order " + orderText(o.localOrder);
  if (!o.channelOrders.empty()) {
    std::vector<std::string> perChannel;
    for (const std::vector<int32_t> &order : o.channelOrders)
      perChannel.push_back(orderText(order));
    intra = "intra-node rings per channel (ring packing) " +
            llvm::join(perChannel, " | ");
  }
  out.summary = llvm::formatv("{0} nodes x {1} GPUs, {2}, one inter-node "
                              "ring per rail",
                              o.nodes.size(), o.nodes[0].size(), intra)
                    .str();
  return out;
}

class HierRingLowering final : public Lowering {
public:
  using Lowering::Lowering;
  llvm::StringRef passName() const override { return "lower-hier-ring"; }
  llvm::Expected<Lowered> lower() override {
    return lowerHierRing(topology, req);
  }
};

} // namespace

std::unique_ptr<Lowering> makeHierRingLowering(const LoweringInput &in) {
  return std::make_unique<HierRingLowering>(in);
}

llvm::Expected<AutoCandidate>
HierRingLoweringCandidate(const AutoContext &ctx) {
  AutoCandidate c;
  if (!ctx.multiNode) {
    c.lines.push_back("auto: hier-ring not applicable (single node)");
    return c;
  }
  c.request = candidateRequest(ctx.request, Algorithm::HierRing);
  // Its phases are short rings that overlap by sub-chunks (one dependency
  // chain per sub-chunk).
  addChunkVariants(c, {2, 4, 8});
  // Two independent copies of 4 sub-chunks each: more rings at once, for
  // sizes where one copy's pipeline does not fill the links.
  if (c.request->channels == 1) {
    CompileRequest v = *c.request;
    v.channels = 2;
    v.chunks = 4;
    c.variants.push_back({"--channels 2 --chunks 4", v});
  }
  // Where a node's links carry several rings (a GPU mesh such as MI250's
  // xGMI), each channel runs one of them (hierChannelOrders): four
  // channels hold the packing's rings of a 16-GCD box.
  if (c.request->channels == 1 &&
      !hierChannelOrders(ctx.topology, nodeRanks(ctx.topology)[0], 4).empty()) {
    for (int32_t chunks : {1, 4}) {
      CompileRequest v = *c.request;
      v.channels = 4;
      v.chunks = chunks;
      c.variants.push_back(
          {"--channels 4 --chunks " + std::to_string(chunks), v});
    }
    // An all-reduce's channels each hold one ring of the packing: sixteen
    // approximate its unequal shares closely enough to beat four on
    // mi250x2 at 1 GiB (8.76 ms against 10.09), and two sub-chunks still
    // fit 64 steps per threadblock.
    if (ctx.request.collective == ir::Collective::AllReduce &&
        16 <= c.request->target.channelLimit()) {
      CompileRequest v = *c.request;
      v.channels = 16;
      v.chunks = 2;
      c.variants.push_back({"--channels 16 --chunks 2", v});
    }
  }
  return c;
}

llvm::Expected<ir::Schedule> lowerHierRingFor(const topo::Topology &t,
                                              ir::Collective c,
                                              int32_t channels, int32_t chunks,
                                              bool inplace, double bytes) {
  CompileRequest req;
  req.algorithm = Algorithm::HierRing;
  req.collective = c;
  req.channels = channels;
  req.chunks = chunks;
  req.inplace = inplace;
  req.bytes = bytes;
  auto low = lowerHierRing(&t, req);
  if (!low)
    return low.takeError();
  return std::move(low->schedule);
}

} // namespace topocc::lowerings
