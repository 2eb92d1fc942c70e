"""docs/role_facts.md is the one list of the facts that pass between the roles: every ``gpufabric_*`` fact that a
role's or playbook's task sets (``set_fact`` or ``register``) is a row, every row is set by something, and its
"set by" and "read by" columns are what the YAML says. A role that starts setting or reading such a fact without
the table saying so fails here."""
import ast
import functools
import re
import sys

import pytest
import yaml

from _paths import REPO

TABLE = REPO / "docs" / "role_facts.md"
SET_FACT = ("ansible.builtin.set_fact", "ansible.legacy.set_fact", "set_fact")
TASK_LISTS = ("tasks", "pre_tasks", "post_tasks", "handlers", "block", "rescue", "always")
# Where a role reads its variables: not meta/ (argument_specs describe facts in prose) and not README.md.
READ_DIRS = ("tasks", "handlers", "vars", "defaults", "templates")


def tasks_of(items):
    """Every task of a task list, a play list or a block, blocks included and walked into."""
    for item in items or []:
        if not isinstance(item, dict):
            continue
        yield item
        for key in TASK_LISTS:
            if isinstance(item.get(key), list):
                yield from tasks_of(item[key])


@functools.lru_cache(maxsize=None)
def module_facts(name):
    """The ``gpufabric_*`` facts that the collection's module (or action) ``name`` returns as ``ansible_facts``: the
    keys its RETURN documentation lists under ``ansible_facts`` - a task of such a module sets them as a set_fact
    would (one task instead of a call and a set_fact) - and the option a task must give for that, when the
    ``returned`` of ``ansible_facts`` names one (``when O(matrix) is given``), else None: ``(facts, option)``."""
    path = REPO / "plugins" / "modules" / ("%s.py" % name)
    if not path.is_file():
        return frozenset(), None
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "RETURN" for t in node.targets):
            returned = yaml.safe_load(ast.literal_eval(node.value)) or {}
            doc = returned.get("ansible_facts") or {}
            option = re.search(r"\bO\((\w+)\)", str(doc.get("returned") or ""), re.ASCII)
            return (frozenset(key for key in doc.get("contains") or {} if key.startswith("gpufabric_")),
                    option.group(1) if option else None)
    return frozenset(), None


def facts_set(items):
    """The ``gpufabric_*`` names that the tasks of ``items`` set."""
    out = set()
    for task in tasks_of(items):
        for key in task:
            if str(key).startswith("gpufabric.mlnx."):
                facts, option = module_facts(key.split(".")[-1])
                if option is None or (isinstance(task[key], dict) and option in task[key]):
                    out.update(facts)
        for module in SET_FACT:
            if isinstance(task.get(module), dict):
                out.update(key for key in task[module] if key.startswith("gpufabric_"))
        if str(task.get("register", "")).startswith("gpufabric_"):
            out.add(task["register"])
    return out


def setters():
    """{fact: {"role/tasks/file.yml" or "playbooks/file.yml", ...}} from the YAML of every role and playbook."""
    found = {}
    sources = [(path, path.relative_to(REPO / "roles").as_posix()) for path in sorted(REPO.glob("roles/*/tasks/*.yml"))]
    sources += [(path, path.relative_to(REPO / "roles").as_posix()) for path in sorted(REPO.glob("roles/*/handlers/*.yml"))]
    sources += [(path, path.relative_to(REPO).as_posix()) for path in sorted(REPO.glob("playbooks/*.yml"))]
    for path, name in sources:
        for fact in facts_set(yaml.safe_load(path.read_text())):
            found.setdefault(fact, set()).add(name)
    return found


def owner(source):
    """The role of ``role/tasks/x.yml``, or the playbook ``playbooks/x.yml`` itself."""
    return source if source.startswith("playbooks/") else source.split("/")[0]


def readers(fact, setter_owners):
    """The roles and playbooks other than the setters' whose tasks, vars, defaults or templates name ``fact``."""
    word = re.compile(r"(?<![\w.])%s(?!\w)" % re.escape(fact))
    out = set()
    for role in sorted(p for p in (REPO / "roles").iterdir() if p.is_dir()):
        files = [f for d in READ_DIRS for f in (role / d).rglob("*") if f.is_file()]
        if role.name not in setter_owners and any(word.search(f.read_text()) for f in files):
            out.add(role.name)
    for playbook in sorted(REPO.glob("playbooks/*.yml")):
        name = playbook.relative_to(REPO).as_posix()
        if name not in setter_owners and word.search(playbook.read_text()):
            out.add(name)
    return out


def table():
    """{fact: (set by, read by)} from the rows of docs/role_facts.md."""
    rows = {}
    for line in TABLE.read_text().splitlines():
        match = re.match(r"\| `(gpufabric_\w+)` \| ([^|]+) \| ([^|]+) \| [^|]+ \| [^|]+ \|$", line)
        if match:
            fact, set_by, read_by = match.group(1), match.group(2).strip(), match.group(3).strip()
            assert fact not in rows, "%s is listed twice" % fact
            rows[fact] = ({s.strip() for s in set_by.split(",")},
                          set() if read_by == "-" else {r.strip() for r in read_by.split(",")})
    return rows


def test_the_table_lists_exactly_the_facts_the_roles_set():
    listed, found = set(table()), set(setters())
    assert sorted(found - listed) == [], "set by a role but not in docs/role_facts.md"
    assert sorted(listed - found) == [], "in docs/role_facts.md but set by nothing"
    assert "gpufabric_nic_devices" in found and "gpufabric_platform_reboot_required" in found   # the walk works


@pytest.mark.parametrize("fact", sorted(setters()))
def test_set_by_and_read_by_are_what_the_yaml_says(fact):
    set_by, read_by = table().get(fact, (None, None))
    where = setters()[fact]
    assert set_by == where, "%s: set by %s" % (fact, ", ".join(sorted(where)))
    found = readers(fact, {owner(s) for s in where})
    assert read_by == found, "%s: read by %s" % (fact, ", ".join(sorted(found)) or "-")


def test_every_role_readme_links_the_table():
    missing = [p.parent.name for p in sorted(REPO.glob("roles/*/README.md")) if "docs/role_facts.md" not in p.read_text()]
    assert missing == []


def test_the_walk_finds_facts_in_blocks_registers_and_plays():
    plays = [{"hosts": "all", "pre_tasks": [{"ansible.builtin.set_fact": {"gpufabric_a": 1, "__x": 2}}],
              "tasks": [{"block": [{"set_fact": {"gpufabric_b": 1, "cacheable": True}}],
                         "rescue": [{"ansible.builtin.command": "true", "register": "gpufabric_c"}]}],
              "roles": ["x"]}]
    assert facts_set(plays) == {"gpufabric_a", "gpufabric_b", "gpufabric_c"}


def test_a_module_that_returns_facts_sets_them(tmp_path, monkeypatch):
    """A task of a collection module whose RETURN documents ``ansible_facts`` sets those facts; other keys and other
    modules' tasks set nothing."""
    modules = tmp_path / "plugins" / "modules"
    modules.mkdir(parents=True)
    (modules / "m.py").write_text('RETURN = r"""\nansible_facts:\n  description: x\n  returned: always\n  type: dict\n'
                                  '  contains:\n    gpufabric_m_done: {description: y, type: bool}\n    other: {description: z, type: int}\n'
                                  'msg: {description: m, returned: always, type: str}\n"""\n')
    (modules / "n.py").write_text('RETURN = r"""\nmsg: {description: m, returned: always, type: str}\n"""\n')
    (modules / "o.py").write_text('RETURN = r"""\nansible_facts:\n  description: x\n  returned: when O(plan) is given\n'
                                  '  type: dict\n  contains:\n    gpufabric_o_done: {description: y, type: bool}\n"""\n')
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    module_facts.cache_clear()
    try:
        tasks = [{"gpufabric.mlnx.m": {}}, {"gpufabric.mlnx.n": {}}, {"gpufabric.mlnx.absent": {}}, {"other.ns.m": {}}]
        assert facts_set(tasks) == {"gpufabric_m_done"}
        # facts returned only with an option: set by a task that gives it, not by one that does not
        assert facts_set([{"gpufabric.mlnx.o": {"verify": True}}]) == set()
        assert facts_set([{"gpufabric.mlnx.o": {"plan": "{{ x }}"}}]) == {"gpufabric_o_done"}
    finally:
        module_facts.cache_clear()
