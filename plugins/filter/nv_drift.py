# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NV profile filters nv_drift and nv_assign (docs in the .yml files beside: a DOCUMENTATION block here would be
shown by ansible-doc for both)."""

from __future__ import annotations

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._filters import filter_errors, lazy

_profiles = lazy("module_utils._profiles")


@filter_errors()
def nv_drift(devices, profiles, assignments):
    return _profiles.report(devices, profiles, assignments)


@filter_errors()
def nv_assign(devices, profiles, assignments):
    return _profiles.assign(devices, profiles, assignments)


class FilterModule:
    def filters(self):
        return {"nv_drift": nv_drift, "nv_assign": nv_assign}
