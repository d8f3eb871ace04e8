#!/usr/bin/env bash
# tests/mpi/nodes3x2-plans.sh: one algorithm's plans on 3 nodes x 2 GPUs
# under mpirun.
#
#   nodes3x2-plans.sh TOPOCC MPI_TEST MPIRUN INPUTS_DIR WORK_DIR LABEL \
#     COLLECTIVES FLAGS...
#
# On INPUTS_DIR/nodes3x2.yaml (3 nodes x 2 GPUs joined by NVLink, one NIC
# per GPU; mpirun -np 6): for every collective of the comma-separated
# COLLECTIVES and every FLAGS argument (compile flags, split at spaces),
# out of place and in place, `topocc compile --emit plan`; then every
# element of every plan checked by topocc-mpi-test --plans at counts that
# are and are not multiples of the plans' units. LABEL names the algorithm
# in the messages. Exit 1 otherwise.
set -uo pipefail
TOPOCC=$1 MPI_TEST=$2 MPIRUN=$3 INPUTS=$4 WORK=$5 LABEL=$6 COLLECTIVES=$7
shift 7
mkdir -p "$WORK"
fail=0
plans=()
n=0
for c in ${COLLECTIVES//,/ }; do
  for flags in "$@"; do
    for p in outofplace inplace; do
      out="$WORK/3x2-$c-$n-$p.json"
      # shellcheck disable=SC2086 # FLAGS is a list of words
      if ! "$TOPOCC" compile "$INPUTS/nodes3x2.yaml" --collective "$c" $flags \
             --"$p" --emit plan -o "$out" >/dev/null; then
        echo "FAIL: topocc compile nodes3x2.yaml --collective $c $flags --$p"
        fail=1
      fi
      plans+=("$out")
    done
    n=$((n + 1))
  done
done
[ $fail -eq 0 ] || exit 1
list=$(IFS=,; echo "${plans[*]}")
if ! "$MPIRUN" -np 6 "$MPI_TEST" --plans "$list" --counts 7,1001,65536; then
  echo "FAIL: $LABEL 3 x 2 plans"; fail=1
fi
[ $fail -eq 0 ] && echo "$LABEL plans: 3 x 2, every element checked"
[ $fail -eq 0 ]
