# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side: the collection's roles' defaults and argument specs as written, and the RoCE QoS settings a host's
(or a leaf's) variables give with them.

Kept apart from the preflight (which re-exports these names) so that a task reading one host's RoCE QoS settings -
the leaf role's configuration of every leaf - imports this and not the whole preflight.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from typing import Any

import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.gpufabric.mlnx.plugins.module_utils._validate import kind_of

# The collection's roles (this file is plugins/plugin_utils/_role_defaults.py).
ROLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "roles")
# The roce_qos role's options, by the name of the module option each one is.
QOS_OPTIONS = ("interfaces", "trust", "pfc_priorities", "ecn_priorities", "cnp_dscp", "cnp_802p_prio", "cma_roce_tos",
               "traffic_class", "prio_tc", "tsa", "tc_bw")
QOS_VARS = {"gpufabric_roce_qos_" + option: option for option in QOS_OPTIONS}

_UNSET = object()


@functools.lru_cache(maxsize=None)
def role_defaults(role: str) -> dict:
    """The variables of ``roles/ROLE/defaults/main.yml`` of this collection, as written (templates not rendered):
    what a host that does not set a variable gets, read from the one place the role keeps them."""
    with open(os.path.join(ROLES, role, "defaults", "main.yml"), encoding="utf-8") as stream:
        return yaml.safe_load(stream) or {}


@functools.lru_cache(maxsize=None)
def role_options(role: str) -> dict:
    """The options of ``roles/ROLE/meta/argument_specs.yml`` (entry point main): what Ansible checks of the role's
    variables when the role starts."""
    with open(os.path.join(ROLES, role, "meta", "argument_specs.yml"), encoding="utf-8") as stream:
        return (yaml.safe_load(stream) or {})["argument_specs"]["main"]["options"]


def plain(value: Any) -> Any:
    """``value`` with every mapping a dict and every list a list, recursively: hostvars gives ansible-core's lazy
    template containers, and the argument-spec check deep-copies what it checks - a lazy container's deep copy takes
    its templating context along (0.5 s a value on example-1250: 10 of the variable check's 15 s)."""
    if isinstance(value, Mapping):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    if isinstance(value, tuple):
        return tuple(plain(item) for item in value)
    return value


def spec_check(spec: Mapping[str, Mapping], values: Mapping) -> tuple[dict, list[str]]:
    """``values`` against an argument spec (``{name: option}``) as Ansible checks a role's variables when the role
    starts: ``(the values as the spec converts them, [problems])``. A value ansible-core's own check raises on
    instead of naming it (an ``int`` of ``"INF"``: OverflowError) is a problem naming that variable."""
    values = {name: plain(value) for name, value in values.items()}
    try:
        result = ArgumentSpecValidator({name: dict(option) for name, option in spec.items()}).validate(dict(values))
    except (OverflowError, ValueError, TypeError) as err:
        bad = [name for name in values if _raises(spec[name], values[name])] or list(values)
        return {}, ["%s is %s, not a value of type %s (%s)" % (name, kind_of(values[name]),
                                                               spec[name].get("type", "str"), err) for name in bad]
    return result.validated_parameters, list(result.error_messages)


def _raises(option: Mapping, value: Any) -> bool:
    try:
        ArgumentSpecValidator({"x": dict(option)}).validate({"x": value})
    except (OverflowError, ValueError, TypeError):
        return True
    return False


def with_default(variables: Mapping, name: str, role: str) -> Any:
    """The host's value of the variable ``name``, else ROLE's default of it."""
    value = variables.get(name, _UNSET)
    return role_defaults(role).get(name) if value is _UNSET else value


def roce_qos_settings(host_vars: Mapping) -> dict:
    """The RoCE QoS settings a host's variables give (the roce_qos role's options but ``interfaces``, with the role's
    defaults for what the host does not set): what a host sends with, or - read from a leaf's variables - what the
    leaf role configures the leaf to match."""
    return {option: with_default(host_vars, var, "roce_qos") for var, option in QOS_VARS.items()
            if option != "interfaces"}
