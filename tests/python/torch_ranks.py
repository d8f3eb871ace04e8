"""Launches the ranks of a torch.distributed job as processes, as torchrun
and most launchers do (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE), for
tests/python/test_torch.py and scripts/bench-ddp."""
import os
import socket
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(ranks, argv, timeout=300):
    """Runs HERE/argv[0] with argv[1:] as `ranks` processes; raises with
    every rank's output when one fails or the job outlives `timeout`."""
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
               WORLD_SIZE=str(ranks), OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo")
    env["PYTHONPATH"] = os.pathsep.join(p for p in [HERE, env.get("PYTHONPATH")] if p)
    procs = []
    for r in range(ranks):
        procs.append(subprocess.Popen(
            [sys.executable, os.path.join(HERE, argv[0])] + argv[1:],
            env=dict(env, RANK=str(r)), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True))
    outs, failed = [], False
    for p in procs:
        try:
            out, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            out, _ = p.communicate()
            out += "\n(killed after %d s)" % timeout
            failed = True
        outs.append(out)
        failed = failed or p.returncode != 0
    if failed:
        raise AssertionError("\n".join("--- rank %d (exit %s):\n%s" % (r, p.returncode, o)
                                       for r, (p, o) in enumerate(zip(procs, outs))))
    return outs
