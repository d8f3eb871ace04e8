//===- backends/NcclGraphXml.h - NCCL_GRAPH_FILE writer ---------*- C++ -*-===//
//
// Writes ring orders as an NCCL_GRAPH_FILE for stock NCCL
// (docs/Algorithms-rings.md, "4. NCCL graph output"): <graphs version="1">,
// a ring graph (id 0, pattern 4) and a tree graph (id 1, pattern 3) with
// equal channel counts, per channel the
// node's local GPUs in order (hex `dev`, no `rank`) with <net dev> where the
// channel enters and leaves the node. Stage: backend, after ring search.
// Pure printer: speeds come from the caller's cost model.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_BACKENDS_NCCLGRAPHXML_H
#define TOPOCC_BACKENDS_NCCLGRAPHXML_H

#include "compiler/topology/Topology.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <utility>
#include <vector>

namespace topocc::backends {

/// One ring channel: ranks in ring order; for each hop i (order[i] ->
/// order[i+1]) the NIC devices it leaves and enters through (-1 = none).
struct NcclGraphChannel {
  std::vector<int> order;
  std::vector<std::pair<int, int>> nics; ///< empty or one entry per hop
};

struct NcclGraphOptions {
  double speedIntra = 0; ///< per-channel GB/s (1e9 B/s) for NCCL's tuning
  double speedInter = 0;
};

struct NcclGraphOutput {
  std::string xml;
  /// What the file cannot express or what NCCL will do differently
  /// (returned, never printed).
  std::vector<std::string> notes;
};

/// User error (nothing written) when a ring visits a node more than once,
/// when nodes would need different local orders (NCCL reads one file on
/// every node), or when a channel does not cover every rank.
llvm::Expected<NcclGraphOutput>
writeNcclGraphXml(const topo::Topology &t,
                  llvm::ArrayRef<NcclGraphChannel> channels,
                  const NcclGraphOptions &opts);

} // namespace topocc::backends

#endif // TOPOCC_BACKENDS_NCCLGRAPHXML_H
