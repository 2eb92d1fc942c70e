# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rail plan filters rail_plan, rail_plan_problems, rail_cabling and rail_plan_servers (docs in the .yml files
beside)."""

from __future__ import annotations

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._rail_plan import cabling, plan, plan_problems
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._filters import filter_errors
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._roles import rail_plan_servers as servers


@filter_errors()
def rail_plan(hosts, fabric):
    return plan(hosts, fabric)


@filter_errors()
def rail_plan_problems(hosts, fabric):
    return plan_problems(hosts, fabric)


@filter_errors()
def rail_cabling(rail_plan_):
    return cabling(rail_plan_)


@filter_errors()
def rail_plan_servers(names, hostvars, management=True, devices=True):
    return servers(names, hostvars, management=management, devices=devices)


class FilterModule:
    def filters(self):
        return {"rail_plan": rail_plan, "rail_plan_problems": rail_plan_problems, "rail_cabling": rail_cabling,
                "rail_plan_servers": rail_plan_servers}
