#!/usr/bin/python3
"""The Python module (docs/Python.md): compile an all-gather for a DGX-A100
as `topocc compile` would, write the MSCCL XML file, and run the schedule
as a plan on numpy arrays, one thread per rank.

    PYTHONPATH=build/release/python /usr/bin/python3 examples/python-plan.py
"""
import os
import sys
import tempfile

import numpy as np

try:
    import topocc
except ImportError:
    print("skipped: no topocc module on PYTHONPATH (build/release/python)")
    sys.exit(0)

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
out = os.environ.get("OUT") or tempfile.mkdtemp()
os.makedirs(out, exist_ok=True)
t = topocc.load_topology(os.path.join(root, "topologies", "dgx-a100.yaml"))
c = topocc.compile(t, "allgather", size="256M")
print(t, "->", c.algorithm, c.chosen_flags or "(defaults)",
      "predicted %.3f ms at 256 MiB" % (c.predicted_time * 1e3))
path = os.path.join(out, "allgather.xml")
c.write(path)
print("wrote", path)
inputs = [np.full(1000, r, np.float32) for r in range(t.num_ranks)]
outs = c.plan().run_local(inputs)
assert all((o == np.repeat(np.arange(t.num_ranks, dtype=np.float32), 1000)).all() for o in outs)
print("ran on %d threads: every rank holds every rank's 1000 elements" % t.num_ranks)
