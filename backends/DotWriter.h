//===- backends/DotWriter.h - Topologies as Graphviz DOT -*- C++ -*-===//
//
// Draws a topology for Graphviz: devices clustered by host, hosts in a grid
// about as wide as a screen (fabric devices above them, spines on top), one
// edge per physical link whose width grows with its bandwidth (log scale)
// and whose colour says its type; a legend lists each class of links (type,
// bandwidth, `xN` ports) once, and each edge carries its text as a tooltip
// (or a label, DotOptions::edgeLabels). A what-if variant of the topology can be
// drawn over its base: links and devices the variant lost are dashed red,
// the others take the variant's bandwidths. Overlays: ring orders (one
// colour per ring, GPU to GPU arrows) and per-link utilization (busy
// fraction 0..1, green to red, replacing the type colour). Stage: output.
// Pure function writing to a stream; deterministic (devices and links in
// file order).
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_BACKENDS_DOTWRITER_H
#define TOPOCC_BACKENDS_DOTWRITER_H

#include "compiler/topology/Topology.h"

#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace topocc::backends {

struct DotOptions {
  /// The topology after what-if patches (scenario, --fail/--scale/--set);
  /// nullptr draws the base as it is. Devices and links of the base that it
  /// lacks are drawn dashed red ("failed"); the rest use its bandwidths.
  const topo::Topology *variant = nullptr;
  /// A line under the title, e.g. "scenario 'nvlink-down': fail a/g0--a/g2".
  std::string subtitle;
  /// Ring overlays: each a cycle of ranks of the drawn topology (the variant
  /// when set), drawn as arrows between consecutive GPUs.
  std::vector<std::vector<int>> rings;
  /// Per link of the drawn topology: busy fraction in [0, 1] (the busier
  /// direction), or empty for no utilization overlay.
  std::vector<double> utilization;
  /// Print each link's bandwidth (and utilization, ring number) on its
  /// edge. Off: the legend lists each class of links once and edges carry
  /// their text as a tooltip (labels take room in Graphviz's layout).
  bool edgeLabels = false;
};

/// Writes `base` (with `o`'s variant and overlays) as a DOT digraph.
/// REQUIRES: every ring entry is a rank of the drawn topology; utilization
/// is empty or has one value per link of the drawn topology.
void writeDot(llvm::raw_ostream &os, const topo::Topology &base,
              const DotOptions &o = {});

/// Colour of a link type in the drawing ("#rrggbb").
llvm::StringRef linkTypeColor(topo::LinkType t);

} // namespace topocc::backends

#endif // TOPOCC_BACKENDS_DOTWRITER_H
