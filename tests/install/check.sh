#!/bin/bash
# ctest install-consumer: installs this build into a fresh prefix with
# `cmake --install`, builds tests/install (a project of its own) against
# it with find_package(topocc) and again with pkg-config, and runs what it
# built: a trees all-reduce on threads, the C API from a C program on a
# plan file written by the installed `topocc`, and, with MPI, that file run
# by the installed `topocc-mpirun`.
#   check.sh BUILD_DIR SOURCE_DIR WORK_DIR CXX
set -euo pipefail
build=$1 src=$2 work=$3 cxx=$4
rm -rf "$work" && mkdir -p "$work"
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" > "$work/install.log"
for f in bin/topocc include/topocc/runtime/Interpreter.h \
         lib/cmake/topocc/topoccConfig.cmake lib/pkgconfig/topocc.pc \
         share/topocc/topologies/dgx-a100.yaml; do
  [ -e "$prefix/$f" ] || { echo "not installed: $f"; exit 1; }
done
echo "installed $(grep -c '^-- Installing' "$work/install.log") files into the prefix"
"$prefix/bin/topocc" --version

cmake -S "$src" -B "$work/build" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release > "$work/configure.log"
cmake --build "$work/build" > "$work/build.log" || { cat "$work/build.log"; exit 1; }
topo=$prefix/share/topocc/topologies/dgx-a100.yaml
"$work/build/consumer" "$topo"
"$prefix/bin/topocc" compile "$topo" --collective allreduce --emit plan -o "$work/ring.json" > /dev/null
"$work/build/consumer-c" "$work/ring.json"

if [ -x "$work/build/consumer-mpi" ]; then
  "$prefix/bin/topocc-mpirun" -np 8 "$work/build/consumer-mpi" "$work/ring.json"
fi

# pkg-config, no CMake.
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
"$cxx" -o "$work/consumer-pc" "$src/consumer.cpp" $(pkg-config --cflags --libs topocc)
"$work/consumer-pc" "$topo" | sed 's/^consumer:/consumer (pkg-config):/'

# The Python module, when this build has one (not in sanitized builds).
pydir=$prefix/lib/python3/dist-packages
if [ -f "$pydir/topocc/__init__.py" ]; then
  PYTHONPATH=$pydir /usr/bin/python3 -c '
import sys, numpy as np, topocc
t = topocc.load_topology(sys.argv[1])
outs = topocc.Plan.load(sys.argv[2]).run_local([np.ones(100, np.float32)] * t.num_ranks)
assert all((o == t.num_ranks).all() for o in outs)
print("python: installed module ran", t.name, "on", t.num_ranks, "threads")' "$topo" "$work/ring.json"
fi
