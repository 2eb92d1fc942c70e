# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The management-interface guard: which interfaces carry the connection Ansible runs over, and do they
depend on an NVIDIA (mlx5) device?

A driver restart (ofed_driver), a firmware reset (mlx_fwreset), a QoS change (roce_qos) or a rail
change (rail_interfaces) on the device under the management connection would cut this host off.
The interface is the one named by the user, else the one holding the address Ansible connects to
(``mgmt_address``, or the server address of ``SSH_CONNECTION``) plus those of the default routes,
followed down through bonds, VLANs and bridges to the physical ports (read through ``_host.Host``).
A port is on mlx5 when ``ibdev2netdev`` lists it or its kernel driver is one of ``MLX5_DRIVERS``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidValue
from ansible_collections.gpufabric.mlnx.plugins.module_utils._host import Host
from ansible_collections.gpufabric.mlnx.plugins.module_utils._validate import IFNAME_ALLOWED, IFNAME_RE

# What the kernel's network drivers of NVIDIA ConnectX / BlueField devices are called in sysfs.
MLX5_DRIVERS = ("mlx5_core", "mlx5_ib")


def ssh_server_address() -> str | None:
    """The address this host was reached at over SSH (the third word of ``SSH_CONNECTION``), if any."""
    parts = os.environ.get("SSH_CONNECTION", "").split()
    return parts[2] if len(parts) == 4 else None


def mgmt_decision(*, explicit: str | None, addresses: Sequence[str], addr_table: Sequence[tuple[str, str]],
                  default_ifs: Sequence[str], lower: Callable[[str], list[str]], drivers: Mapping[str, str | None],
                  rdma_netdevs: Mapping[str, str]) -> dict:
    """Which interfaces carry the management connection and do they depend on mlx5 (pure).

    ``explicit``: the interface named by the user (wins); ``addresses``: the address Ansible
    connects to (ansible_host, SSH_CONNECTION's server address); ``addr_table``: [(ifname, address)];
    ``default_ifs``: interfaces of the default routes; ``lower(ifname)`` -> the physical interfaces
    under it (bond slaves, VLAN parents, bridge ports); ``drivers``: {ifname: kernel driver};
    ``rdma_netdevs``: {netdev: rdma device} from ibdev2netdev.
    Returns ``{"interfaces", "source", "on_mlx5", "evidence": {port: why}}``.
    """
    if explicit:
        interfaces, source = [explicit], "gpufabric_ofed_mgmt_interface"
    else:
        interfaces = [ifname for ifname, addr in addr_table if addr in addresses]
        source = "the interface holding %s" % ", ".join(a for a in addresses if a) if interfaces else None
        for ifname in default_ifs:
            if ifname not in interfaces:
                interfaces.append(ifname)
                source = (source + " and the default route") if source else "the default route"
    evidence, on_mlx5 = {}, False
    for ifname in interfaces:
        for leaf in lower(ifname) or [ifname]:
            driver = drivers.get(leaf)
            if leaf in rdma_netdevs:
                evidence[leaf] = "RDMA device %s (ibdev2netdev)" % rdma_netdevs[leaf]
                on_mlx5 = True
            elif driver in MLX5_DRIVERS:
                evidence[leaf] = "driver %s" % driver
                on_mlx5 = True
            else:
                evidence[leaf] = "driver %s" % (driver or "none (virtual)")
    return {"interfaces": interfaces, "source": source, "on_mlx5": on_mlx5, "evidence": evidence}


def check_mgmt_interface(value: object, *, parameter: str = "mgmt_interface") -> str | None:
    """``value`` when it is one network interface name (or nothing: None); else InvalidValue. A list, a
    comma- or space-separated string or a glob names no interface of the host, so the guard would check nothing."""
    if value is None or value == "":
        return None
    if isinstance(value, str) and IFNAME_RE.fullmatch(value):
        return value
    raise InvalidValue("%s=%r is not one network interface name, so the management guard would check nothing; "
                       "allowed: one name of %s (e.g. eno1 or bond0). Nothing was changed." % (
                           parameter, value, IFNAME_ALLOWED), parameter=parameter, allowed=IFNAME_ALLOWED)


def mgmt_state(host: Host, params: Mapping) -> dict:
    """``mgmt_decision`` for this host (a ``_host.Host``); ``params``: ``mgmt_interface``, ``mgmt_address``."""
    explicit = check_mgmt_interface(params.get("mgmt_interface"))
    addresses = [a for a in (params.get("mgmt_address") or "", ssh_server_address()) if a]
    addr_table = host.addresses() if not explicit else []
    defaults = host.default_route_interfaces() if not explicit else []
    interfaces = [explicit] if explicit else \
        list(dict.fromkeys([i for i, a in addr_table if a in addresses] + defaults))
    lower_map, drivers = {}, {}
    for ifname in interfaces:
        lower_map[ifname] = host.lower(ifname)
        for leaf in lower_map[ifname]:
            drivers[leaf] = host.driver_of(leaf)
    return mgmt_decision(explicit=explicit, addresses=addresses, addr_table=addr_table, default_ifs=defaults,
                         lower=lambda name: lower_map.get(name, [name]), drivers=drivers,
                         rdma_netdevs=host.rdma_netdevs())
