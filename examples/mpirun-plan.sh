#!/usr/bin/env bash
# A plan file for the topocc runtime, run on 8 MPI processes of this
# machine by topocc-bench against MPI's own all-reduce, with every element
# checked (-c 1). Needs the build with OpenMPI (topocc-bench).
source "$(dirname "$0")/common.sh"
BENCH=${TOPOCC_BENCH:-$BUILD/topocc-bench}
if [ ! -x "$BENCH" ]; then
  echo "skipped: no topocc-bench at $BENCH (built only with OpenMPI; TOPOCC_BENCH sets it)"
  exit 0
fi
"$TOPOCC" compile topologies/ndv2.yaml --collective allreduce --emit plan -o "$OUT/ar.json"
"$ROOT/runtime/topocc-mpirun" -np 8 "$BENCH" --plan "$OUT/ar.json" \
  -b 64K -e 64K -n 2 -w 1 -c 1 --baseline mpi
