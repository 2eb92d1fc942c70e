"""Installable without this repository's Makefile (issue 12, section 1).

- galaxy.yml declares every collection the roles, playbooks, plugins and shipped site inventories use, with
  a range that admits the copy the ``ansible`` PyPI bundle ships (the install test installs that copy);
- every shipped inventory lists exactly its hosts, as a user's default Ansible configuration reads it: no
  line of a CSV, no firmware image taken as an inventory source;
- the site's data files and every report default to places outside the inventory and outside the
  collection: ``gpufabric_site_files`` beside the inventory directory, ``gpufabric_report_dir`` in
  ``reports/`` of the current directory, each defined once (roles/common/defaults/main.yml).
"""
import ast
import json
import re
import shutil
import subprocess
from pathlib import Path

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
        manifests = [Path(root, namespace, collection, "MANIFEST.json") for root in bundle]
        manifests = [path for path in manifests if path.is_file()]
        if not manifests:
            pytest.skip("the ansible bundle is not installed")
        version = json.loads(manifests[0].read_text())["collection_info"]["version"]
        assert meets_requirements(version, spec), "%s %s (the ansible bundle's) is outside %s" % (name, version, spec)


def shipped_inventories():
    return sorted(p for p in (REPO / "inventory").iterdir()
                  if p.is_dir() and not p.name.endswith("-files"))


def expected_hosts(inventory):
    """The hosts the inventory's hosts.yml defines, read as plain YAML (every ``hosts:`` mapping's keys)."""
    names = set()

    def walk(group):
        if not isinstance(group, dict):
            return
        names.update((group.get("hosts") or {}).keys())
        for child in (group.get("children") or {}).values():
            walk(child)

    for group in yaml.safe_load((inventory / "hosts.yml").read_text()).values():
        walk(group)
    return names


def test_every_inventory_directory_is_inventory():
    assert [p.name for p in shipped_inventories()] == ["example-1250", "lab"]


@pytest.mark.parametrize("inventory", shipped_inventories(), ids=lambda p: p.name)
def test_a_shipped_inventory_lists_exactly_its_hosts(tmp_path, inventory):
    # A user's Ansible: the default inventory plugins (host_list, script, auto, yaml, ini, toml), not the
    # repository's ansible.cfg that enables only three.
    (tmp_path / "ansible.cfg").write_text("[defaults]\n")
    out = subprocess.run([str(tool("ansible-inventory")), "-i", str(inventory), "--list"],
                         env=env(tmp_path, ANSIBLE_CONFIG=str(tmp_path / "ansible.cfg")), cwd=str(tmp_path),
                         capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr
    assert "[WARNING]" not in out.stderr, out.stderr
    hosts = set(json.loads(out.stdout)["_meta"]["hostvars"])
    expected = expected_hosts(inventory)
    assert expected and hosts == expected, (sorted(hosts - expected)[:5], sorted(expected - hosts)[:5])


def test_no_data_file_in_an_inventory_directory():
    """Only what Ansible reads as inventory on purpose (hosts.yml, group_vars/, host_vars/) and files it ignores
    (ansible.constants INVENTORY_IGNORE_EXTS: README.md) are in a shipped inventory directory."""
    from ansible import constants as C
    ignored = tuple(C.INVENTORY_IGNORE_EXTS)
    for inventory in shipped_inventories():
        for path in inventory.rglob("*"):
            rel = path.relative_to(inventory)
            if path.is_dir() or rel.parts[0] in ("group_vars", "host_vars") or rel.as_posix() == "hosts.yml":
                continue
            assert path.name.endswith(ignored), "%s is parsed as an inventory source" % path.relative_to(REPO)


def common_defaults():
    return yaml.safe_load((REPO / "roles/common/defaults/main.yml").read_text())


def test_the_defaults_are_defined_once():
    assert set(common_defaults()) >= {"gpufabric_report_dir", "gpufabric_site_files"}
    for path in [*(REPO / "roles").rglob("*.yml"), *(REPO / "playbooks").rglob("*.yml")]:
        if path == REPO / "roles/common/defaults/main.yml":
            continue
        text = path.read_text()
        if path.name == "argument_specs.yml":   # documents the variables (no default here)
            text = re.sub(r"^\s*(gpufabric_report_dir|gpufabric_site_files):", "", text, flags=re.M)
        assert "playbook_dir" not in text, "%s writes beside the playbooks (inside the collection)" % path
        assert not re.search(r"^\s*(gpufabric_report_dir|gpufabric_site_files):", text, re.M), (
            "%s defines a shared default again" % path)
        assert "/files/" not in text.replace("{{ gpufabric_site_files }}", ""), path


def test_the_roles_that_read_the_defaults_depend_on_common():
    for role in ("firmware", "delivery_check"):
        meta = yaml.safe_load((REPO / "roles" / role / "meta/main.yml").read_text())
        assert {"role": "gpufabric.mlnx.common"} in meta["dependencies"], role


SHOW_DEFAULTS = ("{{ {'firmware': gpufabric_firmware_source_dir, 'assets': gpufabric_delivery_check_assets, "
                 "'delivery': gpufabric_delivery_check_report_dir, 'reports': gpufabric_report_dir} | to_json }}")


def test_role_defaults_point_outside_the_inventory_and_the_collection(tmp_path):
    site = tmp_path / "sites" / "north"
    site.mkdir(parents=True)
    (site / "hosts.yml").write_text("all:\n  children:\n    servers:\n      hosts:\n        srv1:\n")
    play = tmp_path / "defaults.yml"
    play.write_text(yaml.safe_dump([{
        "name": "Show the defaults", "hosts": "servers", "gather_facts": False,
        "roles": [{"role": "gpufabric.mlnx.firmware", "when": False},
                  {"role": "gpufabric.mlnx.delivery_check", "when": False}],
        "tasks": [{"name": "Show", "ansible.builtin.debug": {"msg": SHOW_DEFAULTS}}],
    }]))
    work = tmp_path / "work"
    work.mkdir()
    out = subprocess.run([str(tool("ansible-playbook")), "-i", str(site), str(play)],
                         env=env(tmp_path, ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json"), cwd=str(work),
                         capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    result = json.loads(out.stdout)["plays"][0]["tasks"][-1]["hosts"]["srv1"]["msg"]
    result = json.loads(result) if isinstance(result, str) else result
    assert result["firmware"] == "%s-files/firmware" % site
    assert result["assets"] == "%s-files/assets.csv" % site
    assert result["reports"] == str(work / "reports")
    assert re.fullmatch(re.escape(str(work / "reports")) + r"/delivery-\d{8}T\d{6}Z", result["delivery"], re.ASCII)


CABLING_INVENTORY = """
all:
  children:
    servers:
      hosts:
        srv-r01-01: {rack: r01, position: 1}
        srv-r01-02: {rack: r01, position: 2}
"""


def test_the_cabling_plan_by_name_writes_to_reports_of_the_current_directory(tmp_path):
    inventory = tmp_path / "site"
    (inventory / "group_vars").mkdir(parents=True)
    (inventory / "hosts.yml").write_text(CABLING_INVENTORY)
    fabric = {"rails": 2, "su_prefix": 26, "racks_per_su": 1,
              "pools": {"rail0": "198.18.0.0/22", "rail1": "198.18.4.0/22"},
              "nics": {"pci": ["0000:18:00.0", "0000:40:00.0"]}, "interface_names": ["enp24s0np0", "enp64s0np0"],
              "leaf_name": "su{su:02d}-leaf-rail{rail}"}
    (inventory / "group_vars" / "all.yml").write_text(yaml.safe_dump({"gpufabric_fabric": fabric}))
    work = tmp_path / "work"
    work.mkdir()
    inside = REPO / "reports"
    before = sorted(inside.rglob("*")) if inside.exists() else None
    before_mtimes = {p: p.stat().st_mtime_ns for p in before or []}
    out = subprocess.run([str(tool("ansible-playbook")), "-i", str(inventory), "gpufabric.mlnx.cabling_plan"],
                         env=env(tmp_path), cwd=str(work), capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    assert (work / "reports" / "cabling.csv").is_file() and (work / "reports" / "cabling.md").is_file()
    after = sorted(inside.rglob("*")) if inside.exists() else None
    assert after == before and {p: p.stat().st_mtime_ns for p in after or []} == before_mtimes, (
        "the cabling plan wrote inside the collection")
    assert str(work / "reports") in out.stdout
    shutil.rmtree(work / "reports")
