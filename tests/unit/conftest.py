"""Make the checkout importable as ``ansible_collections.gpufabric.mlnx`` for plain pytest.

ansible-test already runs inside ``ansible_collections/gpufabric/mlnx``; for a plain ``pytest``
from the checkout we build the same layout with one symlink under ``.collections/``
(git-ignored) and put it on ``sys.path``.
"""
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
REPO = TESTS.parent
for extra in (TESTS, TESTS / "sim"):
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
