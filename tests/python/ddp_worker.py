"""One rank of the DDP training runs of tests/python/test_torch.py and
scripts/bench-ddp: launched as a process per rank with MASTER_ADDR,
MASTER_PORT, RANK and WORLD_SIZE set (what torchrun and most launchers set),
gloo on CPUs.

    ddp_worker.py check OUT.json --plan NAME=PLAN.json ... [--steps N]
    ddp_worker.py bench OUT.json --plan NAME=PLAN.json ... [--steps N]

check: trains one small model per plan, plus DDP's own all-reduce ("ddp"),
from the same initial parameters on the same synthetic data (a fixed seed,
each rank its own shard). After every step it records, per plan, the largest
difference of any parameter from the "ddp" model's; for each bucket of a
plan's hook, the relative error max|got - exact| / max|exact| against
torch.distributed.all_reduce of the same bucket and the plan's bound for it;
and at the end the loss of each model on held-out data.
bench: the median step time (forward, backward with the hook, optimizer) of
each, every model trained on its own, and the hook's share of it.
Rank 0 writes OUT.json.
"""
import argparse
import copy
import gc
import json
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import topocc.torch as tt


def make_model(width):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(32, width), nn.Tanh(), nn.Linear(width, width),
                         nn.Tanh(), nn.Linear(width, 1))


def shard(rank, steps, batch):
    """This rank's batches of a fixed regression task, and held-out data."""
    g = torch.Generator().manual_seed(1234)
    w = torch.randn(32, 1, generator=g)
    g.manual_seed(100 + rank)
    xs = torch.randn(steps, batch, 32, generator=g)
    ys = torch.tanh(xs @ w) + 0.05 * torch.randn(steps, batch, 1, generator=g)
    g.manual_seed(999)
    xe = torch.randn(512, 32, generator=g)
    return xs, ys, xe, torch.tanh(xe @ w)


class MeasuredState:
    """A topocc hook that also reduces each bucket with torch.distributed
    and records the plan's error against it."""

    def __init__(self, plan):
        self.inner = tt.HookState(plan, record=True)
        self.errors = []

    @staticmethod
    def hook(state, bucket):
        buf = bucket.buffer()
        n = dist.get_world_size()
        exact = buf.div(n)
        dist.all_reduce(exact)
        fut = tt.comm_hook(state.inner, bucket)
        got = fut.value()
        # The contract of a coded plan (docs/Algorithms-cerar.md 8):
        # normwise, relative to the norm of all ranks' inputs (each rank's
        # bucket over n here, as DDP divides before it reduces).
        sq = buf.div(n).pow(2).sum().reshape(1)
        dist.all_reduce(sq)
        scale = sq.sqrt().item()
        err = (got - exact).norm().item() / scale if scale > 0 else 0.0
        state.errors.append({"bucket": bucket.index(), "elements": buf.numel(),
                             "error": err,
                             "bound": state.inner.plan.value_error_bound(buf),
                             "variant": state.inner.calls[-1]["variant"]})
        return fut


def eval_loss(model, xe, ye):
    with torch.no_grad():
        loss = nn.functional.mse_loss(model(xe), ye)
    dist.all_reduce(loss)
    return loss.item() / dist.get_world_size()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["check", "bench"])
    ap.add_argument("out")
    ap.add_argument("--plan", action="append", default=[], metavar="NAME=PATH")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--width", type=int, default=128)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--bucket-mb", type=float, default=0.02)
    args = ap.parse_args()

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    plans = [p.split("=", 1) for p in args.plan]
    xs, ys, xe, ye = shard(rank, args.steps, args.batch)
    base = make_model(args.width)

    # DDP caps its first bucket at 1 MiB whatever bucket_cap_mb says: small
    # buckets from the start, so that bucket sizes span the plan set's
    # windows.
    dist._DEFAULT_FIRST_BUCKET_BYTES = int(args.bucket_mb * 2**20)
    runs = {}
    for name, path in [("ddp", None)] + plans:
        model = DDP(copy.deepcopy(base), bucket_cap_mb=args.bucket_mb)
        state = None
        if path is not None:
            if args.mode == "check":
                state = MeasuredState(path)
                model.register_comm_hook(state, MeasuredState.hook)
            else:
                state = tt.register(model, path, record=True)
        runs[name] = {"model": model, "state": state,
                      "opt": torch.optim.SGD(model.parameters(), lr=0.1)}

    def step(run, i):
        run["opt"].zero_grad()
        loss = nn.functional.mse_loss(run["model"](xs[i]), ys[i])
        loss.backward()
        run["opt"].step()
        return loss.item()

    result = {"ranks": dist.get_world_size(), "steps": args.steps, "runs": {}}
    if args.mode == "check":
        diffs = {name: [] for name in runs if name != "ddp"}
        for i in range(args.steps):
            for run in runs.values():
                step(run, i)
            ref = list(runs["ddp"]["model"].parameters())
            for name in diffs:
                got = list(runs[name]["model"].parameters())
                diffs[name].append(max((a - b).abs().max().item() / max(b.abs().max().item(), 1e-30)
                                       for a, b in zip(got, ref)))
        for name, run in runs.items():
            r = {"loss": eval_loss(run["model"], xe, ye)}
            if run["state"] is not None:
                r["param_diff"] = diffs[name]
                r["buckets"] = run["state"].errors
            result["runs"][name] = r
    else:
        for name, run in runs.items():
            for i in range(3):  # warm-up: DDP rebuilds its buckets after step 1
                step(run, i % args.steps)
            times, hook = [], []
            for i in range(args.steps):
                if run["state"] is not None:
                    run["state"].calls.clear()
                dist.barrier()
                t0 = time.perf_counter()
                step(run, i)
                times.append(time.perf_counter() - t0)
                if run["state"] is not None:
                    hook.append(sum(c["seconds"] for c in run["state"].calls))
            t = torch.tensor([statistics.median(times),
                              statistics.median(hook) if hook else 0.0])
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            result["runs"][name] = {"step_seconds": t[0].item(),
                                    "hook_seconds": t[1].item(),
                                    "loss": eval_loss(run["model"], xe, ye)}
    params = sum(p.numel() for p in base.parameters())
    result["parameters"] = params
    if rank == 0:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    # The DDP models go before the group they use: their hooks make
    # reference cycles, which only the collector frees.
    runs.clear()
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
