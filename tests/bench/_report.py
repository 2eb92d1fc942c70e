"""The tail every benchmark shares: each figure with its target and whether it is met, printed and kept in
tests/output/<name>.json. A benchmark reports; it never fails on a missed target (no timing assertions) - it fails
when what it measures did not run (a playbook or a tool that failed: ``broken``), so a broken benchmark is seen.

BENCH_SMOKE=1 is make test's smoke run (tests/bench/smoke.py): every benchmark at its smallest size, once, its output
in tests/output/bench-smoke/ - it proves that the benchmark runs; its figures are not the benchmark's."""
import json
import os
import sys
from pathlib import Path

SMOKE = os.environ.get("BENCH_SMOKE") == "1"
OUTPUT = Path(__file__).resolve().parents[1] / "output" / ("bench-smoke" if SMOKE else "")


def command_line(doc, argv=None):
    """A benchmark takes no arguments (its settings are BENCH_* variables): ``-h``/``--help`` prints its docstring
    and exits 0; anything else exits 2 before anything runs (the whole-site twin once started on ``--help``)."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        return
    if argv in (["-h"], ["--help"]):
        print((doc or "").strip())
        sys.exit(0)
    sys.stderr.write("%s: takes no arguments, got %s (its settings are environment variables: --help)\n"
                     % (os.path.basename(sys.argv[0]), " ".join(argv)))
    sys.exit(2)


def repeat(default):
    """How many times a measurement is repeated: BENCH_REPEAT (``default``), once in a smoke run."""
    return 1 if SMOKE else int(os.environ.get("BENCH_REPEAT", str(default)))


def smoke_or(full, smoke):
    """``smoke`` in a smoke run, ``full`` otherwise (the sizes, the scales, the runs a benchmark makes)."""
    return smoke if SMOKE else full


def _target(what, measured, goal, met):
    return {"what": what, "measured": measured, "target": goal, "met": bool(met)}


def at_most(what, measured, limit):
    """``measured`` <= ``limit`` (a missing figure is not met)."""
    return _target(what, measured, "<= %s" % limit, measured is not None and measured <= limit)


def equal(what, measured, wanted):
    return _target(what, measured, "== %s" % wanted, measured == wanted)


def each_equal(what, per_host, wanted):
    """Every value of ``per_host`` ({name: value}) == ``wanted``."""
    return _target(what, per_host, "%s on every host" % wanted,
                   bool(per_host) and all(v == wanted for v in per_host.values()))


def publish(name, numbers, targets=(), broken=()):
    """Print ``numbers`` and the targets (MET / NOT MET, one line each) and write both to tests/output; then, when a
    run the benchmark measures failed (``broken``: what failed, one line each), say so and exit 1."""
    targets, broken = list(targets), [b for b in broken if b]
    numbers = dict(numbers, targets=targets, broken=broken, smoke=SMOKE)
    text = json.dumps(numbers, indent=2)
    print(text)
    met = sum(t["met"] for t in targets)
    print("\n%s: %d of %d targets met" % (name, met, len(targets)))
    for t in targets:
        verdict = "MET" if t["met"] else "NOT MET"
        print("  %-7s %s: %s (target %s)" % (verdict, t["what"], json.dumps(t["measured"]), t["target"]))
    OUTPUT.mkdir(parents=True, exist_ok=True)
    (OUTPUT / (name + ".json")).write_text(text + "\n")
    if SMOKE:
        print("(a smoke run: the smallest size, once - it proves that %s runs; its figures are not the benchmark's)"
              % name)
    if broken:
        raise SystemExit("%s: BROKEN - what it measures did not run:\n  %s" % (name, "\n  ".join(broken)))
