#!/usr/bin/env bash
# tests/mpi/cerar-plans.sh: CERAR (coded all-reduce) plans under mpirun.
#
#   cerar-plans.sh TOPOCC MPI_TEST MPIRUN TOPOLOGY WORK_DIR
#
# On a 4-rank topology: the exact code (--components 4 = N, out-of-place
# and in-place) must give 0 wrong elements; the approximate one
# (--components 6 > N with --tolerance) must have a relative error
# max|got - exact| / max|exact| within the plan's errorBound, with every
# element checked (topocc-mpi-test --plans; counts 7 and 1001 are not
# multiples of c, so those runs go through the interpreter's zero-padded
# copies). Then the same approximate plan
# checked against 1e-6 of its bound must be reported as a failure (the
# checker fails when the error exceeds the bound). Exit 1 otherwise.
set -uo pipefail
TOPOCC=$1 MPI_TEST=$2 MPIRUN=$3 TOPO=$4 WORK=$5
mkdir -p "$WORK"
fail=0
compile() { # OUT ARGS...
  local out=$1; shift
  if ! "$TOPOCC" compile "$TOPO" --collective allreduce --algorithm cerar "$@" \
         --emit plan -o "$out" >/dev/null; then
    echo "FAIL: topocc compile $TOPO --algorithm cerar $*"; fail=1
  fi
}
compile "$WORK/exact-out.json" --components 4 --outofplace
compile "$WORK/exact-in.json" --components 4 --inplace
compile "$WORK/approx-out.json" --components 6 --tolerance 1e-2 --outofplace
compile "$WORK/approx-in.json" --components 6 --tolerance 1e-2 --inplace
[ $fail -eq 0 ] || exit 1
grep -q '"errorBound"' "$WORK/exact-out.json" &&
  { echo "FAIL: the c = N plan has an errorBound (expected an exact code)"; exit 1; }
grep -q '"errorBound"' "$WORK/approx-out.json" ||
  { echo "FAIL: the c > N plan has no errorBound (expected an approximate code)"; exit 1; }
plans="$WORK/exact-out.json,$WORK/exact-in.json,$WORK/approx-out.json,$WORK/approx-in.json"
if ! "$MPIRUN" -np 4 "$MPI_TEST" --plans "$plans" --counts 7,1001,65536; then
  echo "FAIL: CERAR plans"; fail=1
fi
# Negative check: the error of the approximate plan exceeds 1e-6 x its bound.
out=$("$MPIRUN" -np 4 "$MPI_TEST" --plans "$WORK/approx-out.json" --counts 1002 \
        --bound-scale 1e-6 2>&1)
rc=$?
echo "$out" | grep "relative error"
if [ $rc -eq 0 ] || ! echo "$out" | grep -q "> bound .*: FAILED"; then
  echo "FAIL: the checker accepted a relative error above the (scaled) bound"; fail=1
else
  echo "ok: the checker rejects a relative error above the bound (exit $rc)"
fi
[ $fail -eq 0 ] && echo "cerar plans: exact and approximate codes within their bounds"
[ $fail -eq 0 ]
