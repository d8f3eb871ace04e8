#!/usr/bin/env bash
# What losing one NIC of 2 x DGX-A100 costs an all-reduce: whatif's table
# of every algorithm before and after, a busbw plot, and a Graphviz drawing
# of the failed fabric with the rings chosen around it.
source "$(dirname "$0")/common.sh"
"$TOPOCC" whatif topologies/dgx-a100x2.yaml --collective allreduce --sizes 16M:1G:4 \
  --fail dgx01/mlx5_3 --svg "$OUT/busbw.svg"
"$TOPOCC" dot topologies/dgx-a100x2.yaml --fail dgx01/mlx5_3 --rings --utilization \
  -o "$OUT/a100x2.dot"
if command -v dot > /dev/null; then
  dot -Tsvg "$OUT/a100x2.dot" -o "$OUT/a100x2.svg" && echo "drawing: $OUT/a100x2.svg"
fi
