# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rail plan filters rail_plan, rail_plan_problems, rail_cabling, rail_plan_servers, rail_plan_leaves and
rail_plan_spines (docs in the .yml files beside)."""

from __future__ import annotations

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._rail_plan import cabling, plan, plan_problems
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._filters import filter_errors
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._roles import rail_plan_leaves as leaves_of
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._roles import rail_plan_servers as servers
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._roles import rail_plan_spines as spines_of


@filter_errors()
def rail_plan(hosts, fabric, leaves=None, spines=None):
    return plan(hosts, fabric, leaves, spines)


@filter_errors()
def rail_plan_problems(hosts, fabric, leaves=None, spines=None):
    return plan_problems(hosts, fabric, leaves, spines)


@filter_errors()
def rail_cabling(rail_plan_):
    return cabling(rail_plan_)


@filter_errors()
def rail_plan_servers(names, hostvars, management=True, devices=True):
    return servers(names, hostvars, management=management, devices=devices)


@filter_errors()
def rail_plan_leaves(names, hostvars):
    return leaves_of(names, hostvars)


@filter_errors()
def rail_plan_spines(names, hostvars):
    return spines_of(names, hostvars)


class FilterModule:
    def filters(self):
        return {"rail_plan": rail_plan, "rail_plan_problems": rail_plan_problems, "rail_cabling": rail_cabling,
                "rail_plan_servers": rail_plan_servers, "rail_plan_leaves": rail_plan_leaves,
                "rail_plan_spines": rail_plan_spines}
