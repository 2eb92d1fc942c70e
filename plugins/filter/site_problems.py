# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The site_problems filter (docs in site_problems.yml beside; logic in plugins/plugin_utils/_variables.py)."""

from __future__ import annotations

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._filters import filter_errors, lazy

_variables = lazy("plugin_utils._variables")


@filter_errors()
def site_problems(servers, hostvars, all_servers=None, everyone=(), leaves=(), steps=None):
    return _variables.site_problems(servers, hostvars, all_servers, everyone, leaves, steps)


class FilterModule:
    def filters(self):
        return {"site_problems": site_problems}
