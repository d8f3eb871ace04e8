//===- backends/TopologyHash.h - The plan file's topology hash ---*- C++ -*-===//
//
// The hash a plan file records of the topology it was compiled for
// (PlanMeta::topologyHash, docs/PlanFormat.md). Apart from backends/PlanJson
// so that the plan format, which the runtime links, needs no topology.
//
//===----------------------------------------------------------------------===//

#ifndef TOPOCC_BACKENDS_TOPOLOGYHASH_H
#define TOPOCC_BACKENDS_TOPOLOGYHASH_H

#include <cstdint>

namespace topocc::topo {
class Topology;
}

namespace topocc::backends {

/// A stable 64-bit FNV-1a hash of the topology's content (devices, links
/// with bandwidths, latencies and counts, rank order); independent of the
/// file name, comments and formatting.
uint64_t topologyHash(const topo::Topology &t);

} // namespace topocc::backends

#endif // TOPOCC_BACKENDS_TOPOLOGYHASH_H
