"""Checks `topocc verify --format json` on the MSCCL corpus in
../shared/data/msccl against its documented verdicts: every real and
generated file is accepted except the semantic negative test, which is
valid, deadlock- and race-free but computes a wrong result; every file of
msccl_invalid/ gets the verdict of EXPECTED.tsv, with the consequence class
its reason tag names. Prints one line per file; exits 1 on a mismatch."""
import json
import os
import subprocess
import sys

topocc, corpus = sys.argv[1], sys.argv[2]
WRONG_RESULT = {"pipeline_a100_ring_args4-1-1_8ranks.xml"}
# Reason tag of EXPECTED.tsv -> consequences a finding must have.
TAGS = {"parser/scan": {"rejected-scan"}, "parser/load": {"rejected-load"},
        "not-enforced": {"hangs", "runs-wrongly", "non-conforming"}}


def verify(paths):
    out = subprocess.run([topocc, "verify", "--format", "json"] + paths,
                         capture_output=True, text=True)
    if out.returncode not in (0, 1):
        sys.exit("topocc verify exited %d: %s" % (out.returncode, out.stderr))
    return {os.path.basename(f["file"]): f for f in json.loads(out.stdout)["files"]}


failures = 0
def report(ok, name, what):
    global failures
    failures += not ok
    print("%s %s: %s" % ("ok  " if ok else "FAIL", name, what))

for sub in ("msccl_real_algorithms", "msccl_generated"):
    d = os.path.join(corpus, sub)
    files = sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".xml"))
    for name, f in sorted(verify(files).items()):
        p = f["properties"]
        if name in WRONG_RESULT:
            ok = (f["verdict"] == "reject" and p["formatOk"] and p["deadlockFree"]
                  and p["raceFree"] and not p["computesCollective"]
                  and all(e["rule"] == "postcondition" for e in f["errors"]))
            report(ok, name, "valid, deadlock-free, race-free, wrong result")
        else:
            report(f["verdict"] == "accept" and not f["errors"], name,
                   "accept (%s)" % f["algo"]["coll"])

d = os.path.join(corpus, "msccl_invalid")
rows = [l.rstrip("\n").split("\t") for l in open(os.path.join(d, "EXPECTED.tsv"))][1:]
got = verify([os.path.join(d, r[0]) for r in rows])
for name, verdict, reason in rows:
    f = got[name]
    ok = f["verdict"] == verdict
    tag = reason.split(":")[0].split(" ")[0]
    if ok and tag in TAGS:
        ok = any(e["consequence"] in TAGS[tag] for e in f["errors"])
    report(ok, name, "%s (%s)" % (verdict, tag))
print("%d mismatch(es)" % failures)
sys.exit(1 if failures else 0)
