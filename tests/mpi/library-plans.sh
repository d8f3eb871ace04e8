#!/usr/bin/env bash
# tests/mpi/library-plans.sh: every topology of the library, compiled to
# plans with `topocc compile --emit plan` and run under mpirun.
#
#   library-plans.sh TOPOCC MPI_TEST MPIRUN TOPOLOGY_DIR WORK_DIR
#
# For each topology with MIN_RANKS..MAX_RANKS ranks and each algorithm in
# ALGORITHMS: allreduce, allgather and reducescatter, in-place and
# out-of-place (6 plans; CERAR is an all-reduce only: 2 plans, compiled with
# --components N, the exact code, which must give 0 wrong elements). All
# plans for the same rank count run in ONE mpirun (process start-up
# dominates on 2 cores), for counts that do not divide by the chunk count;
# every rank checks every output element against the reference
# (topocc-mpi-test --plans). Topologies outside the range are skipped with a
# count. Exit 1 on any wrong element, run error or ring compile error (but
# for a fabric that has no ring of routed pairs). dims compiles only on
# generated grids (all-reduce; docs/Algorithms.md section 6), matching
# only where direct GPU links join every GPU (section 7).
#
# ctest runs it twice (tests/mpi/CMakeLists.txt): up to 16 ranks with the
# sanitized binaries, and from 17 ranks (32-rank boxes, the 128-rank
# fattree-multipod) with unsanitized ones: 128 sanitized processes that
# each load every plan do not fit a 2-core CI machine.
set -uo pipefail
TOPOCC=$1 MPI_TEST=$2 MPIRUN=$3 TOPOS=$4 WORK=$5

# Algorithms to run (an algorithm the compiler rejects is reported and
# skipped; ring must always compile).
ALGORITHMS=${TOPOCC_LIBRARY_ALGORITHMS:-"ring trees cerar dims matching"}
MIN_RANKS=${TOPOCC_LIBRARY_MIN_RANKS:-1}
MAX_RANKS=${TOPOCC_LIBRARY_MAX_RANKS:-1024}
COUNTS=${TOPOCC_LIBRARY_COUNTS:-1001}
# Per algorithm: extra compile flags ("{N}" is replaced by the topology's
# rank count) and the collectives it has. Every plan runs any count (CERAR
# plans need equal chunks: the interpreter pads counts that are not a
# multiple of c, see docs/Runtime.md).
declare -A FLAGS=([trees]="--trees-per-root 1" [cerar]="--components {N}")
declare -A COLLECTIVES=([cerar]="allreduce" [dims]="allreduce")
mkdir -p "$WORK"
declare -A byRanks # rank count -> ",plan,plan..."
run=0 skipped=0 failed=0 plans=0 skippedNames=""
for algo in $ALGORITHMS; do
  # Is the algorithm known to this compiler at all?
  flags=${FLAGS[$algo]:-}
  probe=$("$TOPOCC" compile "$TOPOS/ndv2.yaml" --collective allreduce --algorithm "$algo" \
            ${flags//\{N\}/8} --emit plan -o "$WORK/probe.json" 2>&1)
  if [ $? -ne 0 ] && echo "$probe" | grep -qi "unknown --algorithm"; then
    echo "algorithm $algo: not available in this topocc (skipped): $(echo "$probe" | head -1)"
    continue
  fi
  for topo in "$TOPOS"/*.yaml; do
    name=$(basename "$topo" .yaml)
    n=$("$TOPOCC" show "$topo" | sed -n 's/^summary: \([0-9]*\) GPUs.*/\1/p')
    if [ -z "$n" ]; then
      echo "FAIL $name: cannot read the rank count from 'topocc show'"; failed=$((failed + 1)); continue
    fi
    if [ "$n" -lt "$MIN_RANKS" ] || [ "$n" -gt "$MAX_RANKS" ]; then
      skipped=$((skipped + 1)); skippedNames="$skippedNames $algo:$name($n)"
      continue
    fi
    list="" flags=${FLAGS[$algo]:-}
    flags=${flags//\{N\}/$n}
    for coll in ${COLLECTIVES[$algo]:-allreduce allgather reducescatter}; do
      for mode in --outofplace --inplace; do
        out="$WORK/$name-$algo-$coll$mode.json"
        if msg=$("$TOPOCC" compile "$topo" --collective "$coll" --algorithm "$algo" $mode \
                   $flags --emit plan -o "$out" 2>&1); then
          list="$list,$out"; plans=$((plans + 1))
        elif [ "$algo" = ring ] && ! echo "$msg" | grep -q "has a route for every hop"; then
          # (A grid without a cycle of routed pairs, such as the 5 x 5
          # mesh, has no ring: its GPUs relay, and the trees run there.)
          echo "FAIL $name: ring $coll $mode does not compile: $msg"; failed=$((failed + 1))
        else
          echo "note: $name: $algo $coll $mode not compiled: $(echo "$msg" | head -1)"
        fi
      done
    done
    [ -z "$list" ] && continue
    byRanks[$n]="${byRanks[$n]:-}$list"
  done
done
for n in $(printf '%s\n' "${!byRanks[@]}" | sort -n); do
  run=$((run + 1))
  if ! "$MPIRUN" -np "$n" "$MPI_TEST" --plans "${byRanks[$n]#,}" --counts "$COUNTS"; then
    echo "FAIL: the $n-rank plans"; failed=$((failed + 1))
  fi
done
echo "library plans ($MIN_RANKS to $MAX_RANKS ranks): $run mpirun jobs, $plans plans, $failed failures; skipped $skipped (algorithm:topology) pairs outside the rank range:${skippedNames:- none}"
if [ "$plans" -eq 0 ]; then
  echo "FAIL: no plans for topologies with $MIN_RANKS to $MAX_RANKS ranks"; failed=1
fi
[ "$failed" -eq 0 ]
