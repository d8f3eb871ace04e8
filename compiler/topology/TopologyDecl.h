//===- compiler/topology/TopologyDecl.h - Parsed declarations --*- C++ -*-===//
//
// Internal to the topology parser: the declarations read from YAML (link
// attributes, device and link patterns, node templates, nodes, fabric) and
// the Expander that counts them (size limits before any expansion) and
// expands them into a Topology. Stage: topology parsing. Free of YAML types.
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_COMPILER_TOPOLOGY_TOPOLOGYDECL_H
#define TOPOCC_COMPILER_TOPOLOGY_TOPOLOGYDECL_H

#include "compiler/topology/NamePattern.h"
#include "compiler/topology/Topology.h"
#include "compiler/topology/TopologyParser.h"

#include "llvm/ADT/Twine.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace topocc::topo {

/// Link attributes as given by a class or a link entry.
struct LinkAttrs {
  std::optional<LinkType> type;
  std::optional<Quantity> bandwidth[2];
  std::optional<Quantity> latency;
  std::optional<int> count;
  std::optional<Duplex> duplex;
  std::optional<double> efficiency;

  /// Every attribute `o` gives replaces this one's (inline attributes over
  /// a class's, a dimension's over the generator's).
  void overrideWith(const LinkAttrs &o) {
    if (o.type)
      type = o.type;
    for (int dir = 0; dir < 2; ++dir)
      if (o.bandwidth[dir])
        bandwidth[dir] = o.bandwidth[dir];
    if (o.latency)
      latency = o.latency;
    if (o.count)
      count = o.count;
    if (o.duplex)
      duplex = o.duplex;
    if (o.efficiency)
      efficiency = o.efficiency;
  }
};

/// A located name pattern.
struct PatternAt {
  Pattern pattern;
  SourceLoc base; ///< location of the pattern's first character
};

struct DeviceDecl {
  PatternAt name;
  DeviceKind kind = DeviceKind::Gpu;
  SwitchKind switchKind = SwitchKind::None;
  std::string model;
  SourceLoc loc;
  Binding binding;
  bool ok = false;
};

struct LinkDecl {
  PatternAt from, to;
  std::string className;
  LinkAttrs attrs; ///< class attributes overridden by inline ones
  SourceLoc loc;
  Binding binding;
  bool ok = false;
};

struct LocalDevice {
  std::string name;
  const DeviceDecl *decl;
};
struct LocalLink {
  int from, to;
  const LinkDecl *decl;
};

/// A node template, an inline node body, or the fabric.
struct Body {
  std::string name;
  SourceLoc loc;
  std::vector<std::unique_ptr<DeviceDecl>> devices;
  std::vector<std::unique_ptr<LinkDecl>> links;
  uint64_t deviceCount = 0, linkCount = 0;
  bool counted = false, expanded = false, ok = true;
  std::vector<LocalDevice> localDevices;
  std::vector<LocalLink> localLinks;
};

struct NodeDecl {
  PatternAt name;
  Binding binding;
  std::string templateName;
  SourceLoc templateLoc;
  Body *tmpl = nullptr;
  std::unique_ptr<Body> inlineBody;
  SourceLoc loc;
  bool ok = false;
};

/// One dimension of a generated fabric (`generate:`, docs/TopologyFormat.md
/// "Generated fabrics"): groups of `size` GPUs along this coordinate, joined
/// as a ring (torus), a line (mesh), all pairs, or through one switch each.
struct GenDimension {
  GridDim::Kind kind = GridDim::Ring;
  uint64_t size = 0;
  LinkDecl link;         ///< the attributes of every link of this dimension
  DeviceDecl switchDecl; ///< Switch: the switches' kind
};

/// Dimensions a `generate:` section may have (expansion is linear in the
/// GPUs times the dimensions).
constexpr size_t kMaxGridDims = 16;

/// A `generate:` section: GPUs on a grid of dimensions (dimension 0 varies
/// fastest; rank = c0 + s0 (c1 + s1 (c2 + ...))).
struct GeneratorDecl {
  std::vector<GenDimension> dims;
  DeviceDecl gpu; ///< model and location of the generated GPUs
  std::string prefix = "npu";
  SourceLoc loc;
  bool ok = false;

  uint64_t gpuCount() const;    ///< saturating
  uint64_t linkCount() const;   ///< saturating
  uint64_t switchCount() const; ///< saturating
};

/// Where the parser's diagnostics go (it caps their number).
class ErrorSink {
public:
  virtual ~ErrorSink() = default;
  virtual void error(SourceLoc loc, const llvm::Twine &msg) = 0;
  virtual bool tooManyErrors() const = 0;
  /// An error at the pattern's character `e.offset`.
  void patternError(const PatternAt &p, const PatternError &e) {
    SourceLoc l = p.base;
    if (l.col)
      l.col += static_cast<unsigned>(e.offset);
    error(l, e.message);
  }
};

using TemplateMap = std::map<std::string, std::unique_ptr<Body>, std::less<>>;

/// Counts and expands declarations into `topo` (devices, links, nodes).
class Expander {
public:
  Expander(ErrorSink &sink, Topology &topo, std::string file,
           TemplateMap &templates, std::vector<std::string> &templateOrder,
           std::vector<std::unique_ptr<NodeDecl>> &nodeDecls,
           std::unique_ptr<Body> &fabric,
           const GeneratorDecl *generator = nullptr)
      : sink(sink), topo(topo), file(std::move(file)), templates(templates),
        templateOrder(templateOrder), nodeDecls(nodeDecls), fabric(fabric),
        generator(generator) {}

  /// False (with errors) when the topology would exceed maxDevices or
  /// maxLinks; nothing is expanded to find out.
  bool checkSizes();
  uint64_t maxDevices = kMaxDevices;
  uint64_t maxLinks = kMaxLinks;
  /// Expands every template (used or not), the nodes and the fabric.
  /// REQUIRES: checkSizes() returned true.
  void expandAll();

private:
  void error(SourceLoc loc, const llvm::Twine &msg) { sink.error(loc, msg); }
  void patternError(const PatternAt &p, const PatternError &e) {
    sink.patternError(p, e);
  }
  bool tooManyErrors() const { return sink.tooManyErrors(); }
  void countBody(Body &b);
  void expandBody(Body &b, bool fabric);
  void instantiateNodes();
  void addFabric();
  /// The devices and links of `generator` (TopologyGenerate.cpp).
  void addGenerated();
  int addDevice(std::string fullName, std::string node, std::string local,
                int nodeIndex, const DeviceDecl &decl);
  void addLink(int from, int to, const LinkDecl &decl);

  ErrorSink &sink;
  Topology &topo;
  std::string file;
  TemplateMap &templates;
  std::vector<std::string> &templateOrder;
  std::vector<std::unique_ptr<NodeDecl>> &nodeDecls;
  std::unique_ptr<Body> &fabric;
  const GeneratorDecl *generator;
  std::unordered_map<std::string, int> byName;
};

} // namespace topocc::topo

#endif // TOPOCC_COMPILER_TOPOLOGY_TOPOLOGYDECL_H
