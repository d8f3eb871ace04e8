#!/bin/bash
# Faults at run time under mpirun (ctest mpi-faults): one rank killed in the
# middle of a collective, one rank whose plan file is truncated. Every other
# rank must fail within a bounded time with a message naming the plan, the
# peer and what it waits for (tests/mpi/MpiRunTest.cpp, --fault), never hang
# and never report success.
#   faults.sh MPIRUN RUNNER DIR
set -u
mpirun=$1 runner=$2 dir=$3
mkdir -p "$dir"
failures=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# check NAME WANT_LINES: every surviving rank said "failed as expected",
# none said FAILED.
check() {
  local name=$1 want=$2 got
  got=$(grep -o "failed as expected" "$out" | wc -l)
  if [ "$got" != "$want" ] || grep -q "FAILED" "$out"; then
    echo "FAIL $name: $got of $want surviving ranks reported the fault as expected:"
    cat "$out"
    failures=$((failures + 1))
  else
    echo "ok   $name: $got ranks reported it; rank 0 said:"
    grep -m1 -A6 "^rank 0 failed as expected\|^rank 1 failed as expected" "$out"
  fi
}

args=(--dir "$dir" --collective allreduce --counts 100000)

# 1. Rank 3 of 4 dies at its second send. With --enable-recovery mpirun lets
# the others run on; each times out (3 s) naming plan, peers and messages.
timeout 120 "$mpirun" --enable-recovery -np 4 "$runner" "${args[@]}" \
  --fault kill --timeout 3 >"$out" 2>&1
grep -q "rank 3: killing myself" "$out" || { echo "FAIL kill: rank 3 did not die"; cat "$out"; failures=$((failures + 1)); }
check "kill (mpirun --enable-recovery)" 3

# 2. The same under plain mpirun: it aborts the whole job at once (a
# bounded exit, nonzero), long before the 60 s timeout; nobody reports success.
start=$(date +%s)
timeout 120 "$mpirun" -np 4 "$runner" "${args[@]}" --fault kill --timeout 60 >"$out" 2>&1
rc=$? secs=$(( $(date +%s) - start ))
if [ $rc -eq 0 ] || [ $rc -eq 124 ] || [ $secs -ge 60 ] || grep -q "failed as expected\|wrong of" "$out"; then
  echo "FAIL kill (plain mpirun): exit $rc after $secs s:"
  cat "$out"
  failures=$((failures + 1))
else
  echo "ok   kill (plain mpirun): exit $rc after $secs s"
fi

# 3. Rank 3 of 4 cannot load its plan (half the file) and never calls
# Plan::run: rank 0 names it after 3 s and tells the others.
timeout 120 "$mpirun" -np 4 "$runner" "${args[@]}" --fault truncated --timeout 3 >"$out" 2>&1
grep -q "rank 3 (the faulty rank) cannot load its plan, as expected" "$out" || { echo "FAIL truncated: rank 3's load error:"; cat "$out"; failures=$((failures + 1)); }
check "truncated plan on rank 3" 3

# 4. The same on rank 0, the rank that collects the headers: the others
# give up after 2 x 3 + 1 s, naming rank 0.
timeout 120 "$mpirun" -np 4 "$runner" "${args[@]}" --fault truncated --fault-rank 0 --timeout 3 >"$out" 2>&1
check "truncated plan on rank 0" 3

exit $((failures > 0))
