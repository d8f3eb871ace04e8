"""Checks what `topocc compile --sizes MIN:MAX` wrote.

  check_windows.py xml DIR STEM MIN MAX  the set STEM (allreduce,
                                         allgather-inplace, ...) of a
                                         directory of MSCCL XML files
  check_windows.py plan FILE MIN MAX     a plan set

The windows (minBytes/maxBytes, both inclusive as the MSCCL runtimes compare
them) must tile [MIN, MAX] without gap or overlap, in file-name order; every
power of two in [MIN, MAX] must be served by exactly one file of the
directory (nBytes inside its window and the fp32 element count times m a
multiple of nchunksperloop, m = ngpus for allgather and reducescatter, for
files of the same coll and mode); DIR/index/STEM.json must list the set's
files (NN-STEM-...), windows and, per window, a prediction at each sampled
size.
Prints one line per window and "OK ..." or exits 1 with the problem.
"""
import json
import os
import sys
import xml.etree.ElementTree as ET


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def samples(lo, hi):
    out = [lo]
    p = 1
    while p < hi:
        if p > lo:
            out.append(p)
        p *= 2
    if hi > lo:
        out.append(hi)
    return out


def check_tiling(windows, lo, hi):
    if windows[0][0] != lo:
        fail("first window starts at %d, not MIN %d" % (windows[0][0], lo))
    if windows[-1][1] != hi:
        fail("last window ends at %d, not MAX %d" % (windows[-1][1], hi))
    for i, (a, b) in enumerate(windows):
        if a > b:
            fail("window %d is empty: [%d, %d]" % (i, a, b))
        if i and a != windows[i - 1][1] + 1:
            fail("windows %d and %d: [%d, %d] then [%d, %d] %s" %
                 (i - 1, i, windows[i - 1][0], windows[i - 1][1], a, b,
                  "overlap" if a <= windows[i - 1][1] else "leave a gap"))


def check_xml(d, stem, lo, hi):
    every = sorted(n for n in os.listdir(d)
                   if os.path.isfile(os.path.join(d, n)))
    if any(not n.endswith(".xml") for n in every):
        fail("expected only .xml files in %s, got %s" % (d, every))
    coll, inplace = stem.split("-")[0], stem.endswith("-inplace")
    algos = {}
    for n in every:
        a = ET.parse(os.path.join(d, n)).getroot()
        algos[n] = {k: a.get(k) for k in
                    ("minBytes", "maxBytes", "nchunksperloop", "ngpus",
                     "coll", "inplace", "outofplace")}
    # The set's files; the others (other collectives or modes) never
    # match its calls.
    names = [n for n in every if algos[n]["coll"] == coll and
             algos[n]["inplace" if inplace else "outofplace"] == "1"]
    prefix = [n for n in every
              if n.split("-", 1)[1].startswith(stem + "-") and
              (inplace or not n.split("-", 1)[1].startswith(stem +
                                                             "-inplace-"))]
    if not names or names != prefix:
        fail("the %s files %s are not the files named %s: %s" %
             (stem, names, stem, prefix))
    windows = [(int(algos[n]["minBytes"]), int(algos[n]["maxBytes"]))
               for n in names]
    check_tiling(windows, lo, hi)  # in file-name order
    for p in samples(lo, hi):
        if p & (p - 1):
            continue
        serving = []
        for n, a in ((n, algos[n]) for n in names):
            m = int(a["ngpus"]) if a["coll"] in ("allgather",
                                                 "reducescatter") else 1
            if (int(a["minBytes"]) <= p <= int(a["maxBytes"]) and p % 4 == 0
                    and (p // 4) % int(a["nchunksperloop"]) == 0):
                serving.append(n)
        if len(serving) != 1:
            fail("%d B (fp32) is served by %d files: %s" %
                 (p, len(serving), serving))
    with open(os.path.join(d, "index", stem + ".json")) as f:
        index = json.load(f)
    if (index["minBytes"], index["maxBytes"]) != (lo, hi):
        fail("index range %s:%s" % (index["minBytes"], index["maxBytes"]))
    if [w["file"] for w in index["windows"]] != names:
        fail("index files %s, directory %s" %
             ([w["file"] for w in index["windows"]], names))
    sampled = []
    for w, win in zip(index["windows"], windows):
        if (w["minBytes"], w["maxBytes"]) != win:
            fail("index window %s differs from %s" % (w["file"], win))
        sizes = [p["bytes"] for p in w["predicted"]]
        if any(not win[0] <= s <= win[1] for s in sizes):
            fail("%s predicts outside its window: %s" % (w["file"], sizes))
        if any(p["timeSeconds"] <= 0 or p["busbwGBps"] <= 0
               for p in w["predicted"]):
            fail("%s has a non-positive prediction" % w["file"])
        sampled += sizes
        print("%s [%d, %d] %s %s serves: %s" %
              (w["file"], win[0], win[1], w["algorithm"], w["flags"],
               w["serves"]["text"]))
    if sampled != samples(lo, hi):
        fail("index samples %s, expected %s" % (sampled, samples(lo, hi)))
    print("OK: %d windows tile [%d, %d] in name order" %
          (len(windows), lo, hi))


def check_plan(path, lo, hi):
    with open(path) as f:
        s = json.load(f)
    if s["format"] != "topocc-plan-set":
        fail("format " + s["format"])
    windows = [(v["minBytes"], v["maxBytes"]) for v in s["variants"]]
    check_tiling(windows, lo, hi)
    for v in s["variants"]:
        if v["collective"] != s["collective"] or v["ranks"] != s["ranks"]:
            fail("variant %s is another call" % v["name"])
        print("[%d, %d] %s %s" % (v["minBytes"], v["maxBytes"],
                                  v["algorithm"], v["name"]))
    print("OK: %d variants tile [%d, %d]" % (len(windows), lo, hi))


if sys.argv[1] == "xml":
    check_xml(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
else:
    check_plan(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
