"""Ansible's own commands (ansible-playbook, ansible-doc) for the tests: the ones beside this python, on
this checkout seen as the collection gpufabric.mlnx, with a private temp and home per test."""
import os
import sys
from pathlib import Path

import pytest

from _paths import REPO

# ansible-test runs inside <root>/ansible_collections/gpufabric/mlnx; plain pytest uses the .collections link.
COLLECTIONS = REPO.parents[2] if "ansible_collections" in REPO.parts else REPO / ".collections"


def tool(name):
    """The path of Ansible's command ``name`` beside this python; the test is skipped without it."""
    path = Path(sys.executable).with_name(name)
    if not path.exists():
        pytest.skip("%s not beside this python" % name)
    return path


def env(tmp_path, **extra):
    """The environment of an Ansible command run by a test (``extra`` adds or overrides variables).

    Never colour: importing molecule (a test of the lab does) sets ANSIBLE_FORCE_COLOR=1 in this
    process's environment, which would otherwise reach every command its pytest worker runs."""
    out = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS), ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
               ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"), ANSIBLE_HOME=str(tmp_path / "home"), NO_COLOR="1",
               ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    out.update(extra)
    return out
