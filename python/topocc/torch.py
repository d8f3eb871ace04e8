"""topocc plans inside PyTorch (docs/PyTorch.md).

    import torch.distributed as dist, topocc.torch as tt
    dist.init_process_group("gloo")              # MASTER_ADDR, RANK, WORLD_SIZE
    plan = tt.load("ar.json")                    # `topocc compile ... --emit plan`
    tt.all_reduce(x, plan)                       # in-place sum of a CPU tensor
    state = tt.register(ddp_model, plan)         # DDP communication hook

A plan set (`topocc compile --emit plan --sizes MIN:MAX`) serves each call
with the variant of the size window that holds it (the nearest window
outside them all); a coded CERAR plan reduces within its error bound. The
messages are torch.distributed point-to-point sends and receives on the
process group (runtime/c10d/C10dTransport.h), so the plan runs wherever the
group runs: gloo or mpi on CPU tensors. Errors raise topocc.Error.
"""
import os
import time

import torch
import torch.distributed as dist

from ._topocc import Error

try:
    from . import _torch
except ImportError as e:  # built only where libtorch was found
    raise ImportError(
        "topocc.torch needs the module topocc._torch, which CMake builds with "
        "the Python module when libtorch and torch's Python bindings are found "
        "(Debian: libtorch-dev, python3-torch; scripts/install-deps installs "
        "them): " + str(e)) from e

TorchPlan = _torch.TorchPlan

__all__ = ["Error", "HookState", "TorchPlan", "all_reduce", "comm_hook", "load",
           "register"]


def load(plan, name=None):
    """A TorchPlan from a plan file or plan set (path), plan JSON text, or an
    object with a `text(emit)` method (topocc.compile's results). Loading
    parses and re-verifies the plan: load once, then call all_reduce or the
    hook many times."""
    if isinstance(plan, TorchPlan):
        return plan
    if hasattr(plan, "text"):
        return TorchPlan(plan.text("plan"), name or "<compiled plan>")
    if isinstance(plan, os.PathLike) or (isinstance(plan, str)
                                         and not plan.lstrip().startswith("{")):
        path = os.fspath(plan)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise Error("cannot read plan '%s': %s" % (path, e.strerror)) from None
        return TorchPlan(text, name or path)
    if isinstance(plan, str):
        return TorchPlan(plan, name or "<plan text>")
    raise TypeError("a plan is a path, plan JSON text, a TorchPlan or a compiled "
                    "schedule, got %s" % type(plan).__name__)


def _group(group):
    if group is None:
        if not dist.is_initialized():
            raise Error("torch.distributed is not initialised: call "
                        "torch.distributed.init_process_group first")
        return dist.distributed_c10d._get_default_group()
    return group


def all_reduce(tensor, plan, group=None, timeout=600.0, check_peers=True):
    """Sums `tensor` (CPU, contiguous, float32/float16/bfloat16) over the
    group in place with `plan` (a TorchPlan, or anything load() takes) and
    returns it. Every rank of the group calls it with the same plan and a
    tensor of the same size; `check_peers` verifies that first (one small
    all-gather). `timeout` seconds without progress fail the call."""
    p = load(plan)
    p.all_reduce(tensor, _group(group), float(timeout), bool(check_peers))
    return tensor


class HookState:
    """The state of the DDP communication hook: the plan, the group, and
    per-call records (`calls`: dicts with 'bucket', 'elements', 'variant',
    'seconds') when `record` is set. `average` divides each bucket by the
    group's size before the sum, as DDP's own all-reduce does."""

    def __init__(self, plan, group=None, average=True, timeout=600.0,
                 check_peers=True, record=False):
        self.plan = load(plan)
        self.group = group
        self.average = average
        self.timeout = float(timeout)
        self.check_peers = bool(check_peers)
        self.record = record
        self.calls = []


def comm_hook(state, bucket):
    """A DDP communication hook (DistributedDataParallel.register_comm_hook)
    that all-reduces each gradient bucket with state.plan."""
    buf = bucket.buffer()
    group = _group(state.group)
    if state.average:
        buf.div_(group.size())
    start = time.perf_counter()
    variant = state.plan.all_reduce(buf, group, state.timeout, state.check_peers)
    if state.record:
        state.calls.append({"bucket": bucket.index(), "elements": buf.numel(),
                            "variant": variant,
                            "seconds": time.perf_counter() - start})
    fut = torch.futures.Future()
    fut.set_result(buf)
    return fut


def register(model, plan, group=None, **kwargs):
    """Registers comm_hook on a DistributedDataParallel `model` with a new
    HookState(plan, group, **kwargs), which it returns."""
    state = HookState(plan, group, **kwargs)
    model.register_comm_hook(state, comm_hook)
    return state
