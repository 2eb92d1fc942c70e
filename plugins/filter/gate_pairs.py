# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The validation gate's filter gate_pairs (docs in the .yml file beside; logic in
plugins/plugin_utils/_gate_pairs.py)."""

from __future__ import annotations

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._filters import filter_errors, lazy

_gate_pairs = lazy("plugin_utils._gate_pairs")


@filter_errors()
def gate_pairs(plan, hosts=None, peers=None, cross_leaf="auto"):
    return _gate_pairs.pairs(plan, hosts, peers, cross_leaf=cross_leaf)


class FilterModule:
    def filters(self):
        return {"gate_pairs": gate_pairs}
