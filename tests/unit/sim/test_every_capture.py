"""Every real capture in tests/fixtures/real is compared with the simulator by a test of tests/unit/sim (issue 16: the
same command on the closest simulated card of the same family, the layout compared), or is named below with what
the simulator does instead - so a capture added to the fixtures without a fidelity test fails here."""
import re

from _paths import REAL, REPO

SIM_TESTS = REPO / "tests" / "unit" / "sim"

# capture -> why no test runs its command on the simulator (each is a gap to close, not a choice)
NOT_COMPARED = {}


def referenced():
    """The capture names the simulator's tests open."""
    names = set()
    for path in SIM_TESTS.glob("test_*.py"):
        if path.name == "test_every_capture.py":
            continue
        names.update(re.findall(r"[\w.-]+_\d+\.txt", path.read_text()))
    return names


def test_every_capture_is_compared_or_named_with_the_reason():
    captures = sorted(p.name for p in REAL.glob("*.txt"))
    seen = referenced()
    assert [c for c in captures if c not in seen and c not in NOT_COMPARED] == []


def test_the_list_of_gaps_names_only_captures_that_exist_and_have_no_test():
    captures = {p.name for p in REAL.glob("*.txt")}
    assert sorted(set(NOT_COMPARED) - captures) == []
    assert sorted(set(NOT_COMPARED) & referenced()) == []
