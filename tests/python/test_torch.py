"""topocc.torch (python/topocc/torch.py, runtime/c10d): plans run over
torch.distributed's gloo on CPU processes, as a DDP communication hook and
as all_reduce calls. Each test launches its ranks as processes with
MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE set (tests/python/torch_ranks.py).
Skipped when torch or topocc._torch is missing (docs/PyTorch.md)."""
import json
import os
import subprocess

import pytest

torch = pytest.importorskip("torch")
try:
    import topocc.torch as tt
except ImportError as e:
    pytest.skip("topocc.torch is not built: %s" % e, allow_module_level=True)

from torch_ranks import HERE, launch

TOPO = os.path.join(HERE, "Inputs", "hosts4-10g.yaml")


def compile_plan(tmp_path, name, *flags):
    cli = os.environ.get("TOPOCC_CLI")
    if not cli:
        pytest.skip("TOPOCC_CLI (a topocc binary) is not set")
    out = tmp_path / (name + ".json")
    subprocess.run([cli, "compile", TOPO, "--collective", "allreduce", "--emit", "plan",
                    "-o", str(out)] + list(flags), check=True, stdout=subprocess.DEVNULL)
    return str(out)


@pytest.fixture(scope="module")
def plans(tmp_path_factory):
    d = tmp_path_factory.mktemp("plans")
    return {
        "ring": compile_plan(d, "ring", "--algorithm", "ring"),
        # auto per size window: trees for small buckets, rings above.
        "set": compile_plan(d, "set", "--sizes", "1K:1M"),
        # More components than ranks: a real code (c = 8 > N = 4).
        "cerar": compile_plan(d, "cerar", "--algorithm", "cerar", "--tolerance", "1e-2",
                              "--components", "8"),
        "ring_inplace": compile_plan(d, "ring_inplace", "--algorithm", "ring", "--inplace"),
    }


def test_ddp_training_with_exact_and_coded_plans(plans, tmp_path):
    out = tmp_path / "check.json"
    launch(4, ["ddp_worker.py", "check", str(out), "--plan", "ring=" + plans["ring"],
               "--plan", "set=" + plans["set"], "--plan", "cerar=" + plans["cerar"],
               "--steps", "30"])
    r = json.loads(out.read_text())
    runs = r["runs"]
    # (a) exact plans: every bucket equals torch.distributed's sum up to
    # fp32 summation order, and the parameters equal DDP's own after every
    # step: within fp32 roundoff after the first, and the difference that
    # roundoff grows to over 30 steps of training after the last (measured:
    # 8e-8 after step 1, 2e-5 after step 30).
    for name in ("ring", "set"):
        diff = runs[name]["param_diff"]
        assert len(diff) == 30
        assert diff[0] < 1e-6 and max(diff) < 2e-4, (name, diff)
        assert all(b["error"] < 1e-6 for b in runs[name]["buckets"]), name
    # The plan set chose by bucket size: small buckets and large ones ran
    # different variants.
    variants = {b["variant"] for b in runs["set"]["buckets"]}
    assert len(variants) >= 2, variants
    sizes = {b["elements"] for b in runs["set"]["buckets"]}
    assert len(sizes) >= 3, sizes
    # (b) CERAR: every bucket within the plan's bound, and a coded code
    # really ran (a nonzero error).
    buckets = runs["cerar"]["buckets"]
    assert len(buckets) >= 30
    assert all(b["bound"] > 0 and b["error"] <= b["bound"] for b in buckets), buckets
    assert max(b["error"] for b in buckets) > 0
    # ... and the final loss within 1% of the exact run's.
    exact = runs["ddp"]["loss"]
    assert abs(runs["cerar"]["loss"] - exact) <= 0.01 * exact, (runs["cerar"]["loss"], exact)
    assert abs(runs["ring"]["loss"] - exact) <= 1e-4 * exact


def test_all_reduce_calls(plans, tmp_path):
    out = tmp_path / "calls.json"
    launch(4, ["torch_calls.py", str(out), plans["ring"], plans["ring_inplace"],
               plans["cerar"], plans["set"]])
    r = json.loads(out.read_text())
    assert r["errors"] == [], r["errors"]
    assert r["checked"] >= 20


def test_runs_under_torchrun(plans, tmp_path):
    """torchrun's agent starts the ranks (its environment, its rendezvous)."""
    import sys
    from torch_ranks import HERE, free_port
    out = tmp_path / "torchrun.json"
    r = subprocess.run([sys.executable, os.path.join(HERE, "torchrun_mended.py"),
                        "--nproc_per_node", "4", "--master_port", str(free_port()),
                        os.path.join(HERE, "torch_calls.py"), str(out), plans["ring"]],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=300, env=dict(os.environ, OMP_NUM_THREADS="1",
                                             GLOO_SOCKET_IFNAME="lo"))
    assert r.returncode == 0, r.stdout
    result = json.loads(out.read_text())
    assert result["errors"] == [] and result["checked"] >= 10, result


def test_bad_plans_and_tensors_raise():
    with pytest.raises(tt.Error) as e:
        tt.load('{"schema": ')
    assert e.value.args[0].startswith("<plan text>:1:")
    with pytest.raises(tt.Error) as e:
        tt.load("/nonexistent/plan.json")
    assert "cannot read plan '/nonexistent/plan.json'" in str(e.value)
    with pytest.raises(TypeError):
        tt.load(42)
    with pytest.raises(tt.Error) as e:
        tt.all_reduce(torch.zeros(4), '{"schema": "topocc-plan/v1"}')
    assert "<plan text>" in str(e.value)
