//===- compiler/analysis/CostModel.h - Alpha-beta cost with contention -*- C++ -*-===//
//
// The fast estimator: bytes per directed link after routing (multipath over
// switch planes, parallel ports add capacity, half-duplex links share one
// capacity), bandwidth time = max over links of bytes / capacity, plus the
// latency along the critical path of messages, each paying its route's link
// latencies (switches forward cut-through, as in the runtime model).
// Stage: analysis, on any schedule or on ring orders (closed form). Never
// prints; deterministic.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_ANALYSIS_COSTMODEL_H
#define TOPOCC_COMPILER_ANALYSIS_COSTMODEL_H

#include "compiler/topology/Topology.h"
#include "ir/Schedule.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace topocc::analysis {

/// How bytes sent from one device to another spread over the links: the
/// fraction of the bytes crossing each resource (a direction of a full-duplex
/// link, or a whole half-duplex link).
struct PathFlow {
  std::vector<std::pair<int, double>> res; ///< (resource, fraction), sorted
  double bandwidth = 0;    ///< max flow with effective capacities, bytes/s
  double rawBandwidth = 0; ///< the same with raw capacities
  double latency = 0;      ///< sum of link latencies on the widest route, s
  int hops = 0;            ///< links on each path (all paths are shortest)
  bool found = false;
};

/// Capacities and routing of one topology. A resource id is 2*link+dir; a
/// half-duplex link uses 2*link for both directions (2*link+1 stays empty).
/// Routing: the widest route (Topology::routeDevices) fixes the link types
/// used; the bytes then spread over every shortest path made of those types
/// (GPUs never forward). The maximum flow over them is the pair's bandwidth
/// (so NVSwitch planes, bonded ports and parallel switches all add
/// bandwidth); the bytes follow an even split in proportion to capacity at
/// every branch of those paths, as ECMP and adaptive routing spread a
/// switch fabric's traffic over its spines (docs/WhatIf.md, "Routes the
/// runtime uses"), or the max flow's own paths where that split would
/// overload a link. Results are cached.
class LinkModel {
public:
  explicit LinkModel(const topo::Topology &t);

  const topo::Topology &topology() const { return *topo; }
  int numResources() const { return static_cast<int>(cap.size()); }
  /// Effective (efficiency-scaled) capacity of a resource, bytes/s; 0 if unused.
  double capacity(int res) const { return cap[res]; }
  double rawCapacity(int res) const { return rawCap[res]; }
  /// "dgx00/gpu0 -> dgx00/nvs1" or "a <-> b (half duplex)".
  std::string resourceName(int res) const;
  /// Device indices at both ends of a resource (the sending end first).
  std::pair<int, int> resourceEnds(int res) const;
  /// Resource id of `link` traversed in direction `dir`.
  int resourceOf(int link, int dir) const;

  /// Flow between two ranks (cached). !found when there is no route.
  const PathFlow &rankFlow(int fromRank, int toRank);
  /// Flow between two ranks forced through NIC `outNic` of the sender's node
  /// and NIC `inNic` of the receiver's node (device indices; -1 skips that
  /// NIC), cached. Used for the inter-node hops of multi-node rings.
  const PathFlow &viaFlow(int fromRank, int outNic, int inNic, int toRank);
  /// Flow between any two devices (not cached itself; the route trees and
  /// breadth-first searches it starts from are, a few per source and
  /// destination, so routing many pairs costs about the paths' size each).
  PathFlow deviceFlow(int fromDevice, int toDevice) const;

  /// deviceFlow's result, where possible as parts shared by many pairs:
  /// when `inner` >= 0 the flow is the source's only first arc
  /// (resource `firstRes`), the inner flow `inner` between the two
  /// switches behind the ends (innerShares) and the destination's only
  /// last arc (`lastRes`); flow.res is then filled only when `resFilled`
  /// (flowOf fills it). Otherwise `flow` is the whole flow. For callers
  /// that route millions of pairs and need only which resources a flow
  /// crosses (the realizable bound).
  struct FlowParts {
    PathFlow flow;
    int inner = -1, firstRes = -1, lastRes = -1;
    bool resFilled = true;
  };
  FlowParts deviceFlowParts(int fromDevice, int toDevice) const;
  /// The resources of inner flow `id` and their shares, sorted by resource.
  const std::vector<std::pair<int, double>> &innerShares(int id) const {
    return innerFlows[id].shares;
  }
  /// `parts` as the flow deviceFlow returns.
  PathFlow flowOf(FlowParts parts) const;

private:
  /// A directed link usable by some flow: link `link` in direction `dir`,
  /// from device u to device v, its type's bit in `typeBit`.
  struct Arc {
    int u, v, link, dir;
    uint32_t typeBit;
    double cap, rawCap; ///< the link's effective and raw capacity this way
    int res;            ///< resourceOf(link, dir)
  };
  /// Hop distances of a breadth-first search from device `root` over the
  /// arcs of the link types in `mask`; GPUs other than the root are reached
  /// but never passed through (-1: unreached).
  struct Distances {
    int root = -1;
    uint32_t mask = 0;
    std::vector<int> dist;
  };
  const std::vector<int> &hopsFrom(int root, uint32_t mask) const;
  /// Replaces the max flow's per-arc flows `perEdge` (arcs `dag`, all on
  /// shortest paths from `src` at distances `ds`, carrying `total`) by
  /// the split in proportion to capacity at every vertex with several
  /// out-arcs, unless that split overloads an arc or nothing branches.
  void spreadOverEqualPaths(const std::vector<int> &dag, int src,
                            const std::vector<int> &ds, double total,
                            std::vector<double> &perEdge) const;
  const topo::RouteTree &routeTree(int src) const;

  /// A device flow whose source has one first arc and whose destination one
  /// last arc (a NIC on one switch port) is a max flow between the two
  /// switches behind them, limited by those arcs: deviceFlow keeps that
  /// inner part per (switch, switch, link types, limits), so the flows of
  /// every NIC pair behind the same two switches cost one max flow. The key
  /// and the arcs' flows (arc id, bytes/s with effective capacities).
  struct InnerKey {
    int from, to;
    uint32_t mask;
    double inCap, outCap, rawInCap, rawOutCap;
    bool operator==(const InnerKey &) const = default;
  };
  struct InnerKeyHash {
    size_t operator()(const InnerKey &k) const;
  };
  struct InnerFlow {
    double total = 0, rawTotal = 0;
    /// (resource, share of total), sorted by resource.
    std::vector<std::pair<int, double>> shares;
  };
  mutable std::unordered_map<InnerKey, int, InnerKeyHash> innerIds;
  /// A direct-mapped cache in front of innerIds (id -1: empty): a sweep
  /// asks for the same few thousand keys millions of times.
  struct InnerSlot {
    InnerKey key{};
    int id = -1;
  };
  mutable std::vector<InnerSlot> innerSlots;
  int findInner(const InnerKey &key) const;
  mutable std::vector<InnerFlow> innerFlows; ///< by id, in discovery order

  const topo::Topology *topo;
  std::vector<double> cap, rawCap;
  std::vector<Arc> arcs;                         ///< by (link, dir)
  /// Arc ids by device, as one array each (a sweep over millions of pairs
  /// reads them in device order): device d's are [begin[d], begin[d + 1]).
  std::vector<int> outBegin, outIds, inBegin, inIds;
  /// Copies of the arcs of outIds and inIds in their order: the searches
  /// and the only-arc checks read them one after another.
  std::vector<Arc> outData, inData;
  std::vector<char> gpu;                         ///< by device: a GPU?
  /// Small most-recently-used caches (front: newest).
  mutable std::vector<topo::RouteTree> trees;
  /// The graph every tree searches, built with the first tree.
  mutable std::unique_ptr<topo::RouteGraph> routeGraph;
  mutable std::vector<Distances> searches;
  std::unordered_map<uint64_t, PathFlow> rankCache; ///< key a * n + b
  std::map<std::tuple<int, int, int, int>, PathFlow> viaCache;
};

/// Time of `bytes` over `hops` store-and-forward hops of total latency
/// `latency` and bandwidth `bw`, cut into the k chunks that minimise
/// (h + k - 1)(alpha + m/(k B)), alpha = latency / h. *bestK gets k.
double pipelinedTime(double bytes, int hops, double latency, double bw,
                     int *bestK = nullptr);
/// The latency part of a message on route `f`, whatever its size: the
/// route's link latencies, as switches forward cut-through (the runtime
/// model's rule); a relay through a GPU is two messages. pipelinedTime is
/// the store-and-forward alternative.
double messageLatency(const PathFlow &f);
/// The store-and-forward latency part of a message: pipelinedTime -
/// bytes / bandwidth (>= 0), which grows with the route's hops. The ring
/// search's order search charges it per hop, which steers it to direct
/// links where a ring's bottleneck lies elsewhere.
double pipelinedLatency(double bytes, const PathFlow &f);

/// nccl-tests factor: busbw = algbw * busFactor (2(n-1)/n allreduce,
/// (n-1)/n allgather and reducescatter, 1 otherwise).
double busFactor(ir::Collective c, int numRanks);
/// Ring steps: 2(n-1) for allreduce, n-1 for allgather/reducescatter.
int ringSteps(ir::Collective c, int numRanks);

/// Bytes and time on one loaded resource.
struct LinkLoad {
  int resource = -1;
  double bytes = 0;
  double capacity = 0;    ///< effective, bytes/s
  double rawCapacity = 0; ///< bytes/s
  double time() const { return capacity > 0 ? bytes / capacity : 0; }
};

/// One estimate: time = bandwidthTime + latencyTime + computeTime.
struct CostReport {
  double bytes = 0; ///< S (nccl-tests convention), bytes
  double time = 0, bandwidthTime = 0, latencyTime = 0;
  /// Local work (ComputeModel.h) on the critical path; 0 for GPUs of
  /// unknown model.
  double computeTime = 0;
  double rawBandwidthTime = 0; ///< with raw capacities (efficiency 1)
  double algbw = 0, busbw = 0; ///< bytes/s
  int bottleneck = -1;         ///< resource id, -1 when nothing is sent
  std::string bottleneckName;  ///< both endpoints
  double bottleneckBytes = 0, bottleneckCapacity = 0, bottleneckRawCapacity = 0;
  std::vector<LinkLoad> links; ///< every loaded resource, by id
};

/// Cost of any schedule for a collective of `bytes` (S: output of
/// allgather, input of reducescatter, the buffer of allreduce). One unit is
/// S / chunksPerLoop. Latency: longest path through same-rank deps,
/// threadblock program order (once assigned) and messages, each message
/// adding messageLatency and each op its computeTime (ComputeModel.h, the
/// GPU models' memory bandwidths, the same local work the simulator
/// charges); the compute share of that path is computeTime. User error when
/// ranks do not match or a pair has no route.
llvm::Expected<CostReport> estimateSchedule(const ir::Schedule &s,
                                            LinkModel &m, double bytes);

/// An inter-node hop's NICs (device indices); -1/-1 routes freely.
struct NicPair {
  int out = -1, in = -1;
  bool isSet() const { return out >= 0 || in >= 0; }
  friend bool operator==(const NicPair &, const NicPair &) = default;
};

/// One ring channel: a cycle over all ranks, the NICs of each hop
/// (hop i goes order[i] -> order[i+1 mod n]; empty means free routing) and
/// the share of the data it carries.
struct RingChannel {
  std::vector<int> order;
  std::vector<NicPair> nics;
  double share = 1;
  /// When the ring search quantised the set's shares: this ring's units of
  /// the set's power-of-two total (share = units / total exactly); 0 when
  /// the shares are not quantised.
  int units = 0;
};

/// Flow of hop `i` of `ring`. REQUIRES: i < ring.order.size().
const PathFlow &hopFlow(const RingChannel &ring, size_t i, LinkModel &m);

/// Per-channel view: the resource that limits the ring alone and the rate
/// one hop can move (capacity / messages per step on that resource).
struct RingBottleneck {
  int resource = -1;
  double bandwidth = 0; ///< bytes/s per hop
  bool routed = true;   ///< false when a hop has no route
};
RingBottleneck ringBottleneck(const RingChannel &ring, LinkModel &m);

/// Closed form for ring channels (no schedule): each step moves
/// share*S/n per hop; bandwidth time from the summed link loads; latency =
/// max over channels of the largest sum of `steps` consecutive hop
/// latencies; compute = max over channels of the n-1 reductions of
/// share*S/n on a piece's chain (allreduce, reducescatter; 3 bytes of
/// memory traffic per byte on the slowest GPU, ComputeModel.h). Equals
/// estimateSchedule on the lowered ring with chunks=1 (one channel).
/// REQUIRES: every order is a permutation of the ranks.
llvm::Expected<CostReport> estimateRings(llvm::ArrayRef<RingChannel> rings,
                                         ir::Collective c, double bytes,
                                         LinkModel &m);

/// Largest sum of `steps` consecutive values of `lat` taken cyclically.
double windowLatency(llvm::ArrayRef<double> lat, int steps);

} // namespace topocc::analysis

#endif // TOPOCC_COMPILER_ANALYSIS_COSTMODEL_H
