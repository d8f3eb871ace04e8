//===- backends/TopologyHash.cpp - The plan file's topology hash ----------===//
//
// See TopologyHash.h. Changing what is hashed changes every plan's
// "topology.hash": the leading tag names the version.
//
//===----------------------------------------------------------------------===//

#include "backends/TopologyHash.h"

#include "compiler/topology/Topology.h"
#include "support/Fnv1a.h"

namespace topocc::backends {

uint64_t topologyHash(const topo::Topology &t) {
  Fnv1a h;
  h.str("topocc-topology-hash-v1");
  h.num(static_cast<int64_t>(t.devices().size()));
  for (const topo::Device &d : t.devices()) {
    h.str(d.name);
    h.str(topo::deviceKindName(d.kind));
    h.str(topo::switchKindName(d.switchKind));
    h.str(d.model);
    h.num(d.nodeIndex);
    h.num(d.rank);
  }
  h.num(static_cast<int64_t>(t.links().size()));
  for (const topo::Link &l : t.links()) {
    h.num(l.from);
    h.num(l.to);
    h.str(topo::linkTypeName(l.type));
    h.real(l.bandwidth[0]);
    h.real(l.bandwidth[1]);
    h.real(l.latency);
    h.num(l.count);
    h.num(l.duplex == topo::Duplex::Full ? 0 : 1);
    h.real(l.efficiency);
  }
  h.num(t.numRanks());
  for (int r = 0; r < t.numRanks(); ++r)
    h.num(t.rankDevice(r));
  return h.value();
}

} // namespace topocc::backends
