# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The roce_qos_script filter (docs in roce_qos_script.yml beside)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._roce_qos import replay_script


def roce_qos_script(interfaces, root="/", path="/usr/local/sbin/gpufabric-roce-qos"):
    try:
        return replay_script(interfaces, root, path)
    except MlnxError as err:
        raise AnsibleFilterError(str(err))


class FilterModule:
    def filters(self):
        return {"roce_qos_script": roce_qos_script}
