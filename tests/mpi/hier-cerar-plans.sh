#!/usr/bin/env bash
# tests/mpi/hier-cerar-plans.sh: hierarchical CERAR plans under mpirun.
#
#   hier-cerar-plans.sh TOPOCC MPI_TEST MPIRUN INPUTS_DIR WORK_DIR
#
# topocc compile --algorithm hier-cerar --emit plan on INPUTS_DIR/nodes2x2.yaml
# (2 nodes x 2 GPUs, mpirun -np 4: N = 2 rails, so every code is exact: 0
# wrong elements, no errorBound) and INPUTS_DIR/nodes3x2.yaml (3 x 2, -np 6:
# c = 6 > N = 3 is approximate: the relative error max|got - exact| /
# max|exact| of every element must stay within the plan's errorBound;
# topocc-mpi-test --plans checks it). Out-of-place and in-place; counts 7
# and 1001 are not multiples of the plans' units. Exit 1 otherwise.
set -uo pipefail
TOPOCC=$1 MPI_TEST=$2 MPIRUN=$3 INPUTS=$4 WORK=$5
mkdir -p "$WORK"
fail=0
compile() { # TOPO OUT ARGS...
  local topo=$1 out=$2; shift 2
  if ! "$TOPOCC" compile "$topo" --collective allreduce --algorithm hier-cerar \
         "$@" --emit plan -o "$out" >/dev/null; then
    echo "FAIL: topocc compile $topo --algorithm hier-cerar $*"; fail=1
  fi
}
compile "$INPUTS/nodes2x2.yaml" "$WORK/2x2-out.json" --components 4 --outofplace
compile "$INPUTS/nodes2x2.yaml" "$WORK/2x2-in.json" --components 4 --inplace
compile "$INPUTS/nodes3x2.yaml" "$WORK/3x2-out.json" --components 6 --tolerance 1e-2 --outofplace
compile "$INPUTS/nodes3x2.yaml" "$WORK/3x2-in.json" --components 6 --tolerance 1e-2 --inplace
[ $fail -eq 0 ] || exit 1
grep -q '"errorBound"' "$WORK/2x2-out.json" &&
  { echo "FAIL: the 2-node plan has an errorBound (N = 2 codes are exact)"; exit 1; }
grep -q '"errorBound"' "$WORK/3x2-out.json" ||
  { echo "FAIL: the 3-node c = 6 plan has no errorBound"; exit 1; }
if ! "$MPIRUN" -np 4 "$MPI_TEST" --plans "$WORK/2x2-out.json,$WORK/2x2-in.json" \
       --counts 7,1001,65536; then
  echo "FAIL: hier-cerar 2 x 2 plans"; fail=1
fi
if ! "$MPIRUN" -np 6 "$MPI_TEST" --plans "$WORK/3x2-out.json,$WORK/3x2-in.json" \
       --counts 7,1001,65536; then
  echo "FAIL: hier-cerar 3 x 2 plans"; fail=1
fi
[ $fail -eq 0 ] && echo "hier-cerar plans: exact (2 x 2) and approximate (3 x 2) within their bounds"
[ $fail -eq 0 ]
