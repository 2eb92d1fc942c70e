# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The roce_qos_script and roce_qos_problems filters (docs in the .yml files beside)."""

from __future__ import annotations

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._filters import filter_errors, lazy

_roce_qos = lazy("module_utils._roce_qos")
_script = lazy("module_utils._roce_qos_script")


@filter_errors()
def roce_qos_script(interfaces, root="/", path="/usr/local/sbin/gpufabric-roce-qos"):
    return _script.replay_script(interfaces, root=root, path=path)


@filter_errors()
def roce_qos_problems(settings, host, leave=None):
    return _roce_qos.settings_problems(settings, host, leave=leave)


class FilterModule:
    def filters(self):
        return {"roce_qos_script": roce_qos_script, "roce_qos_problems": roce_qos_problems}
