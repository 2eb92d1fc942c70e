# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drift report: what a check-mode run of site.yml predicts it would change, per host or leaf and per setting,
with the value the host has (actual) and the value the inventory wants (expected).

The drift callback (plugins/callback/drift.py) hands every task result to :func:`settings` and keeps the host's
state; :func:`document` makes the report (schema 1) and :func:`markdown` the page people read. Pure: no Ansible
object reaches this module, only the result dicts, names and booleans, so the callback stays thin and the tests call
these functions directly.
"""

from __future__ import annotations

import difflib
import json
import os

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._nvue_keys import RENAMES, spell

SCHEMA = 1
NEWEST = "%d.%d.%d" % max(row.since for row in RENAMES)

# What a task predicts, by its module (its short name): the setting group of the report. A task of another module is
# grouped by its role (STEPS), or "other".
MODULE_GROUPS = {
    "ofed_driver": "driver",
    "mlx_firmware": "firmware",
    "mlxconfig": "nv_parameters",
    "mlx_fwreset": "activation",
    "reboot": "activation",
    "kernel_cmdline": "kernel_parameters",
    "platform_power": "power_policy",
    "platform_host": "platform",
    "platform_bios": "bios",
    "redfish_config": "bios",
    "idrac_redfish_command": "bios",
    "rail_interfaces": "rails",
    "roce_qos": "roce_qos",
    "nvue_config": "leaf_configuration",
    "nvue_image": "leaf_release",
    "nvue_leaf": "leaf_configuration",  # its pinned switch OS step (its result's image) is leaf_release: settings()
}
STEPS = {
    "platform": "platform", "ofed": "driver", "firmware": "firmware", "nic_config": "nv_parameters",
    "activate": "activation", "rails": "rails", "roce_qos": "roce_qos", "leaf": "leaf_configuration",
}
# The group of a task by the task file it comes from, where a role's step has more than one group (the platform
# role: BIOS over Redfish, kernel parameters, power policy, PCIe).
TASK_FILES = {"bios.yml": "bios", "bios_jobs.yml": "bios", "kernel.yml": "kernel_parameters",
              "power.yml": "power_policy", "pcie.yml": "pcie"}
# A module whose task changes settings of several groups: the group of each diff by its header's start (the platform
# role's host side: its kernel command line, its power policy and the files that keep it).
DIFF_GROUPS = {"platform_host": (("kernel command line", "kernel_parameters"), ("power policy", "power_policy"),
                                 ("/", "power_policy"))}
GROUP_TITLES = {
    "driver": "driver", "firmware": "firmware", "nv_parameters": "NV parameters", "activation": "activation",
    "bios": "BIOS", "kernel_parameters": "kernel parameters", "power_policy": "power policy", "pcie": "PCIe links",
    "platform": "platform", "rails": "rails", "roce_qos": "RoCE QoS", "leaf_configuration": "leaf configuration",
    "leaf_release": "leaf release", "other": "other",
}
# A text diff (a file's content) is kept to this many lines of unified diff in the report.
TEXT_LINES = 40
# A value longer than this is cut in the Markdown table (the JSON keeps it whole).
CELL_CHARS = 120

_ABSENT = object()


def group_of(module: str | None, role: str | None, task_file: str | None = None) -> str:
    """The setting group of a task: by its module, else by the role's task file, else by its role; else other."""
    short = (module or "").rsplit(".", 1)[-1]
    if short in MODULE_GROUPS:
        return MODULE_GROUPS[short]
    base = os.path.basename(task_file or "")
    if base in TASK_FILES:
        return TASK_FILES[base]
    return STEPS.get((role or "").rsplit(".", 1)[-1], "other")


def _diff_group(module, diff, default):
    """The group of one diff of a task of ``module`` (``DIFF_GROUPS`` by the diff's header), else ``default``."""
    header = str(diff.get("before_header") or diff.get("after_header") or "")
    for start, group in DIFF_GROUPS.get((module or "").rsplit(".", 1)[-1], ()):
        if header.startswith(start):
            return group
    return default


def _flatten(before, after, path, out):
    """The leaves of two nested values that differ: ``(path, actual, expected)``, absent sides as _ABSENT. Two
    mappings (or a mapping and an absent side) are walked key by key; anything else is one leaf."""
    present = [side for side in (before, after) if side is not _ABSENT]
    if present and all(isinstance(side, dict) for side in present):
        before = {} if before is _ABSENT else before
        after = {} if after is _ABSENT else after
        for key in sorted(set(before) | set(after), key=str):
            _flatten(before.get(key, _ABSENT), after.get(key, _ABSENT), path + [str(key)], out)
    elif before != after:
        out.append((path, before, after))


def _one_spelling(tree):
    """A leaf's NVUE tree with the keys NVUE renamed (_nvue_keys: ``enable on`` -> ``state enabled`` in 5.15) in the
    newest spelling, so that a leaf's ``enable on`` and a plan's ``state enabled`` are one setting, not two rows.
    A tree the table cannot read is left as it is: the report shows what was said."""
    if not isinstance(tree, dict):
        return tree
    try:
        return spell(tree, NEWEST)
    except MlnxError:
        return tree


def _value(value):
    return None if value is _ABSENT else value


def _text_diff(before: str, after: str, before_name: str, after_name: str) -> list[str]:
    lines = list(difflib.unified_diff(before.splitlines(), after.splitlines(), before_name, after_name, lineterm=""))
    if len(lines) > TEXT_LINES:
        lines = lines[:TEXT_LINES] + ["... %d more lines" % (len(lines) - TEXT_LINES)]
    return lines


def _diffs(result: dict) -> list[dict]:
    diff = result.get("diff")
    if isinstance(diff, dict):
        diff = [diff]
    return [d for d in diff or () if isinstance(d, dict) and ("before" in d or "after" in d)]


def settings(result: dict, task: str, module: str | None = None, role: str | None = None,
             task_file: str | None = None) -> list[dict]:
    """The settings one changed task result predicts, each ``{group, task, setting, actual, expected}`` (and
    ``diff``, the unified diff lines, for a text).

    A diff of mappings gives a row per leaf that differs (``setting`` its path joined with ``/``; a side without the
    key is null: absent); a diff of texts (a file's content) one row with ``diff``; a changed result without a diff
    one row named by the task, its ``msg`` as the expected change.
    """
    if (module or "").rsplit(".", 1)[-1] == "nvue_leaf":
        return _leaf_settings(result, task, role, task_file)
    task_group = group_of(module, role, task_file)
    rows = []
    for diff in _diffs(result):
        group = _diff_group(module, diff, task_group)
        before, after = diff.get("before", _ABSENT), diff.get("after", _ABSENT)
        if group == "leaf_configuration":
            before, after = _one_spelling(before), _one_spelling(after)
        if isinstance(before, dict) or isinstance(after, dict):
            found = []
            _flatten(before if isinstance(before, dict) else _ABSENT, after if isinstance(after, dict) else _ABSENT,
                     [], found)
            rows.extend({"group": group, "task": task, "setting": "/".join(path) or task,
                         "actual": _value(was), "expected": _value(wanted)} for path, was, wanted in found)
        elif isinstance(before, str) and isinstance(after, str):
            if before != after:
                name = diff.get("after_header") or diff.get("before_header") or task
                rows.append({"group": group, "task": task, "setting": str(name),
                             "actual": None, "expected": None,
                             "diff": _text_diff(before, after, str(diff.get("before_header") or "actual"),
                                                str(diff.get("after_header") or "expected"))})
        elif before != after:
            rows.append({"group": group, "task": task, "setting": task, "actual": _value(before),
                         "expected": _value(after)})
    if not rows:
        msg = result.get("msg")
        rows.append({"group": task_group, "task": task, "setting": task, "actual": None,
                     "expected": msg if isinstance(msg, str) and msg else "changed"})
    return rows


def _leaf_settings(result: dict, task: str, role: str | None, task_file: str | None) -> list[dict]:
    """The settings of a changed nvue_leaf result: its pinned switch OS step's (``image``: one ``release`` row, the
    running release and the pinned one) and its configuration's (the rest, as nvue_config's - only when its
    ``nvue_diff`` holds a change)."""
    image = result.get("image") if isinstance(result.get("image"), dict) else {}
    rows = [{"group": MODULE_GROUPS["nvue_image"], "task": task, "setting": "release",
             "actual": image.get("release_before"), "expected": image.get("release")}] if image.get("changed") else []
    config = {key: value for key, value in result.items() if key != "image"}
    if config.get("nvue_diff") or not rows:
        rows.extend(settings(config, task, "nvue_config", role, task_file))
    return rows


def document(hosts: dict, leaves=(), playbook: str | None = None, started: str | None = None,
             finished: str | None = None) -> dict:
    """The report (schema 1) of the hosts seen so far.

    ``hosts``: ``{name: {"settings": [...], "failures": [{"task", "msg"}], "unreachable": bool, "ran": int}}`` as the
    callback keeps them; ``leaves``: the names that are leaf switches. ``result`` is ``drift`` when any host has a
    setting to change, else ``incomplete`` when a host failed or was unreachable (its settings are unknown past the
    failure), else ``compliant``; ``finished`` is null while the run goes on.
    """
    leaves = set(leaves or ())
    out, drifted, failed, unreachable = {}, [], [], []
    for name in sorted(hosts):
        host = hosts[name]
        rows = list(host.get("settings") or ())
        failures = list(host.get("failures") or ())
        status = ("unreachable" if host.get("unreachable") else "failed" if failures
                  else "drift" if rows else "compliant")
        if rows:
            drifted.append(name)
        if host.get("unreachable"):
            unreachable.append(name)
        elif failures:
            failed.append(name)
        groups = sorted({row["group"] for row in rows})
        out[name] = {"kind": "leaf" if name in leaves else "server", "status": status, "groups": groups,
                     "settings": rows, "failures": failures}
    result = "drift" if drifted else "incomplete" if failed or unreachable else "compliant"
    return {"schema": SCHEMA, "result": result, "playbook": playbook, "started": started, "finished": finished,
            "summary": {"hosts": len(out), "drifted": drifted, "failed": failed, "unreachable": unreachable,
                        "settings": sum(len(h["settings"]) for h in out.values())},
            "hosts": out}


def _cell(value) -> str:
    if value is None:
        return "-"
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    text = " ".join(text.split())
    if len(text) > CELL_CHARS:
        text = text[:CELL_CHARS - 3] + "..."
    return text.replace("|", "\\|").replace("`", "'")


def markdown(doc: dict) -> str:
    """The drift report as Markdown: the verdict, then per drifted host a table of its settings (group, setting,
    actual, expected, the task), text diffs as diff blocks, then the hosts that failed or were unreachable."""
    summary = doc["summary"]
    state = "" if doc.get("finished") else " (the run had not ended when this was written)"
    lines = ["# Drift report", ""]
    if doc["result"] == "compliant":
        lines.append("No drift: the %d hosts and leaves are as the inventory says%s." % (summary["hosts"], state))
    else:
        lines.append("**%s**: %d of %d hosts and leaves would change (%d settings); %d failed, %d unreachable%s." % (
            doc["result"], len(summary["drifted"]), summary["hosts"], summary["settings"], len(summary["failed"]),
            len(summary["unreachable"]), state))
    if doc.get("playbook"):
        lines += ["", "Playbook `%s`, started %s, finished %s." % (
            doc["playbook"], doc.get("started") or "-", doc.get("finished") or "-")]
    for name, host in doc["hosts"].items():
        if not host["settings"]:
            continue
        lines += ["", "## %s (%s): %s" % (name, host["kind"], ", ".join(GROUP_TITLES.get(g, g) for g in host["groups"])),
                  "", "| what | setting | actual | expected | task |", "|---|---|---|---|---|"]
        texts = []
        for row in host["settings"]:
            lines.append("| %s | %s | %s | %s | %s |" % (
                GROUP_TITLES.get(row["group"], row["group"]), _cell(row["setting"]),
                "(text below)" if row.get("diff") else _cell(row["actual"]),
                "(text below)" if row.get("diff") else _cell(row["expected"]), _cell(row["task"])))
            if row.get("diff"):
                texts.append(row)
        for row in texts:
            lines += ["", "`%s`:" % _cell(row["setting"]), "", "```diff"] + row["diff"] + ["```"]
    broken = [(n, h) for n, h in doc["hosts"].items() if h["status"] in ("failed", "unreachable")]
    if broken:
        lines += ["", "## Not known: failed or unreachable", "", "| host | status | task | message |",
                  "|---|---|---|---|"]
        for name, host in broken:
            for failure in host["failures"] or [{"task": None, "msg": None}]:
                lines.append("| %s | %s | %s | %s |" % (name, host["status"], _cell(failure.get("task")),
                                                        _cell(failure.get("msg"))))
    return "\n".join(lines) + "\n"


def write(doc: dict, directory: str) -> dict:
    """``drift.json`` and ``drift.md`` in ``directory`` (made when missing), each written whole to a temporary file
    and renamed, so a reader never sees half a report -> ``{"json": path, "md": path}``."""
    os.makedirs(directory, exist_ok=True)
    paths = {}
    for fmt, text in (("json", json.dumps(doc, indent=2, sort_keys=True) + "\n"), ("md", markdown(doc))):
        path = os.path.join(directory, "drift.%s" % fmt)
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
        paths[fmt] = path
    return paths
