# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The leaf filters leaf_config, leaf_readiness, leaf_qos_problems and roce_qos_settings (docs in the .yml files
beside; logic in plugins/plugin_utils/_leaf.py and _role_defaults.py)."""

from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._filters import filter_errors, lazy

_leaf = lazy("plugin_utils._leaf")
_role_defaults = lazy("plugin_utils._role_defaults")
_roles = lazy("plugin_utils._roles")
_validate = lazy("module_utils._validate")


@filter_errors()
def leaf_config(entry, name, settings=None):
    return _leaf.leaf_config(str(name), entry, {} if settings is None else settings)


@filter_errors()
def leaf_readiness(info, name, entry, expected=None, plan_leaves=None, hosts_qos=None):
    return _leaf.readiness(str(name), entry, info, {} if expected is None else expected, plan_leaves=plan_leaves,
                           hosts_qos=hosts_qos)


@filter_errors()
def leaf_qos_problems(host_settings, leaf_tree):
    return _leaf.qos_mismatches(_leaf.host_qos(host_settings), _leaf.leaf_qos(leaf_tree))


@filter_errors()
def roce_qos_settings(host_vars, hostvars=None):
    if hostvars is not None:  # names | roce_qos_settings(hostvars): {name: settings}
        read = _roles.read_vars(host_vars, hostvars, tuple(_role_defaults.QOS_VARS), what="roce_qos_settings")
        return {name: _role_defaults.roce_qos_settings(values) for name, values in read.items()}
    if not isinstance(host_vars, Mapping):
        raise _leaf.LeafError("roce_qos_settings: the input must be a host's variables (hostvars[host]), not %s"
                              % _validate.kind_of(host_vars), parameter="_input")
    return _role_defaults.roce_qos_settings(host_vars)


class FilterModule:
    def filters(self):
        return {"leaf_config": leaf_config, "leaf_readiness": leaf_readiness, "leaf_qos_problems": leaf_qos_problems,
                "roce_qos_settings": roce_qos_settings}
