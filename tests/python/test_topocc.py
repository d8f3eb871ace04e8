"""The Python module (python/TopoccPython.cpp): run by the ctest `python`
with PYTHONPATH set to a build's python/ folder and TOPOCC_ROOT to the
repository; `/usr/bin/python3 -m pytest tests/python` by hand."""
import json
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
    # Written whole under a temporary name and renamed: nothing else stays.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ar.json", "ar.xml"]
    with pytest.raises(topocc.Error,
                       match="cannot write '.*missing/ar.xml': No such file"):
        c.write(str(tmp_path / "missing" / "ar.xml"))


def test_cerar_plan_stays_within_its_bound():
    t = topology("a100-pcie-8gpu")
    c = topocc.compile(t, "allreduce", algorithm="cerar", tolerance=2e-2, size="64M",
                       target="plan")
    assert c.coded and c.error_bound > 0
    with pytest.raises(topocc.Error, match="no MSCCL XML form"):
        c.text()
    plan = c.plan()
    rng = np.random.default_rng(1)
    inputs = [rng.standard_normal(4096).astype(np.float32) for _ in range(8)]
    exact = np.sum([x.astype(np.float64) for x in inputs], axis=0)
    norm = np.sqrt(sum(np.sum(x.astype(np.float64) ** 2) for x in inputs))
    for out in plan.run_local(inputs):
        # The error contract (docs/Algorithms-cerar.md 8, as the MPI tests
        # check it): normwise, relative to the norm of all inputs.
        rel = np.linalg.norm(out.astype(np.float64) - exact) / norm
        assert rel <= plan.value_error_bound("fp32")
    assert plan.value_error_bound("fp32") >= plan.error_bound
    assert plan.value_error_bound("fp32", True) >= plan.value_error_bound("fp32")
    assert plan.value_error_bound("fp32") <= 2e-2  # the tolerance
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


def cli():
    """The topocc binary of the same build (TOPOCC_CLI, as the ctest sets it)."""
    path = os.environ.get("TOPOCC_CLI")
    if not path:
        pytest.skip("TOPOCC_CLI (a topocc binary) is not set")
    return path


def run_cli(*args, check=True):
    import subprocess
    return subprocess.run([cli(), *args], check=check, capture_output=True, text=True)


def test_size_windows_are_the_clis_plan_set(tmp_path):
    """compile(sizes=...) gives the plan set `topocc compile --emit plan --sizes` writes."""
    path = os.path.join(TOPO, "ndv2.yaml")
    out = tmp_path / "set.json"
    run_cli("compile", path, "--collective", "allreduce", "--sizes", "1K:16M",
            "--emit", "plan", "-o", str(out))
    c = topocc.compile(topocc.load_topology(path), "allreduce", sizes="1K:16M")
    assert (c.min_bytes, c.max_bytes) == (1024, 16 << 20) and len(c) == len(c.windows) > 1
    # The same text but for the generator ("topocc VERSION" from the CLI).
    cli_text = out.read_text()
    generator = json.loads(cli_text)["generator"]
    assert c.text("plan").replace('"generator": "topocc python"',
                                  '"generator": "%s"' % generator) == cli_text
    windows = c.windows
    assert windows[0]["min_bytes"] == 1024 and windows[-1]["max_bytes"] == 16 << 20
    for a, b in zip(windows, windows[1:]):
        assert b["min_bytes"] == a["max_bytes"] + 1
    for w in windows:
        assert w["algorithm"] in ("ring", "hier-ring", "trees", "matching", "dbtree") and w["predicted_time"] > 0
        assert w["samples"][0] == w["min_bytes"] and w["samples"][-1] <= w["max_bytes"]
    cli_windows = [(v["minBytes"], v["maxBytes"], v["algorithm"])
                   for v in json.loads(cli_text)["variants"]]
    assert [(w["min_bytes"], w["max_bytes"], w["algorithm"]) for w in windows] == cli_windows
    written = tmp_path / "py.json"
    c.write(str(written))
    assert written.read_text() == c.text()
    # The set runs: each call its window's variant, loaded back the same.
    plan = c.plan()
    assert plan.hash == topocc.Plan.load(str(written)).hash
    for count in (256, 1 << 20):  # 1 KiB and 4 MiB of float32
        outs = plan.run_local([np.full(count, r, np.float32) for r in range(8)])
        assert all((o == 28).all() for o in outs)


def test_size_window_errors():
    t = topology("ndv2")
    with pytest.raises(topocc.Error, match="exclude each other"):
        topocc.compile(t, size="1M", sizes="1K:1M")
    with pytest.raises(topocc.Error, match="algorithm 'auto'"):
        topocc.compile(t, algorithm="ring", sizes="1K:1M")
    with pytest.raises(topocc.Error, match="target must be 'plan'"):
        topocc.compile(t, sizes="1K:1M", target="msccl-xml")
    with pytest.raises(topocc.Error, match=r"invalid --sizes '1K-1M' \(expected MIN:MAX"):
        topocc.compile(t, sizes="1K-1M")
    with pytest.raises(topocc.Error, match=r"MIN \(1 MiB\) is larger than MAX \(1 KiB\)"):
        topocc.compile(t, sizes=(1 << 20, "1K"))
    c = topocc.compile(t, sizes=(4096, 4096))
    assert len(c.windows) == 1 and c.windows[0]["samples"] == [4096]
    with pytest.raises(topocc.Error, match="emit must be 'plan'"):
        c.text("msccl-xml")


def cli_json(*args):
    return json.loads(run_cli(*args, "--format", "json").stdout)


def test_bound_is_the_clis():
    path = os.path.join(TOPO, "dgx-a100.yaml")
    t = topocc.load_topology(path)
    b = topocc.bound(t, size="64M", capacity="effective")
    assert b == cli_json("bound", path, "--size", "64M", "--capacity", "effective")
    ar = b["allreduce"]
    assert ar["time_s"] > 0 and ar["busbw"] > 0 and b["realizable"]["allreduce"]["time_s"] >= ar["time_s"]
    # A scenario of the file, applied first (an NVSwitch fewer: a lower bound).
    s = topocc.bound(t, size=1 << 30, scenario="nvswitch-fail")
    assert s == cli_json("bound", path, "--scenario", "nvswitch-fail")
    assert s["allreduce"]["time_s"] > topocc.bound(t)["allreduce"]["time_s"]
    with pytest.raises(topocc.Error, match="capacity"):
        topocc.bound(t, capacity="fast")
    with pytest.raises(topocc.Error, match="scenario"):
        topocc.bound(t, scenario="none-such")


def test_whatif_is_the_clis():
    path = os.path.join(TOPO, "dgx-a100.yaml")
    t = topocc.load_topology(path)
    w = topocc.whatif(t, sizes=["1M", 4 << 20], algorithms=["ring", "nccl-model", "bound", "trees"],
                      fail="*/gpu1", chunks=2)
    assert w == cli_json("whatif", path, "--sizes", "1M,4M", "--algorithms",
                         "ring,nccl-model,bound,trees", "--fail", "*/gpu1", "--chunks", "2")
    assert [s["scenario"] for s in w["scenarios"]] == ["base", "cli"]
    row = w["scenarios"][0]["rows"][1]
    assert row["bytes"] == 4 << 20 and row["winner"] in ("ring", "nccl-model", "trees")
    assert row["results"]["bound"]["time_s"] < row["results"][row["winner"]]["time_s"]
    # Defaults as the CLI's; a scenario of the file and a scaled link.
    d = topocc.whatif(t, sizes="64K", scenario=["nvlink-derate"], scale="*/gpu0--*=0.5x",
                      mode="cut-through")
    assert d == cli_json("whatif", path, "--sizes", "64K", "--scenario", "nvlink-derate",
                         "--scale", "*/gpu0--*=0.5x", "--mode", "cut-through")
    assert [a["name"] for a in d["algorithms"]] == ["ring", "rank-ring", "nccl-model", "bound"]


def test_whatif_errors_are_the_clis():
    t = topology("dgx-a100")
    with pytest.raises(topocc.Error, match=r"unknown algorithm 'bogus' \(known: ring, rank-ring"):
        topocc.whatif(t, sizes="1M", algorithms="bogus")
    with pytest.raises(topocc.Error, match="--chunks must be between 1 and 64, got 0"):
        topocc.whatif(t, sizes="1M", chunks=0)
    with pytest.raises(topocc.Error, match="collective must be"):
        topocc.whatif(t, "broadcast", sizes="1M")
    with pytest.raises(topocc.Error, match="invalid mode 'fluid'"):
        topocc.whatif(t, sizes="1M", mode="fluid")
    with pytest.raises(topocc.Error, match="--sizes"):
        topocc.whatif(t, sizes="lots")
    with pytest.raises(topocc.Error, match="matches nothing|no device|match"):
        topocc.whatif(t, sizes="1M", fail="nowhere/gpu9")


VERIFY_INPUTS = os.path.join(ROOT, "tests", "lit", "Inputs", "verify")


def test_verify_is_the_clis(tmp_path):
    path = os.path.join(TOPO, "ndv2.yaml")
    t = topocc.load_topology(path)
    xml = tmp_path / "ag.xml"
    topocc.compile(t, "allgather", algorithm="ring").write(str(xml))
    r = topocc.verify(str(xml), topology=t, size="64M")
    assert r.pop("ok") is True
    assert r == cli_json("verify", str(xml), "--topology", path, "--size", "64M")
    f = r["files"][0]
    assert f["verdict"] == "accept" and f["properties"]["deadlockFree"]
    assert f["algo"]["coll"] == "allgather" and f["algo"]["ngpus"] == 8
    sim = f["topology"]["simulation"]
    assert f["topology"]["sizeBytes"] == 64 << 20 and sim["time_s"] > 0
    # A topology path, the default size 1G, several files.
    two = topocc.verify([str(xml), str(xml)], topology=path)
    assert two["summary"] == {"files": 2, "accepted": 2, "rejected": 0}
    assert two["files"][0]["topology"]["file"] == path
    assert two["files"][0]["topology"]["sizeBytes"] == 1 << 30


def test_verify_reports_a_failing_file():
    path = os.path.join(VERIFY_INPUTS, "rule7_deadlock.xml")
    r = topocc.verify(path)
    assert r.pop("ok") is False
    cli_out = run_cli("verify", path, "--format", "json", check=False)
    assert cli_out.returncode == 1 and r == json.loads(cli_out.stdout)
    f = r["files"][0]
    assert f["verdict"] == "reject" and not f["properties"]["deadlockFree"]
    assert f["errors"][0]["rule"] == "rule 7" and f["errors"][0]["consequence"] == "hangs"
    # Accepted, but more threadblocks than SMs: the executor would hang.
    nop = topocc.verify(os.path.join(VERIFY_INPUTS, "valid_nop_chain.xml"), sm_count=2)
    assert nop["files"][0]["verdict"] == "accept" and nop["ok"] is False


def test_verify_errors(tmp_path):
    bad = os.path.join(VERIFY_INPUTS, "lex_tab.xml")
    with pytest.raises(topocc.Error) as e:
        topocc.verify(bad)
    assert str(e.value).startswith(bad + ":9:1: error: XML lexical rule")
    with pytest.raises(topocc.Error, match="missing.xml"):
        topocc.verify(str(tmp_path / "missing.xml"))
    ok = os.path.join(VERIFY_INPUTS, "valid_allreduce_inplace.xml")
    with pytest.raises(topocc.Error, match="size needs topology"):
        topocc.verify(ok, size="1G")
    with pytest.raises(topocc.Error, match="--max-steps must be at least 1"):
        topocc.verify(ok, max_steps=0)
    with pytest.raises(topocc.Error, match="fluid"):
        topocc.verify(ok, mode="fluid")
