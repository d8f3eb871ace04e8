#!/usr/bin/env bash
# tests/mpi/bench-options.sh: topocc-bench's --baseline / --transport
# options under mpirun, the parts a machine without a GPU can check.
#
#   bench-options.sh BENCH MPIRUN TOPOLOGY HAVE_NCCL
#
# TOPOLOGY has 4 ranks; HAVE_NCCL is CMake's TOPOCC_HAVE_NCCL (ON/OFF).
# Each bad option combination must exit 1 with its exact message printed
# once (by rank 0); --baseline nccl and --transport nccl with no visible
# GPU (CUDA_VISIBLE_DEVICES empty, so also on a GPU machine) must say that
# no rank has a GPU and why, or in a build without NCCL that it was not
# built with NCCL; and a small --baseline mpi run must print the table
# with 0 wrong elements for the plan and for MPI. Exit 1 otherwise.
set -uo pipefail
BENCH=$1 MPIRUN=$2 TOPO=$3 HAVE_NCCL=$4
fail=0
run() { # NP ARGS... -> $out, $rc
  local np=$1; shift
  out=$("$MPIRUN" -np "$np" "$BENCH" --topology "$TOPO" \
          -b 1K -e 4K -n 1 -w 1 "$@" 2>&1)
  rc=$?
}
expect_error() { # TEXT ARGS...  (exact line, exit 1, printed once)
  local text=$1; shift
  run 4 "$@"
  local n
  n=$(grep -cxF -- "$text" <<<"$out")
  if [ "$rc" -ne 1 ] || [ "$n" -ne 1 ]; then
    echo "FAIL: topocc-bench $*: exit $rc, expected 1 and once: $text"
    echo "$out" | head -20
    fail=1
  else
    echo "ok: topocc-bench $*: $text"
  fi
}
expect_error "topocc-bench: error: unknown --baseline 'foo'; expected mpi or nccl" --baseline foo
expect_error "topocc-bench: error: unknown --transport 'gloo'; expected mpi or nccl" --transport gloo
expect_error "topocc-bench: error: --baseline nccl times NCCL on device buffers; it needs --transport nccl (the default with --baseline nccl)" \
  --baseline nccl --transport mpi
expect_error "topocc-bench: error: --baseline mpi times MPI on host buffers; it cannot run with --transport nccl (use --baseline nccl)" \
  --baseline mpi --transport nccl
export CUDA_VISIBLE_DEVICES=
if [ "$HAVE_NCCL" = ON ]; then
  # The CUDA error name depends on the machine: cudaErrorNoDevice with a
  # driver, cudaErrorInsufficientDriver without one.
  for opt in "--baseline nccl" "--transport nccl"; do
    run 4 $opt
    re="^topocc-bench: error: ${opt} needs a GPU on every rank; rank 0 has none: no CUDA device \(cudaGetDeviceCount: 0, cudaError[A-Za-z]+\)$"
    if [ "$rc" -ne 1 ] || [ "$(grep -cE -- "$re" <<<"$out")" -ne 1 ]; then
      echo "FAIL: topocc-bench $opt without a GPU: exit $rc"; echo "$out" | head -20; fail=1
    else
      echo "ok: topocc-bench $opt without a GPU: $(grep -E -- "$re" <<<"$out")"
    fi
  done
else
  expect_error "topocc-bench: error: this topocc-bench was built without NCCL (CMake did not find the CUDA toolkit and NCCL), so --transport nccl and --baseline nccl are not available" \
    --baseline nccl
fi
unset CUDA_VISIBLE_DEVICES
# The help names both baselines.
help=$("$BENCH" --help 2>&1)
if ! grep -q -- "--baseline" <<<"$help" || ! grep -q "ncclAllReduce" <<<"$help"; then
  echo "FAIL: topocc-bench --help does not describe --baseline nccl"; fail=1
fi
# A real run with the MPI baseline: the table, 0 wrong on both sides.
run 4 --baseline mpi
rows=$(grep -E '^ +[0-9]+ +[0-9]+ +float +sum ' <<<"$out")
if [ "$rc" -ne 0 ] || ! grep -q "MPI baseline" <<<"$out" || [ "$(wc -l <<<"$rows")" -ne 3 ] ||
   grep -qvE ' 0 +[0-9.]+ +[0-9.]+ +[0-9.]+ +0$' <<<"$rows"; then
  echo "FAIL: topocc-bench --baseline mpi: exit $rc"; echo "$out"; fail=1
else
  echo "ok: topocc-bench --baseline mpi: 3 sizes, 0 wrong"
fi
exit $fail
