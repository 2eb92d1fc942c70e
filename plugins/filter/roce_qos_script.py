# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The roce_qos_script and roce_qos_problems filters (docs in the .yml files beside)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._roce_qos import settings_problems
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._roce_qos_script import replay_script


def roce_qos_script(interfaces, root="/", path="/usr/local/sbin/gpufabric-roce-qos"):
    try:
        return replay_script(interfaces, root, path)
    except MlnxError as err:
        raise AnsibleFilterError(str(err))


def roce_qos_problems(settings, host, leave=None):
    try:
        return settings_problems(settings, host, leave or ())
    except MlnxError as err:
        raise AnsibleFilterError(str(err))


class FilterModule:
    def filters(self):
        return {"roce_qos_script": roce_qos_script, "roce_qos_problems": roce_qos_problems}
