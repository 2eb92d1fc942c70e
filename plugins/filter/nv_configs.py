# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nv_configs filter (docs in nv_configs.yml beside; logic in plugins/plugin_utils/_roles.py)."""

from __future__ import annotations

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._filters import filter_errors, lazy

_roles = lazy("plugin_utils._roles")


@filter_errors()
def nv_configs(devices, profiles, assignments):
    return _roles.nv_configs(devices, profiles, assignments)


class FilterModule:
    def filters(self):
        return {"nv_configs": nv_configs}
