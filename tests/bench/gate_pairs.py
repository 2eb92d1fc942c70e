"""Benchmark of the validation gate's pairing plan (plugins/plugin_utils/_gate_pairs.py): rounds, planning time and
the gate's modelled wall time for 4, 40, 400 and 1,250 synthetic servers x 8 rails.

    .venv/bin/python tests/bench/gate_pairs.py

The servers and the fabric are those of tests/bench/rail_plan.py (DGX-H100-like, 4 per rack, 8 racks per SU, a leaf
per SU per rail, su_subnet), twice: with two spines (every leaf has uplinks: cross_leaf=auto pairs through the
spines) and without (each leaf on its own). The rail plan is made once per size and not timed; pairs() is timed
REPEAT times and the fastest run kept (other work on the machine only adds). An odd size (1,247: its last SU 31 hosts) shows the second
round an odd group costs.

The gate's wall time is modelled, not measured (no perftest runs here): every round runs all its pairs on all rails
at once, and a pair is measured in both directions with ib_write_bw and once with ib_write_lat, so

    wall = rounds x (2 x BW_S + LAT_S)

with BW_S = 10 s (ib_write_bw -D 10) and LAT_S = 5 s (ib_write_lat -D 5) by default (environment BENCH_BW_S,
BENCH_LAT_S); the start of the tools, their connection set-up and Ansible's own time are left out. Nothing is
asserted: each figure is printed with its target (rounds constant - 1 for an even number of hosts, 2 for an odd one
- so the wall time does not grow with the cluster; 1,250 hosts x 8 rails planned in under 1 s, growth linear) and
whether it is met, and written to tests/output/bench-gate-pairs.json.

The whole controller-side planning of a run is timed too: gate_plan (plugins/plugin_utils/_gate.py, the
gpufabric.mlnx.gate_plan filter - fingerprints, who is tested against a previous state, the limits, the pairs, the
NCCL worlds of the pairs and of the SUs) for 1,250 servers with rail facts, first run (no state) and a rerun (every
server passed before, one quarantined: only it is tested), and the verdict (gate_results' evaluate) of the first run
with every pair measured; target under 2 s each at 1,250 servers.
"""
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parent / "unit")]
# importing conftest makes ansible_collections.gpufabric.mlnx importable
from conftest import REPO  # noqa: E402,F401  # pylint: disable=unused-import
from _report import at_most, command_line, equal, publish, repeat  # noqa: E402
from rail_plan import FABRIC, RAILS, servers  # noqa: E402

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils import _gate  # noqa: E402
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._gate_pairs import pairs  # noqa: E402
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._rail_plan import plan  # noqa: E402

SIZES = (4, 40, 400, 1250)
ODD = 1247
REPEAT = repeat(5)
BW_S = float(os.environ.get("BENCH_BW_S", "10"))
LAT_S = float(os.environ.get("BENCH_LAT_S", "5"))
SPINE_FABRIC = dict(FABRIC, leaf_ports=32, uplinks={"loopbacks": "192.168.0.0/22"})
SPINES = {"spine1": {}, "spine2": {}}


def timed(count, spines):
    rail_plan = plan(servers(count), SPINE_FABRIC, None, SPINES) if spines else plan(servers(count), FABRIC)
    best, result = None, None
    for _run in range(REPEAT):
        start = time.perf_counter()
        result = pairs(rail_plan)
        took = time.perf_counter() - start
        best = took if best is None else min(best, took)
    listed = [p for r in result["rounds"] for p in r["pairs"]]
    # the plan is complete, not a timing: every host on every rail in a pair
    covered = {(p["rail"], h) for p in listed for h in (p["server"], p["client"])}
    assert len(covered) == count * RAILS and not result["unpaired"]
    return {"hosts": count, "rounds": result["rounds_count"], "pairs": len(listed),
            "cross_leaf_pairs": sum(p["cross_leaf"] for p in listed), "pairs_s": round(best, 4),
            "modelled_wall_s": result["rounds_count"] * (2 * BW_S + LAT_S)}


def facts_of(rail_plan):
    out = {}
    for host, entries in rail_plan["hosts"].items():
        out[host] = {e["interface"]: {"rdma": "mlx5_%d" % e["rail"], "rate_gbps": 400.0, "state": "up", "mtu": 9000,
                                      "address": e["address"], "qos": {"trust": "dscp", "pfc": [3]},
                                      "pcie": {"speed": 32.0, "max_speed": 32.0, "width": 16, "max_width": 16},
                                      "counters": {"link_down_events_phy": 0, "rx_symbol_err_phy": 0}}
                     for e in entries}
    return out


def best_of(func):
    best, result = None, None
    for _run in range(max(1, REPEAT // 2)):
        start = time.perf_counter()
        result = func()
        took = time.perf_counter() - start
        best = took if best is None else min(best, took)
    return round(best, 3), result


def measured_all(gate):
    out = {}
    for rnd in gate["pairs"]["rounds"]:
        for pair in rnd["pairs"]:
            for client, server in ((pair["client"], pair["server"]), (pair["server"], pair["client"])):
                tests = [{"test": "ib_write_bw", "rc": 0, "report": {"results": [{"bw_average": 385.6}], "errors": []}},
                         {"test": "ib_write_lat", "rc": 0, "report": {"results": [{"t_avg": 1.7}], "errors": []}}]
                out.setdefault(client, []).append({"rail": pair["rail"], "peer": server, "tests": tests,
                                                   "ping": {"ok": True, "sent": 3, "received": 3}})
    return out


def planning(count=1250):
    rail_plan = plan(servers(count), FABRIC)
    hosts, facts = list(rail_plan["hosts"]), facts_of(rail_plan)
    first_s, gate = best_of(lambda: _gate.plan_run(rail_plan, hosts, facts, None, None, {"name": "bench"}, None, 106))
    measured = measured_all(gate)
    verdict_s, results = best_of(lambda: _gate.evaluate(rail_plan, gate["pairs"], gate["tested"], [], measured, facts,
                                                        facts, None, None, None, gate["limits"], {}, 9000, None,
                                                        gate["fingerprints"]))
    state = _gate.state(results)
    state["hosts"][hosts[7]]["status"] = "quarantined"
    rerun_s, again = best_of(lambda: _gate.plan_run(rail_plan, hosts, facts, state, None, {"name": "bench"}, None, 106))
    return {"hosts": count, "gate_plan_first_s": first_s, "gate_results_s": verdict_s, "gate_plan_rerun_s": rerun_s,
            "tested_first": len(gate["tested"]), "tested_rerun": len(again["tested"]),
            "quarantined": len(results["quarantine"])}


def main():
    out = {"rails": RAILS, "repeat": REPEAT, "bw_s": BW_S, "lat_s": LAT_S, "load_average": os.getloadavg()}
    targets = []
    for name, spines in (("spines", True), ("no_spines", False)):
        runs = {str(count): timed(count, spines) for count in SIZES + (ODD,)}
        out[name] = runs
        for count in SIZES:
            targets.append(equal("%s: rounds, %d hosts x %d rails (constant: 1, even)" % (name, count, RAILS),
                                 runs[str(count)]["rounds"], 1))
        targets.append(equal("%s: rounds, %d hosts (odd: 2)" % (name, ODD), runs[str(ODD)]["rounds"], 2))
        big, small = runs["1250"], runs["4"]
        targets.append(equal("%s: modelled gate wall seconds, 1,250 / 4 hosts (constant: 1)" % name,
                             round(big["modelled_wall_s"] / small["modelled_wall_s"], 2), 1.0))
        targets.append(at_most("%s: pairs() seconds, 1,250 hosts x %d rails" % (name, RAILS), big["pairs_s"], 1.0))
        ratio = round(big["pairs_s"] / runs["400"]["pairs_s"], 2)
        out[name]["ratio_1250_to_400"] = ratio
        targets.append(at_most("%s: t(1250) / t(400) (linear: about 3.1)" % name, ratio, 4.5))
    targets.append(equal("spines: every pair through the spines at 1,250 hosts (cross_leaf=auto)",
                         out["spines"]["1250"]["cross_leaf_pairs"], out["spines"]["1250"]["pairs"]))
    run = planning()
    out["planning_1250"] = run
    for key in ("gate_plan_first_s", "gate_results_s", "gate_plan_rerun_s"):
        targets.append(at_most("gate %s, 1,250 servers x %d rails" % (key, RAILS), run[key], 2.0))
    targets.append(equal("gate rerun at 1,250 servers: servers tested (only the quarantined one)", run["tested_rerun"],
                         1))
    publish("bench-gate-pairs", out, targets)


if __name__ == "__main__":
    command_line(__doc__)
    main()
