# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rail plan filters rail_plan, rail_plan_problems and rail_cabling (docs in the .yml files beside)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._rail_plan import cabling, plan, plan_problems


def rail_plan(hosts, fabric):
    try:
        return plan(hosts, fabric)
    except MlnxError as err:
        raise AnsibleFilterError(str(err))


def rail_plan_problems(hosts, fabric):
    try:
        return plan_problems(hosts, fabric)
    except MlnxError as err:
        raise AnsibleFilterError(str(err))


def rail_cabling(rail_plan_):
    try:
        return cabling(rail_plan_)
    except MlnxError as err:
        raise AnsibleFilterError(str(err))


class FilterModule:
    def filters(self):
        return {"rail_plan": rail_plan, "rail_plan_problems": rail_plan_problems, "rail_cabling": rail_cabling}
