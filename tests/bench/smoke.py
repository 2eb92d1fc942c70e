"""make test's smoke run of the benchmarks (issue 40): every benchmark of `make bench` at its smallest size, once
(BENCH_SMOKE=1, tests/bench/_report.py), so that a benchmark can no longer break without anyone seeing it.

    .venv/bin/python tests/bench/smoke.py run rollout rail_plan ...   (make bench-smoke: the benchmarks of make bench)

No figure is judged and no time is asserted (the targets are the benchmark's, at its full size). A benchmark fails
the smoke run when it exits non-zero (it crashed, or what it measures did not run: _report.publish's ``broken``), runs
past its time limit, or leaves no report with targets in tests/output/bench-smoke/. Each benchmark's output is kept
in tests/output/bench-smoke/<benchmark>.log; the failures are printed last with the end of that log.
"""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUTPUT = HERE.parent / "output" / "bench-smoke"
LIMIT_S = 900   # one benchmark's smoke run; the slowest takes about 3 min on the 2-core machine beside make test


def verdict(name, rc, reports):
    """What is wrong with one benchmark's smoke run ('' when nothing): ``rc`` its exit status (None: it ran past
    LIMIT_S), ``reports`` {file name: text} of the JSON reports it wrote."""
    if rc is None:
        return "%s: still running after %d s (stopped)" % (name, LIMIT_S)
    if rc != 0:
        return "%s: exit status %d" % (name, rc)
    if len(reports) != 1:
        return "%s: %d reports written in %s (expected one: _report.publish)" % (name, len(reports), OUTPUT)
    (file, text), = reports.items()
    try:
        report = json.loads(text)
    except ValueError as exc:
        return "%s: %s is not JSON (%s)" % (name, file, exc)
    if not isinstance(report, dict) or report.get("smoke") is not True:
        return "%s: %s is not a smoke run's report (no \"smoke\": true - BENCH_SMOKE not seen)" % (name, file)
    targets = report.get("targets")
    if not isinstance(targets, list) or not targets or \
            not all(isinstance(t, dict) and {"what", "measured", "target", "met"} <= set(t) for t in targets):
        return "%s: %s has no targets (each with what, measured, target, met)" % (name, file)
    if report.get("broken"):
        return "%s: %s says what it measures did not run: %s" % (name, file, "; ".join(report["broken"]))
    return ""


def smoke(name):
    """Run tests/bench/<name>.py with BENCH_SMOKE=1 -> (problem or '', seconds)."""
    for old in OUTPUT.glob("*.json"):
        old.unlink()
    log = OUTPUT / (name + ".log")
    started = time.monotonic()
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, str(HERE / (name + ".py"))], stdout=out, stderr=subprocess.STDOUT,
                                env=dict(os.environ, BENCH_SMOKE="1"), start_new_session=True)
        try:
            rc = proc.wait(timeout=LIMIT_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
            rc = None
    took = time.monotonic() - started
    reports = {p.name: p.read_text() for p in OUTPUT.glob("*.json")}
    return verdict(name, rc, reports), took


def main(names):
    if not names:
        raise SystemExit("usage: smoke.py BENCHMARK... (the names of tests/bench/*.py, as make bench lists them)")
    unknown = [n for n in names if not (HERE / (n + ".py")).is_file()]
    if unknown:
        raise SystemExit("smoke.py: no benchmark %s in %s" % (", ".join(unknown), HERE))
    OUTPUT.mkdir(parents=True, exist_ok=True)
    problems = []
    for name in names:
        problem, took = smoke(name)
        print("bench smoke: %-16s %5.0f s  %s" % (name, took, problem or "ran"), flush=True)
        if problem:
            problems.append((name, problem))
    for name, problem in problems:
        print("\n--- FAILED: %s; the end of %s:" % (problem, OUTPUT / (name + ".log")))
        print("".join((OUTPUT / (name + ".log")).read_text().splitlines(True)[-25:]))
    print("bench smoke: %d of %d benchmarks ran" % (len(names) - len(problems), len(names)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
