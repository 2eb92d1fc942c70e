# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A check run's forecast for the modules that configure the compute rails (rail_interfaces, roce_qos).

In a ``--check`` run of playbooks/site.yml the steps before them only predict: the ofed step may be about to
install or change the driver (``gpufabric_ofed_result.action``), the activate step to reset or reboot the host
(``gpufabric_activation.method``) - e.g. a ConnectX-7 still in InfiniBand mode (``ibp24s0``) whose rail
``enp24s0np0`` appears only after its pending ``LINK_TYPE_P1=ETH`` is activated, or a new server without the driver.
Reading the host then would fail on rails that the run itself makes. ``waiting`` says, from those two words and the
rails that are on the host now, whether the module must report what it would do after that change instead of
reading the host. Outside check mode it never waits (the change has happened by then).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidValue, Refused

# ---------------------------------------------------------------------------------- input

# gpufabric_activation.method (the activate role): none, fwreset, reboot, pending (waits for someone else).
ACTIVATIONS = ("none", "fwreset", "reboot", "pending")
# The activations that happen in this run (the others leave the rails as they are now).
ACTIVATING = ("fwreset", "reboot")
# gpufabric_ofed_result.action (the ofed role): none, or the word of the change (install, upgrade, downgrade, repair).
DRIVER_ACTION_RE = re.compile(r"[a-z][a-z_-]{0,31}", re.ASCII)
DRIVER_ACTION_ALLOWED = "none, or the ofed step's action word (install, upgrade, downgrade, repair ...)"


def check_options(module: str, driver_action: Any, pending_activation: Any) -> tuple[str, str]:
    """The two options checked (InvalidValue naming the option and what is allowed): ``(driver_action,
    pending_activation)``; None is ``none``."""
    driver_action = "none" if driver_action is None else driver_action
    pending_activation = "none" if pending_activation is None else pending_activation
    if not isinstance(driver_action, str) or not DRIVER_ACTION_RE.fullmatch(driver_action):
        raise InvalidValue("%s: driver_action=%r is not a driver action (allowed: %s). Nothing was changed."
                           % (module, driver_action, DRIVER_ACTION_ALLOWED), parameter="driver_action",
                           allowed=DRIVER_ACTION_ALLOWED)
    if pending_activation not in ACTIVATIONS:
        raise InvalidValue("%s: pending_activation=%r is not an activation method (allowed: %s). Nothing was "
                           "changed." % (module, pending_activation, ", ".join(ACTIVATIONS)),
                           parameter="pending_activation", allowed=list(ACTIVATIONS))
    return driver_action, pending_activation


def not_planned(host: str, plan_hosts: Any, plan_group: Any, parameter: str = "rails") -> Refused:
    """The error of a host without entries in the rail plan (the rail_plan role's check, done by the module that
    takes the host's entries)."""
    return Refused("%s is not in the rail plan (it plans the %s hosts of group %s): add it to that group with its "
                   "rack and position." % (host, plan_hosts, plan_group or "servers"), device=host, parameter=parameter)


# ---------------------------------------------------------------------------------- reading

def absent(reader: Any, interfaces: Sequence[str]) -> list[str]:
    """The interfaces of ``interfaces`` that are not on the host now (no ``/sys/class/net/IF`` under the reader's
    root), in their order."""
    present = set(reader.netdevs())
    return [name for name in interfaces if name not in present]


# ---------------------------------------------------------------------------------- deciding

def waiting(reader: Any, interfaces: Sequence[str], *, check_mode: bool, driver_action: str = "none",
            pending_activation: str = "none", driver_reads_nothing: bool = False) -> dict | None:
    """None when the module reads the host as usual; else what the check run waits for:
    ``{"for": "driver"|"activation", "event": "the driver change (install)"|"the activation (fwreset)",
    "absent": [interfaces not on the host now]}``.

    In check mode, a driver change (``driver_action`` not ``none``) or an activation of this run
    (``pending_activation`` ``fwreset`` or ``reboot``) makes the module wait when one of ``interfaces`` is not on the
    host now. ``driver_reads_nothing``: a driver change alone makes it wait, without looking (roce_qos - the new
    driver's tools and sysfs may not be there yet, and it starts from its defaults)."""
    if not check_mode:
        return None
    driver = driver_action != "none"
    if driver and driver_reads_nothing:
        return {"for": "driver", "event": "the driver change (%s)" % driver_action, "absent": []}
    if not driver and pending_activation not in ACTIVATING:
        return None
    missing = absent(reader, interfaces)
    if not missing:
        return None
    if driver:
        return {"for": "driver", "event": "the driver change (%s)" % driver_action, "absent": missing}
    return {"for": "activation", "event": "the activation (%s)" % pending_activation, "absent": missing}
