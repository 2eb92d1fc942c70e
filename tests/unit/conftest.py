"""Make the checkout importable as ``ansible_collections.gpufabric.mlnx`` for plain pytest.

ansible-test already runs inside ``ansible_collections/gpufabric/mlnx``; for a plain ``pytest``
from the checkout we build the same layout with one symlink under ``.collections/``
(git-ignored) and put it on ``sys.path``.
"""
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
REPO = TESTS.parent
# tests/unit/sim too (sim_helpers): ansible-test imports test directories as packages, so pytest
# does not put a conftest's own directory on sys.path there as it does for a plain ``pytest``.
for extra in (TESTS, TESTS / "sim", TESTS / "unit" / "sim"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

if "ansible_collections" not in REPO.parts:
    coll = REPO / ".collections" / "ansible_collections" / "gpufabric"
    coll.mkdir(parents=True, exist_ok=True)
    link = coll / "mlnx"
    if not link.exists():
        try:
            link.symlink_to(REPO, target_is_directory=True)
        except FileExistsError:  # a parallel worker made it first
            pass
    if str(REPO / ".collections") not in sys.path:
        sys.path.insert(0, str(REPO / ".collections"))


import pytest  # noqa: E402  (after the sys.path set-up above)


def pytest_collection_modifyitems(items):
    """The tests marked heavy(seconds) first, the longest first, the rest in their order: xdist hands out tests in
    collection order, so a heavy test collected last would run alone while the other worker waits."""
    def key(item):
        mark = item.get_closest_marker("heavy")
        return -(mark.args[0] if mark and mark.args else 0)
    items.sort(key=key)


@pytest.fixture
def sim_host(tmp_path, monkeypatch):
    """sim_host(profile='dgx-h100', **kw) -> a SimHost whose environment is applied."""
    from _simhost import SimHost, sim_ready
    if not sim_ready():
        pytest.skip("the simulator (tests/sim/bin) is not present")

    def make(profile="dgx-h100", **kwargs):
        host = SimHost(tmp_path, profile, **kwargs)
        host.apply_env(monkeypatch)
        return host
    return make
