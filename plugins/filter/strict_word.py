# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The strict_word filter (docs in strict_word.yml beside; logic in plugins/plugin_utils/_roles.py)."""

from __future__ import annotations

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._filters import filter_errors
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._roles import strict_word


class FilterModule:
    def filters(self):
        return {"strict_word": filter_errors()(strict_word)}
