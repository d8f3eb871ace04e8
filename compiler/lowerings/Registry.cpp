//===- compiler/lowerings/Registry.cpp - Algorithm to lowering ------------===//
//
// The dispatch generated from compiler/Algorithms.def, and the pieces the
// lowerings share (nodes, the hierarchical algorithms' intra-node order).
//
//===----------------------------------------------------------------------===//

#include "compiler/lowerings/Lowering.h"

#include "compiler/algorithms/RingPacking.h"
#include "compiler/algorithms/RingSearch.h"

#include "llvm/ADT/STLExtras.h"

namespace topocc::lowerings {

Lowering::~Lowering() = default;

std::unique_ptr<Lowering> makeLowering(Algorithm a, const LoweringInput &in) {
  switch (a) {
#define TOPOCC_ALGORITHM(Enum, Name, Class)                                    \
  case Algorithm::Enum:                                                        \
    return make##Class(in);
#include "compiler/Algorithms.def"
  case Algorithm::Auto:
    break;
  }
  llvm_unreachable("auto has no lowering: it chooses among the others");
}

llvm::Expected<AutoCandidate> autoCandidate(Algorithm a,
                                            const AutoContext &ctx) {
  switch (a) {
#define TOPOCC_ALGORITHM(Enum, Name, Class)                                    \
  case Algorithm::Enum:                                                        \
    return Class##Candidate(ctx);
#include "compiler/Algorithms.def"
  case Algorithm::Auto:
    break;
  }
  llvm_unreachable("auto is not its own candidate");
}

CompileRequest candidateRequest(const CompileRequest &autoRequest,
                                Algorithm a) {
  CompileRequest sub = autoRequest;
  sub.algorithm = a;
  // --channels auto is the ring search's; the others take their own.
  if (a != Algorithm::Ring && sub.channels == 0)
    sub.channels = 1;
  if (a != Algorithm::Trees)
    sub.treesPerRoot.reset();
  if (a != Algorithm::Cerar && a != Algorithm::HierCerar) {
    CompileRequest exact;
    sub.components = exact.components;
    sub.tolerance = exact.tolerance;
    sub.wireDtype = exact.wireDtype;
    sub.kappaMax = exact.kappaMax;
    sub.seamOffset = exact.seamOffset;
  }
  return sub;
}

void addChunkVariants(AutoCandidate &c, llvm::ArrayRef<int32_t> chunks) {
  for (int32_t k : chunks) {
    if (k == c.request->chunks)
      continue;
    CompileRequest v = *c.request;
    v.chunks = k;
    c.variants.push_back({"--chunks " + std::to_string(k), v});
  }
}

std::vector<std::vector<ir::RankId>> nodeRanks(const topo::Topology &t) {
  std::vector<std::vector<ir::RankId>> nodes;
  for (const topo::Node &node : t.nodes()) {
    std::vector<ir::RankId> ranks;
    for (int d : node.devices) {
      const topo::Device &dev = t.device(d);
      if (dev.kind == topo::DeviceKind::Gpu && dev.rank >= 0)
        ranks.push_back(dev.rank);
    }
    if (!ranks.empty())
      nodes.push_back(std::move(ranks));
  }
  return nodes;
}

std::vector<int32_t> hierLocalOrder(const topo::Topology &t,
                                    const std::vector<ir::RankId> &node0,
                                    ir::Collective c, double bytes) {
  std::vector<int32_t> order;
  algorithms::RingSearchOptions so;
  so.collective = c;
  so.bytes = bytes;
  so.channels = 1;
  analysis::LinkModel m(t);
  std::vector<int> ranks(node0.begin(), node0.end());
  if (ranks.size() >= 2) {
    auto found = algorithms::searchGroupRing(t, m, ranks, so);
    if (!found)
      llvm::consumeError(found.takeError());
    else
      for (int r : found->order)
        if (auto it = llvm::find(node0, r); it != node0.end())
          order.push_back(static_cast<int32_t>(it - node0.begin()));
  }
  if (order.size() != node0.size()) {
    order.clear();
    for (size_t l = 0; l < node0.size(); ++l)
      order.push_back(static_cast<int32_t>(l));
  }
  return order;
}

std::vector<std::vector<int32_t>>
hierChannelOrders(const topo::Topology &t, const std::vector<ir::RankId> &node0,
                  int32_t channels) {
  if (channels < 2 || node0.size() < 3)
    return {};
  analysis::LinkModel m(t);
  const std::vector<int> ranks(node0.begin(), node0.end());
  algorithms::RingPacking packing = algorithms::packRings(m, ranks);
  if (packing.rings.size() < 2 || packing.units < 1)
    return {};
  // Channels per ring by largest remainder of channels * units / U.
  const size_t k = packing.rings.size();
  std::vector<int> count(k, 0);
  std::vector<std::pair<double, size_t>> rest;
  int given = 0;
  for (size_t i = 0; i < k; ++i) {
    const double exact =
        double(channels) * packing.rings[i].units / packing.units;
    count[i] = static_cast<int>(exact);
    given += count[i];
    rest.emplace_back(-(exact - count[i]), i);
  }
  std::sort(rest.begin(), rest.end());
  for (size_t i = 0; given < channels; ++i, ++given)
    ++count[rest[i % k].second];
  std::vector<std::vector<int32_t>> orders;
  for (size_t i = 0; i < k; ++i) {
    std::vector<int32_t> local;
    for (int r : packing.rings[i].order)
      local.push_back(
          static_cast<int32_t>(llvm::find(node0, r) - node0.begin()));
    for (int c = 0; c < count[i]; ++c)
      orders.push_back(local);
  }
  return orders;
}

} // namespace topocc::lowerings
