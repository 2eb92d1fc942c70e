"""docs/architecture.md matches the tree, and the import rules it states hold.

Every Python file under plugins/ is named in the page; modules import only module_utils;
module_utils never imports plugin_utils; no core file takes a private name (``_x``) from
another; only the host layer starts processes.
"""
import ast
import re

import pytest
import yaml

from _paths import REPO

PLUGINS = REPO / "plugins"
DOC = REPO / "docs" / "architecture.md"
PREFIX = "ansible_collections.gpufabric.mlnx.plugins."


def python_files(*parts):
    return sorted(p for p in PLUGINS.joinpath(*parts).rglob("*.py") if p.name != "__init__.py" or p.stat().st_size)


def imports(path):
    """(module imported, [names taken]) for every import statement of the file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            yield node.module, [alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []


def is_module(package, name):
    """``from <package> import <name>`` takes a file (module_utils/_values.py), not a name in one."""
    where = PLUGINS.joinpath(*package.split(".")) / name
    return where.with_suffix(".py").is_file() or where.is_dir()


def collection_imports(path):
    for module, names in imports(path):
        if module.startswith(PREFIX):
            yield module[len(PREFIX):], names


def test_every_plugin_file_is_named_in_architecture_md():
    text = DOC.read_text()
    named = {name.rsplit("/", 1)[-1] for name in re.findall(r"`([A-Za-z0-9_./]+\.py)`", text)}
    missing = []
    for path in python_files():
        rel = path.relative_to(PLUGINS)
        if path.name == "__init__.py":
            # a package's registry: named as <package>/__init__.py or as __init__.py in its row
            if "__init__.py" not in named:
                missing.append(str(rel))
        elif path.name not in named:
            missing.append(str(rel))
    assert not missing, "docs/architecture.md does not name: %s" % ", ".join(missing)


def test_architecture_md_names_no_file_that_is_gone():
    """A path (`tests/_fakehost.py`, `plugins/...`) must exist; a bare core file name must be in plugins/."""
    text = DOC.read_text()
    present = {p.name for p in python_files()}
    gone = []
    for name in sorted(set(re.findall(r"`([A-Za-z0-9_./]+\.py)`", text))):
        if "/" in name and name.split("/", 1)[0] in ("tests", "plugins"):
            if not (REPO / name).exists():
                gone.append(name)
        elif "/" not in name and name not in present:
            gone.append(name)
    assert not gone, "docs/architecture.md names files that are not in the tree: %s" % ", ".join(gone)


@pytest.mark.parametrize("path", python_files("modules") + python_files("module_utils"),
                         ids=lambda p: str(p.relative_to(PLUGINS)))
def test_what_ships_to_hosts_imports_only_module_utils(path):
    wrong = [module for module, _names in collection_imports(path) if not module.startswith("module_utils")]
    assert not wrong, "%s imports %s: only module_utils ships with a module" % (path.relative_to(PLUGINS), wrong)


@pytest.mark.parametrize("path", python_files(), ids=lambda p: str(p.relative_to(PLUGINS)))
def test_no_private_name_crosses_files(path):
    taken = [(module, name) for module, names in collection_imports(path) for name in names
             if name.startswith("_") and not is_module(module, name)]
    assert not taken, "%s imports private names %s" % (path.relative_to(PLUGINS), taken)


def test_only_the_host_layer_starts_processes():
    starters = [str(p.relative_to(PLUGINS)) for p in python_files("module_utils") + python_files("plugin_utils")
                if any(module == "subprocess" for module, _n in imports(p))]
    assert starters == ["module_utils/_host.py"]


GRAMMAR_RE = re.compile(r're\.compile\(r"(\^[^"]*)"(, *[^)]*)?\)')


def grammar_problems(text):
    """Whole-string patterns (``r"^...$"``: grammars a value must match) that end in ``$`` (which also takes
    a trailing newline) or lack ``re.ASCII`` (``\\d`` would take any Unicode digit). Prefix tests
    (``r"^MCX"``) are not grammars."""
    out = []
    for match in GRAMMAR_RE.finditer(text):
        pattern, flags = match.group(1), match.group(2) or ""
        if pattern.endswith("$") or (pattern.endswith("\\Z") and "ASCII" not in flags):
            out.append(pattern)
    return out


@pytest.mark.parametrize("path", [p for p in python_files("module_utils") + python_files("plugin_utils")
                                  if "_parsers" not in p.parts], ids=lambda p: str(p.relative_to(PLUGINS)))
def test_grammars_are_whole_string_and_ascii(path):
    assert grammar_problems(path.read_text()) == []


def test_the_checks_see_a_violation(tmp_path):
    """The walkers above find what they look for (a rule that cannot fail is no rule)."""
    assert grammar_problems('A = re.compile(r"^[a-z]+$")\nB = re.compile(r"^\\d+\\Z", re.I)\n'
                            'C = re.compile(r"^[a-z]+\\Z", re.ASCII)\nD = re.compile(r"^MCX", re.I)\n') == [
        "^[a-z]+$", "^\\d+\\Z"]
    bad = tmp_path / "bad.py"
    bad.write_text("import subprocess\nfrom %smodule_utils._matrix import _hidden\n"
                   "from %splugin_utils._report import rows\n" % (PREFIX, PREFIX))
    assert ("subprocess", []) in list(imports(bad))
    assert list(collection_imports(bad)) == [("module_utils._matrix", ["_hidden"]), ("plugin_utils._report", ["rows"])]
    assert not is_module("module_utils._matrix", "_hidden")
    assert is_module("module_utils", "_values") and is_module("module_utils", "_parsers")


SECTIONS = ("input", "argv", "reading", "deciding", "writing", "the whole job", "reporting")


def sections(text):
    return re.findall(r"^# -{10,} (.+)$", text, flags=re.M)


@pytest.mark.parametrize("path", [p for p in python_files("module_utils") if "def converge(" in p.read_text()],
                         ids=lambda p: p.name)
def test_host_side_core_files_use_the_section_convention(path):
    """Each section of a core file with a converge() is one of docs/architecture.md's, perhaps qualified."""
    names = sections(path.read_text())
    assert names, "%s has no sections" % path.name
    odd = [name for name in names if not any(re.match(re.escape(word) + r"(\b|$)", name) for word in SECTIONS)]
    assert not odd, "%s: sections %s are not among %s" % (path.name, odd, ", ".join(SECTIONS))
    assert names[-1] in ("the whole job", "reporting") or "the whole job" in names, path.name


def test_the_section_check_sees_a_stray_name():
    text = "# ---------------------------------------------------------------- read\n"
    assert sections(text) == ["read"]
    assert not any(re.match(re.escape(word) + r"(\b|$)", "read") for word in SECTIONS)


INVENTORY_CHANGERS = ("add_host", "group_by")


def inventory_changes(text):
    """The tasks of a playbook or role that change the inventory while it runs (``add_host``, ``group_by``):
    ansible-core reconciles every host and group after each host added, the square of the hosts on a large
    inventory - site.yml orders its rollout by the play's host list instead."""
    found = []

    def walk(node):
        if isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            for key, value in node.items():
                if isinstance(key, str) and key.rsplit(".", 1)[-1] in INVENTORY_CHANGERS:
                    found.append(node.get("name") or key)
                walk(value)
    walk(yaml.safe_load(text))
    return found


@pytest.mark.parametrize("path", sorted(list(REPO.joinpath("playbooks").glob("*.yml"))
                                        + list(REPO.joinpath("roles").glob("*/tasks/*.yml"))),
                         ids=lambda p: str(p.relative_to(REPO)))
def test_no_task_changes_the_inventory_host_by_host(path):
    assert inventory_changes(path.read_text()) == []


def test_the_inventory_check_sees_a_task_that_adds_hosts():
    assert inventory_changes("- hosts: all\n  tasks:\n    - name: Order\n      ansible.builtin.add_host:\n"
                             "        name: x\n") == ["Order"]
    assert inventory_changes("- name: By rack\n  group_by:\n    key: rack\n") == ["By rack"]
