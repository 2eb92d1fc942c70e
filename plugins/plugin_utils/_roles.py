# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side: what the roles compute between the inventory, one task's result and the next task.

These were Jinja programs in the roles' vars and tasks (loops with ``namespace`` accumulators and
``combine`` chains); here they are plain functions with tests. Each one is behind a filter of the same
name in ``plugins/filter/`` (docs there):

- :func:`rail_plan_servers` - the servers the ``rail_plan`` filter plans, from every host's variables;
- :func:`rail_plan_leaves` - the inventory's leaves group as the ``rail_plan`` filter checks it;
- :func:`rail_plan_spines` - the inventory's spines group as the ``rail_plan`` filter plans the uplinks with it;
- :func:`host_values` - one value per host of the play (``preflight``, ``delivery_check``);
- :func:`read_vars` - the variables of many hosts, each host's read once (the preflight's ``inventory_problems``);
- :func:`nv_configs` - the ``configs`` of ``gpufabric.mlnx.mlxconfig``, one per assigned NV profile;
- :func:`pcie_degraded` - one sentence per PCIe link below the card's capability (``platform``);
- :func:`strict_word` - a value the roles' templates write into a udev rule, systemd unit or script,
  refused unless it matches a strict grammar.

``hostvars`` is anything that maps a host name to that host's variables: Ansible's ``hostvars``
(which templates each variable when it is read) or, in tests, a plain dict.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from jinja2 import Undefined

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidValue
from ansible_collections.gpufabric.mlnx.plugins.module_utils._platform import (
    GOVERNOR_ALLOWED, GOVERNOR_RE, SAFE_PATH_ALLOWED, SAFE_PATH_RE)
from ansible_collections.gpufabric.mlnx.plugins.module_utils._platform import pcie_degraded as _pcie_degraded
from ansible_collections.gpufabric.mlnx.plugins.module_utils._profiles import configs
from ansible_collections.gpufabric.mlnx.plugins.module_utils._validate import IFNAME_ALLOWED, IFNAME_RE, kind_of

try:
    import netaddr
except ImportError:  # pragma: no cover - the rail plan needs netaddr on the controller anyway
    netaddr = None

MISSING = object()


def _get(variables: Any, key: str) -> Any:
    """``variables[key]``, or MISSING where Jinja's ``default`` would give its default: not a mapping, not set, or a
    template that is undefined (hostvars template each variable when it is read, and give Jinja's Undefined)."""
    if not hasattr(variables, "keys") or key not in variables:
        return MISSING
    value = variables[key]
    return MISSING if isinstance(value, Undefined) else value


def _is_ip_like(value: Any) -> bool:
    """What ``value | ansible.utils.ipaddr`` (no query) finds truthy: an IP address or network as netaddr
    reads it, or a whole number (ipaddr turns it into an address). Host names are not."""
    if not value or value is True:
        return False
    if str(value).isdigit():
        return int(str(value)) < 2 ** 128
    if netaddr is None or not isinstance(value, str):
        return False
    try:
        netaddr.IPNetwork(value)
    except (netaddr.AddrFormatError, ValueError, TypeError):
        return False
    return True


def host_names(names: Any, what: str, parameter: str = "names") -> list[str]:
    """``names`` as a list of host names ([] for None); InvalidValue naming ``what`` and ``parameter`` (``names[i]``
    for an entry) when it is not a list of strings."""
    if names is None:
        return []
    if isinstance(names, (str, bytes, Mapping)) or not isinstance(names, Iterable):
        raise InvalidValue("%s: %s must be a list of host names, not %s" % (what, parameter, kind_of(names)),
                           parameter=parameter, allowed="a list of host names")
    out = []
    for index, name in enumerate(names):
        if not isinstance(name, str):
            raise InvalidValue("%s: %s[%d] is %s, not a host name" % (what, parameter, index, kind_of(name)),
                               parameter="%s[%d]" % (parameter, index), allowed="a host name of the inventory")
        out.append(name)
    return out


class HostCache(Mapping):
    """``hostvars`` with each host's variables looked up once: ansible-core's hostvars compute a host's variables
    again each time the host is looked up (get_vars: a few ms a host of example-1250), and a check that reads the
    hosts in several passes - the inventory check looked each server up 7 times - pays that each time."""

    def __init__(self, hostvars: Mapping[str, Any]):
        self._hostvars = hostvars
        self._seen: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._seen:
            self._seen[name] = self._hostvars[name]
        return self._seen[name]

    def __contains__(self, name: object) -> bool:
        return name in self._seen or name in self._hostvars

    def __iter__(self):
        return iter(self._hostvars)

    def __len__(self) -> int:
        return len(self._hostvars)


def _hosts(names: Any, hostvars: Any, what: str, parameter: str = "names") -> list[tuple[str, Any]]:
    """``[(name, variables)]`` of ``names`` (a list of host names) in ``hostvars``; InvalidValue naming ``names[i]``
    for a name that is not a host there, and for ``names`` or ``hostvars`` of the wrong kind."""
    if names is None:
        return []
    if isinstance(names, (str, bytes, Mapping)) or not isinstance(names, Iterable):
        raise InvalidValue("%s: %s must be a list of host names, not %s" % (what, parameter, kind_of(names)),
                           parameter=parameter, allowed="a list of host names")
    if not hasattr(hostvars, "keys") or not hasattr(hostvars, "__getitem__"):
        raise InvalidValue("%s: hostvars must map host names to their variables, not %s" % (what, kind_of(hostvars)),
                           parameter="hostvars", allowed="hostvars")
    out = []
    for index, name in enumerate(names):
        try:
            known = name in hostvars
        except TypeError:   # an unhashable name
            known = False
        if not known:
            raise InvalidValue("%s: %s[%d] is %s, not a host of hostvars" % (what, parameter, index, kind_of(name)),
                               parameter="%s[%d]" % (parameter, index), allowed="a host name of the inventory")
        out.append((name, hostvars[name]))
    return out


# ------------------------------------------------------------------------------------------ inventory

# Every variable of a host that rail_plan_servers reads (read_vars of these gives it all it needs).
RAIL_PLAN_VARS = ("rack", "position", "su", "ansible_host", "gpufabric_ofed_mgmt_interface", "gpufabric_nic_devices")


def rail_plan_servers(names: Iterable[str] | None, hostvars: Mapping[str, Any], *, management: bool = True,
                      devices: bool = True) -> list[dict[str, Any]]:
    """The servers ``names`` as the rail_plan filter takes them (docs/rails.md), from ``hostvars``.

    Each server: ``name``, ``rack`` and ``position`` (None when not set), ``su`` when set. With
    ``management``: ``mgmt_address`` when ``ansible_host`` is an IP address (a host name is not one),
    ``mgmt_interface`` when ``gpufabric_ofed_mgmt_interface`` is set and not empty. With ``devices``:
    ``devices`` when ``gpufabric_nic_devices`` (the host's ``mlx_info`` devices) is set.
    """
    out = []
    for name, host in _hosts(names, hostvars, "rail_plan_servers"):
        server = {"name": name}
        for key in ("rack", "position"):
            value = _get(host, key)
            server[key] = None if value is MISSING else value
        su = _get(host, "su")
        if su is not MISSING:
            server["su"] = su
        if management:
            address = _get(host, "ansible_host")
            if address is not MISSING and _is_ip_like(address):
                server["mgmt_address"] = address
            interface = _get(host, "gpufabric_ofed_mgmt_interface")
            if interface is not MISSING and interface:
                server["mgmt_interface"] = interface
        if devices:
            nics = _get(host, "gpufabric_nic_devices")
            if nics is not MISSING:
                server["devices"] = nics
        out.append(server)
    return out


# Every variable of a leaf that rail_plan_leaves reads (the offline check reads these of every leaf once).
LEAF_PLAN_VARS = ("gpufabric_leaf_port_template", "gpufabric_leaf_asn")
# Every variable of a spine that rail_plan_spines reads.
SPINE_PLAN_VARS = ("gpufabric_spine_plane",)


def rail_plan_leaves(names: Iterable[str] | None, hostvars: Mapping[str, Any]) -> dict[str, dict] | None:
    """The leaves ``names`` (``groups[gpufabric_leaf_group]``) as the rail_plan filter takes them: ``{leaf: {variable:
    value}}`` with the variables of LEAF_PLAN_VARS each leaf sets (its port template). None when ``names`` is None
    (an inventory without a leaves group: the plan's leaves are not checked)."""
    if names is None:
        return None
    return read_vars(names, hostvars, LEAF_PLAN_VARS, what="rail_plan_leaves")


def rail_plan_spines(names: Iterable[str] | None, hostvars: Mapping[str, Any]) -> dict[str, dict] | None:
    """The spines ``names`` (``groups[gpufabric_spine_group]``) as the rail_plan filter takes them: ``{spine:
    {variable: value}}`` with the variables of SPINE_PLAN_VARS each spine sets (its plane). None when ``names`` is
    None (an inventory without a spines group: no uplinks are planned)."""
    if names is None:
        return None
    return read_vars(names, hostvars, SPINE_PLAN_VARS, what="rail_plan_spines")


def read_vars(names: Iterable[str] | None, hostvars: Mapping[str, Any], keys: Sequence[str], *,
              what: str = "read_vars", parameter: str = "names") -> dict[str, dict]:
    """``{name: {key: value}}``: the variables ``keys`` of each host of ``names`` that it sets (a template that is
    undefined counts as not set), each host's variables taken from ``hostvars`` once. The result is a ``hostvars``
    for the functions here (a plain mapping), read once for all of them. InvalidValue (naming ``what`` and
    ``parameter``) when ``names`` is not a list of hosts of ``hostvars``."""
    out = {}
    for name, host in _hosts(names, hostvars, what, parameter):
        values = {}
        for key in keys:
            value = _get(host, key)
            if value is not MISSING:
                values[key] = value
        out[name] = values
    return out


def host_values(names: Iterable[str] | None, hostvars: Mapping[str, Any], keys: str | Sequence[str], *,
                default: Any = None) -> dict[str, Any]:
    """``{name: value}`` for each host of ``names``: its variable ``keys`` (a name, or a list of names to
    follow into nested mappings, e.g. ``[result, devices]``), or ``default`` where any of them is not set."""
    path = [keys] if isinstance(keys, str) else keys
    if not isinstance(path, (list, tuple)) or not path or not all(isinstance(key, str) for key in path):
        raise InvalidValue("host_values: keys must be a variable name or a non-empty list of names, not %r" % (keys,),
                           parameter="keys", allowed="a variable name or a list of names")
    out = {}
    for name, value in _hosts(names, hostvars, "host_values"):
        for key in path:
            value = _get(value, key)
            if value is MISSING:
                value = default
                break
        out[name] = value
    return out


# ------------------------------------------------------------------------------------------ NV profiles

def nv_configs(devices: Iterable[Mapping[str, Any]], profiles: Mapping[str, Mapping[str, Any]],
               assignments: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``[{name, device, params}]``: one ``gpufabric.mlnx.mlxconfig`` config per NV profile that a device has
    (the PCI addresses of function 0 of its cards, first matching assignment wins), in the order of ``assign``:
    a profile where its first device is in ``devices``."""
    return configs(devices, profiles, assignments)


# ------------------------------------------------------------------------------------------ PCIe links

def pcie_degraded(devices: Iterable[Mapping[str, Any]] | None) -> list[str]:
    """One sentence per device whose PCIe link trained below its capability (``pcie.degraded``), in order: the
    platform role's check (module_utils/_platform.py, which gpufabric.mlnx.platform_host runs on the host)."""
    return _pcie_degraded(devices)


# ------------------------------------------------------------------------------------------ strict words

# What may go into the files the roles' templates write. None of them allows a space, a quote, a
# backslash, '$' or '%' (udev and systemd substitute those), '*', '?', '[', '|' (udev globs), or a newline.
GRAMMARS = {
    "path": (SAFE_PATH_RE, SAFE_PATH_ALLOWED),
    "ifname": (IFNAME_RE, "a network interface name of " + IFNAME_ALLOWED),
    "governor": (GOVERNOR_RE, GOVERNOR_ALLOWED),
}


def strict_word(value: Any, grammar: str, parameter: str, host: str | None = None) -> str:
    """``value`` when it matches the whole of ``GRAMMARS[grammar]``; else InvalidValue naming the host, the
    parameter and what is allowed."""
    if not isinstance(grammar, str) or grammar not in GRAMMARS:
        raise InvalidValue("strict_word: grammar %r is not one of %s" % (grammar, ", ".join(sorted(GRAMMARS))),
                           parameter="grammar", allowed=sorted(GRAMMARS))
    pattern, allowed = GRAMMARS[grammar]
    if isinstance(value, str) and pattern.fullmatch(value):
        return value
    raise InvalidValue("%s%s=%r cannot be written into a udev rule, systemd unit or script: allowed is %s" % (
        "%s: " % host if host else "", parameter, value, allowed), device=host, parameter=parameter, allowed=allowed)
