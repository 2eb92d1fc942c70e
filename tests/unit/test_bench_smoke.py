# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tests/bench/smoke.py (make test's smoke run of the benchmarks): what makes a benchmark's smoke run fail, and the
Makefile's two lists of benchmarks (make bench, make bench-smoke) being one list of every benchmark."""
import json
import re
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))
import smoke  # noqa: E402  pylint: disable=wrong-import-position

TARGET = {"what": "t(1250) / t(125)", "measured": 9.8, "target": "<= 12", "met": True}


def report(**changes):
    return json.dumps(dict({"smoke": True, "broken": [], "targets": [TARGET]}, **changes))


def test_a_benchmark_that_ran_passes_whatever_its_figures():
    missed = dict(TARGET, measured=40.0, met=False)      # a missed target is the benchmark's business, not the smoke's
    assert smoke.verdict("rail_plan", 0, {"bench-rail-plan.json": report(targets=[missed])}) == ""


@pytest.mark.parametrize("rc, reports, expected", [
    (1, {"bench.json": report()}, "run: exit status 1"),
    (None, {}, "run: still running after 900 s (stopped)"),
    (0, {}, "run: 0 reports written in"),
    (0, {"a.json": report(), "b.json": report()}, "run: 2 reports written in"),
    (0, {"bench.json": "{not json"}, "run: bench.json is not JSON"),
    (0, {"bench.json": report(smoke=False)}, "run: bench.json is not a smoke run's report"),
    (0, {"bench.json": json.dumps({"targets": [TARGET]})}, "run: bench.json is not a smoke run's report"),
    (0, {"bench.json": report(targets=[])}, "run: bench.json has no targets"),
    (0, {"bench.json": report(targets=[{"what": "x", "met": True}])}, "run: bench.json has no targets"),
    (0, {"bench.json": report(broken=["the rehearsal: rc 2"])},
     "run: bench.json says what it measures did not run: the rehearsal: rc 2"),
])
def test_what_fails_a_smoke_run(rc, reports, expected):
    assert smoke.verdict("run", rc, reports).startswith(expected)


def test_an_unknown_benchmark_is_refused_before_anything_runs(capsys):
    with pytest.raises(SystemExit, match="no benchmark rail_plans in"):
        smoke.main(["rail_plan", "rail_plans"])
    assert capsys.readouterr().out == ""


def test_make_bench_and_its_smoke_run_list_every_benchmark():
    makefile = (BENCH.parents[1] / "Makefile").read_text()
    listed = re.search(r"^BENCHES\s*:=\s*(.+)$", makefile, re.M).group(1).split()
    assert sorted(listed) == sorted(p.stem for p in BENCH.glob("*.py") if not p.stem.startswith("_")
                                    and p.stem != "smoke")
    assert "$(BIN)/python tests/bench/smoke.py $(BENCHES)" in makefile
