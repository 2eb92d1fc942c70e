# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Preflight: everything that must hold before any host of a rollout is touched.

- :func:`inventory_problems` - what shows from the inventory alone, no host contacted (the offline check,
  ``playbooks/check_inventory.yml``, and the first half of the preflight role): every distinct matrix, the
  rail plan, every distinct set of RoCE QoS settings, of BIOS inputs and of the platform role's kernel
  parameters and power policy, each checked ONCE and named with the hosts that share it;
- :func:`problems` - every host's devices (mlx_info) against the matrix (the second half of the preflight).

Both return ALL problems at once, each naming the host(s), the card or the setting and what is wrong, so
one run shows everything to fix.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.gpufabric.mlnx.plugins.module_utils import _bootloader, _platform, _rails
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidValue, MlnxError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._matrix import firmware_targets, matrix_problems
from ansible_collections.gpufabric.mlnx.plugins.module_utils._roce_qos import settings_problems
from ansible_collections.gpufabric.mlnx.plugins.module_utils._validate import kind_of
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._bios import spec_problems
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._leaf import (
    LEAF_MTU, host_qos, leaf_qos, leaf_qos_tree, qos_mismatches)
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._drain import problems as drain_problems
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._prerequisites import switch_problems
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._rail_plan import plan_or_problems
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._role_defaults import (
    QOS_VARS, role_options, roce_qos_settings, spec_check, with_default as _with_default)
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._roles import (
    HostCache, LEAF_PLAN_VARS, MISSING, RAIL_PLAN_VARS, host_names, rail_plan_leaves, rail_plan_servers,
    rail_plan_spines, read_vars)
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._variables import unknown_variables, value_problems

BIOS_VARS = ("gpufabric_platform_bios", "gpufabric_platform_bios_sriov", "gpufabric_platform_bios_iommu",
             "gpufabric_platform_bios_overrides")
# The platform role's host side: kernel parameters (gpufabric.mlnx.kernel_cmdline) and power policy
# (gpufabric.mlnx.platform_power).
PLATFORM_VARS = ("gpufabric_platform_aspm", "gpufabric_platform_kernel_args_extra", "gpufabric_platform_bootloader",
                 "gpufabric_platform_grub_dropin", "gpufabric_platform_nic_runtime_pm", "gpufabric_platform_cpu_governor")
PLATFORM_SWITCHES = ("gpufabric_platform_enabled", "gpufabric_platform_host_enabled")
# The kernel parameters roles/platform/tasks/main.yml boots with for each gpufabric_platform_aspm.
ASPM_KERNEL_ARGS = {"off": ["pcie_aspm=off"], "performance": ["pcie_aspm.policy=performance"], "leave": []}
# The rails role's options of gpufabric.mlnx.rail_interfaces (the rails themselves are the rail plan's).
RAILS_VARS = ("gpufabric_rails_mtu", "gpufabric_rails_sysctls", "gpufabric_rails_provider")
# What the leaf role's configuration of a leaf depends on, besides the RoCE QoS settings (QOS_VARS).
LEAF_VARS = ("gpufabric_leaf_mtu",)
# What the offline check reads of every host, besides what rail_plan_servers reads (RAIL_PLAN_VARS).
HOST_VARS = ("gpufabric_matrix", "gpufabric_fabric", "gpufabric_roce_qos_enabled", "gpufabric_roce_qos_leave") \
    + tuple(QOS_VARS) + BIOS_VARS + PLATFORM_VARS + PLATFORM_SWITCHES + RAILS_VARS + ("gpufabric_rails_enabled",)
# The variables the checks here judge by their own rules (the modules' and the roles' checks, with the roles'
# defaults): the argument-spec check of every other variable (value_problems) leaves them to those.
CHECKED_HERE = frozenset(("gpufabric_matrix", "gpufabric_fabric") + BIOS_VARS + PLATFORM_VARS + RAILS_VARS
                         + tuple(QOS_VARS))


# ------------------------------------------------------------------------------------------ the roles' defaults

def _truthy(value: Any) -> bool:
    """Jinja's ``value | bool`` of a role switch (true, 'yes', 'on', 1 ...)."""
    if isinstance(value, str):
        return value.strip().lower() in ("y", "yes", "on", "1", "true", "t")
    return bool(value)


# ------------------------------------------------------------------------------------------ the inventory

def hosts_text(names: Iterable[str]) -> str:
    """``srv-a`` for one host, ``3 hosts (srv-a, srv-b, srv-c)`` for several: who shares one input."""
    names = list(names)
    return names[0] if len(names) == 1 else "%d hosts (%s)" % (len(names), ", ".join(names))


def _comparable(value: Any) -> Any:
    """``value`` with every mapping as its items sorted by the JSON text of the key: keys of mixed types (a YAML
    mapping can have None, numbers and strings as keys) cannot be sorted as they are (json.dumps(sort_keys=True)
    raised TypeError)."""
    if isinstance(value, Mapping):
        items = [(json.dumps(_comparable(key), default=repr), _comparable(item)) for key, item in value.items()]
        return {"mapping": sorted(items, key=lambda pair: pair[0])}
    if isinstance(value, (list, tuple)):
        return [_comparable(item) for item in value]
    return value


def distinct(values_by_host: Mapping[str, Any]) -> list[tuple[Any, list[str]]]:
    """``[(value, [hosts that have it])]``, one entry per distinct value (equal as JSON), in the order of the hosts."""
    groups: dict[str, tuple[Any, list[str]]] = {}
    for host, value in values_by_host.items():
        key = json.dumps(_comparable(value), default=repr)
        groups.setdefault(key, (value, []))[1].append(host)
    return list(groups.values())


def _qos_settings(host_vars: Mapping) -> tuple[dict, list] | None:
    """``(settings, leave)`` of the roce_qos role for a host that configures RoCE QoS, else None (the condition of
    the role in playbooks/site.yml: a fabric or interfaces given, and gpufabric_roce_qos_enabled not false)."""
    settings = {option: _with_default(host_vars, var, "roce_qos") for var, option in QOS_VARS.items()}
    if host_vars.get("gpufabric_fabric", MISSING) is MISSING and not settings["interfaces"]:
        return None
    if not _truthy(host_vars.get("gpufabric_roce_qos_enabled", True)):
        return None
    # As the role passes it to the module (false, a string ... are the module's error, not "leave nothing").
    return settings, _with_default(host_vars, "gpufabric_roce_qos_leave", "roce_qos")


def _bios_inputs(host_vars: Mapping) -> dict | None:
    """The BIOS inputs of a host (the platform role's variables), None when it sets none of them."""
    inputs = {var: _with_default(host_vars, var, "platform") for var in BIOS_VARS}
    if not any(value not in (None, {}, "") for value in inputs.values()):
        return None
    return inputs


def _platform_inputs(host_vars: Mapping) -> dict | None:
    """The platform role's kernel and power variables of a host whose rollout runs the role's host side (with the
    role's defaults), else None."""
    if not (_truthy(host_vars.get("gpufabric_platform_enabled", True))
            and _truthy(_with_default(host_vars, "gpufabric_platform_host_enabled", "platform"))):
        return None
    return {var: _with_default(host_vars, var, "platform") for var in PLATFORM_VARS}


def _role_spec(inputs: Mapping, role: str, host: str) -> tuple[dict, list[str]]:
    """``inputs`` (variables of ROLE) against the role's argument spec, as Ansible checks them when the role starts:
    ``(the values as the spec converts them, [problems])``."""
    keys = ("type", "elements", "choices", "default")
    spec = {var: {k: v for k, v in role_options(role)[var].items() if k in keys} for var in inputs}
    validated, problems = spec_check(spec, inputs)
    return validated, ["%s: %s: %s" % (host, role, problem) for problem in problems]


def _rails_inputs(host_vars: Mapping) -> dict | None:
    """The rails role's options of a host the rollout runs the rails role on (a fabric, and gpufabric_rails_enabled
    not false), with the role's defaults; else None."""
    enabled = _truthy(host_vars.get("gpufabric_rails_enabled", True))
    if host_vars.get("gpufabric_fabric", MISSING) is MISSING or not enabled:
        return None
    return {var: _with_default(host_vars, var, "rails") for var in RAILS_VARS}


def rails_problems(inputs: Mapping, host: str) -> list[str]:
    """Every problem of the rails role's options ``inputs`` (``RAILS_VARS``) for ``host``: the role's argument
    spec, then what gpufabric.mlnx.rail_interfaces refuses of them (``_rails.check_options``)."""
    values, found = _role_spec(inputs, "rails", host)
    if found:
        return found
    try:
        _rails.check_options(host, mtu=values["gpufabric_rails_mtu"], sysctls=values["gpufabric_rails_sysctls"])
    except MlnxError as err:
        return ["%s: gpufabric_rails_%s: %s" % (host, str(err.parameter).split(".", maxsplit=1)[0], err.msg)]
    return []


def platform_problems(inputs: Mapping, host: str) -> list[str]:
    """Every problem of the platform role's kernel parameters and power policy ``inputs`` (``PLATFORM_VARS``, with
    the role's defaults) for ``host``: the role's argument spec, then what gpufabric.mlnx.platform_host (the code of
    kernel_cmdline - ``_bootloader.check_kernel_args`` / ``check_options`` - and of platform_power -
    ``_platform.desired_state``) refuses of the options roles/platform/tasks/main.yml passes it."""
    values, found = _role_spec(inputs, "platform", host)
    if found:
        return found
    found = []
    aspm = inputs["gpufabric_platform_aspm"]   # main.yml looks the value up as written
    if not isinstance(aspm, str) or aspm not in ASPM_KERNEL_ARGS:   # null and false pass the argument spec
        hint = "; quote it: YAML reads an unquoted off as false" if aspm is False else ""
        return ["%s: platform: gpufabric_platform_aspm is %s (allowed: %s)%s" % (
            host, kind_of(aspm), ", ".join('"%s"' % word for word in ASPM_KERNEL_ARGS), hint)]
    extra = inputs["gpufabric_platform_kernel_args_extra"]   # kernel.yml adds it to a list: a list, as written
    try:
        extra = _bootloader.check_kernel_args(values["gpufabric_platform_kernel_args_extra"] if isinstance(extra, list)
                                              else extra, option="gpufabric_platform_kernel_args_extra")
    except MlnxError as err:
        return ["%s: %s" % (host, err.msg)]
    args = list(dict.fromkeys(ASPM_KERNEL_ARGS[aspm] + extra))
    if args:
        try:
            _bootloader.check_options({"args": args, "bootloader": values["gpufabric_platform_bootloader"],
                                       "grub_dropin": values["gpufabric_platform_grub_dropin"]})
        except MlnxError as err:
            found.append("%s: %s: %s" % (host, "gpufabric_platform_" + str(err.parameter), err.msg))
    governor = inputs["gpufabric_platform_cpu_governor"]   # the role passes it when it is not empty
    power = {"aspm_policy": "performance" if aspm != "leave" else None,
             "nic_runtime_pm": values["gpufabric_platform_nic_runtime_pm"],
             "cpu_governor": values["gpufabric_platform_cpu_governor"] if governor else None, "kernel_args": args}
    try:
        _platform.desired_state(power)
    except MlnxError as err:
        found.append("%s: %s: %s" % (host, "gpufabric_platform_" + str(err.parameter), err.msg))
    return found


def rail_hosts_list(rail_hosts: Any, parameter: str = "rail_hosts") -> list:
    """``rail_hosts`` (or the leaves, ``leaf_hosts``) as a list (InvalidValue naming ``parameter`` when it is not a
    list of host names)."""
    return host_names(rail_hosts, "inventory_problems", parameter)


def inventory_problems(names: Iterable[str] | None, hostvars: Mapping[str, Any], *, fabric: Any = None,
                       rail_hosts: Iterable[str] | None = None, leaf_hosts: Iterable[str] | None = None,
                       spine_hosts: Iterable[str] | None = None, with_plan: bool = False) -> list[str] | dict:
    """Every problem the inventory alone shows for the hosts ``names`` (their variables in ``hostvars``), each
    input checked once however many hosts share it:

    - every distinct ``gpufabric_matrix`` (``matrix_problems``; a host without one is a problem);
    - the rail plan of ``rail_hosts`` on ``fabric`` (``plan_problems`` of ``rail_plan_servers``, as the rail_plan
      role plans it), when ``fabric`` is given, its leaves checked against ``leaf_hosts`` (``rail_plan_leaves``)
      unless that is None, its uplinks planned to ``spine_hosts`` when not None or empty (``rail_plan_spines``) -
      and, when the plan can be made with the leaves, every cable's two ends
      (``leaf_problems``, on the same plan: it is made once);
    - every distinct set of RoCE QoS settings of the hosts that configure RoCE QoS (``settings_problems``, the
      roce_qos module's own checks, with the role's defaults for what a host does not set);
    - every distinct set of BIOS inputs (``spec_problems``);
    - every distinct set of the platform role's kernel parameters and power policy (``platform_problems``, the
      role's argument spec and the kernel_cmdline and platform_power modules' own checks);
    - the drain settings of the servers (``_drain.problems``: a Slurm host, one value for every server, the hooks).

    A problem shared by several hosts is one sentence naming them all. With ``with_plan``: ``{"problems": [...],
    "plan": plan}`` - the rail plan made on the way, reduced to what the rollout's batches read (None without
    ``fabric`` or when it has problems), for playbooks/check_inventory.yml's batches without making it again."""
    if not isinstance(with_plan, bool):
        raise InvalidValue("inventory_problems: with_plan must be true or false, not %s" % kind_of(with_plan),
                           parameter="with_plan")
    keys = HOST_VARS + RAIL_PLAN_VARS + LEAF_PLAN_VARS + LEAF_VARS
    if hasattr(hostvars, "keys") and hasattr(hostvars, "__getitem__"):
        hostvars = HostCache(hostvars)   # Ansible's hostvars: each host looked up once, however many passes read it
    read = read_vars(names, hostvars, keys, what="inventory_problems")
    names = list(read)
    rail_hosts = rail_hosts_list(rail_hosts) if fabric is not None else []
    more = [name for name in rail_hosts if name not in read]
    read.update(read_vars(more, hostvars, keys, what="inventory_problems", parameter="rail_hosts"))
    leaf_hosts = rail_hosts_list(leaf_hosts, "leaf_hosts") if fabric is not None and leaf_hosts is not None else None
    more = [name for name in leaf_hosts or () if name not in read]
    read.update(read_vars(more, hostvars, keys, what="inventory_problems", parameter="leaf_hosts"))
    spine_hosts = (rail_hosts_list(spine_hosts, "spine_hosts") if fabric is not None and spine_hosts is not None
                   else None)
    spines = rail_plan_spines(spine_hosts, hostvars) if spine_hosts is not None else None
    found, rail_plan = [], None

    matrices = {name: read[name].get("gpufabric_matrix", MISSING) for name in names}
    unset = [name for name, matrix in matrices.items() if matrix is MISSING]
    if unset:
        found.append("%s: gpufabric_matrix is not set (docs/matrix.md)" % hosts_text(unset))
    groups = distinct({name: matrix for name, matrix in matrices.items() if matrix is not MISSING})
    for matrix, hosts in groups:
        prefix = "" if len(groups) == 1 and not unset else "gpufabric_matrix of %s: " % hosts_text(hosts)
        found.extend(prefix + problem for problem in matrix_problems(matrix))

    if fabric is not None:
        servers, leaves = rail_plan_servers(rail_hosts, read), rail_plan_leaves(leaf_hosts, read)
        planned, rail_plan = plan_or_problems(servers, fabric, leaves, spines)
        found.extend(planned)
        if rail_plan is not None and leaf_hosts:
            found.extend(leaf_problems(rail_plan, read))

    qos = {}
    for name in names:
        settings = _qos_settings(read[name])
        if settings is not None:
            qos[name] = settings
    for (settings, leave), hosts in distinct(qos):
        found.extend(settings_problems(settings, hosts_text(hosts), leave=leave))
    found.extend(switch_problems(leaf_hosts, hostvars, "leaf"))
    found.extend(drain_problems(names, hostvars))
    everyone = list(dict.fromkeys(list(names) + rail_hosts + list(leaf_hosts or ()) + list(spine_hosts or ())))
    found.extend(unknown_variables(everyone, hostvars))
    found.extend(value_problems(everyone, hostvars, skip=CHECKED_HERE))

    rails = {name: inputs for name, inputs in ((name, _rails_inputs(read[name])) for name in names) if inputs}
    for inputs, hosts in distinct(rails):
        found.extend(rails_problems(inputs, hosts_text(hosts)))

    platform = {name: inputs for name, inputs in ((name, _platform_inputs(read[name])) for name in names) if inputs}
    for inputs, hosts in distinct(platform):
        found.extend(platform_problems(inputs, hosts_text(hosts)))

    bios = {name: inputs for name, inputs in ((name, _bios_inputs(read[name])) for name in names) if inputs}
    for inputs, hosts in distinct(bios):
        found.extend(spec_problems(inputs["gpufabric_platform_bios"], hosts_text(hosts),
                                   sriov=inputs["gpufabric_platform_bios_sriov"],
                                   iommu=inputs["gpufabric_platform_bios_iommu"],
                                   overrides=inputs["gpufabric_platform_bios_overrides"]))
    return {"problems": found, "plan": _batching_view(rail_plan)} if with_plan else found


def _batching_view(plan):
    """What the rollout's batches read of a rail plan (``_rollout``: each server's leaves and ports, each leaf's SU),
    in the plan's own shape: a plan handed through Ansible's facts costs as much again as making it (about 11 s for
    example-1250's 10,000 cables), this part a fraction."""
    if plan is None:
        return None
    return {"hosts": {host: [{"leaf": e.get("leaf"), "leaf_port": e.get("leaf_port")} for e in entries]
                      for host, entries in plan["hosts"].items()},
            "leaves": {leaf: {"su": entry.get("su")} for leaf, entry in plan["leaves"].items()}}


# ------------------------------------------------------------------------------------------ host and leaf

def leaf_problems(rail_plan: Mapping, read: Mapping[str, Mapping]) -> list[str]:
    """Every cable whose two ends disagree, from the inventory alone: a server's RoCE QoS settings against the QoS its
    leaf is configured with (the leaf role's tree from the settings the leaf's variables give: ``qos_mismatches``),
    and the server's rail MTU above the leaf port's. Each distinct (server settings, leaf settings) pair is compared
    once; a problem names the servers and leaves that share it."""
    pairs: dict[str, tuple[Any, Any, list[str], list[str]]] = {}
    for leaf, entry in rail_plan.get("leaves", {}).items():
        if leaf not in read:
            continue
        leaf_vars = read[leaf]
        leaf_side = (roce_qos_settings(leaf_vars), leaf_vars.get("gpufabric_leaf_mtu", LEAF_MTU))
        for cable in (entry.get("cables") or {}).values():
            host = cable.get("host")
            if host not in read or _qos_settings(read[host]) is None:
                continue
            host_side = (roce_qos_settings(read[host]), _with_default(read[host], "gpufabric_rails_mtu", "rails"))
            key = json.dumps(_comparable([host_side, leaf_side]), default=repr)
            found = pairs.setdefault(key, (host_side, leaf_side, [], []))
            if host not in found[2]:
                found[2].append(host)
            if leaf not in found[3]:
                found[3].append(leaf)
    out = []
    for (host_settings, host_mtu), (leaf_settings, leaf_mtu), hosts, leaves in pairs.values():
        who = "%s and their leaf %s" % (hosts_text(hosts), hosts_text(leaves))
        try:
            words = qos_mismatches(host_qos(host_settings), leaf_qos(leaf_qos_tree(host_qos(leaf_settings))))
        except MlnxError:
            words = []  # a bad setting: settings_problems names it
        out.extend("%s: RoCE QoS would differ: %s (the leaf role configures a leaf from the gpufabric_roce_qos_* "
                   "variables the leaf sees; give the leaves the servers' values)" % (who, w) for w in words)
        if isinstance(host_mtu, int) and isinstance(leaf_mtu, int) and host_mtu > leaf_mtu:
            out.append("%s: the rails' MTU %d (gpufabric_rails_mtu) is above the leaf ports' %d (gpufabric_leaf_mtu): "
                       "frames would be dropped" % (who, host_mtu, leaf_mtu))
    return out


# ------------------------------------------------------------------------------------------ the devices


def problems(devices_by_host: dict, matrix: Any, *, require_devices: bool = True,
             unreachable: Mapping[str, Any] | None = None, failed: Mapping[str, Any] | None = None) -> list[str]:
    """``devices_by_host``: ``{host: mlx_info devices list}``; ``unreachable``: ``{host: why}`` of the hosts the
    preflight could not reach (one sentence each, first: the rollout leaves them out); ``failed``: ``{host: msg}``,
    why mlx_info could not read a reachable host's devices (carried into that host's sentence). Returns a list of
    sentences."""
    if not isinstance(devices_by_host, dict):
        raise InvalidValue("preflight_problems: the input must be a mapping of host name to the devices list "
                           "gpufabric.mlnx.mlx_info returned there, not %s" % kind_of(devices_by_host),
                           parameter="_input", allowed="a mapping of host name to a devices list")
    if unreachable is not None and not isinstance(unreachable, Mapping):
        raise InvalidValue("preflight_problems: unreachable must be a mapping of host name to the reason, not %s"
                           % kind_of(unreachable), parameter="unreachable", allowed="a mapping of host to reason")
    found = ["%s: unreachable, so it is left out of the rollout%s" % (host, (": %s" % str(why).strip()) if why else "")
             for host, why in sorted((unreachable or {}).items())]
    gone = set(unreachable or ())
    matrix_found = list(matrix_problems(matrix))
    if matrix_found:
        return found + matrix_found  # device checks need a consistent matrix
    devices_by_host = {host: devices for host, devices in devices_by_host.items() if host not in gone}
    serials = {}
    for host in sorted(devices_by_host, key=str):
        devices = devices_by_host[host]
        if devices is None:
            why = str((failed or {}).get(host) or "").strip()
            found.append("%s: its NVIDIA devices could not be read: %s" % (
                host, why or "mlx_info did not run there (skipped, or its result was not kept)"))
            continue
        if not isinstance(devices, list):
            found.append("%s: devices must be the list gpufabric.mlnx.mlx_info returns, not %s" % (host, kind_of(devices)))
            continue
        if require_devices and not devices:
            found.append("%s: no NVIDIA NIC/DPU found (lspci shows none)" % host)
            continue
        try:
            targets = firmware_targets(devices, matrix)
        except MlnxError as err:   # a malformed device entry: named with its index
            found.append("%s: %s" % (host, err.msg))
            continue
        for target in targets:
            where = "%s %s" % (host, target["address"])
            if target["action"] == "refused":
                found.append("%s: %s" % (where, target["reason"]))
            serial = target.get("serial_number")
            serial = serial.strip() if isinstance(serial, str) else ""
            if not serial:
                found.append("%s: the card has no serial number in its VPD ([SN])" % where)
            else:
                serials.setdefault(serial.upper(), []).append(where)
    for serial, places in sorted(serials.items()):
        if len(places) > 1:
            found.append("serial number %s is on %d cards: %s" % (serial, len(places), ", ".join(places)))
    return found
