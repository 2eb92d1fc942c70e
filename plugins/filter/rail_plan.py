# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rail plan filters rail_plan, rail_plan_problems, rail_cabling, rail_plan_servers, rail_plan_leaves and
rail_plan_spines (docs in the .yml files beside)."""

from __future__ import annotations

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._filters import filter_errors, lazy

_rail_plan = lazy("plugin_utils._rail_plan")
_roles = lazy("plugin_utils._roles")


@filter_errors()
def rail_plan(hosts, fabric, leaves=None, spines=None):
    return _rail_plan.plan(hosts, fabric, leaves, spines)


@filter_errors()
def rail_plan_problems(hosts, fabric, leaves=None, spines=None):
    return _rail_plan.plan_problems(hosts, fabric, leaves, spines)


@filter_errors()
def rail_cabling(rail_plan_):
    return _rail_plan.cabling(rail_plan_)


@filter_errors()
def rail_plan_servers(names, hostvars, management=True, devices=True):
    return _roles.rail_plan_servers(names, hostvars, management=management, devices=devices)


@filter_errors()
def rail_plan_leaves(names, hostvars):
    return _roles.rail_plan_leaves(names, hostvars)


@filter_errors()
def rail_plan_spines(names, hostvars):
    return _roles.rail_plan_spines(names, hostvars)


class FilterModule:
    def filters(self):
        return {"rail_plan": rail_plan, "rail_plan_problems": rail_plan_problems, "rail_cabling": rail_cabling,
                "rail_plan_servers": rail_plan_servers, "rail_plan_leaves": rail_plan_leaves,
                "rail_plan_spines": rail_plan_spines}
