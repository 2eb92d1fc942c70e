# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""nvuesim: a stateful emulator of Cumulus Linux 5.x NVUE (nvued, its REST API and the nv CLI)."""
