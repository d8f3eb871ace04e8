//===- tests/fuzz/TopologyParserFuzzer.cpp - Fuzz the topology parser -----===//
//
// libFuzzer entry: parseTopology on arbitrary bytes must never crash, hang
// or blow memory (size limits are checked before any expansion). Every
// scenario of an accepted topology is applied too.
//
//===----------------------------------------------------------------------===//

#include "compiler/topology/Scenario.h"
#include "compiler/topology/TopologyParser.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  // The full limit (10^6 devices) takes seconds to expand; a small one keeps
  // every input fast while exercising the same refusal path.
  topocc::topo::ParseLimits limits;
  limits.maxDevices = 20000;
  limits.maxLinks = 20000;
  auto topo = topocc::topo::parseTopology(text, "fuzz.yaml", limits);
  if (!topo) {
    llvm::consumeError(topo.takeError());
    return 0;
  }
  if (topo->numRanks() > 0) {
    auto r = topo->findRoute(0, topo->numRanks() - 1);
    if (!r)
      llvm::consumeError(r.takeError());
  }
  for (const topocc::topo::ScenarioDef &s : topo->scenarios()) {
    topocc::topo::Topology copy = *topo;
    llvm::consumeError(topocc::topo::applyScenario(copy, s.name));
  }
  return 0;
}
