"""Load the lab scripts (tests/lab/*.py are scripts, not a package) as modules by path."""
import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
LAB_DIR = REPO / "tests" / "lab"


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def lab():
    return _load("gpufabric_lab", LAB_DIR / "lab.py")


@pytest.fixture(scope="session")
def hostprep():
    return _load("gpufabric_lab_hostprep", LAB_DIR / "hostprep.py")


@pytest.fixture(scope="session")
def repo():
    return REPO
