# Checks the plots of tests/lit/whatif/library.test: one SVG per topology
# file, each well-formed XML with at least one series group.
import glob
import sys
import xml.etree.ElementTree as E

plots = glob.glob(sys.argv[1] + "/*.svg")
topologies = glob.glob(sys.argv[2] + "/*.yaml")
assert len(plots) == len(topologies), (len(plots), len(topologies))
for f in plots:
    root = E.parse(f).getroot()
    assert root.find('.//{http://www.w3.org/2000/svg}g[@class="series"]') is not None, f
print("every topology has a plot")
