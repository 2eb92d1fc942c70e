"""Installable without this repository's Makefile (issue 12, section 1).

- galaxy.yml declares every collection the roles, playbooks, plugins and shipped site inventories use, with
  a range that admits the copy the ``ansible`` PyPI bundle ships (the install test installs that copy).
"""
import ast
import json
import re
import subprocess

import pytest
import yaml

from _ansible import env, tool
from _paths import REPO

FQCN_RE = re.compile(r"([a-z][a-z0-9_]*)\.([a-z][a-z0-9_]*)\.([a-z][a-z0-9_]*)", re.ASCII)
# A plugin named in a Jinja expression: a filter or test after | or `is`, a lookup/query by name.
JINJA_RE = re.compile(r"(?:\|\s*|\bis\s+(?:not\s+)?|\b(?:lookup|query|q)\(\s*['\"])"
                      r"([a-z][a-z0-9_]*)\.([a-z][a-z0-9_]*)\.[a-z][a-z0-9_]*", re.ASCII)
# Keys whose value names a plugin by its FQCN (a connection, a become method, a callback ...).
PLUGIN_VALUE_KEYS = {"ansible_connection", "connection", "ansible_become_method", "become_method", "strategy"}
OWN = {("ansible", "builtin"), ("ansible", "legacy"), ("gpufabric", "mlnx")}
# The simulated lab's inventory: its connection (containers.podman) comes with the development stack
# (requirements-dev.txt: the `ansible` bundle), like molecule/ and tests/lab/ that use it.
DEV_ONLY = {"inventory/lab"}


class _Loader(yaml.SafeLoader):
    pass


_Loader.add_constructor("!vault", lambda loader, node: loader.construct_scalar(node))
_Loader.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))


def _yaml_uses(data, found, where):
    if isinstance(data, dict):
        for key, value in data.items():
            if isinstance(key, str) and FQCN_RE.fullmatch(key):
                found.setdefault(FQCN_RE.fullmatch(key).group(1, 2), set()).add(where)
            if key in PLUGIN_VALUE_KEYS and isinstance(value, str) and FQCN_RE.fullmatch(value):
                found.setdefault(FQCN_RE.fullmatch(value).group(1, 2), set()).add(where)
            _yaml_uses(value, found, where)
    elif isinstance(data, list):
        for item in data:
            _yaml_uses(item, found, where)
    elif isinstance(data, str):
        for match in JINJA_RE.finditer(data):
            found.setdefault(match.group(1, 2), set()).add(where)


def _python_uses(path, found, where):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "ansible_collections" and len(parts) >= 3:
                found.setdefault((parts[1], parts[2]), set()).add(where)


def collections_used():
    """{(namespace, name): {files}} of every other collection the shipped content uses: modules/roles/plugins
    by FQCN in the roles' and playbooks' YAML (keys, Jinja filters/tests/lookups, connection values), Python
    imports of the plugins. Comments and documentation do not count: only what Ansible would load."""
    found = {}
    yaml_files = [p for top in ("roles", "playbooks", "inventory") for p in (REPO / top).rglob("*.yml")]
    for path in sorted(yaml_files):
        rel = path.relative_to(REPO).as_posix()
        if any(rel.startswith(d + "/") for d in DEV_ONLY):
            continue
        for document in yaml.load_all(path.read_text(), Loader=_Loader):  # noqa: S506 - SafeLoader + tags
            _yaml_uses(document, found, rel)
    for path in sorted((REPO / "plugins").rglob("*.py")):
        _python_uses(path, found, path.relative_to(REPO).as_posix())
    return {key: value for key, value in found.items() if key not in OWN}


def declared():
    return yaml.safe_load((REPO / "galaxy.yml").read_text())["dependencies"] or {}


def test_the_scan_finds_what_the_roles_use():
    used = collections_used()
    assert "roles/platform/tasks/bios.yml" in used[("community", "general")]
    assert "roles/ofed/tasks/dnf.yml" in used[("community", "general")]
    # a docstring that names ansible.utils.ipaddr (plugin_utils/_roles.py) is not a use
    assert ("ansible", "utils") not in used


def test_galaxy_declares_every_collection_used():
    used = collections_used()
    missing = {"%s.%s" % key: sorted(files)[:3] for key, files in used.items() if "%s.%s" % key not in declared()}
    assert not missing, "galaxy.yml dependencies lack: %s" % missing


def test_galaxy_declares_nothing_unused():
    used = {"%s.%s" % key for key in collections_used()}
    assert set(declared()) <= used, "declared but not used: %s" % (set(declared()) - used)


def test_each_range_admits_the_bundled_copy():
    from ansible.galaxy.dependency_resolution.versioning import meets_requirements
    bundle = pytest.importorskip("ansible_collections").__path__
    for name, spec in declared().items():
        assert re.fullmatch(r">=\d+\.\d+\.\d+,<\d+\.\d+\.\d+", spec, re.ASCII), "%s: %r is not a bounded range" % (
            name, spec)
        namespace, collection = name.split(".")
        manifests = [p for root in bundle for p in [__import__("pathlib").Path(root) / namespace / collection /
                                                    "MANIFEST.json"] if p.is_file()]
        if not manifests:
            pytest.skip("the ansible bundle is not installed")
        version = json.loads(manifests[0].read_text())["collection_info"]["version"]
        assert meets_requirements(version, spec), "%s %s (the ansible bundle's) is outside %s" % (name, version, spec)
