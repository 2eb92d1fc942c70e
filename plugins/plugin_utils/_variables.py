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
from collections.abc import Iterable, Mapping
from typing import Any

import yaml
from ansible_collections.gpufabric.mlnx.plugins.module_utils._validate import close_names
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._role_defaults import ROLES, role_defaults, spec_check
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._roles import read_vars

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
    collection sets is declared (a fact cache brings them back)."""
    known = declared()
    inputs = sorted(name for name, (kind, _w) in known.items() if kind == "input")
    unknown: dict[str, list] = {}
    for host in read_vars(names, hostvars, (), what="unknown_variables"):   # checks the names and hostvars
        variables = hostvars[host]
        for key in (variables.keys() if hasattr(variables, "keys") else ()):
            if isinstance(key, str) and key.startswith(PREFIX) and key not in known:
                unknown.setdefault(key, []).append(host)
    found = []
    for key, hosts in sorted(unknown.items()):
        guess = [PREFIX + name for name in close_names(key[len(PREFIX):], [n[len(PREFIX):] for n in inputs])]
        found.append("%s: %s is not a variable of gpufabric.mlnx: nothing reads it%s (docs/variables.md lists "
                     "every variable)" % (hosts_text(hosts), key, "; did you mean %s?" % guess[0] if guess else ""))
    return found


def value_problems(names: Iterable[str], hostvars: Mapping[str, Any], skip: Iterable[str] = ()) -> list[str]:
    """A problem per distinct value of a ``gpufabric_*`` variable of the hosts ``names`` that its role's argument
    spec refuses (type, elements, choices) - checked here, before any host is contacted, and not only when the role
    starts on a host in some later batch. Variables in ``skip`` are left to a caller that checks them itself. Hosts
    sharing a value are checked once, named together."""
    specs = input_specs()
    skipped = set(skip)
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
