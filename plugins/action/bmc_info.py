# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action of gpufabric.mlnx.bmc_info (docs in plugins/modules/bmc_info.py): the BIOS step's Redfish client
(plugin_utils/_bios.py, as the platform_bios action runs it) reads the BMC's one ComputerSystem, on the controller -
the preflight's proof that each BMC answers with its credentials. It reads only and sets no fact."""

from __future__ import annotations

from ansible_collections.gpufabric.mlnx.plugins.action.platform_bios import ARGUMENT_SPEC, CONNECTION
from ansible_collections.gpufabric.mlnx.plugins.action.platform_bios import ActionModule as PlatformBios
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils import _bios

SPEC = {name: ARGUMENT_SPEC[name] for name in CONNECTION}


class ActionModule(PlatformBios):
    _VALID_ARGS = frozenset(SPEC)
    SPEC = SPEC

    def work(self, client, args, check_mode):
        del check_mode  # reads only
        system = _bios.probe(client, host=args["host"])
        return {"changed": False, "system": system,
                "msg": "%s: BMC %s answers: %s (%s)" % (args["host"], args["bmc"], system["uri"], system["model"])}
