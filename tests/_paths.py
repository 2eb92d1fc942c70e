"""Paths shared by the unit tests, the simulator tests and the benchmarks."""
import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# Real captures (tests/fixtures/real, sources in its INDEX.md) and the format facts, inside the repository;
# GPUFABRIC_FIXTURES points the tests at another copy of the same layout.
FIXTURES = Path(os.environ.get("GPUFABRIC_FIXTURES", REPO / "tests" / "fixtures"))
REAL = FIXTURES / "real"
SIM = REPO / "tests" / "sim"
SIM_BIN = SIM / "bin"
