# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pcie_degraded filter (docs in pcie_degraded.yml beside; logic in plugins/plugin_utils/_roles.py)."""

from __future__ import annotations

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._filters import filter_errors, lazy

_roles = lazy("plugin_utils._roles")


@filter_errors()
def pcie_degraded(devices):
    return _roles.pcie_degraded(devices)


class FilterModule:
    def filters(self):
        return {"pcie_degraded": pcie_degraded}
