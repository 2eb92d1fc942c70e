# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The leaf filters leaf_config, leaf_readiness, leaf_qos_problems and roce_qos_settings (docs in the .yml files
beside; logic in plugins/plugin_utils/_leaf.py and _preflight.py)."""

from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.gpufabric.mlnx.plugins.module_utils._validate import kind_of
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._filters import filter_errors
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._leaf import (
    LeafError, host_qos, leaf_config as _leaf_config, leaf_qos, qos_mismatches, readiness)
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._preflight import QOS_VARS
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._preflight import roce_qos_settings as _settings
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._roles import read_vars

QOS_READ = tuple(QOS_VARS)


@filter_errors()
def leaf_config(entry, name, settings=None):
    return _leaf_config(str(name), entry, {} if settings is None else settings)


@filter_errors()
def leaf_readiness(info, name, entry, expected=None, plan_leaves=None, hosts_qos=None):
    return readiness(str(name), entry, info, {} if expected is None else expected, plan_leaves=plan_leaves,
                     hosts_qos=hosts_qos)


@filter_errors()
def leaf_qos_problems(host_settings, leaf_tree):
    return qos_mismatches(host_qos(host_settings), leaf_qos(leaf_tree))


@filter_errors()
def roce_qos_settings(host_vars, hostvars=None):
    if hostvars is not None:  # names | roce_qos_settings(hostvars): {name: settings}
        read = read_vars(host_vars, hostvars, QOS_READ, what="roce_qos_settings")
        return {name: _settings(values) for name, values in read.items()}
    if not isinstance(host_vars, Mapping):
        raise LeafError("roce_qos_settings: the input must be a host's variables (hostvars[host]), not %s"
                        % kind_of(host_vars), parameter="_input")
    return _settings(host_vars)


class FilterModule:
    def filters(self):
        return {"leaf_config": leaf_config, "leaf_readiness": leaf_readiness, "leaf_qos_problems": leaf_qos_problems,
                "roce_qos_settings": roce_qos_settings}
