//===- compiler/topology/Topology.h - The cluster model --------*- C++ -*-===//
//
// The hardware model read from a topology YAML file: devices (GPUs, NICs,
// switches) with full names `node/dev`, links with per-direction bandwidth in
// bytes/s, ranks and named what-if scenarios. Stage: input of the compiler.
// Invariants after parseTopology/applyScenario: names are unique, link
// endpoints are valid device indices, the GPUs form one connected graph
// (a GPU pair without a route through switches and NICs needs a GPU to
// relay).
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_TOPOLOGY_TOPOLOGY_H
#define TOPOCC_COMPILER_TOPOLOGY_TOPOLOGY_H

#include "compiler/topology/Units.h"
#include "support/Diagnostics.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace topocc::topo {

enum class DeviceKind { Gpu, Nic, Switch };
enum class SwitchKind {
  None,
  NvSwitch,
  PcieSwitch,
  CpuSocket,
  IbSwitch,
  EthSwitch,
  RoceSwitch
};
enum class LinkType { NvLink, Pcie, Xgmi, C2c, Ib, Roce, Ethernet, Custom };
enum class Duplex { Full, Half };

llvm::StringRef deviceKindName(DeviceKind k);  ///< "gpu", "nic", "switch"
llvm::StringRef switchKindName(SwitchKind k);  ///< "nvswitch", ... ("" for None)
llvm::StringRef linkTypeName(LinkType t);      ///< "nvlink", "pcie", ...
std::optional<SwitchKind> parseSwitchKind(llvm::StringRef s);
std::optional<LinkType> parseLinkType(llvm::StringRef s);
llvm::ArrayRef<llvm::StringRef> switchKindNames();
llvm::ArrayRef<llvm::StringRef> linkTypeNames();

/// A place in the topology file (with its source line, for diagnostics).
struct Located {
  SourceLoc loc;
  std::string sourceLine;
};

struct Device {
  std::string name;      ///< full name: "dgx00/gpu3", or "leaf2" in the fabric
  std::string node;      ///< node name; empty for fabric devices
  std::string localName; ///< name inside the node ("gpu3")
  DeviceKind kind = DeviceKind::Gpu;
  SwitchKind switchKind = SwitchKind::None;
  std::string model;     ///< free text for GPUs ("h100-sxm")
  int nodeIndex = -1;    ///< index into Topology::nodes(), -1 for fabric
  int rank = -1;         ///< rank of a GPU, -1 otherwise
  SourceLoc loc;         ///< the YAML entry that declared it
};

/// One physical link (a bundle of `count` ports) between two devices.
/// Direction 0 ("fwd") is from -> to, direction 1 ("rev") is to -> from.
struct Link {
  int from = -1, to = -1; ///< device indices
  LinkType type = LinkType::Custom;
  std::string className;  ///< link class name, empty when inline
  double bandwidth[2] = {0, 0}; ///< per port, per direction, bytes/s
  std::string bandwidthUnit[2]; ///< the unit it was written in ("GB/s")
  double latency = 0;     ///< seconds
  std::string latencyUnit = "us";
  int count = 1;          ///< parallel ports bonded
  Duplex duplex = Duplex::Full;
  double efficiency = 1;  ///< achievable / raw line rate
  bool hasEfficiency = false;
  SourceLoc loc;          ///< the YAML entry that declared it

  /// Raw capacity of direction `dir` (count x bandwidth), bytes/s.
  double capacity(int dir) const { return bandwidth[dir] * count; }
  /// Achievable capacity (raw x efficiency), bytes/s.
  double effectiveCapacity(int dir) const {
    return capacity(dir) * efficiency;
  }
  /// Per-port bandwidth as written, e.g. "25 GB/s".
  std::string bandwidthText(int dir) const;
  std::string latencyText() const;
  bool symmetric() const {
    return bandwidth[0] == bandwidth[1] &&
           bandwidthUnit[0] == bandwidthUnit[1];
  }
};

struct Node {
  std::string name;         ///< "dgx00"
  std::string templateName; ///< empty for inline nodes
  std::vector<int> devices; ///< device indices in declaration order
  SourceLoc loc;
};

/// One directed hop of a route: link `link` traversed in direction `dir`.
struct Hop {
  int link = -1;
  int dir = 0; ///< 0: link.from -> link.to, 1: reverse
  int fromDevice = -1, toDevice = -1;
};

/// A route between two devices. Empty `hops` and !found() when none exists.
struct Route {
  std::vector<Hop> hops;
  bool exists = false;
  double bottleneck = 0; ///< min effective capacity along the route, bytes/s
  double rawBottleneck = 0; ///< min raw capacity, bytes/s
  double latency = 0;    ///< sum of link latencies, seconds
  bool found() const { return exists; }
};

/// A route's figures without its hops (RouteTree::summaryTo): what a caller
/// routing millions of pairs needs, without a list per pair.
struct RouteSummary {
  bool found = false;
  uint32_t linkTypes = 0; ///< 1u << LinkType of every hop
  int hops = 0;
  double bottleneck = 0, rawBottleneck = 0, latency = 0; ///< as in Route
};

class Topology;

/// A topology's links as one graph for route searches from many sources
/// (RouteTree): building it is most of a search's cost on a large fabric,
/// so callers that route from many sources build it once.
class RouteGraph {
public:
  explicit RouteGraph(const Topology &t);
  ~RouteGraph();
  RouteGraph(const RouteGraph &) = delete;
  RouteGraph &operator=(const RouteGraph &) = delete;

private:
  friend class RouteTree;
  struct Impl;
  const Topology *topo;
  std::unique_ptr<Impl> impl;
};

/// Widest-then-fewest-hops routes from one device to every device, from one
/// single-source search (Topology::routeDevices). Holds a predecessor hop
/// per device: O(devices) memory, so callers that route many pairs from one
/// source build one tree and keep it (analysis::LinkModel caches a few).
///
/// A tree built on a RouteGraph searches lazily: to(d) runs the search only
/// until d is settled (a route inside a node of a 4096-GPU fabric then
/// costs a few dozen steps instead of a search of the whole fabric), and
/// later calls resume it. The steps are those of one full search, so every
/// route is the same as a full search's. The graph must outlive the tree;
/// to() changes the search state, so one tree is not shared by threads.
class RouteTree {
public:
  RouteTree(const Topology &t, int srcDevice);
  /// The same search on `graph`, built once for its topology.
  RouteTree(const RouteGraph &graph, int srcDevice);
  RouteTree(RouteTree &&) noexcept;
  RouteTree &operator=(RouteTree &&) noexcept;
  ~RouteTree();
  int source() const { return src; }
  /// The route to `dstDevice`; !found() when none exists.
  Route to(int dstDevice) const;
  /// to(dstDevice) without its hops, and the link types it uses.
  RouteSummary summaryTo(int dstDevice) const;

private:
  struct Search;
  RouteTree(const RouteGraph &graph, int srcDevice, bool complete);
  /// Runs the search until `dst` is settled or every device is.
  void settle(int dst) const;
  const Topology *topo;
  int src;
  /// The graph searched, for summaries; null for a tree built from a
  /// Topology (its graph is gone).
  const RouteGraph::Impl *searched = nullptr;
  /// The hop that reaches each device; link -1: none.
  mutable std::vector<Hop> pred;
  mutable std::unique_ptr<Search> search; ///< null once the search is done
};

/// A what-if patch operation (docs/TopologyFormat.md, "Scenarios").
struct ScenarioOp {
  enum Kind { Fail, Scale, Set, Sweep, Extends };
  Kind kind = Fail;
  std::string selector;   ///< fail target or `links:` selector
  Located selectorLoc;
  std::optional<Quantity> bandwidth; ///< factor (scale), value/delta (set)
  std::optional<Quantity> latency;
  Located bandwidthLoc, latencyLoc;
  std::vector<Quantity> sweepValues; ///< sweep: bandwidth values
  std::vector<std::string> extends;  ///< extends: scenario names
  std::vector<Located> extendsLocs;
  Located loc;
};

struct ScenarioDef {
  std::string name;
  std::vector<ScenarioOp> ops;
  Located loc;
};

/// One dimension of a generated grid (`generate:`, docs/TopologyFormat.md
/// "Generated fabrics"): its size and how its groups are joined.
struct GridDim {
  enum Kind { Ring, Line, FullyConnected, Switch };
  Kind kind = Ring;
  int size = 1;
  /// Whether coordinate order 0, 1, ..., size-1 (and back to 0) is a ring
  /// of routed pairs: every kind but a line of more than two.
  bool ringRouted() const { return kind != Line || size <= 2; }
};

/// The whole cluster. Copyable (scenarios apply to a copy).
class Topology {
public:
  llvm::StringRef name() const { return name_; }
  llvm::StringRef description() const { return description_; }
  llvm::StringRef schema() const { return schema_; }
  /// The file it was read from (as given to the parser).
  llvm::StringRef fileName() const { return fileName_; }

  llvm::ArrayRef<Device> devices() const { return devices_; }
  llvm::ArrayRef<Link> links() const { return links_; }
  llvm::ArrayRef<Node> nodes() const { return nodes_; }
  const Device &device(int i) const { return devices_[i]; }
  const Link &link(int i) const { return links_[i]; }
  /// Device index by full name, or -1.
  int findDevice(llvm::StringRef fullName) const;
  /// Indices of the links touching device `d`, in link order.
  std::vector<int> linksOf(int d) const;

  int numRanks() const { return static_cast<int>(ranks_.size()); }
  /// Device index of rank `r`. REQUIRES: 0 <= r < numRanks().
  int rankDevice(int r) const { return ranks_[r]; }
  /// Full device name of rank `r` ("dgx00/gpu3").
  std::string rankName(int r) const { return devices_[ranks_[r]].name; }
  /// Rank of the GPU named `fullName`, or -1.
  int rankOf(llvm::StringRef fullName) const;
  /// True when ranks were given by `ranks.list`.
  bool explicitRankList() const { return rankList_; }
  /// GPUs per node when every node has the same number, else 0.
  int gpusPerNode() const;
  int numNodes() const { return static_cast<int>(nodes_.size()); }
  /// Node index of rank `r`, -1 for a fabric GPU.
  int nodeOfRank(int r) const { return devices_[ranks_[r]].nodeIndex; }

  /// Widest route (largest bottleneck effective capacity), then fewest hops,
  /// from rank `fromRank` to rank `toRank`. Only switches and NICs forward:
  /// no GPU is an intermediate hop. !found() when no such route exists.
  Route route(int fromRank, int toRank) const;
  /// route(fromRank, r) for every rank r, from one single-source search.
  std::vector<Route> routesFrom(int fromRank) const;
  /// The same between any two devices.
  Route routeDevices(int fromDevice, int toDevice) const;
  /// route(), or a user error "no route from A to B ...".
  llvm::Expected<Route> findRoute(int fromRank, int toRank) const;

  /// The grid of a generated fabric: its dimensions (dimension 0 varies
  /// fastest) and the GPU at each linear index. Empty when the file has no
  /// `generate:` section, or after a scenario removed a device.
  const std::vector<GridDim> &grid() const { return grid_; }
  /// Rank of the GPU at linear grid index `i`. REQUIRES: !grid().empty().
  int gridRank(int i) const { return devices_[gridDevices_[i]].rank; }
  void setGrid(std::vector<GridDim> dims, std::vector<int> devices) {
    grid_ = std::move(dims);
    gridDevices_ = std::move(devices);
  }

  const std::vector<ScenarioDef> &scenarios() const { return scenarios_; }
  const ScenarioDef *findScenario(llvm::StringRef name) const;
  /// Names of the scenarios applied so far, in order.
  const std::vector<std::string> &appliedScenarios() const { return applied_; }

  /// A diagnostic at `loc` with its source line filled in.
  Diagnostic diag(const SourceLoc &loc, std::string message) const;

  // Construction and mutation, for the parser and scenarios.
  void setHeader(std::string schema, std::string name, std::string description,
                 std::string fileName);
  void setSource(std::shared_ptr<const std::string> text) {
    source_ = std::move(text);
  }
  std::vector<Device> &mutableDevices() { return devices_; }
  std::vector<Link> &mutableLinks() { return links_; }
  std::vector<Node> &mutableNodes() { return nodes_; }
  std::vector<ScenarioDef> &mutableScenarios() { return scenarios_; }
  std::vector<std::string> &mutableApplied() { return applied_; }
  /// Sets the rank order (device indices of GPUs) and Device::rank.
  void setRanks(std::vector<int> gpuDevices, bool fromList);
  /// Removes the devices marked in `remove` and every link touching them,
  /// and the links marked in `removeLinks`; renumbers and drops removed GPUs
  /// from the rank order (which keeps its relative order).
  void removeDevicesAndLinks(const std::vector<bool> &remove,
                             const std::vector<bool> &removeLinks);
  /// Rebuilds the name index after devices change.
  void reindex();

private:
  std::string schema_, name_, description_, fileName_;
  std::vector<Device> devices_;
  std::vector<Link> links_;
  std::vector<Node> nodes_;
  std::vector<int> ranks_;
  bool rankList_ = false;
  std::vector<GridDim> grid_;
  std::vector<int> gridDevices_;
  std::vector<ScenarioDef> scenarios_;
  std::vector<std::string> applied_;
  std::map<std::string, int, std::less<>> byName_;
  std::shared_ptr<const std::string> source_;
};

/// Connectivity check (docs/TopologyFormat.md, "Validation"): the GPUs form
/// one connected graph, counting links between GPUs (a GPU relays by
/// receiving and sending). Adds one diagnostic at `loc` (or at a GPU of the
/// second component when `loc` is invalid) listing the components, prefixed
/// with `context` (e.g. "after scenario 'x': ").
void checkConnectivity(const Topology &t, DiagnosticList &diags,
                       const SourceLoc &loc = {},
                       llvm::StringRef context = {});

/// Which GPU pairs have a route (a direct link, or a path through switches
/// and NICs only) and which need a GPU to relay.
struct RouteCoverage {
  uint64_t pairs = 0;    ///< ordered GPU pairs
  uint64_t unrouted = 0; ///< ordered pairs without a route
  int exampleFrom = -1;  ///< a GPU (device index) with unrouted pairs, or -1
  std::vector<int> exampleMissing; ///< the GPUs it has no route to
};
/// Linear in devices and links for switch and rail fabrics (GPUs with the
/// same switch clusters and no direct links are counted once).
RouteCoverage routeCoverage(const Topology &t);

/// Parses a topology file's text. Errors are DiagnosticErrors listing every
/// problem found (file:line:col, source line, caret).
llvm::Expected<Topology> parseTopology(llvm::StringRef text,
                                       llvm::StringRef fileName);

/// Reads and parses `path`; a missing or unreadable file is a user error.
llvm::Expected<Topology> loadTopologyFile(llvm::StringRef path);

/// Applies the named scenario to `t` (in place) and validates the result.
/// Unknown name: an error listing the known scenarios.
llvm::Error applyScenario(Topology &t, llvm::StringRef scenarioName);

} // namespace topocc::topo

#endif // TOPOCC_COMPILER_TOPOLOGY_TOPOLOGY_H
