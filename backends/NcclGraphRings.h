//===- backends/NcclGraphRings.h - Ring channels as NCCL_GRAPH_FILE -*- C++ -*-===//
//
// The NCCL graph file of a set of ring channels (the ring search's, or a
// compiled ring schedule's), with per-channel speeds from the cost model:
// the set's per-hop rate split over the channels, and for the inter-node
// speed the slowest NIC hop's flow. Stage: backend, after ring search.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_BACKENDS_NCCLGRAPHRINGS_H
#define TOPOCC_BACKENDS_NCCLGRAPHRINGS_H

#include "backends/NcclGraphXml.h"
#include "compiler/analysis/CostModel.h"
#include "compiler/topology/Topology.h"
#include "ir/Schedule.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

namespace topocc::backends {

/// NCCL_GRAPH_FILE for ring channels `rings` of collective `c` at `bytes`
/// on `t`; notes say what the file cannot express. User errors as
/// writeNcclGraphXml's.
llvm::Expected<NcclGraphOutput>
ncclGraphForRings(const topo::Topology &t,
                  llvm::ArrayRef<analysis::RingChannel> rings,
                  ir::Collective c, double bytes, analysis::LinkModel &m);

} // namespace topocc::backends

#endif // TOPOCC_BACKENDS_NCCLGRAPHRINGS_H
