//===- tests/support/Mesh4.h - The 4-GPU full mesh of the trees tests -*- C++ -*-===//
//
// Four GPUs, every pair joined by a direct link (no forwarding), g0-g1 twice
// as fast: the cut bound uses every link at once, a ring only 4 of the 6,
// and the optimal trees are one star per root
// (tests/lit/Inputs/whatif/mesh4.yaml has the same topology).
//
//===----------------------------------------------------------------------===//
#ifndef TOPOCC_TESTS_SUPPORT_MESH4_H
#define TOPOCC_TESTS_SUPPORT_MESH4_H

namespace topocc::testing {

inline const char *kMesh4 = R"(schema: topocc/v1
name: mesh4
nodes:
  - name: a
    gpus: [ g0, g1, g2, g3 ]
    links:
      - { from: g0, to: g1, type: nvlink, bandwidth: 20 GB/s, latency: 0.5 us }
      - { from: g0, to: g2, type: nvlink, bandwidth: 10 GB/s, latency: 0.5 us }
      - { from: g0, to: g3, type: nvlink, bandwidth: 10 GB/s, latency: 0.5 us }
      - { from: g1, to: g2, type: nvlink, bandwidth: 10 GB/s, latency: 0.5 us }
      - { from: g1, to: g3, type: nvlink, bandwidth: 10 GB/s, latency: 0.5 us }
      - { from: g2, to: g3, type: nvlink, bandwidth: 10 GB/s, latency: 0.5 us }
)";

} // namespace topocc::testing

#endif // TOPOCC_TESTS_SUPPORT_MESH4_H
