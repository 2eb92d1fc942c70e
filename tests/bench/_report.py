"""The tail every benchmark shares: each figure with its target and whether it is met, printed and kept in
tests/output/<name>.json. A benchmark reports; it never fails on a missed target (no timing assertions)."""
import json
from pathlib import Path

OUTPUT = Path(__file__).resolve().parents[1] / "output"


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


def publish(name, numbers, targets=()):
    """Print ``numbers`` and the targets (MET / NOT MET, one line each) and write both to tests/output."""
    targets = list(targets)
    numbers = dict(numbers, targets=targets)
    text = json.dumps(numbers, indent=2)
    print(text)
    met = sum(t["met"] for t in targets)
    print("\n%s: %d of %d targets met" % (name, met, len(targets)))
    for t in targets:
        verdict = "MET" if t["met"] else "NOT MET"
        print("  %-7s %s: %s (target %s)" % (verdict, t["what"], json.dumps(t["measured"]), t["target"]))
    OUTPUT.mkdir(parents=True, exist_ok=True)
    (OUTPUT / (name + ".json")).write_text(text + "\n")
