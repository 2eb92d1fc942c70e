"""Benchmark of the controller's work per run that grows with the site (issue 40 item 4: linear to 12,500 servers): the
variable check (site_problems), the rail plan, the batches (rollout_batches) and the rollout report - of one run, and
of an AWX workflow's 40 or 400 SU jobs merged into one (rollout_merge) - for 1,250 and 12,500 synthetic servers.

    .venv/bin/python tests/bench/planning.py      (BENCH_REPEAT=3 by default; BENCH_SMOKE=1: 125 and 1,250, once)

The servers are those of tests/bench/rail_plan.py (DGX-H100-like, 4 per rack, 8 racks per SU, 8 rails, a leaf per SU
per rail), their variables a plain mapping as Ansible's hostvars gives them (rack, position, su, the play settings)
and every server's facts of a run (the driver's result, the cards burned, the activation) for the report. Each step
is timed REPEAT times and the fastest run kept (other work on the machine only adds). Nothing is asserted: each
figure is printed with its target (t(12500) / t(1250) at most 12 for ten times the servers) and written to
tests/output/bench-planning.json.
"""
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent), str(HERE.parent / "unit")]
# importing conftest makes ansible_collections.gpufabric.mlnx importable
from conftest import REPO  # noqa: E402,F401  # pylint: disable=unused-import
from _report import SMOKE, at_most, command_line, publish, repeat, smoke_or  # noqa: E402
from rail_plan import FABRIC, RAILS, servers  # noqa: E402

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils import _rollout, _rollout_report  # noqa: E402
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._rail_plan import plan  # noqa: E402
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._variables import site_problems  # noqa: E402

SIZES = smoke_or((1250, 12500), (125, 1250))
REPEAT = repeat(3)
SETTINGS = {"gpufabric_batch_by": "su", "gpufabric_batch_size": [1, 1, 4], "gpufabric_max_fail_percentage": 0,
            "gpufabric_preflight_enabled": False, "gpufabric_ofed_enabled": False, "gpufabric_firmware_enabled": False}
FACTS = {"gpufabric_ofed_result": {"action": "none"}, "gpufabric_firmware_pending_devices": ["0000:18:00.0"],
         "gpufabric_nv_pending_devices": [], "gpufabric_activation": {"method": "fwreset", "level": 3}}


def best(step):
    """(seconds of the fastest of REPEAT runs, the last result)."""
    fastest, result = None, None
    for _run in range(REPEAT):
        start = time.perf_counter()
        result = step()
        took = time.perf_counter() - start
        fastest = took if fastest is None or took < fastest else fastest
    return round(fastest, 4), result


def measure(count):
    hosts = servers(count)
    hostvars = {h["name"]: dict(SETTINGS, rack=h["rack"], position=h["position"]) for h in hosts}
    names = list(hostvars)
    out = {"servers": count}
    out["site_problems_s"], problems = best(lambda: site_problems(names, hostvars, names, names))
    assert problems == [], problems[:3]   # the check found nothing to refuse: it read every host, not a timing
    out["rail_plan_s"], result = best(lambda: plan(hosts, FABRIC))
    rows = [{"name": h["name"], "rack": h["rack"]} for h in hosts]
    out["batches_s"], rollout = best(lambda: _rollout.batches(rows, result, "su", [1, 1, 4]))
    values = {name: FACTS for name in names}
    out["report_s"], report = best(lambda: _rollout_report.render(
        _rollout_report.rows(names, values, rollout["batches"]), "json"))
    # an AWX workflow: one part per SU job (its servers, its batch), merged by the reports node
    sus = {}
    for h in hosts:
        sus.setdefault(result["leaves"][result["hosts"][h["name"]][0]["leaf"]]["su"], []).append(h["name"])
    parts = {"su%03d" % su: _rollout_report.rows(members, values, [{"number": 1, "name": "SU %d" % su,
                                                                    "servers": members}])
             for su, members in sus.items()}
    out["merge_s"], merged = best(lambda: _rollout_report.render(_rollout_report.merge(parts), "json"))
    assert len(report) > count and len(merged) > count   # every server is in both, not a timing
    out["sus"] = len(sus)
    steps = ("site_problems_s", "rail_plan_s", "batches_s", "report_s", "merge_s")
    out["total_s"] = round(sum(out[k] for k in steps), 4)
    return out


def main():
    small, big = (measure(count) for count in SIZES)
    out = {"rails": RAILS, "repeat": REPEAT, "smoke": SMOKE, "load_average": os.getloadavg(),
           str(SIZES[0]): small, str(SIZES[1]): big}
    ratios = {key: round(big[key] / small[key], 2) if small[key] else None
              for key in ("site_problems_s", "rail_plan_s", "batches_s", "report_s", "merge_s", "total_s")}
    out["ratios"] = ratios
    label = "t(%d) / t(%d)" % (SIZES[1], SIZES[0])
    publish("bench-planning", out, [at_most("%s %s (linear: about 10)" % (label, key[:-2].replace("_", " ")), ratio, 12)
                                    for key, ratio in ratios.items()])


if __name__ == "__main__":
    command_line(__doc__)
    main()
