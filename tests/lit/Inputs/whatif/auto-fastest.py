#!/usr/bin/env python3
"""auto is the fastest of its candidates (tests/lit/whatif/auto-fastest-library.test).

For each library topology, collective and size, runs
`topocc whatif TOPO --collective C --sizes S --algorithms ring,trees,hier-ring,auto`
(one size per run: auto compiles for the sweep's largest size) and checks
that auto's time is at most every applicable candidate's, with 1% slack
(auto keeps a variant only when it is more than 0.1% faster, and its ring
and trees variants include the columns' settings). Prints one line per case
and exits 1 on any violation.
Usage: auto-fastest.py TOPOCC TOPOLOGY_DIR TOPO[,TOPO...] COLL[,COLL...] SIZE[,SIZE...]
"""
import os
import subprocess
import sys


def main():
    topocc, tdir, topos, colls, sizes = sys.argv[1:6]
    bad = 0
    cases = 0
    for topo in topos.split(","):
        for coll in colls.split(","):
            for size in sizes.split(","):
                cmd = [topocc, "whatif", os.path.join(tdir, topo + ".yaml"),
                       "--collective", coll, "--sizes", size,
                       "--algorithms", "ring,trees,hier-ring,auto"]
                p = subprocess.run(cmd, capture_output=True, text=True)
                if p.returncode != 0:
                    print(f"FAIL {topo} {coll} {size}: exit {p.returncode}: {p.stderr.strip()}")
                    bad += 1
                    continue
                rows = [l.split() for l in p.stdout.splitlines()
                        if l.strip() and not l.startswith("#")]
                if len(rows) != 1:
                    print(f"FAIL {topo} {coll} {size}: expected one row, got {len(rows)}")
                    bad += 1
                    continue
                cells = rows[0][2:-1]  # time, algbw, busbw per column
                times = [cells[3 * i] for i in range(4)]
                names = ["ring", "trees", "hier-ring", "auto"]
                if times[3] == "n/a":
                    print(f"FAIL {topo} {coll} {size}: auto is n/a")
                    bad += 1
                    continue
                auto = float(times[3])
                best = min((float(t), n) for t, n in zip(times[:3], names)
                           if t != "n/a")
                ok = auto <= best[0] * 1.01
                cases += 1
                print(f"{'ok' if ok else 'FAIL'} {topo} {coll} {size}: auto "
                      f"{auto:.2f} us, best candidate {best[1]} {best[0]:.2f} us")
                bad += not ok
    print(f"{cases} cases, {bad} failures")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
