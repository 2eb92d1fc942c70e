# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side: what a rollout needs of each switch before batch 1 - from the inventory alone
(:func:`switch_problems`), then from a read-only login to each leaf (:func:`leaf_reads`).

A leaf or spine of the rollout is reached over NVUE's REST API (``ansible.netcommon.httpapi``) or the ``nv`` CLI over
SSH (``ansible.netcommon.network_cli``), with ``ansible_network_os: gpufabric.mlnx.nvue``, a user and a credential
(docs/leaves.md, "Inventory"). Without them the leaf gate holds every server cabled to the switch ("the leaf gate
did not run for it") and never names the cause; a vaulted credential whose vault secret was not given fails in the
first batch, after that batch's leaves were changed. Both are found here, before any host is contacted: the
credential is templated (so decrypted) on the controller, and the vault's own message is carried.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from jinja2 import Undefined

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._matrix import switch_os_target
from ansible_collections.gpufabric.mlnx.plugins.module_utils._validate import kind_of
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._roles import MISSING, read_vars
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._variables import hosts_text

CONNECTIONS = ("ansible.netcommon.httpapi", "ansible.netcommon.network_cli")
SHORT = {"httpapi": "ansible.netcommon.httpapi", "network_cli": "ansible.netcommon.network_cli"}
NETWORK_OS = ("gpufabric.mlnx.nvue",)
PLURAL = {"leaf": "leaves", "spine": "spines"}
# The credential of each connection, any one of which is enough.
CREDENTIALS = {
    "ansible.netcommon.httpapi": ("ansible_httpapi_password", "ansible_password"),
    "ansible.netcommon.network_cli": ("ansible_password", "ansible_ssh_pass", "ansible_ssh_private_key_file",
                                      "ansible_private_key_file"),
}


def _read(host_vars: Any, key: str) -> tuple[Any, str | None]:
    """``(value, None)``; ``(MISSING, None)`` when not set; ``(MISSING, why)`` when it is set but its template gives
    no value - a vaulted value whose vault secret was not given, an undefined variable - with Ansible's message."""
    if not hasattr(host_vars, "keys") or key not in host_vars:
        return MISSING, None
    try:
        value = host_vars[key]
    except Exception as err:  # pylint: disable=broad-exception-caught  # Ansible's errors, the vault's among them
        return MISSING, "%s: %s" % (type(err).__name__, (str(err).strip().splitlines() or [""])[0])
    if isinstance(value, Undefined):   # ansible-core 2.19 defers a template's error into an Undefined marker
        return MISSING, str(getattr(value, "_undefined_message", "") or "its template is undefined")
    return value, None


def _switch_problems(values: Mapping[str, Any], unreadable: Mapping[str, str], what: str) -> list[str]:
    """The problems of one switch's connection settings: ``values``, the variables read (MISSING when not set or
    not readable); ``unreadable``, why a variable that is set could not be read."""
    found = []
    connection = values.get("ansible_connection", MISSING)
    connection = SHORT.get(connection, connection) if isinstance(connection, str) else connection
    if connection not in CONNECTIONS:
        found.append("ansible_connection is %s: a %s is reached with %s (docs/leaves.md, \"Inventory\")" % (
            "not set" if connection is MISSING else json.dumps(connection, default=str), what,
            " or ".join(CONNECTIONS)))
    network_os = values.get("ansible_network_os", MISSING)
    if network_os not in NETWORK_OS:
        found.append("ansible_network_os is %s (allowed: %s)" % (
            "not set" if network_os is MISSING else json.dumps(network_os, default=str), ", ".join(NETWORK_OS)))
    if values.get("ansible_user", MISSING) in (MISSING, None, ""):
        found.append("ansible_user is not set (the switch's NVUE user, e.g. cumulus)")
    if connection in CREDENTIALS:
        names = CREDENTIALS[connection]
        failed = [(name, unreadable[name]) for name in names if name in unreadable]
        given = [name for name in names if values.get(name, MISSING) not in (MISSING, None, "")]
        for name, why in failed:
            found.append("%s cannot be read on the controller: %s (give the vault secret: --ask-vault-pass or "
                         "--vault-password-file)" % (name, why) if "vault" in why.lower() else
                         "%s cannot be read on the controller: %s" % (name, why))
        if not given and not failed:
            found.append("no credential: set one of %s (from Ansible Vault)" % ", ".join(names))
    return found


def switch_problems(names: Iterable[str] | None, hostvars: Mapping[str, Any], what: str = "leaf") -> list[str]:
    """A problem per distinct missing or unreadable connection setting of the switches ``names`` (leaves or
    spines), naming the switches that share it."""
    keys = ["ansible_connection", "ansible_network_os", "ansible_user"] + sorted(
        {key for names_ in CREDENTIALS.values() for key in names_})
    grouped: dict[str, list] = {}
    for name in names or ():
        read = {key: _read(hostvars[name], key) for key in keys}
        values = {key: value for key, (value, _why) in read.items()}
        unreadable = {key: why for key, (_value, why) in read.items() if why}
        for problem in _switch_problems(values, unreadable, what):
            grouped.setdefault(problem, []).append(name)
    return ["%s: %s" % (hosts_text(hosts, PLURAL.get(what, what + "s")), problem) for problem, hosts in grouped.items()]


# What the preflight of the leaves (roles/preflight/tasks/leaf.yml) leaves on each leaf, and what it needs to decide.
LEAF_READ = "__gpufabric_preflight_leaf_info"
LEAF_READ_VARS = (LEAF_READ, "gpufabric_matrix", "gpufabric_switch_image_base_url")


def leaf_reads(names: Iterable[str] | None, hostvars: Mapping[str, Any]) -> dict:
    """The preflight of the leaves, judged: ``{"read": [leaf], "unreachable": {leaf: why}, "problems": [sentence]}``
    (``read``: the leaves judged, in name order).

    Each leaf of ``names`` that the preflight read (``__gpufabric_preflight_leaf_info``, the result of
    ``nvue_info gather=[system, image]``; a leaf without it was not in this run or its leaf step is off, and is not
    judged): one that could not be read - unreachable, refused the login, answered an error - is ``unreachable`` with
    the connection's own message (its servers will be held, and it counts as an unreachable host); one that was read but
    whose pinned switch OS it would refuse (a downgrade without ``allow_downgrade``, no URL to fetch from, below the
    matrix's minimum with nothing to upgrade to) is a problem naming the leaf, both releases and the setting."""
    read = read_vars(names, hostvars, LEAF_READ_VARS, what="leaf_reads")
    judged, unreachable, problems = [], {}, []
    for leaf in sorted(read):
        values = read[leaf]
        result = values.get(LEAF_READ)
        if not isinstance(result, Mapping) or result.get("skipped"):
            continue
        judged.append(leaf)
        system = result.get("system")
        if result.get("unreachable") or result.get("failed") or not isinstance(system, Mapping):
            why = str(result.get("msg") or "").strip() or (
                "nvue_info returned no system and no message" if system is None
                else "nvue_info returned system as %s, not a mapping" % kind_of(system))
            unreachable[leaf] = why
            continue
        matrix = values.get("gpufabric_matrix")
        if matrix is None:
            continue
        try:
            target = switch_os_target(system.get("release"), result.get("image"), matrix,
                                      values.get("gpufabric_switch_image_base_url"))
        except MlnxError as err:   # the matrix itself: the inventory check lists it
            problems.append("%s: its pinned switch OS cannot be decided: %s" % (leaf, err.msg))
            continue
        if target.get("action") == "refused":
            problems.append("%s: %s" % (leaf, target.get("reason")))
    return {"read": judged, "unreachable": unreachable, "problems": problems}
