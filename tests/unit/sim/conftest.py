"""Fixtures for the simulator tests (helpers live in sim_helpers.py)."""
import pytest

from sim_helpers import Sim, real


@pytest.fixture(scope="session")
def pycache(tmp_path_factory):
    return tmp_path_factory.mktemp("pycache")


@pytest.fixture
def sim(tmp_path, pycache):
    return Sim(tmp_path, pycache)


@pytest.fixture
def real_capture():
    return real
