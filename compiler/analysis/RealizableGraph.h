//===- compiler/analysis/RealizableGraph.h - Runtime routes -*- C++ -*-===//
//
// The realizable bound (docs/Algorithms-trees.md, "The realizable bound"):
// the cut bound of Bound.h on a graph that only contains the paths the
// runtime gives a message, at the effective link rates the runtime model
// (Simulator.h) uses. Within a node a GPU pair with a peer-to-peer link
// takes that link type only (LinkModel's widest-route types); across nodes
// a connection takes the NICs NCCL's net transport gives both ends on its
// channel (NetRoutes.h), over every channel; GPUs relay only by receiving
// and sending, as on the physical graph.
//
// Construction (a line graph, so that two hops meet only where some route
// takes one after the other): every directed link resource r that a route
// uses becomes two vertices in(r) -> out(r) joined by an arc of r's
// effective capacity; a GPU feeds the first hops of its routes (GPU ->
// in(r)); the last hop feeds the receiving GPU (out(r) -> GPU); consecutive
// hops of a route, or of two route segments meeting at a NIC, are joined
// out(r1) -> in(r2) with capacity min(c(r1), c(r2)), which never binds
// more than the hop arcs do. A path of the physical graph that no route
// takes, such as GPU -> PCIe switch -> GPU beside an NVLink pair, is not a
// path here. The bound on this graph is at most the physical bound on
// effective rates and at least every schedule's simulated rate in the
// runtime model (whose messages take exactly these routes). Stage:
// analysis, on a validated topology. Never prints; deterministic.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_ANALYSIS_REALIZABLEGRAPH_H
#define TOPOCC_COMPILER_ANALYSIS_REALIZABLEGRAPH_H

#include "compiler/analysis/Bound.h"
#include "compiler/analysis/CostModel.h"
#include "compiler/topology/Topology.h"

#include "llvm/Support/Error.h"

namespace topocc::analysis {

struct RealizableOptions {
  /// Inter-node connections take the NICs of NCCL's rule per channel
  /// (RuntimeParams::ncclNetRule); off: LinkModel's free routing over every
  /// NIC (the store-and-forward and cut-through modes).
  bool ncclNetRule = true;
};

/// The route graph of `t` as a BoundGraph: compute vertices are the ranks'
/// GPUs (named as devices), the other vertices "LINK-DIRECTION in/out";
/// every arc's link/dir is the link resource it stands for (the smaller one
/// for a join). User errors: half-duplex links, capacities that are not
/// whole bytes/s, a rank pair with no path (counting relays), as
/// buildBoundGraph.
llvm::Expected<BoundGraph>
buildRealizableGraph(const topo::Topology &t, LinkModel &m,
                     const RealizableOptions &o = {});

/// computeBound on buildRealizableGraph.
llvm::Expected<BoundResult>
computeRealizableBound(const topo::Topology &t,
                       const RealizableOptions &o = {});

} // namespace topocc::analysis

#endif // TOPOCC_COMPILER_ANALYSIS_REALIZABLEGRAPH_H
