# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rail plan filters rail_plan, rail_plan_problems and rail_cabling (docs in the .yml files beside)."""

from __future__ import annotations

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._rail_plan import cabling, plan, plan_problems
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._filters import filter_errors


@filter_errors()
def rail_plan(hosts, fabric):
    return plan(hosts, fabric)


@filter_errors()
def rail_plan_problems(hosts, fabric):
    return plan_problems(hosts, fabric)


@filter_errors()
def rail_cabling(rail_plan_):
    return cabling(rail_plan_)


class FilterModule:
    def filters(self):
        return {"rail_plan": rail_plan, "rail_plan_problems": rail_plan_problems, "rail_cabling": rail_cabling}
