#!/usr/bin/python3
"""Train with topocc plans in PyTorch DDP (docs/PyTorch.md): compile a plan
set (the fastest exact schedule per size window) and a CERAR plan for a
4-host cluster, then train a small model on 4 CPU processes over gloo, once
with DDP's own all-reduce and once with each plan as the communication hook.

    PYTHONPATH=build/release/python /usr/bin/python3 examples/ddp-train.py

Run as is, it launches its 4 ranks itself, with MASTER_ADDR, MASTER_PORT,
RANK and WORLD_SIZE set, as torchrun and other launchers do; each rank then
runs this file with the plans' paths in TOPOCC_PLANS.
"""
import os
import socket
import subprocess
import sys
import tempfile

try:
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP
    import topocc
    import topocc.torch as tt
except ImportError as e:
    print("skipped: needs torch and topocc.torch on PYTHONPATH (build/release/python): %s" % e)
    sys.exit(0)

RANKS = 4
HERE = os.path.dirname(os.path.abspath(__file__))
CLUSTER = """\
schema: topocc/v1
name: hosts4
description: 4 hosts x 1 GPU, one 10 Gb/s NIC each on a switch
nodes:
  - name: "h[0-3]"
    gpus: [ { name: g0, model: a100-pcie } ]
    nics: [ nic0 ]
    links:
      - { from: g0, to: nic0, type: pcie, bandwidth: 24 GB/s, latency: 1 us }
fabric:
  switches: [ { name: tor, kind: eth-switch } ]
  links:
    - { from: "h{n:0-3}/nic0", to: tor, type: roce, bandwidth: 10 Gb/s, latency: 5 us }
"""


def train(hook_plan):
    """20 SGD steps of a small MLP (272k parameters: DDP's first bucket of
    1 MiB and a smaller one) on this rank's shard; the final loss."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 512), nn.Tanh(), nn.Linear(512, 512), nn.Tanh(),
                          nn.Linear(512, 1))
    ddp = DDP(model, bucket_cap_mb=1)
    state = tt.register(ddp, hook_plan, record=True) if hook_plan else None
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(dist.get_rank())
    for _ in range(20):
        x = torch.randn(128, 16, generator=g)
        loss = nn.functional.mse_loss(ddp(x), torch.sin(x.sum(1, keepdim=True)))
        opt.zero_grad()
        loss.backward()
        opt.step()
    dist.all_reduce(loss.detach())
    used = sorted({c["variant"] for c in state.calls}) if state else ["torch.distributed"]
    del ddp, state
    return loss.item() / dist.get_world_size(), used


def rank_main():
    dist.init_process_group("gloo")
    plans = os.environ["TOPOCC_PLANS"].split(os.pathsep)
    for name, plan in [("DDP's all-reduce", None), ("plan set", tt.load(plans[0])),
                       ("CERAR", tt.load(plans[1]))]:
        loss, used = train(plan)
        if dist.get_rank() == 0:
            print("%-16s final loss %.6f (ran %s)" % (name, loss, ", ".join(used)))
    import gc
    gc.collect()  # the DDP models' cycles go before the group
    dist.destroy_process_group()


def launch():
    out = os.environ.get("OUT") or tempfile.mkdtemp()
    os.makedirs(out, exist_ok=True)
    topo_path = os.path.join(out, "hosts4.yaml")
    with open(topo_path, "w") as f:
        f.write(CLUSTER)
    t = topocc.load_topology(topo_path)
    # One exact plan per size window (auto's choice at each power of two),
    # and a CERAR code for 1 % relative error.
    windows = topocc.compile(t, "allreduce", sizes="1K:4M", target="plan")
    windows.write(os.path.join(out, "set.json"))
    cerar = topocc.compile(t, "allreduce", algorithm="cerar", tolerance=1e-2,
                           size="1M", target="plan")
    cerar.write(os.path.join(out, "cerar.json"), emit="plan")
    for w in windows.windows:
        print("window %d to %d B: %s %s" % (w["min_bytes"], w["max_bytes"], w["algorithm"],
                                           w["flags"]))
    print("cerar:", cerar.summary.splitlines()[0])
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
               WORLD_SIZE=str(RANKS), OMP_NUM_THREADS="1",
               TOPOCC_PLANS=os.pathsep.join(os.path.join(out, p)
                                            for p in ("set.json", "cerar.json")))
    procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__)],
                              env=dict(env, RANK=str(r))) for r in range(RANKS)]
    return max(p.wait(timeout=600) for p in procs)


if __name__ == "__main__":
    sys.exit(rank_main() if "RANK" in os.environ else launch())
