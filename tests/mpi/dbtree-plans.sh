#!/usr/bin/env bash
# tests/mpi/dbtree-plans.sh: NCCL's double binary tree all-reduce (compile
# --algorithm dbtree) as plans under mpirun.
#
#   dbtree-plans.sh TOPOCC MPI_TEST MPIRUN INPUTS_DIR WORK_DIR
#
# On INPUTS_DIR/nodes3x2.yaml (3 nodes x 2 GPUs; mpirun -np 6): one tree
# pair of one unit, and two pairs of three units per tree, out of place and
# in place, every element checked by topocc-mpi-test --plans at counts that
# are and are not multiples of the plans' units. Exit 1 otherwise.
set -uo pipefail
TOPOCC=$1 MPI_TEST=$2 MPIRUN=$3 INPUTS=$4 WORK=$5
mkdir -p "$WORK"
fail=0
plans=()
for shape in "1 1" "2 3"; do
  set -- $shape
  for p in outofplace inplace; do
    out="$WORK/3x2-c$1-k$2-$p.json"
    if ! "$TOPOCC" compile "$INPUTS/nodes3x2.yaml" --collective allreduce \
           --algorithm dbtree --channels "$1" --chunks "$2" --"$p" \
           --emit plan -o "$out" >/dev/null; then
      echo "FAIL: topocc compile nodes3x2.yaml --algorithm dbtree --channels $1 --chunks $2 --$p"
      fail=1
    fi
    plans+=("$out")
  done
done
[ $fail -eq 0 ] || exit 1
list=$(IFS=,; echo "${plans[*]}")
if ! "$MPIRUN" -np 6 "$MPI_TEST" --plans "$list" --counts 7,1001,65536; then
  echo "FAIL: double binary tree 3 x 2 plans"; fail=1
fi
[ $fail -eq 0 ] && echo "double binary tree plans: 3 x 2, every element checked"
[ $fail -eq 0 ]
