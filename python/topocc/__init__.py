"""topocc from Python: topologies, compile(), bound(), whatif(), verify(),
and plans run on numpy arrays.

    import numpy as np, topocc
    t = topocc.load_topology("topologies/dgx-a100.yaml")
    c = topocc.compile(t, "allreduce", algorithm="trees", size="1G")
    c.write("ar.xml")                      # MSCCL XML, as `topocc compile` writes it
    plan = c.plan()                        # or topocc.Plan.load("ar.json")
    outs = plan.run_local([np.full(1000, r, np.float32) for r in range(t.num_ranks)])
    s = topocc.compile(t, "allreduce", sizes="1K:64M")  # a plan set, one window each
    topocc.bound(t, size="1G"); topocc.whatif(t, sizes="1M:1G"); topocc.verify("ar.xml")

Errors raise topocc.Error with the library's message (file:line:col where
there is one). See docs/Python.md.
"""
from ._topocc import (Compiled, CompiledSizes, Error, Plan, Topology, bound,
                      compile, load_topology, verify, whatif)

__all__ = ["Compiled", "CompiledSizes", "Error", "Plan", "Topology", "bound",
           "compile", "load_topology", "verify", "whatif"]
