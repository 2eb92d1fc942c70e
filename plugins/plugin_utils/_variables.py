# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side: the collection's variable contract - every ``gpufabric_*`` name a playbook, role or plugin of
this collection reads, declared once - and the check of an inventory's names against it.

A name is declared by exactly one of:

- an option of a role's ``meta/argument_specs.yml`` (any entry point) or a variable of a role's
  ``defaults/main.yml`` - the role's inputs, with their types and documentation where Ansible keeps them;
- ``PLAYBOOK_VARS`` below - the inputs of the playbooks themselves and the per-switch inventory variables that no
  role's argument spec carries (docs/variables.md); ``REHEARSAL_VARS`` - those of the rehearsal's inventory;
- ``FACTS`` below - what the collection sets on a host while it runs (set_fact, registered results): declared so
  that a fact cache is not mistaken for a typo.

``unknown_variables`` is what ``check_inventory`` and ``site.yml``'s first play run before any host is contacted:
every ``gpufabric_*`` variable of any host that is not declared is refused, with the closest declared name
(a misspelt ``gpufabric_batch_sise`` would otherwise be ignored and the rollout cut into one batch of every server).
tests/unit/test_variable_contract.py derives the names the code reads and fails when one is not declared.
"""

from __future__ import annotations

import functools
import glob
import json
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

import yaml
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.gpufabric.mlnx.plugins.module_utils._validate import close_names
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils import _drain
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._role_defaults import (
    ROLES, role_defaults, role_options, spec_check)
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._roles import read_vars
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._workflow import NODE_RE, NODE_WHAT, PART_RE

PREFIX = "gpufabric_"

# The inputs of the playbooks and the per-switch inventory variables that no role's argument spec declares.
PLAYBOOK_VARS = {
    "gpufabric_check_hosts": "check_inventory.yml: the host pattern to check (default servers)",
    "gpufabric_report_hosts": "inventory_report.yml: the host pattern to report (default servers)",
    "gpufabric_cabling_hosts": "cabling_plan.yml: the host pattern of the plan (default the rail plan's group)",
    "gpufabric_delivery_check_hosts": "delivery_check.yml: the host pattern to check (default servers)",
    "gpufabric_snapshot_dir": "snapshot.yml: where the switches' configuration snapshots are written",
    "gpufabric_validate_exit_codes": "validate.yml: exit 1 when a server is quarantined (a strategy plugin; -e only)",
    "gpufabric_leaf_asn": "a leaf's BGP ASN when the inventory names spines (docs/leaves.md)",
    "gpufabric_leaf_port_template": "a leaf's port template of the rail plan (docs/rails.md)",
    "gpufabric_spine_plane": "a spine's plane (its rail with uplinks.planes=rail, docs/leaves.md)",
    "gpufabric_nv_profiles": "the NV parameter profiles, {name: {PARAM: value}} (docs/nic_config.md)",
    "gpufabric_nv_profile_assignments": "which cards get which NV profile, first match wins (docs/nic_config.md)",
    "gpufabric_sysfs_root": "where sysfs and configfs are (/ on a real host; the simulated lab sets it)",
}

# The rehearsal's inventory (tests/twin: the whole cluster without hardware, driven by site.yml): read by its
# connection plugin and its generator, so a rehearsal inventory passes the same checks as a site's.
REHEARSAL_VARS = {
    "gpufabric_twin_env": "the simulators' environment of a rehearsed server (tests/twin connection plugin)",
    "gpufabric_twin_sim": "where the simulated NVIDIA tools are (tests/twin connection plugin)",
    "gpufabric_twin_root": "a rehearsed server's own directory (tests/twin)",
    "gpufabric_twin_leaf": "marks a rehearsed leaf (tests/twin)",
    "gpufabric_twin_profile": "the hardware profile a rehearsed server is built from (tests/twin)",
}

# What the collection sets while it runs, by the role or playbook that sets it.
FACTS = {
    "gpufabric_activation": "activate: how this run activated the host's changes",
    "gpufabric_batch_hosts": "site.yml: the servers of the current batch",
    "gpufabric_delivery_check_result": "delivery_check: the host's delivery findings",
    "gpufabric_failure": "site.yml: why a host failed in the rollout (step, task, message)",
    "gpufabric_firmware_image_problems": "firmware: the image problems found on the controller",
    "gpufabric_firmware_pending_devices": "firmware: cards burned but not yet running the new firmware",
    "gpufabric_firmware_pending_reset": "firmware: whether a reset is pending",
    "gpufabric_gate": "validate: the validation gate's plan and verdicts",
    "gpufabric_gate_results": "validate: the measured results of the gate",
    "gpufabric_held": "leaf_ready: why the host is held by its leaves",
    "gpufabric_leaf_gate": "leaf_ready: the leaf's readiness for its servers",
    "gpufabric_leaf_status": "leaf: what the leaf step did on the leaf",
    "gpufabric_nic_devices": "preflight: the cards mlx_info read",
    "gpufabric_nv_pending_devices": "nic_config: cards whose NV configuration waits for a reset",
    "gpufabric_nv_pending_reset": "nic_config: whether a reset is pending",
    "gpufabric_ofed_changed": "ofed: whether the driver changed",
    "gpufabric_ofed_reboot_required": "ofed: whether the driver needs a reboot",
    "gpufabric_ofed_result": "ofed: the driver step's result",
    "gpufabric_platform_bios_apply": "platform: the BIOS settings applied",
    "gpufabric_platform_bios_jobs": "platform: the BMC jobs of the BIOS settings",
    "gpufabric_platform_bios_pending": "platform: BIOS settings pending a reboot",
    "gpufabric_platform_bios_pending_reset": "platform: whether a BIOS reboot is pending",
    "gpufabric_platform_bios_summary": "platform: the BIOS step's summary",
    "gpufabric_platform_kernel_args_missing": "platform: kernel parameters not yet in effect",
    "gpufabric_platform_power_drift": "platform: power policy that differs from the profile",
    "gpufabric_platform_reboot_required": "platform: whether a reboot is needed",
    "gpufabric_pull": "pull.yml: the play runs under ansible-pull",
    "gpufabric_rail_plan": "rail_plan: the rail plan of the run",
    "gpufabric_rail_plan_problems": "rail_plan: the plan's problems",
    "gpufabric_roce_qos": "roce_qos: the host's RoCE QoS result",
    "gpufabric_roce_qos_problems": "roce_qos: the RoCE QoS problems",
    "gpufabric_rollout": "site.yml: the rollout's batches and results",
}

# Names in the code that are not Ansible variables: shell variables of generated scripts, a Python attribute, and
# misspellings that the documentation shows as examples.
NOT_VARIABLES = {
    "gpufabric_connection": "an attribute the nvue action plugins set on the module object (_nvue_action.py)",
    "gpufabric_batch_sise": "the example misspelling in this module's documentation",
    "gpufabric_d": "a shell variable of the nvue cliconf's runner script",
    "gpufabric_rc": "a shell variable of the nvue cliconf's runner script",
    "gpufabric_roce_qos_cnp_dcsp": "the example misspelling in the preflight's documentation",
}


@functools.lru_cache(maxsize=None)
def _options() -> tuple:
    """``((role, name, option), ...)``: every option of every entry point of the roles' argument specs, read once."""
    found = []
    for path in sorted(glob.glob(os.path.join(ROLES, "*", "meta", "argument_specs.yml"))):
        role = path.split(os.sep)[-3]
        with open(path, encoding="utf-8") as stream:
            specs = (yaml.safe_load(stream) or {}).get("argument_specs") or {}
        for entry in specs.values():
            found.extend((role, name, option) for name, option in ((entry or {}).get("options") or {}).items())
    return tuple(found)


@functools.lru_cache(maxsize=None)
def role_inputs() -> dict:
    """name -> ``"<role> argument spec"`` / ``"<role> defaults"`` for every role of this collection."""
    found: dict[str, str] = {}
    for role, name, _option in _options():
        found.setdefault(name, "%s argument spec" % role)
    for path in sorted(glob.glob(os.path.join(ROLES, "*", "defaults", "main.yml"))):
        role = path.split(os.sep)[-3]
        for name in role_defaults(role):
            found.setdefault(name, "%s defaults" % role)
    return found


@functools.lru_cache(maxsize=None)
def input_specs() -> dict:
    """name -> ``{type, elements, choices}`` of every ``gpufabric_*`` option of the roles' argument specs: what
    Ansible checks of a variable when its role starts (tests/unit/test_variable_contract.py: the roles that declare
    one name agree)."""
    found: dict[str, dict] = {}
    for _role, name, option in _options():
        if name.startswith(PREFIX):
            found.setdefault(name, {k: v for k, v in option.items() if k in ("type", "elements", "choices")})
    return found


@functools.lru_cache(maxsize=None)
def declared() -> dict:
    """Every declared ``gpufabric_*`` name -> ``(kind, where)``, kind ``input`` or ``fact``."""
    out = {name: ("input", where) for name, where in role_inputs().items() if name.startswith(PREFIX)}
    out.update((name, ("input", "playbook: " + what)) for name, what in PLAYBOOK_VARS.items())
    out.update((name, ("input", "rehearsal: " + what)) for name, what in REHEARSAL_VARS.items())
    out.update((name, ("fact", what)) for name, what in FACTS.items())
    return out


def hosts_text(hosts: Iterable[str], noun: str = "hosts") -> str:
    """``srv-a`` for one host; ``7 hosts (srv-a, ..., srv-e, ...)`` for several (the first five, sorted)."""
    hosts = sorted(hosts)
    if len(hosts) == 1:
        return hosts[0]
    return "%d %s (%s%s)" % (len(hosts), noun, ", ".join(hosts[:5]), ", ..." if len(hosts) > 5 else "")


def unknown_variables(names: Iterable[str], hostvars: Mapping[str, Any]) -> list[str]:
    """A problem per ``gpufabric_*`` variable of the hosts ``names`` that the collection does not declare, with the
    closest declared input (compared without the shared prefix, which would make every name look close): one
    sentence per name, naming every host that has it. Only the names are read (no value is templated). A fact the
    collection sets is declared (a fact cache brings them back), and so are the artifacts of an AWX workflow's nodes
    (``gpufabric_rollout_part_<node>``, ``gpufabric_gate_part_<node>``: _workflow.PART_RE)."""
    known = declared()
    inputs = sorted(name for name, (kind, _w) in known.items() if kind == "input")
    unknown: dict[str, list] = {}
    for host in read_vars(names, hostvars, (), what="unknown_variables"):   # checks the names and hostvars
        variables = hostvars[host]
        for key in (variables.keys() if hasattr(variables, "keys") else ()):
            if isinstance(key, str) and key.startswith(PREFIX) and key not in known and not PART_RE.fullmatch(key):
                unknown.setdefault(key, []).append(host)
    found = []
    for key, hosts in sorted(unknown.items()):
        guess = [PREFIX + name for name in close_names(key[len(PREFIX):], [n[len(PREFIX):] for n in inputs])]
        found.append("%s: %s is not a variable of gpufabric.mlnx: nothing reads it%s (docs/variables.md lists "
                     "every variable)" % (hosts_text(hosts), key, "; did you mean %s?" % guess[0] if guess else ""))
    return found


def never_refused(spec: Mapping) -> bool:
    """Whether an option's argument spec (``{type, elements, choices}``) refuses no value at all: a ``str`` (the
    default type) converts whatever it gets, a ``raw`` takes it as it is - unless choices or elements say more. Such a
    value is not read for the check: reading it renders it (a templated BMC address, a vaulted password: on
    example-1250, compiling the templates of 1,250 hosts was most of the inventory check)."""
    return spec.get("type", "str") in ("str", "raw") and "choices" not in spec and "elements" not in spec


def value_problems(names: Iterable[str], hostvars: Mapping[str, Any], skip: Iterable[str] = ()) -> list[str]:
    """A problem per distinct value of a ``gpufabric_*`` variable of the hosts ``names`` that its role's argument
    spec refuses (type, elements, choices) - checked here, before any host is contacted, and not only when the role
    starts on a host in some later batch. Variables in ``skip`` are left to a caller that checks them itself. Hosts
    sharing a value are checked once, named together."""
    specs = input_specs()
    skipped = set(skip) | {key for key, spec in specs.items() if never_refused(spec)}
    hosts = list(names)
    keys = sorted({key for host in hosts for key in (hostvars[host].keys() if hasattr(hostvars[host], "keys") else ())
                   if key in specs and key not in skipped})
    read = read_vars(hosts, hostvars, keys, what="value_problems")
    distinct: dict[tuple, tuple] = {}
    for host, values in read.items():
        for key, value in values.items():
            mark = (key, json.dumps(value, sort_keys=True, default=repr))
            distinct.setdefault(mark, (value, []))[1].append(host)
    found = []
    for (key, _mark), (value, where) in sorted(distinct.items()):
        found.extend("%s: %s" % (hosts_text(where), error) for error in spec_check({key: specs[key]}, {key: value})[1])
    return found


# ------------------------------------------------------------------------------------------ site.yml's first play

# The play settings of site.yml: read once for the whole rollout (serial, the batch gate), so one value for all.
PLAY_SETTINGS = ("gpufabric_batch_size", "gpufabric_batch_by", "gpufabric_max_fail_percentage")
# A batch size as a play's serial takes it: a whole number of at least 1 or a percentage 1%-100%.
BATCH_SIZE_RE = re.compile(r"[1-9][0-9]*|([1-9][0-9]?|100)%", re.ASCII)
# The steps of a server in site.yml with the roles whose required options they need: site.yml enters each step's
# role without Ansible's argument-spec task (a task per host each time a role starts, tasks/site.yml of each role),
# so what that task would refuse - a value of the wrong type or choice, a required option not set - is refused
# here, for every server at once, before any host is contacted.
SERVER_STEPS = (("preflight", "preflight"), ("ofed", "ofed"), ("firmware", "firmware"))


def _enabled(values: Mapping, step: str) -> bool:
    """Whether the step's switch ``gpufabric_<step>_enabled`` (default true) is on in ``values``."""
    try:
        return boolean(values.get("gpufabric_%s_enabled" % step, True), strict=True)
    except TypeError:
        return True   # not a bool: value_problems names it


def _batch_size_problem(value: Any) -> list[str]:
    sizes = value if isinstance(value, (list, tuple)) else [value]
    good = bool(sizes) and all(not isinstance(size, (bool, Mapping, list, tuple))
                               and BATCH_SIZE_RE.fullmatch(str(size)) for size in sizes)
    return [] if good else [
        "gpufabric_batch_size=%s is not a batch size: allowed is a whole number of at least 1, a percentage 1%%-100%%, "
        "or a non-empty list of those" % json.dumps(value, default=repr)]


def _range_problems(values: Mapping) -> list[str]:
    """What a type cannot say of one host's play settings: the batch grammar and the ranges."""
    found = _batch_size_problem(values["gpufabric_batch_size"]) if "gpufabric_batch_size" in values else []
    try:
        percentage = float(values.get("gpufabric_max_fail_percentage", 0))
    except (TypeError, ValueError):
        percentage = 0.0   # not a number: value_problems names it
    if not 0 <= percentage <= 100:
        found.append("gpufabric_max_fail_percentage=%s is outside 0-100" % values["gpufabric_max_fail_percentage"])
    try:
        unreachable = int(values.get("gpufabric_max_unreachable", 0))
    except (TypeError, ValueError):
        unreachable = 0
    if unreachable < 0:
        found.append("gpufabric_max_unreachable=%s is negative: allowed is 0 or more" % values["gpufabric_max_unreachable"])
    node = values.get("gpufabric_workflow_node")
    if node is not None and not (isinstance(node, str) and NODE_RE.fullmatch(node)):
        found.append("gpufabric_workflow_node=%r is not a workflow node name (allowed: %s)" % (node, NODE_WHAT))
    return found


def _snapshot(hostvars: Mapping[str, Any], hosts: Iterable[str], valued: set, settings: set) -> dict:
    """``{host: {name: value}}``: every ``gpufabric_*`` name of each host of ``hosts``, each host's variables taken
    once; the value where a check reads it - every declared input of the hosts in ``valued`` (the run's servers and the
    leaves), the play and drain settings of the hosts in ``settings`` (the inventory's servers) - else None (only the
    name is checked: a vaulted value needs no secret, a large one is not templated). A template that is undefined
    counts as not set, as read_vars has it. A host that is not in ``hostvars`` is left out (the checks name it)."""
    light = set(PLAY_SETTINGS) | set(_drain.PLAY_SETTINGS) | set(_drain.NODE_KEYS.values())
    inputs = set(input_specs()) | light | {"gpufabric_max_unreachable"} | {
        "gpufabric_%s_enabled" % step for step, _role in SERVER_STEPS}
    inputs |= {name for _step, role in SERVER_STEPS for name in role_options(role)}
    out = {}
    for host in hosts:
        try:
            if host not in hostvars:
                continue
        except TypeError:
            continue
        variables = hostvars[host]
        names = [key for key in (variables.keys() if hasattr(variables, "keys") else ()) if isinstance(key, str)
                 and key.startswith(PREFIX)]
        values = {}
        for key in names:
            if (host in valued and key in inputs) or (host in settings and key in light):
                value = read_vars([host], {host: variables}, (key,)).get(host, {}).get(key, _UNSET)
                if value is not _UNSET:
                    values[key] = value
            else:
                values[key] = None
        out[host] = values
    return out


_UNSET = object()


def site_problems(servers: Iterable[str], hostvars: Mapping[str, Any], all_servers: Iterable[str] | None = None,
                  everyone: Iterable[str] = (), leaves: Iterable[str] = (), steps: Iterable[str] | None = None) -> list[str]:
    """Every problem of the variables of ``playbooks/site.yml``, one sentence each, hosts that share one named together
    (``hosts_text``):

    - of the run's ``servers`` (the play's hosts) and the ``leaves``: values their roles' argument specs refuse
      (``value_problems``: type, elements, choices - what Ansible's argument-spec task would refuse when the role
      starts, checked here once for every host), a required option not set for a step that runs, the batch grammar
      and the ranges;
    - of ``all_servers`` (the inventory's servers; default ``servers``): the drain's settings and the play settings
      that differ between servers (read once for the whole rollout);
    - of ``everyone`` (every host of the inventory): names nothing reads (``unknown_variables``).

    ``steps``: the steps of the run whose required options are checked (default every step of site.yml; pull mode
    has no preflight)."""
    names = list(read_vars(servers, hostvars, (), what="site_problems", parameter="servers"))
    inventory = names if all_servers is None else list(read_vars(all_servers, hostvars, (), what="site_problems",
                                                                 parameter="all_servers"))
    # Every host's variables taken from hostvars ONCE (Ansible's hostvars computes a host's variables each time a host
    # is looked up - about 15 ms a host of example-1250, three passes over 1,570 hosts were a minute): the checks
    # below read this snapshot, the names of every host and the values they check of the hosts they check.
    hostvars = _snapshot(hostvars, list(dict.fromkeys(list(everyone) + names + inventory + list(leaves))),
                         set(names + list(leaves)), set(inventory))
    found = unknown_variables(list(dict.fromkeys(list(everyone) + names)), hostvars)
    found.extend("%s (docs/operations.md)" % problem for problem in _drain.problems(inventory, hostvars))
    found.extend(value_problems(list(dict.fromkeys(names + list(leaves))), hostvars))
    needs = {step: sorted(name for name, option in role_options(role).items()
                          if option.get("required") and name not in role_defaults(role))
             for step, role in SERVER_STEPS if steps is None or step in steps}
    keys = PLAY_SETTINGS + ("gpufabric_max_unreachable", "gpufabric_workflow_node") + tuple(
        "gpufabric_%s_enabled" % step for step in needs) + tuple(
        sorted({name for names_ in needs.values() for name in names_}))
    read = read_vars(names, hostvars, keys, what="site_problems", parameter="servers")

    required: dict[str, list] = {}
    for host, values in read.items():
        unset: dict[str, list] = {}
        for step, names_ in needs.items():
            for name in names_:
                if name not in values and _enabled(values, step):
                    unset.setdefault(name, []).append(step)
        for name, steps in unset.items():
            what = "%s is not set: the step%s %s need%s it" % (
                name, "s" if len(steps) > 1 else "", ", ".join(steps), "" if len(steps) > 1 else "s")
            required.setdefault(what, []).append(host)
    found.extend("%s: %s (docs/variables.md)" % (hosts_text(hosts), what) for what, hosts in required.items())

    ranges: dict[str, list] = {}
    for host, values in read.items():
        for problem in _range_problems(values):
            ranges.setdefault(problem, []).append(host)
    found.extend("%s: %s (docs/variables.md)" % (hosts_text(hosts), what) for what, hosts in ranges.items())

    differ = []
    settings = read_vars(inventory, hostvars, PLAY_SETTINGS, what="site_problems", parameter="all_servers")
    for key in PLAY_SETTINGS:
        seen = list(dict.fromkeys(json.dumps(values.get(key, "(unset)"), default=repr, sort_keys=True)
                                  for values in settings.values()))
        if len(seen) > 1:
            differ.append("%s differs between servers (%s)" % (key, ", ".join(seen)))
    if differ:
        found.append("%s: a play setting is read once for the whole rollout, so it must be the same on every server - "
                     "set it in group_vars/all or with -e (docs/variables.md)" % "; ".join(differ))
    return found
