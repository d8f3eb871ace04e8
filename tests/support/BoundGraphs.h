//===- tests/support/BoundGraphs.h - Graphs for bound and tree tests -*- C++
//-*-===//
//
// The hand-built bound graphs shared by tests/unit/analysis and tests/unit/algorithms
// (before, each test file carried its own near copy): the reference models of
// docs/Algorithms-trees.md, "Reference fixtures" (DGX-A100 x n, MI250 x n,
// DGX-1) and the random meshes of the property tests. Header-only;
// tests/support is not a unit-test folder (tests/CMakeLists.txt makes a binary
// of every folder of tests/unit only).
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_TESTS_SUPPORT_BOUNDGRAPHS_H
#define TOPOCC_TESTS_SUPPORT_BOUNDGRAPHS_H

#include "compiler/analysis/Bound.h"

#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace topocc::testgraphs {

/// Tree units per arc of g at the bound d (DirectionalBound::arcUnits).
inline std::vector<int64_t> unitsOf(const analysis::BoundGraph &g,
                                    const analysis::DirectionalBound &d) {
  std::vector<int64_t> u;
  for (const analysis::BoundGraph::Arc &a : g.arcs)
    u.push_back(d.arcUnits(a.cap));
  return u;
}

/// Both directions of a link a -- b: ab units a -> b, ba units b -> a.
inline void addLink(analysis::BoundGraph &g, int a, int b, int64_t ab,
                    int64_t ba) {
  g.arcs.push_back({a, b, ab, -1, 0});
  g.arcs.push_back({b, a, ba, -1, 1});
}
/// A symmetric link (capacities in GB/s for the reference models).
inline void addLink(analysis::BoundGraph &g, int a, int b, int64_t gbps) {
  addLink(g, a, b, gbps, gbps);
}

/// "DGX-A100 x n" of "Reference fixtures", exactly: per box 8
/// GPUs and an NVSwitch at 300 GB/s; for n >= 2 a NIC per GPU (25 GB/s) and
/// NIC i <-> global IB switch i mod 2 (25 GB/s). Box b: GPUs per*b .. +7,
/// its NVSwitch per*b + 8, NICs per*b + 9 ..; the IB switches last.
inline analysis::BoundGraph forestCollDgx(int n) {
  analysis::BoundGraph g;
  const int per = n >= 2 ? 17 : 9;
  g.numVertices = per * n + (n >= 2 ? 2 : 0);
  for (int b = 0; b < n; ++b)
    for (int i = 0; i < 8; ++i) {
      int gpu = per * b + i;
      g.compute.push_back(gpu);
      addLink(g, gpu, per * b + 8, 300);
      if (n >= 2) {
        int nic = per * b + 9 + i;
        addLink(g, gpu, nic, 25);
        addLink(g, nic, per * n + i % 2, 25);
      }
    }
  return g;
}

/// forestCollDgx(n) with device names ("dgx0/gpu0", "dgx0/nvs",
/// "dgx0/nic0", "ib0"), as buildBoundGraph names them: switch splitting
/// then finds the box shift and keeps the GPU graph symmetric.
inline analysis::BoundGraph forestCollDgxNamed(int n) {
  analysis::BoundGraph g = forestCollDgx(n);
  const int per = n >= 2 ? 17 : 9;
  g.names.resize(g.numVertices);
  for (int b = 0; b < n; ++b) {
    std::string box = "dgx" + std::to_string(b) + "/";
    for (int i = 0; i < 8; ++i) {
      g.names[per * b + i] = box + "gpu" + std::to_string(i);
      if (n >= 2)
        g.names[per * b + 9 + i] = box + "nic" + std::to_string(i);
    }
    g.names[per * b + 8] = box + "nvs";
  }
  if (n >= 2) {
    g.names[per * n] = "ib0";
    g.names[per * n + 1] = "ib1";
  }
  return g;
}

/// A random cluster of `boxes` identical boxes with names: per box `gpus`
/// GPUs, random GPU-GPU links and a box switch with a random capacity per
/// GPU, the same in every box; GPU i of every box on fabric switch
/// "f{i mod fabric}" with a random capacity per i (a rail). Symmetric under
/// the box shift by construction.
inline analysis::BoundGraph randomBoxCluster(std::mt19937 &rng, int boxes,
                                             int gpus, int fabric) {
  analysis::BoundGraph g;
  const int per = gpus + 1;
  g.numVertices = per * boxes + fabric;
  g.names.resize(g.numVertices);
  std::uniform_int_distribution<int> bw(1, 6);
  std::vector<int64_t> toSwitch(gpus), toFabric(gpus);
  std::vector<std::tuple<int, int, int64_t>> mesh;
  for (int i = 0; i < gpus; ++i) {
    toSwitch[i] = bw(rng);
    toFabric[i] = bw(rng);
  }
  for (int i = 0; i < gpus; ++i)
    for (int j = i + 1; j < gpus; ++j)
      if (std::uniform_int_distribution<int>(0, 2)(rng) == 0) {
        int64_t c = bw(rng);
        mesh.emplace_back(i, j, c);
      }
  for (int b = 0; b < boxes; ++b) {
    std::string box = "b" + std::to_string(b) + "/";
    for (int i = 0; i < gpus; ++i) {
      g.compute.push_back(per * b + i);
      g.names[per * b + i] = box + "gpu" + std::to_string(i);
      addLink(g, per * b + i, per * b + gpus, toSwitch[i]);
      addLink(g, per * b + i, per * boxes + i % fabric, toFabric[i]);
    }
    g.names[per * b + gpus] = box + "sw";
    for (auto &[i, j, c] : mesh)
      addLink(g, per * b + i, per * b + j, c);
  }
  for (int f = 0; f < fabric; ++f)
    g.names[per * boxes + f] = "f" + std::to_string(f);
  return g;
}

/// A named two-level fat tree like topologies/fattree-multipod.yaml, small:
/// `pods` x `nodes` boxes of `gpus` GPUs (even), per box an NVSwitch "nvs"
/// (12 per GPU), a PCIe switch "plx{i/2}" per GPU pair (4 per GPU and per
/// NIC) and a NIC "nic{i}" per GPU; NIC i of every box in pod p on leaf
/// "pod{p}-leaf{i mod 2}" at 3, every leaf to every spine "spine{s}" at
/// 3 * nodes * gpus / 2 / spines (non-blocking). The NICs bind: every
/// box's cut is tight at the optimum.
inline analysis::BoundGraph fatTreeCluster(int pods, int nodes, int gpus,
                                           int spines) {
  analysis::BoundGraph g;
  const int per = gpus + 1 + gpus / 2 + gpus; // GPUs, nvs, plx, NICs
  const int boxes = pods * nodes;
  const int leaf0 = per * boxes, spine0 = leaf0 + 2 * pods;
  g.numVertices = spine0 + spines;
  g.names.resize(g.numVertices);
  for (int b = 0; b < boxes; ++b) {
    int p = b / nodes, base = per * b;
    std::string box = "pod" + std::to_string(p) + "-node" +
                      std::to_string(b % nodes) + "/";
    int nvs = base + gpus, plx = nvs + 1, nic = plx + gpus / 2;
    g.names[nvs] = box + "nvs";
    for (int i = 0; i < gpus; ++i) {
      g.compute.push_back(base + i);
      g.names[base + i] = box + "gpu" + std::to_string(i);
      g.names[nic + i] = box + "nic" + std::to_string(i);
      if (i % 2 == 0)
        g.names[plx + i / 2] = box + "plx" + std::to_string(i / 2);
      addLink(g, base + i, nvs, 12);
      addLink(g, base + i, plx + i / 2, 4);
      addLink(g, nic + i, plx + i / 2, 4);
      addLink(g, nic + i, leaf0 + 2 * p + i % 2, 3);
    }
  }
  for (int p = 0; p < pods; ++p)
    for (int l = 0; l < 2; ++l) {
      g.names[leaf0 + 2 * p + l] =
          "pod" + std::to_string(p) + "-leaf" + std::to_string(l);
      for (int sp = 0; sp < spines; ++sp)
        addLink(g, leaf0 + 2 * p + l, spine0 + sp,
                3 * nodes * gpus / 2 / spines);
    }
  for (int sp = 0; sp < spines; ++sp)
    g.names[spine0 + sp] = "spine" + std::to_string(sp);
  return g;
}

/// One DGX-A100 box: GPUs 0..7 on NVSwitch 8 at 300 GB/s.
inline analysis::BoundGraph oneDgx() { return forestCollDgx(1); }

/// The MI250 link matrix of "Reference fixtures" (x 50 GB/s per link).
inline const std::vector<std::vector<int>> kMi250 = {
    {0, 4, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0},
    {4, 0, 0, 0, 0, 1, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0},
    {0, 0, 0, 4, 0, 0, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0},
    {0, 0, 4, 0, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0},
    {2, 0, 0, 0, 0, 4, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {0, 1, 0, 0, 4, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0},
    {0, 0, 1, 0, 1, 1, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0},
    {0, 0, 0, 2, 0, 1, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {1, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 2, 0, 0, 0},
    {0, 1, 1, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 1, 0, 0},
    {0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 1, 0},
    {0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 2},
    {0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 4, 1, 0},
    {0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 4, 0, 1, 1},
    {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 0, 4},
    {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 1, 4, 0}};

/// The DGX-1 (NDv2) NVLink matrix of "Reference fixtures" (x 25 GB/s per
/// link).
inline const std::vector<std::vector<int>> kDgx1 = {
    {0, 2, 1, 1, 2, 0, 0, 0}, {2, 0, 1, 2, 0, 1, 0, 0},
    {1, 1, 0, 2, 0, 0, 2, 0}, {1, 2, 2, 0, 0, 0, 0, 1},
    {2, 0, 0, 0, 0, 2, 1, 1}, {0, 1, 0, 0, 2, 0, 1, 2},
    {0, 0, 2, 0, 1, 1, 0, 2}, {0, 0, 0, 1, 1, 2, 2, 0}};

/// A pure GPU mesh: arc i -> j of perLink x m[i][j] (vertices are ranks).
inline analysis::BoundGraph meshGraph(const std::vector<std::vector<int>> &m,
                                      int perLink) {
  analysis::BoundGraph g;
  g.numVertices = static_cast<int>(m.size());
  for (int i = 0; i < g.numVertices; ++i) {
    g.compute.push_back(i);
    for (int j = 0; j < g.numVertices; ++j)
      if (m[i][j])
        g.arcs.push_back(
            {i, j, static_cast<int64_t>(perLink) * m[i][j], -1, 0});
  }
  return g;
}

/// "MI250 x n" of "Reference fixtures": 16 GCDs per box, arc i->j = 50 L[i][j];
/// for n >= 2 every GCD <-> one global IB switch at 16 GB/s.
inline analysis::BoundGraph forestCollMi250(int n) {
  analysis::BoundGraph g;
  g.numVertices = 16 * n + (n >= 2 ? 1 : 0);
  for (int b = 0; b < n; ++b)
    for (int i = 0; i < 16; ++i) {
      g.compute.push_back(16 * b + i);
      for (int j = i + 1; j < 16; ++j)
        if (kMi250[i][j])
          addLink(g, 16 * b + i, 16 * b + j, 50 * kMi250[i][j]);
      if (n >= 2)
        addLink(g, 16 * b + i, 16 * n, 16);
    }
  return g;
}

/// How randomMesh draws a graph.
struct RandomMeshOptions {
  int gpus = 2, switches = 0;
  int minBw = 1, maxBw = 5; ///< integer capacity per direction
  enum class Asymmetry {
    None,     ///< every link the same both ways
    GpuLinks, ///< GPU -- GPU links independent per direction (switches
              ///< keep in = out, as switch splitting needs)
    Quarter,  ///< any link, with probability 1/4
  } asymmetry = Asymmetry::None;
  /// Compute vertices at random vertex ids (else 0 .. gpus-1).
  bool shuffleIds = false;
  /// Extra links: uniform in [0, extraFactor x vertices].
  int extraFactor = 1;
};

/// A random strongly connected mesh: a random spanning tree plus extra
/// links (the property tests of the bound, splitting, packing and
/// lowering). Every draw is sequenced, so a seed gives the same graph on
/// every compiler.
inline analysis::BoundGraph randomMesh(std::mt19937 &rng,
                                       const RandomMeshOptions &o) {
  analysis::BoundGraph g;
  const int v = o.gpus + o.switches;
  g.numVertices = v;
  std::vector<int> ids(v);
  for (int i = 0; i < v; ++i)
    ids[i] = i;
  if (o.shuffleIds)
    std::shuffle(ids.begin(), ids.end(), rng);
  g.compute.assign(ids.begin(), ids.begin() + o.gpus);
  std::vector<char> isGpu(v, 0);
  for (int c : g.compute)
    isGpu[c] = 1;
  std::uniform_int_distribution<int> bw(o.minBw, o.maxBw);
  auto link = [&](int a, int b) {
    int64_t fwd = bw(rng), rev = fwd;
    using A = RandomMeshOptions::Asymmetry;
    if (o.asymmetry == A::GpuLinks && isGpu[a] && isGpu[b])
      rev = bw(rng);
    else if (o.asymmetry == A::Quarter &&
             std::uniform_int_distribution<int>(0, 3)(rng) == 0)
      rev = bw(rng);
    addLink(g, a, b, fwd, rev);
  };
  for (int i = 1; i < v; ++i) {
    int parent = std::uniform_int_distribution<int>(0, i - 1)(rng);
    link(ids[i], ids[parent]);
  }
  int extra = std::uniform_int_distribution<int>(0, o.extraFactor * v)(rng);
  for (int e = 0; e < extra; ++e) {
    int a = std::uniform_int_distribution<int>(0, v - 1)(rng);
    int b = std::uniform_int_distribution<int>(0, v - 1)(rng);
    if (a != b)
      link(a, b);
  }
  return g;
}

} // namespace topocc::testgraphs

#endif // TOPOCC_TESTS_SUPPORT_BOUNDGRAPHS_H
