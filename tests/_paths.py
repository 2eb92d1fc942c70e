"""Paths shared by the unit tests, the simulator tests and the benchmarks."""
import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# Real captures live in ../shared/fixtures, beside the checkout (in CI too).
FIXTURES = Path(os.environ.get("GPUFABRIC_FIXTURES", REPO.parent / "shared" / "fixtures"))
REAL = FIXTURES / "real"
SIM = REPO / "tests" / "sim"
SIM_BIN = SIM / "bin"
