"""Benchmark of the rail plan (plugins/plugin_utils/_rail_plan.py): plan() + cabling() for 125,
1,250 and 12,500 synthetic servers x 8 rails.

    .venv/bin/python tests/bench/rail_plan.py

Servers are DGX-H100-like and carry no facts (interface_names and the PCI slot map of the fabric):
4 per rack, 8 racks per SU, one /11 of 10.0.0.0/8 per rail (nothing is sent anywhere), /26 per SU.
Each size is timed REPEAT times and the fastest run kept (other work on the machine only adds).
Linear growth shows as ratios t(1250)/t(125) and t(12500)/t(1250) of about 10. Nothing is asserted:
each figure is printed with its target (issue 4: 1,250 hosts under 1 s, growth linear - a ratio of
at most 13 for 10x the hosts; issue 40: 12 from 1,250 to 12,500) and whether it is met, and written to tests/output/bench-rail-plan.json.
"""
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parent / "unit")]
# importing conftest makes ansible_collections.gpufabric.mlnx importable
from conftest import REPO  # noqa: E402,F401  # pylint: disable=unused-import
from _report import at_most, command_line, publish, repeat  # noqa: E402

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._rail_plan import cabling, plan  # noqa: E402

SIZES = (125, 1250, 12500)
RAILS = 8
REPEAT = repeat(3)
BUSES = (0x18, 0x40, 0x4f, 0x5e, 0x9a, 0xc0, 0xce, 0xdc)
FABRIC = {
    "rails": RAILS,
    "addressing": "su_subnet",
    "su_prefix": 26,
    "racks_per_su": 8,
    "pools": {"rail%d" % rail: "10.%d.0.0/11" % (32 * rail) for rail in range(RAILS)},
    "nics": {"pci": ["0000:%02x:00.0" % bus for bus in BUSES]},
    "interface_names": ["enp%ds0np0" % bus for bus in BUSES],
    "leaf_name": "su{su:03d}-leaf-rail{rail}",
}


def servers(count, per_rack=4):
    return [{"name": "srv-r%04d-%02d" % (i // per_rack + 1, i % per_rack + 1), "rack": "r%04d" % (i // per_rack + 1),
             "position": i % per_rack + 1} for i in range(count)]


def timed(count):
    hosts = servers(count)
    best = None
    for _run in range(REPEAT):
        start = time.perf_counter()
        result = plan(hosts, FABRIC)
        planned = time.perf_counter()
        rows = cabling(result)
        done = time.perf_counter()
        if best is None or done - start < best["total_s"]:
            best = {"plan_s": round(planned - start, 4), "cabling_s": round(done - planned, 4),
                    "total_s": round(done - start, 4)}
    assert len(rows) == count * RAILS   # the plan is complete, not a timing
    return dict(best, hosts=count, ports=len(rows), leaves=len(result["leaves"]))


def main():
    out = {"rails": RAILS, "repeat": REPEAT, "load_average": os.getloadavg()}
    for count in SIZES:
        out[str(count)] = timed(count)
    small, mid, big = (out[str(count)]["total_s"] for count in SIZES)
    out["ratio_1250_to_125"] = round(mid / small, 2)
    out["ratio_12500_to_1250"] = round(big / mid, 2)
    publish("bench-rail-plan", out, [
        at_most("1,250 hosts x %d rails: plan + cabling seconds" % RAILS, out["1250"]["total_s"], 1.0),
        at_most("t(1250) / t(125) (linear: about 10)", out["ratio_1250_to_125"], 13),
        at_most("t(12500) / t(1250) (linear: about 10; issue 40: at most 12)", out["ratio_12500_to_1250"], 12)])


if __name__ == "__main__":
    command_line(__doc__)
    main()
