#!/usr/bin/env bash
# A topology of your own (docs/TopologyFormat.md): two servers of 4 GPUs,
# NVLink pairs, one 100 Gb/s NIC per server on a switch. Check it, see its
# bound, compile for it.
source "$(dirname "$0")/common.sh"
cat > "$OUT/mine.yaml" <<'YAML'
schema: topocc/v1
name: mine
description: 2 servers x 4 GPUs, NVLink pairs, 1 x 100 Gb/s RoCE NIC each
nodes:
  - name: "srv[0-1]"
    gpus: [ { name: "g{i:0-3}", model: a100-pcie } ]
    nics: [ nic0 ]
    switches: [ { name: plx, kind: pcie-switch } ]
    links:
      - { from: g0, to: g1, type: nvlink, bandwidth: 100 GB/s, latency: 1 us }
      - { from: g2, to: g3, type: nvlink, bandwidth: 100 GB/s, latency: 1 us }
      - { from: "g{i:0-3}", to: plx, type: pcie, bandwidth: 24 GB/s, latency: 1 us }
      - { from: nic0, to: plx, type: pcie, bandwidth: 24 GB/s, latency: 1 us }
fabric:
  switches: [ { name: tor, kind: eth-switch } ]
  links:
    - { from: "srv{n:0-1}/nic0", to: tor, type: roce, bandwidth: 100 Gb/s, latency: 3 us }
YAML
"$TOPOCC" show "$OUT/mine.yaml"
"$TOPOCC" bound "$OUT/mine.yaml" --size 256M
"$TOPOCC" compile "$OUT/mine.yaml" --collective allreduce --size 256M -o "$OUT/mine.xml"
