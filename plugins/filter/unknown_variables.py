# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The unknown_variables filter (docs in unknown_variables.yml beside; logic in plugins/plugin_utils/_variables.py)."""

from __future__ import annotations

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._filters import filter_errors, lazy

_variables = lazy("plugin_utils._variables")


@filter_errors()
def unknown_variables(names, hostvars):
    return _variables.unknown_variables(names, hostvars)


class FilterModule:
    def filters(self):
        return {"unknown_variables": unknown_variables}
