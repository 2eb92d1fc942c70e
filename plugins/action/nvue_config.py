# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action of gpufabric.mlnx.nvue_config: the module runs in the task's worker (plugin_utils/_nvue_action.py)."""

from __future__ import annotations

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._nvue_action import NvueActionModule as ActionModule

__all__ = ["ActionModule"]
