# Checks the flow events of a `topocc whatif --trace` file: each id has one
# start ("s") and one finish ("f", binding point "e"), each lies inside a
# complete slice ("X") of its track, and the start's slice starts no later
# than the finish's slice (in the runtime and cut-through models a hop or a
# relay starts on the head or first slice of what released it, before that
# transfer ends). Prints the counts per category.
import collections
import json
import sys

events = json.load(open(sys.argv[1]))["traceEvents"]
slices = collections.defaultdict(list)
for e in events:
    if e["ph"] == "X":
        slices[e["tid"]].append((e["ts"], e["ts"] + e["dur"]))


def enclosing(e):
    hits = [s for s in slices[e["tid"]] if s[0] <= e["ts"] <= s[1]]
    assert len(hits) == 1, "flow %s binds to %d slices" % (e["id"], len(hits))
    return hits[0]


starts, finishes = {}, {}
for e in events:
    if e["ph"] in "sf":
        table = starts if e["ph"] == "s" else finishes
        assert e["id"] not in table, "id %s repeated" % e["id"]
        table[e["id"]] = e
        if e["ph"] == "f":
            assert e.get("bp") == "e", "finish without bp=e"
assert set(starts) == set(finishes), "unmatched flow ids"
cats = collections.Counter()
for i, s in starts.items():
    f = finishes[i]
    assert s["cat"] == f["cat"]
    a, b = enclosing(s), enclosing(f)
    assert a[0] <= b[0] + 1e-6, "flow %s goes back in time" % i
    cats[s["cat"]] += 1
print("%d flows: %d hop, %d release" % (len(starts), cats["hop"], cats["release"]))
