#!/usr/bin/env bash
# tests/gpu/bench-nccl.sh: topocc-bench --baseline nccl end to end: ring
# plans (allreduce, allgather, reducescatter) compiled on the fly for one
# rank per GPU, run through NcclTransport on device buffers, every element
# of the plan's and of NCCL's own collective checked (#wrong 0 on both
# sides), fp32 and bf16.
#
#   bench-nccl.sh BENCH MPIRUN WORK_DIR
#
# Exit 77 (ctest: Skipped) with the reason when there is no CUDA device or
# only one (NCCL refuses two ranks on one GPU, and a ring needs 2 ranks).
set -uo pipefail
BENCH=$1 MPIRUN=$2 WORK=$3
mkdir -p "$WORK"
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
if [ "${ngpu:-0}" -lt 1 ]; then
  # No nvidia-smi or no GPU: let the bench say why (its no-device error).
  why=$("$MPIRUN" -np 2 "$BENCH" --topology /dev/null --baseline nccl 2>&1 | grep -m1 "error")
  echo "gpu-bench-nccl: SKIPPED: no CUDA device (${why:-nvidia-smi lists none})"
  exit 77
fi
if [ "$ngpu" -lt 2 ]; then
  echo "gpu-bench-nccl: SKIPPED: needs 2 GPUs (one NCCL rank per GPU, 2 ranks for a ring); found $ngpu"
  exit 77
fi
np=$(( ngpu > 8 ? 8 : ngpu ))
topo=$WORK/gpus$np.yaml
cat > "$topo" <<YAML
schema: topocc/v1
name: gpus$np
description: $np GPUs behind one PCIe switch (tests/gpu/bench-nccl.sh)
nodes:
  - name: a
    gpus: [ { name: "g{i:0-$((np - 1))}", model: a100-sxm4 } ]
    switches: [ { name: hub, kind: pcie-switch } ]
    links:
      - { from: "g{i:0-$((np - 1))}", to: hub, type: pcie, bandwidth: 16 GB/s, latency: 2 us }
YAML
fail=0
for coll in allreduce allgather reducescatter; do
  for dt in float bfloat16; do
    out=$("$MPIRUN" -np "$np" "$BENCH" --topology "$topo" --collective "$coll" \
            -b 64K -e 16M -f 16 -n 5 -w 2 -c 1 -d "$dt" --baseline nccl 2>&1)
    rc=$?
    rows=$(grep -E "^ +[0-9]+ +[0-9]+ +$dt +sum " <<<"$out")
    if [ "$rc" -ne 0 ] || ! grep -q "NCCL baseline" <<<"$out" || [ -z "$rows" ] ||
       grep -qvE ' 0 +[0-9.]+ +[0-9.]+ +[0-9.]+ +0$' <<<"$rows"; then
      echo "FAIL: $coll $dt on $np GPUs (exit $rc):"; echo "$out"; fail=1
    else
      echo "ok: $coll $dt on $np GPUs:"; echo "$rows"
    fi
  done
done
exit $fail
