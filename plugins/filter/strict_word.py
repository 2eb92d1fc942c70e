# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The strict_word filter (docs in strict_word.yml beside; logic in plugins/plugin_utils/_roles.py)."""

from __future__ import annotations

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._filters import filter_errors, lazy

_roles = lazy("plugin_utils._roles")


@filter_errors()
def strict_word(value, grammar, parameter, host=None):
    return _roles.strict_word(value, grammar, parameter, host)


class FilterModule:
    def filters(self):
        return {"strict_word": strict_word}
