# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared documentation: module attributes and the NVIDIA tool selection options.

A module names the standard fragment (``gpufabric.mlnx._attributes``: what each attribute means) and one
of ``.full``, ``.no_diff`` or ``.info_module`` (how far it supports them), like community.general's
``attributes`` fragment; ``.tools`` adds the MFT/mstflint options of the modules that run NVIDIA tools.
"""

from __future__ import annotations


class ModuleDocFragment:
    # Standard attribute docs, declared once.
    DOCUMENTATION = r"""
options: {}
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
  idempotent:
    description:
      - When run twice in a row outside check mode, with the same arguments, the second invocation indicates no change.
      - This assumes that the system controlled/queried by the module has not changed in a relevant way.
"""

    # A module that changes the host, reports a diff and converges: use with the standard fragment
    # (gpufabric.mlnx._attributes and gpufabric.mlnx._attributes.full). A module adds its own
    # ``details`` under ``attributes`` where it has something to say; the support levels come from here.
    FULL = r"""
options: {}
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  idempotent:
    support: full
"""

    # Like FULL, but the module returns no diff (its results say what changed).
    NO_DIFF = r"""
options: {}
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  idempotent:
    support: full
"""

    # A module that only reads: use with the standard fragment.
    INFO_MODULE = r"""
options: {}
attributes:
  check_mode:
    support: full
    details: This action does not modify state.
  diff_mode:
    support: N/A
    details: This action does not modify state.
  idempotent:
    support: full
"""

    TOOLS = r"""
options:
  tool:
    description:
      - Which family of NVIDIA tools to run.
      - V(mft) runs NVIDIA Firmware Tools names (C(mlxconfig), C(flint), C(mlxfwmanager), C(mlxfwreset), C(mst)).
      - V(mstflint) runs the inbox mstflint names (C(mstconfig), C(mstflint), C(mstfwmanager), C(mstfwreset)).
      - V(auto) uses MFT when its C(mlxconfig) is on PATH, else mstflint.
    type: str
    choices: [auto, mft, mstflint]
    default: auto
  timeout:
    description:
      - Seconds one tool invocation may run before it is stopped and the device reported failed; above 0.
    type: int
    default: 900
notes:
  - Tools are run with argument lists (never a shell) and C(LANG=C).
  - When another process holds a device's semaphore the call is retried a few times with a growing delay, then fails with the tool's message.
requirements:
  - NVIDIA Firmware Tools (MFT) or mstflint on the managed host.
  - pciutils (C(lspci)) for device discovery.
"""
