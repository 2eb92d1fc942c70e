# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Report filters: inventory rows, Markdown and CSV tables (docs in the .yml files beside)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._report import (
    csv_table, inventory_rows, markdown_table)


def _wrap(func):
    def inner(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except MlnxError as err:
            raise AnsibleFilterError(str(err))
    inner.__name__ = func.__name__
    return inner


class FilterModule:
    def filters(self):
        return {
            "inventory_rows": _wrap(lambda devices, host, profiles=None, assignments=None:
                                    inventory_rows(host, devices, profiles, assignments)),
            "markdown_table": _wrap(markdown_table),
            "csv_table": _wrap(csv_table),
        }
