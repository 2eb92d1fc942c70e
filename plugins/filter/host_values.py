# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host_values filter (docs in host_values.yml beside; logic in plugins/plugin_utils/_roles.py)."""

from __future__ import annotations

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._filters import filter_errors, lazy

_roles = lazy("plugin_utils._roles")


@filter_errors()
def host_values(names, hostvars, keys, *, default=None):
    return _roles.host_values(names, hostvars, keys, default=default)


class FilterModule:
    def filters(self):
        return {"host_values": host_values}
