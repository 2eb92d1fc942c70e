# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Report filters: inventory rows, Markdown and CSV tables (docs in the .yml files beside)."""

from __future__ import annotations

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._filters import filter_errors, lazy

report = lazy("plugin_utils._report")


@filter_errors()
def inventory_rows(devices, host, profiles=None, assignments=None):
    return report.inventory_rows(host, devices, profiles, assignments)


@filter_errors()
def markdown_table(rows, columns=None):
    return report.markdown_table(rows, columns=report.INVENTORY_COLUMNS if columns is None else columns)


@filter_errors()
def csv_table(rows, columns=None):
    return report.csv_table(rows, columns=report.INVENTORY_COLUMNS if columns is None else columns)


class FilterModule:
    def filters(self):
        return {"inventory_rows": inventory_rows, "markdown_table": markdown_table, "csv_table": csv_table}
