#!/usr/bin/env bash
# tests/mpi/hier-trees-plans.sh: hierarchical trees (compile --algorithm
# trees --tree-graph hier) as plans under mpirun.
#
#   hier-trees-plans.sh TOPOCC MPI_TEST MPIRUN INPUTS_DIR WORK_DIR
#
# On INPUTS_DIR/nodes3x2.yaml (3 nodes x 2 GPUs joined by NVLink, one NIC
# per GPU: node trees packed on the node's route graph, a heap over the 3
# nodes; mpirun -np 6): all-gather, reduce-scatter and all-reduce, out of
# place and in place, every element checked by topocc-mpi-test --plans at
# counts that are and are not multiples of the plans' units. Exit 1
# otherwise.
set -uo pipefail
TOPOCC=$1 MPI_TEST=$2 MPIRUN=$3 INPUTS=$4 WORK=$5
mkdir -p "$WORK"
fail=0
plans=()
for c in allgather reducescatter allreduce; do
  for p in outofplace inplace; do
    out="$WORK/3x2-$c-$p.json"
    if ! "$TOPOCC" compile "$INPUTS/nodes3x2.yaml" --collective "$c" \
           --algorithm trees --tree-graph hier --"$p" --emit plan \
           -o "$out" >/dev/null; then
      echo "FAIL: topocc compile nodes3x2.yaml --collective $c --tree-graph hier --$p"
      fail=1
    fi
    plans+=("$out")
  done
done
[ $fail -eq 0 ] || exit 1
list=$(IFS=,; echo "${plans[*]}")
if ! "$MPIRUN" -np 6 "$MPI_TEST" --plans "$list" --counts 7,1001,65536; then
  echo "FAIL: hierarchical trees 3 x 2 plans"; fail=1
fi
[ $fail -eq 0 ] && echo "hierarchical trees plans: 3 x 2, every element checked"
[ $fail -eq 0 ]
