#!/usr/bin/env bash
# The fastest all-reduce topocc can build for 2 x DGX-A100, as MSCCL XML:
# one file per size window from 1 MiB to 1 GiB (each chosen and tuned by
# the runtime model), then every file checked by the verifier. Point
# msccl-executor-nccl at the folder (MSCCL_XML_FILES, one path per file).
source "$(dirname "$0")/common.sh"
"$TOPOCC" compile topologies/dgx-a100x2.yaml --collective allreduce \
  --sizes 1M:1G -o "$OUT/msccl"
ls "$OUT/msccl"
"$TOPOCC" verify "$OUT"/msccl/*.xml --topology topologies/dgx-a100x2.yaml --size 256M
