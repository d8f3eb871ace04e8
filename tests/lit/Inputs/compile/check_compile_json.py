"""Checks `topocc compile --format json` against the file it wrote.

Usage: check_compile_json.py COMPILE.json [VERIFY.json]

The report must name the file it wrote (which exists), describe the
schedule as the file does (ranks, channels, nchunksperloop for MSCCL XML),
and, given `topocc verify --format json` of the same file at the same
size, carry the same simulated time and bound: the prediction is the
simulated time of the written file. Exits 1 with a message otherwise.
"""
import json
import os
import sys
import xml.etree.ElementTree as ET


def fail(msg):
    print("check_compile_json: " + msg)
    sys.exit(1)


def main():
    report = json.load(open(sys.argv[1]))
    for key in ("written", "emit", "algorithm", "schedule", "generator"):
        if key not in report:
            fail("no '%s' in the report" % key)
    files = report["written"]
    if len(files) != 1 or not os.path.isfile(files[0]):
        fail("'written' must name the one file written: %r" % files)
    sched = report["schedule"]
    if report["emit"] == "msccl-xml":
        algo = ET.parse(files[0]).getroot()
        for attr, key in (("ngpus", "ranks"), ("nchannels", "channels"),
                          ("nchunksperloop", "nchunksperloop")):
            if int(algo.get(attr)) != sched[key]:
                fail("%s %s in the file, %s %s in the report" %
                     (attr, algo.get(attr), key, sched[key]))
        tbs = sum(len(g.findall("tb")) for g in algo.findall("gpu"))
        if tbs != sched["threadblocks"]:
            fail("%d threadblocks in the file, %d in the report" %
                 (tbs, sched["threadblocks"]))
        if "serves" not in report or "target" not in report:
            fail("an MSCCL XML report needs 'serves' and 'target'")
    if len(sys.argv) > 2:
        verify = json.load(open(sys.argv[2]))
        sim = verify["files"][0]["topology"]["simulation"]
        pred = report.get("prediction")
        if not pred:
            fail("no prediction in the report")
        for key in ("time_s", "busbw_GBps", "bound_busbw_GBps",
                    "percent_of_bound", "mode"):
            if pred.get(key) != sim.get(key):
                fail("%s: compile predicted %r, verify simulated %r" %
                     (key, pred.get(key), sim.get(key)))
    print("ok")


main()
