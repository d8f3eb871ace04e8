# Structural check of a `topocc dot` file without Graphviz: balanced braces,
# every edge endpoint declared as a node, at least one link; prints
# "NAME: C clusters, N nodes, L links, R ring edges, B busy links".
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
    if a.startswith("legend_"):
        continue
    if 'label="ring ' in attrs:
        rings += 1
        continue
    links += 1
    m = re.search(r'label="[^"]* (\d+)%"', attrs)
    if m and int(m.group(1)) > 0:
        busy += 1
assert links > 0, "no links"
clusters = len(re.findall(r'^  subgraph "cluster_', text, re.M))
print("%s: %d clusters, %d nodes, %d links, %d ring edges, %d busy links"
      % (name, clusters, len([n for n in nodes if not n.startswith("legend_")]),
         links, rings, busy))
