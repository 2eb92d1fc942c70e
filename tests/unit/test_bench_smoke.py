# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tests/bench/smoke.py (make test's smoke run of the benchmarks): what makes a benchmark's smoke run fail, and the
Makefile's two lists of benchmarks (make bench, make bench-smoke) being one list of every benchmark."""
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))
import smoke  # noqa: E402  pylint: disable=wrong-import-position


def bench_module(stem):
    """A benchmark loaded from tests/bench by its path under a name of its own: a plain `import twin` takes whichever
    `twin` an earlier test put in sys.modules (tests/twin/twin.py in a whole run)."""
    spec = importlib.util.spec_from_file_location("bench_" + stem, BENCH / (stem + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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


def test_a_benchmark_whose_runs_failed_writes_its_report_then_exits_1(tmp_path, monkeypatch, capsys):
    import _report  # pylint: disable=import-outside-toplevel
    monkeypatch.setattr(_report, "OUTPUT", tmp_path)
    _report.publish("bench-x", {"wall_s": 3.0}, [TARGET])                      # nothing broken: it returns
    assert json.loads((tmp_path / "bench-x.json").read_text())["broken"] == []
    with pytest.raises(SystemExit, match="bench-x: BROKEN - what it measures did not run:\n  the rehearsal: rc 2"):
        _report.publish("bench-x", {"wall_s": 3.0}, [TARGET], ["", "the rehearsal: rc 2"])
    written = json.loads((tmp_path / "bench-x.json").read_text())
    assert written["broken"] == ["the rehearsal: rc 2"] and written["targets"] == [TARGET]
    assert "MET     t(1250) / t(125): 9.8 (target <= 12)" in capsys.readouterr().out


def test_make_tests_summary_prints_a_checks_own_failed_words(tmp_path):
    streams = tmp_path / "streams"
    streams.mkdir()
    (streams / "molecule.log").write_text(
        '  | fatal: [localhost]: FAILED! => {"changed": false, "cmd":\n'
        '  |     "stdout": "FAILED: drain: the waited-for job 12 ended\n'
        '  |   RUNNING, not COMPLETED",\nstream rc=2\n')
    (streams / "unit.log").write_text("4502 passed\nstream rc=0\n")
    proc = subprocess.run(["bash", str(BENCH.parent / "stream_summary.sh"), str(streams)], capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 1
    said = proc.stdout.split("--- what a check said (at most 40 lines):\n")[1].split("--- its last 15 lines:")[0]
    assert said.splitlines()[:2] == ['  |     "stdout": "FAILED: drain: the waited-for job 12 ended',
                                     '  |   RUNNING, not COMPLETED",']
    assert "stream unit: passed" in proc.stdout


def test_a_passing_stream_has_no_check_words(tmp_path):
    (tmp_path / "unit.log").write_text("FAILED: a word in a passing log\nstream rc=0\n")
    proc = subprocess.run(["bash", str(BENCH.parent / "stream_summary.sh"), str(tmp_path)], capture_output=True,
                          text=True, check=False)
    assert (proc.returncode, proc.stdout) == (0, "stream unit: passed\n")


@pytest.mark.parametrize("stem", sorted(p.stem for p in BENCH.glob("*.py") if not p.stem.startswith("_")
                                        and p.stem != "smoke"))
def test_every_benchmark_answers_help_and_refuses_an_argument_before_it_runs(stem, tmp_path):
    """The whole-site twin once started a 100-minute run on --help: now --help prints the docstring, an argument
    exits 2, and neither starts anything (no report is written, no venv is made)."""
    env = {"PATH": "/usr/bin:/bin", "BENCH_SMOKE": "1", "HOME": str(tmp_path)}
    helped = subprocess.run([sys.executable, str(BENCH / (stem + ".py")), "--help"], capture_output=True, text=True,
                            env=env, check=False, timeout=60)
    assert (helped.returncode, helped.stderr) == (0, "")
    assert helped.stdout.startswith("Benchmark")
    refused = subprocess.run([sys.executable, str(BENCH / (stem + ".py")), "--sus", "1"], capture_output=True,
                             text=True, env=env, check=False, timeout=60)
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr == "%s.py: takes no arguments, got --sus 1 (its settings are environment variables: --help)\n" \
        % stem


def test_the_twin_benchmark_reports_the_main_process_of_ansible_playbook_not_a_worker(tmp_path):
    """The main process is the one every worker is forked from: its resident size is reported, not a worker's (a
    child with the same name that holds more memory) nor the wrapper's."""
    twin = bench_module("twin")
    script = ("import os, time, subprocess\n"
              "main = bytearray(64 * 2**20)\n"
              "worker = subprocess.Popen(['bash', '-c', 'exec -a ansible-playbook python3 -c \"b = bytearray(160 * 2**20); "
              "import time; time.sleep(3)\"'])\n"
              "time.sleep(2.5)\n"
              "worker.wait()\n")
    ran = twin.timed(["bash", "-c", "exec -a ansible-playbook python3 -c \"$0\"", script], tmp_path / "log")
    assert ran["rc"] == 0
    assert 64 <= ran["main_rss_mb"] < 160
    assert ran["peak_pss_mb"] >= 64 + 160
