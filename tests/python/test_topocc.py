"""The Python module (python/TopoccPython.cpp): run by the ctest `python`
with PYTHONPATH set to a build's python/ folder and TOPOCC_ROOT to the
repository; `/usr/bin/python3 -m pytest tests/python` by hand."""
import os

import numpy as np
import pytest

import topocc

ROOT = os.environ.get("TOPOCC_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
TOPO = os.path.join(ROOT, "topologies")


def topology(name):
    return topocc.load_topology(os.path.join(TOPO, name + ".yaml"))


def test_topology_describes_the_file():
    t = topology("dgx-a100")
    assert t.name == "dgx-a100"
    assert t.num_ranks == 8
    assert t.ranks[0] == "dgx00/gpu0"
    gpus = [d for d in t.devices if d["kind"] == "gpu"]
    assert len(gpus) == 8 and sorted(d["rank"] for d in gpus) == list(range(8))
    assert t.num_links > 0
    assert "8 ranks" in repr(t)


def test_bad_topology_raises_with_the_location(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("schema: topocc/v1\nname: t\nnodes:\n\t- name: a\n")
    with pytest.raises(topocc.Error) as e:
        topocc.load_topology(str(bad))
    assert str(e.value).startswith(str(bad) + ":4:1: error: YAML forbids tabs")
    with pytest.raises(topocc.Error):
        topocc.load_topology(str(tmp_path / "missing.yaml"))


@pytest.mark.parametrize("collective", ["allreduce", "allgather", "reducescatter"])
@pytest.mark.parametrize("algorithm", ["ring", "trees"])
def test_compiled_plans_compute_the_collective(collective, algorithm):
    t = topology("dgx-a100")
    c = topocc.compile(t, collective, algorithm=algorithm, size="1M")
    assert c.algorithm == algorithm and c.num_ranks == 8 and c.summary
    n, count = 8, 1001
    plan = c.plan()
    assert plan.collective == collective and plan.num_ranks == n
    blocks = n if collective == "reducescatter" else 1
    rng = np.random.default_rng(7)
    inputs = [rng.integers(-5, 6, blocks * count).astype(np.float32) for _ in range(n)]
    outs = plan.run_local(inputs)
    total = np.sum(inputs, axis=0)
    for r, out in enumerate(outs):
        if collective == "allreduce":
            want = total
        elif collective == "allgather":
            want = np.concatenate(inputs)
        else:
            want = total[r * count:(r + 1) * count]
        np.testing.assert_array_equal(out, want)


def test_written_files_load_back(tmp_path):
    t = topology("ndv2")
    c = topocc.compile(t, "allreduce", channels=2, chunks=2)
    xml = tmp_path / "ar.xml"
    c.write(str(xml))
    text = xml.read_text()
    assert text.startswith("<algo") and 'ngpus="8"' in text
    assert c.text("msccl-xml") == text
    plan_file = tmp_path / "ar.json"
    c.write(str(plan_file), emit="plan")
    plan = topocc.Plan.load(str(plan_file))
    assert plan.hash == c.plan().hash
    outs = plan.run_local([np.full(64, r, np.float16) for r in range(8)])
    assert all((o == 28).all() and o.dtype == np.float16 for o in outs)
    with pytest.raises(topocc.Error, match="emit must be"):
        c.text("svg")


def test_cerar_plan_stays_within_its_bound():
    t = topology("a100-pcie-8gpu")
    c = topocc.compile(t, "allreduce", algorithm="cerar", tolerance=1e-2, size="64M",
                       target="plan")
    assert c.coded and c.error_bound > 0
    with pytest.raises(topocc.Error, match="no MSCCL XML form"):
        c.text()
    plan = c.plan()
    rng = np.random.default_rng(1)
    inputs = [rng.standard_normal(4096).astype(np.float32) for _ in range(8)]
    exact = np.sum(inputs, axis=0)
    for out in plan.run_local(inputs):
        rel = np.max(np.abs(out - exact)) / np.max(np.abs(exact))
        # The runtime's promise (as the MPI tests check it): the code's
        # bound plus fp32 rounding amplified by the code.
        assert rel <= plan.value_error_bound("fp32")
    assert plan.value_error_bound("fp32") >= plan.error_bound
    assert topocc.compile(t, "allreduce", algorithm="ring").plan().value_error_bound() == 0


def test_errors_name_what_was_expected(tmp_path):
    t = topology("dgx-a100")
    with pytest.raises(topocc.Error, match="collective must be"):
        topocc.compile(t, "broadcast")
    with pytest.raises(topocc.Error, match="collective must be"):
        topocc.compile(t, "sum")
    with pytest.raises(topocc.Error, match="invalid size 'lots'"):
        topocc.compile(t, size="lots")
    with pytest.raises(topocc.Error, match="tolerance"):
        topocc.compile(t, tolerance=-1)
    with pytest.raises(topocc.Error, match="target must be"):
        topocc.compile(t, target="ir")
    plan = topocc.compile(t).plan()
    with pytest.raises(topocc.Error, match="one input array per rank, got 2"):
        plan.run_local([np.zeros(4, np.float32)] * 2)
    with pytest.raises(topocc.Error, match="float32 or float16"):
        plan.run_local([np.zeros(4, np.float64)] * 8)
    cut = tmp_path / "cut.json"
    full = topocc.compile(t).text("plan")
    cut.write_text(full[: len(full) // 2])
    with pytest.raises(topocc.Error) as e:
        topocc.Plan.load(str(cut))
    assert str(e.value).startswith(str(cut) + ":")


def test_default_file_is_the_clis(tmp_path):
    """compile() with its defaults writes what `topocc compile` writes."""
    import subprocess
    cli = os.environ.get("TOPOCC_CLI")
    if not cli:
        pytest.skip("TOPOCC_CLI (a topocc binary) is not set")
    path = os.path.join(TOPO, "ndv2.yaml")
    out = tmp_path / "cli.xml"
    subprocess.run([cli, "compile", path, "--collective", "allgather", "-o", str(out)],
                   check=True, stdout=subprocess.DEVNULL)
    c = topocc.compile(topocc.load_topology(path), "allgather")
    assert c.algorithm in ("ring", "hier-ring", "trees")
    assert c.predicted_time > 0
    assert c.text() == out.read_text()
