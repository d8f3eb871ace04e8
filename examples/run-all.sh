#!/usr/bin/env bash
# Runs every example (ctest `examples`); exit 1 when one fails.
#   TOPOCC=topocc [TOPOCC_BENCH=topocc-bench] [PYTHONPATH=BUILD/python]
#   [INSTALL_FROM=a fully built build folder] examples/run-all.sh
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${OUT:-$(mktemp -d)}
mkdir -p "$work"
failed=0
run() { # NAME COMMAND...
  local name=$1; shift
  local start=$(date +%s)
  rm -rf "${work:?}/$name" "$work/$name.log"
  if OUT="$work/$name" "$@" > "$work/$name.log" 2>&1; then
    echo "ok   $name ($(( $(date +%s) - start )) s): $(grep -m1 'skipped' "$work/$name.log" || tail -n1 "$work/$name.log")"
  else
    echo "FAIL $name:"; cat "$work/$name.log"; failed=1
  fi
}
run msccl-files bash "$here/msccl-files.sh"
run failed-nic bash "$here/failed-nic.sh"
run own-topology bash "$here/own-topology.sh"
run mpirun-plan bash "$here/mpirun-plan.sh"
run python-plan /usr/bin/python3 "$here/python-plan.py"
run ddp-train /usr/bin/python3 "$here/ddp-train.py"
if [ -n "${INSTALL_FROM:-}" ]; then
  cmake_project() {
    cmake --install "$INSTALL_FROM" --prefix "$OUT/prefix" > /dev/null &&
    cmake -S "$here/cmake-project" -B "$OUT/build" -G Ninja \
      -DCMAKE_PREFIX_PATH="$OUT/prefix" -DCMAKE_BUILD_TYPE=Release > /dev/null &&
    cmake --build "$OUT/build" > /dev/null &&
    "$OUT/build/rings" "$here/../topologies/dgx-a100x2.yaml"
  }
  export -f cmake_project; export here
  run cmake-project bash -c cmake_project
else
  echo "ok   cmake-project: skipped (INSTALL_FROM not set)"
fi
exit $failed
