# Structural check of a `topocc dot` file without Graphviz: balanced braces,
# every edge endpoint declared as a node, at least one link; prints
# "NAME: C clusters, N nodes, L links, R ring edges, B busy links".
# With --svg FILE (Graphviz's rendering of it) it also checks that the
# drawing fits a screen's shape: longest side at most 6000 pt and an aspect
# ratio between 1:3 and 6:1, and prints "fits".
import re
import sys

text = open(sys.argv[1]).read()
assert text.count("{") == text.count("}"), "unbalanced braces"
name = re.search(r'^digraph "([^"]+)" \{$', text, re.M).group(1)
nodes = set(re.findall(r'^\s*"([^"]+)" \[label=', text, re.M))
edges = re.findall(r'^\s*"([^"]+)" -> "([^"]+)" \[(.*)\];$', text, re.M)
links = rings = busy = 0
for a, b, attrs in edges:
    assert a in nodes and b in nodes, "undeclared endpoint: %s -> %s" % (a, b)
    if "style=invis" in attrs:
        continue
    if 'tooltip="ring ' in attrs:
        rings += 1
        continue
    links += 1
    m = re.search(r'tooltip="[^"]*, (\d+)% busy"', attrs)
    if m and int(m.group(1)) > 0:
        busy += 1
assert links > 0, "no links"
clusters = len(re.findall(r'^  subgraph "cluster_', text, re.M))
line = "%s: %d clusters, %d nodes, %d links, %d ring edges, %d busy links" % (
    name, clusters, len(nodes), links, rings, busy)
if len(sys.argv) > 3 and sys.argv[2] == "--svg":
    svg = open(sys.argv[3]).read()
    m = re.search(r'<svg width="(\d+)pt" height="(\d+)pt"', svg)
    w, h = int(m.group(1)), int(m.group(2))
    assert max(w, h) <= 6000, "%s: %d x %d pt is too large" % (name, w, h)
    assert 1 / 3 <= w / h <= 6, "%s: %d x %d pt is a strip" % (name, w, h)
    line += ", fits"
print(line)
