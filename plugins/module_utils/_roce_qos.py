# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host side of lossless RoCE, per network interface: read, plan, write, prove.

Read (every interface at once): ONE ``mlnx_qos -i IF`` (trust state, PFC, priority -> traffic
class, TSA and ETS bandwidth), the ECN sysfs attributes of the mlx5 driver
(``/sys/class/net/IF/ecn/roce_np|roce_rp/enable/P``, ``.../roce_np/cnp_dscp`` and
``.../roce_np/cnp_802p_prio``), the RDMA-CM default ToS (configfs
``/sys/kernel/config/rdma_cm/DEV/ports/PORT/default_roce_tos`` when the directory exists, else
``cma_roce_tos -d DEV -p PORT``, which prints only the value) and the MLNX_OFED/DOCA-OFED
traffic class ``/sys/class/infiniband/DEV/tc/PORT/traffic_class`` (``Global tclass=N``, or
nothing when never set).

Decide (pure): ``desired_state`` checks and normalises the options (every problem raises
InvalidValue naming the interfaces, the option and what is allowed); ``plan(current, desired)``
gives per setting ``{"before", "after"}`` for what differs; ``commands(interface, plan, ...)``
turns a plan into argv lists and sysfs writes - the same list a udev rule or a boot-time unit
can replay (``replay``; the script that does is written on the controller,
module_utils/_roce_qos_script.py).

Write (guarded by check mode): one ``mlnx_qos`` with every differing QoS option, the sysfs
writes, ``cma_roce_tos -t``; then read the interface again and fail naming the interface and
the setting when a value did not take.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import (
    DeviceNotFound,
    InvalidValue,
    MlnxError,
    Refused,
    ToolFailed,
    ToolNotFound,
)
from ansible_collections.gpufabric.mlnx.plugins.module_utils._host import Host, parallel, plan_all
from ansible_collections.gpufabric.mlnx.plugins.module_utils._mgmt import MLX5_DRIVERS, check_mgmt_interface, mgmt_state
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.common import ParseError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.mlnx_qos import parse_mlnx_qos
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.sysfs import parse_traffic_class
from ansible_collections.gpufabric.mlnx.plugins.module_utils._validate import (
    IFNAME_ALLOWED,
    IFNAME_RE,
    Problems,
    close_names,
    is_whole,
)

# The tools this module runs, with the package that ships them.
TOOLS = {
    "mlnx_qos": "mlnx-tools (installed with DOCA-OFED / MLNX_OFED)",
    "cma_roce_tos": "mlnx-tools (installed with DOCA-OFED / MLNX_OFED)",
}
TRUST = ("dscp", "pcp")
TSA = ("ets", "strict", "vendor")
DEFAULTS = {
    "trust": "dscp",
    "pfc_priorities": [3],
    "ecn_priorities": None,     # = pfc_priorities
    "cnp_dscp": 48,
    "cnp_802p_prio": 6,
    "cma_roce_tos": 106,
    "traffic_class": 106,
    "prio_tc": None,
    "tsa": None,
    "tc_bw": None,
}
# The settings ``leave`` may name (a default Ansible cannot pass as null), and every option of the module.
LEAVE = ("trust", "pfc_priorities", "cnp_dscp", "cnp_802p_prio", "cma_roce_tos", "traffic_class")
OPTIONS = ("interfaces",) + tuple(DEFAULTS) + (
    "mgmt_interface", "mgmt_address", "allow_mgmt", "leave", "root", "timeout", "host", "plan_hosts", "plan_group",
    "persist", "script", "udev_rule", "driver_action", "pending_activation")
# Settings in the order they are reported and written.
QOS_KEYS = ("trust", "pfc", "prio_tc", "tsa", "tc_bw")
ETS_KEYS = ("prio_tc", "tsa", "tc_bw")
MLNX_QOS_FLAG = {"trust": "--trust", "pfc": "--pfc", "prio_tc": "--prio_tc", "tsa": "--tsa", "tc_bw": "--tcbw"}
# Linux interface names: at most 15 bytes, no '/', no whitespace, not '.' or '..'. \Z, not $: $ would let
# a trailing newline through.
RDMA_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}\Z", re.ASCII)


# ---------------------------------------------------------------------------------- input: sysfs paths

def ecn_path(interface: str, point: str, priority: int) -> str:
    """``point``: ``roce_np`` (notification point) or ``roce_rp`` (reaction point)."""
    return "/sys/class/net/%s/ecn/%s/enable/%d" % (interface, point, priority)


def cnp_path(interface: str, name: str) -> str:
    """``.../ecn/roce_np/NAME``: ``cnp_dscp`` or ``cnp_802p_prio`` of the notification point."""
    return "/sys/class/net/%s/ecn/roce_np/%s" % (interface, name)


def configfs_tos_path(rdma: str, port: int) -> str:
    """The RDMA-CM default ToS in configfs (there only while the ``rdma_cm/DEV`` directory exists)."""
    return "/sys/kernel/config/rdma_cm/%s/ports/%d/default_roce_tos" % (rdma, port)


def traffic_class_path(rdma: str, port: int) -> str:
    """The MLNX_OFED/DOCA-OFED traffic class of an RDMA port."""
    return "/sys/class/infiniband/%s/tc/%d/traffic_class" % (rdma, port)


# What a replay step may run and write (commands, replay): the boot-time script (module_utils/_roce_qos_script)
# accepts nothing else - a script that runs as root at boot takes only the tools and sysfs files these steps use.
REPLAY_TOOLS = ("mlnx_qos", "cma_roce_tos")
_NAME = r"(?!\.{1,2}/)[A-Za-z0-9_.+-]{1,15}"           # a netdev (IFNAME_RE), never . or ..
_RDMA = r"(?!\.{1,2}/)[A-Za-z0-9_.-]{1,64}"            # an RDMA device (RDMA_RE), never . or ..
REPLAY_WRITE_RE = re.compile(r"/sys/class/net/%s/ecn/roce_(?:np|rp)/enable/[0-7]|/sys/class/net/%s/ecn/roce_np/"
                             r"(?:cnp_dscp|cnp_802p_prio)|/sys/class/infiniband/%s/tc/[0-9]{1,3}/traffic_class"
                             % (_NAME, _NAME, _RDMA), re.ASCII)
REPLAY_WRITE_ALLOWED = ("a file the roce_qos module writes: /sys/class/net/<if>/ecn/roce_np|roce_rp/enable/<0-7>, "
                        "/sys/class/net/<if>/ecn/roce_np/cnp_dscp or cnp_802p_prio, "
                        "/sys/class/infiniband/<rdma>/tc/<port>/traffic_class")


# ---------------------------------------------------------------------------------- input: the options

def _who(interfaces):
    names = [str(i) for i in interfaces or []] if isinstance(interfaces, (list, tuple)) else [str(interfaces)]
    return ", ".join(names) or "(no interface)"


class BadSetting(InvalidValue):
    """A setting the module does not accept; ``detail`` is ``OPTION=VALUE WHY (allowed: ...)`` without the interfaces,
    as the preflight lists it (settings_problems)."""

    def __init__(self, msg: str, detail: str, **kwargs: Any):
        super().__init__(msg, **kwargs)
        self.detail = detail


def _bad(interfaces, option, value, why, allowed):
    detail = "%s=%r %s (allowed: %s)" % (option, value, why, allowed)
    return BadSetting("roce_qos on %s: %s. Nothing was changed." % (_who(interfaces), detail), detail,
                      device=list(interfaces or []) or None, parameter=option, allowed=allowed)


def _int(interfaces, option, value, low, high):
    """An int from an int or a decimal string, in [low, high]; bools, floats and words raise."""
    allowed = "an integer %d-%d" % (low, high)
    if is_whole(value):
        number = value
    elif isinstance(value, str) and re.match(r"^\s*\d{1,9}\s*$", value, re.ASCII):  # int() would refuse "0\x1f"
        number = int(value)
    else:
        raise _bad(interfaces, option, value, "is not an integer", allowed)
    if not low <= number <= high:
        raise _bad(interfaces, option, value, "is outside %d-%d" % (low, high), allowed)
    return number


def _int_list(interfaces, option, value, low, high, length=None):
    if isinstance(value, (str, bytes)) and length is not None and "," in str(value):
        value = str(value).split(",")
    if not isinstance(value, (list, tuple)):
        raise _bad(interfaces, option, value, "is not a list", "a list of integers %d-%d" % (low, high)
                   + (" with %d items" % length if length else ""))
    if length is not None and len(value) != length:
        raise _bad(interfaces, option, value, "has %d items, not %d" % (len(value), length),
                   "%d integers %d-%d, one per %s" % (length, low, high,
                                                      "priority 0-7" if option == "prio_tc" else "traffic class 0-7"))
    return [_int(interfaces, "%s[%d]" % (option, i), v, low, high) for i, v in enumerate(value)]


def _priorities(interfaces, option, value):
    if isinstance(value, (int, str)) and not isinstance(value, bool):
        value = [value]
    return sorted(set(_int_list(interfaces, option, value, 0, 7)))


def _interfaces(value):
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not value:
        detail = "interfaces=%r must be a non-empty list of network interface names (allowed: names like enp24s0np0)" % (
            value,)
        raise BadSetting("roce_qos: %s. Nothing was changed." % detail, detail, parameter="interfaces",
                         allowed="a list of interface names")
    out = []
    for index, name in enumerate(value):
        if not isinstance(name, str) or not IFNAME_RE.fullmatch(name):
            detail = "interfaces[%d]=%r is not a network interface name (allowed: %s)" % (index, name, IFNAME_ALLOWED)
            raise BadSetting("roce_qos: %s. Nothing was changed." % detail, detail,
                             device=name if isinstance(name, str) else None, parameter="interfaces",
                             allowed="a Linux interface name")
        if name not in out:
            out.append(name)
    return out


def read_leave(value: Any) -> list[str]:
    """The ``leave`` option: a list of names of LEAVE (None or [] for none); BadSetting naming ``leave[i]`` and the
    closest name for anything else."""
    if value is None:
        return []
    if not isinstance(value, list):
        detail = "leave=%r is not a list (allowed: a list of %s)" % (value, ", ".join(LEAVE))
        raise BadSetting("roce_qos: %s. Nothing was changed." % detail, detail, parameter="leave", allowed=list(LEAVE))
    for index, name in enumerate(value):
        if name not in LEAVE:
            guess = close_names(name, LEAVE) if isinstance(name, str) else []
            detail = "leave[%d]=%r is not a setting the module can leave%s (allowed: %s)" % (
                index, name, "; did you mean %s?" % guess[0] if guess else "", ", ".join(LEAVE))
            raise BadSetting("roce_qos: %s. Nothing was changed." % detail, detail, parameter="leave[%d]" % index,
                             allowed=list(LEAVE))
    return list(dict.fromkeys(value))


def desired_state(params: Mapping) -> tuple[list[str], dict]:
    """The options (``interfaces`` + the settings of DEFAULTS) -> ``(interfaces, desired)``.

    ``desired`` holds only the settings to manage: ``trust``, ``pfc`` (8 flags), ``ecn_np`` and
    ``ecn_rp`` ({priority: 1}), ``cnp_dscp``, ``cnp_802p_prio``, ``cma_roce_tos``,
    ``traffic_class`` and, when given, ``prio_tc``, ``tsa``, ``tc_bw`` (8 each). A setting given as
    None is left alone. Raises InvalidValue (interfaces, option, allowed) for any bad value.
    """
    if not isinstance(params, dict):
        raise InvalidValue("roce_qos: the options must be a mapping, not %r" % (params,), parameter="options")
    ifaces = _interfaces(params.get("interfaces"))
    check_mgmt_interface(params.get("mgmt_interface"))
    opts = dict(DEFAULTS)
    opts.update({k: v for k, v in params.items() if k in DEFAULTS})
    opts.update({key: None for key in read_leave(params.get("leave"))})
    desired = {}
    trust = opts["trust"]
    if trust is not None:
        if not isinstance(trust, str) or trust.strip().lower() not in TRUST:
            raise _bad(ifaces, "trust", trust, "is not a trust mode", "dscp, pcp")
        desired["trust"] = trust.strip().lower()
    pfc = None
    if opts["pfc_priorities"] is not None:
        pfc = _priorities(ifaces, "pfc_priorities", opts["pfc_priorities"])
        desired["pfc"] = [1 if p in pfc else 0 for p in range(8)]
    ecn = opts["ecn_priorities"] if opts["ecn_priorities"] is not None else pfc
    if ecn is not None:
        ecn = _priorities(ifaces, "ecn_priorities", ecn)
        desired["ecn_np"] = {p: 1 for p in ecn}
        desired["ecn_rp"] = {p: 1 for p in ecn}
    for key, high in (("cnp_dscp", 63), ("cnp_802p_prio", 7), ("cma_roce_tos", 255), ("traffic_class", 255)):
        if opts[key] is not None:
            desired[key] = _int(ifaces, key, opts[key], 0, high)
    if opts["prio_tc"] is not None:
        desired["prio_tc"] = _int_list(ifaces, "prio_tc", opts["prio_tc"], 0, 7, 8)
    if opts["tsa"] is not None:
        tsa = opts["tsa"]
        if isinstance(tsa, str):
            tsa = tsa.split(",")
        if not isinstance(tsa, (list, tuple)) or len(tsa) != 8:
            raise _bad(ifaces, "tsa", opts["tsa"], "is not 8 algorithms", "8 of ets, strict, vendor - one per traffic class")
        for index, word in enumerate(tsa):
            if not isinstance(word, str) or word.strip().lower() not in TSA:
                raise _bad(ifaces, "tsa[%d]" % index, word, "is not a transmission selection algorithm",
                           "ets, strict, vendor")
        desired["tsa"] = [w.strip().lower() for w in tsa]
    if opts["tc_bw"] is not None:
        desired["tc_bw"] = _int_list(ifaces, "tc_bw", opts["tc_bw"], 0, 100, 8)
        if "tsa" in desired:
            check_bandwidth(ifaces, desired["tsa"], desired["tc_bw"])
    return ifaces, desired


def settings_problems(params: Any, host: str, *, leave: Any = ()) -> list[str]:
    """Every bad value among the options in ``params`` (the module's, ``interfaces`` included when given), each as
    ``HOST: roce_qos: OPTION=VALUE WHY (allowed: ...).``; [] when all are good. Options named in ``leave`` are not
    checked (the module leaves them). The checks are desired_state's own: a bad option is set aside and the others
    checked again, so each is named once - the preflight lists them before any host is changed."""
    problems = Problems(prefix=host)
    if not isinstance(params, dict):
        problems.add("roce_qos", "the settings must be a mapping, not %r" % (params,))
        return list(problems)
    for key in params:
        if key not in OPTIONS:   # the module refuses an unknown option: so does the preflight
            guess = close_names(key, OPTIONS) if isinstance(key, str) else []
            problems.add("roce_qos", "%r is not an option of the roce_qos module%s (allowed: %s)." % (
                key, "; did you mean %s?" % guess[0] if guess else "", ", ".join(OPTIONS)))
    left = []
    for given in (params.get("leave"), leave):
        if given is None or given == ():
            continue
        try:
            left += read_leave(list(given) if isinstance(given, tuple) else given)
        except BadSetting as err:
            problems.add("roce_qos", err.detail + ".")
    try:
        check_mgmt_interface(params.get("mgmt_interface"))
    except InvalidValue as err:
        problems.add("roce_qos", err.msg)
    opts = {key: params.get(key, DEFAULTS[key]) for key in DEFAULTS}
    opts.update({key: None for key in left})
    if params.get("interfaces"):
        try:
            _interfaces(params["interfaces"])
        except BadSetting as err:
            problems.add("roce_qos", err.detail + ".")
    for _attempt in range(len(DEFAULTS) + 1):
        try:
            desired_state(dict(opts, interfaces=["IF"]))  # any good name: the interfaces were checked above
            break
        except BadSetting as err:
            problems.add("roce_qos", err.detail + ".")
            key = re.sub(r"\[.*$", "", err.parameter)
            if opts.get(key) is None:
                break  # not an option this loop can set aside
            opts[key] = None
    return list(problems)


def check_bandwidth(interfaces: Sequence[str], tsa: Sequence[str], tc_bw: Sequence[int]) -> None:
    """mlnx_qos: bandwidth of a strict/vendor class must be 0; the ETS classes must add up to 100."""
    for tc, (algo, bw) in enumerate(zip(tsa, tc_bw)):
        if algo != "ets" and bw:
            raise _bad(interfaces, "tc_bw[%d]" % tc, bw, "is set for traffic class %d, whose tsa is %s" % (tc, algo),
                       "0 for a strict or vendor class")
    ets = [bw for algo, bw in zip(tsa, tc_bw) if algo == "ets"]
    if ets and sum(ets) != 100:
        raise _bad(interfaces, "tc_bw", list(tc_bw), "gives the ets classes %s %d%%, not 100%%" % (
            ", ".join("tc%d" % tc for tc, algo in enumerate(tsa) if algo == "ets"), sum(ets)),
            "percentages of the ets classes adding up to 100")


# ---------------------------------------------------------------------------------- reading

def check_tools(reader: Host, desired: Mapping) -> None:
    """ToolNotFound (naming the package) for a tool the ``desired`` settings need that is not on this host."""
    needed = ["mlnx_qos"] if any(k in desired for k in QOS_KEYS) else []
    if "cma_roce_tos" in desired:
        needed.append("cma_roce_tos")
    for tool in needed:
        if not reader.which(tool):
            raise ToolNotFound("%s not found on PATH or in the sbin directories: it is provided by %s"
                               % (tool, TOOLS[tool]), parameter=tool)


def mlx5_interfaces(reader: Host, ports: Mapping[str, object]) -> list[str]:
    """The interfaces of the host that sit on an mlx5 device (driver mlx5_core, or listed by ibdev2netdev)."""
    return sorted(set(n for n in reader.netdevs() if reader.driver_of(n) in MLX5_DRIVERS) | set(ports))


def resolve(reader: Host, interfaces: Sequence[str], *, params: Mapping | None = None) -> dict[str, dict]:
    """``{interface: {"rdma", "port"}}``; refuses interfaces that are not there, not on mlx5, or carry management."""
    params = params or {}
    ports = reader.rdma_ports()
    present = set(reader.netdevs())
    mlx5 = mlx5_interfaces(reader, ports)
    missing = [i for i in interfaces if i not in present and i not in ports]
    if missing:
        raise DeviceNotFound("roce_qos: interface%s %s %s not on this host; the mlx5 interfaces are: %s. Nothing "
                             "was changed." % ("s" if len(missing) > 1 else "", ", ".join(missing),
                                               "are" if len(missing) > 1 else "is", ", ".join(mlx5) or "none"),
                             device=missing, parameter="interfaces", allowed=mlx5)
    foreign = [i for i in interfaces if i not in mlx5]
    if foreign:
        raise DeviceNotFound("roce_qos: %s %s not on an NVIDIA mlx5 device (driver %s); the mlx5 interfaces are: %s. "
                             "Nothing was changed." % (", ".join(foreign), "is" if len(foreign) == 1 else "are",
                                                       ", ".join(str(reader.driver_of(i)) for i in foreign),
                                                       ", ".join(mlx5) or "none"),
                             device=foreign, parameter="interfaces", allowed=mlx5)
    if not params.get("allow_mgmt"):
        mgmt = mgmt_state(reader, {"mgmt_interface": params.get("mgmt_interface"),
                                   "mgmt_address": params.get("mgmt_address")})
        carrying = set(mgmt["interfaces"]) | set(mgmt["evidence"])
        hit = [i for i in interfaces if i in carrying]
        if hit:
            raise Refused("roce_qos: %s carries the management connection (%s: %s); changing its trust, PFC or "
                          "buffers can cut this host off. Leave it out of interfaces, or set allow_mgmt. Nothing "
                          "was changed." % (", ".join(hit), mgmt["source"] or "mgmt_interface",
                                            ", ".join(mgmt["interfaces"])),
                          device=hit, parameter="interfaces", allowed=[i for i in mlx5 if i not in carrying])
    out = {}
    for name in interfaces:
        if name in ports:
            rdma, port = ports[name]
        else:
            rdma, port = _rdma_from_sysfs(reader, name)
        out[name] = {"rdma": rdma, "port": port}
    return out


def _rdma_from_sysfs(reader, name):
    try:
        devs = sorted(os.listdir(reader.path("/sys/class/net", name, "device", "infiniband")))
    except OSError:
        devs = []
    if not devs:
        return None, None
    rdma = devs[0]
    try:
        ports = sorted(int(p) for p in os.listdir(reader.path("/sys/class/infiniband", rdma, "ports")) if p.isdigit())
    except OSError:
        ports = []
    return rdma, (ports[0] if len(ports) == 1 else 1)


def _sys_int(reader, path):
    text = reader.read_sys(path)
    if text is None:
        return None
    text = text.strip()
    return int(text) if re.match(r"^\d{1,9}$", text) else text


def qos_state(parsed: Mapping) -> dict:
    """The parsed ``mlnx_qos`` output -> trust, pfc, prio_tc, tsa and tc_bw lists (None where not printed)."""
    prio_tc, tsa, tc_bw = [None] * 8, [None] * 8, [None] * 8
    for row in parsed["tcs"]:
        tc = row["tc"]
        if not 0 <= tc <= 7:
            continue
        tsa[tc] = row["tsa"]
        bw = (row.get("bw") or "").rstrip("%")
        tc_bw[tc] = int(bw) if bw.isdigit() else (0 if row["tsa"] != "ets" else None)
        for prio in row["priorities"]:
            if 0 <= prio <= 7:
                prio_tc[prio] = tc
    pfc = parsed["pfc"]["enabled"]
    return {"trust": parsed["trust"], "pfc": list(pfc) if pfc and len(pfc) == 8 else pfc,
            "prio_tc": prio_tc, "tsa": tsa, "tc_bw": tc_bw}


def run_tool(reader: Host, argv: Sequence[str], interface: str) -> str:
    """Run ``argv`` (tool name first); a non-zero exit raises ToolFailed naming the interface and the tool's words."""
    rc, out, err = reader.run(list(argv), check=False)
    if rc != 0:
        words = [line.strip() for line in ((err or "") + "\n" + (out or "")).splitlines() if line.strip()]
        reason = words[0] if words else "no output"
        raise ToolFailed("%s: %s failed (rc=%s): %s" % (interface, " ".join(argv), rc, reason),
                         device=interface, cmd=list(argv), rc=rc, stdout=out, stderr=err)
    return out


def read_interface(reader: Host, interface: str, where: Mapping, desired: Mapping) -> dict:
    """The current value of every setting ``desired`` names, for one interface."""
    state = {}
    rdma, port = where["rdma"], where["port"]
    if any(k in desired for k in QOS_KEYS):
        out = run_tool(reader, ["mlnx_qos", "-i", interface], interface)
        try:
            qos = qos_state(parse_mlnx_qos(out))
        except ParseError as err:
            raise ToolFailed("%s: cannot read the output of mlnx_qos -i %s: %s" % (interface, interface, err),
                             device=interface, cmd=["mlnx_qos", "-i", interface], stdout=out)
        state.update({k: qos[k] for k in QOS_KEYS if k in desired})
    for point in ("ecn_np", "ecn_rp"):
        if point in desired:
            state[point] = {p: _sys_int(reader, ecn_path(interface, "roce_" + point[4:], p)) for p in desired[point]}
    for key in ("cnp_dscp", "cnp_802p_prio"):
        if key in desired:
            state[key] = _sys_int(reader, cnp_path(interface, key))
    if ("cma_roce_tos" in desired or "traffic_class" in desired) and rdma is None:
        raise DeviceNotFound("%s: no RDMA device found for it (ibdev2netdev, /sys/class/net/%s/device/infiniband): "
                             "cma_roce_tos and traffic_class need one - is mlx5_ib loaded?" % (interface, interface),
                             device=interface, parameter="interfaces")
    if "cma_roce_tos" in desired:
        text = reader.read_sys(configfs_tos_path(rdma, port))
        if text is None:  # cma_roce_tos without -t shows the value (it makes and removes the configfs directory)
            text = run_tool(reader, ["cma_roce_tos", "-d", rdma, "-p", str(port)], interface)
        state["cma_roce_tos"] = _tos(text)
    if "traffic_class" in desired:
        text = reader.read_sys(traffic_class_path(rdma, port))
        state["traffic_class"] = parse_traffic_class(text) if text is not None else "missing"
    return state


def _tos(text):
    words = (text or "").split()
    return int(words[-1]) if words and words[-1].isdigit() else None


# ---------------------------------------------------------------------------------- deciding

def _same_list(current, wanted):
    """Compare the positions the device reports (None = a traffic class mlnx_qos does not print)."""
    if not isinstance(current, list) or len(current) != len(wanted):
        return False
    return all(c is None or c == w for c, w in zip(current, wanted))


def plan(current: Mapping, desired: Mapping, interface: str | None = None) -> dict[str, dict]:
    """Pure: ``{setting: {"before", "after"}}`` for every setting whose current value differs.

    ``current``: ``read_interface`` output. ECN settings are keyed ``ecn_np[3]`` / ``ecn_rp[3]``.
    A sysfs attribute the driver does not have (None) raises Refused naming interface and path.
    tc_bw given without tsa is checked here against the device's tsa (before anything is written).
    """
    changes = {}
    for key in QOS_KEYS:
        if key not in desired:
            continue
        have, want = current.get(key), desired[key]
        same = _same_list(have, want) if isinstance(want, list) else have == want
        if not same:
            changes[key] = {"before": have, "after": want}
    if "tc_bw" in desired and "tsa" not in desired:
        tsa = [t or "ets" for t in current.get("tsa") or [None] * 8]
        check_bandwidth([interface] if interface else [], tsa, desired["tc_bw"])
    for point, sub in (("ecn_np", "roce_np"), ("ecn_rp", "roce_rp")):
        for prio, want in sorted((desired.get(point) or {}).items()):
            have = (current.get(point) or {}).get(prio)
            if have is None:
                raise Refused("%s: the driver has no %s - ECN needs the mlx5 driver's ecn sysfs (DOCA-OFED / "
                              "MLNX_OFED)" % (interface, ecn_path(interface, sub, prio)), device=interface,
                              parameter="ecn_priorities")
            if have != want:
                changes["%s[%d]" % (point, prio)] = {"before": have, "after": want}
    for key in ("cnp_dscp", "cnp_802p_prio"):
        if key in desired:
            have = current.get(key)
            if have is None:
                raise Refused("%s: the driver has no %s" % (interface, cnp_path(interface, key)), device=interface,
                              parameter=key)
            if have != desired[key]:
                changes[key] = {"before": have, "after": desired[key]}
    if "traffic_class" in desired and current.get("traffic_class") == "missing":
        raise Refused("%s: there is no traffic_class attribute for its RDMA device (mlx5_ib of DOCA-OFED / "
                      "MLNX_OFED provides /sys/class/infiniband/<dev>/tc/<port>/traffic_class; the inbox driver does "
                      "not): leave it with leave: [traffic_class]" % interface, device=interface,
                      parameter="traffic_class")
    for key in ("cma_roce_tos", "traffic_class"):
        if key in desired and current.get(key) != desired[key]:
            changes[key] = {"before": current.get(key), "after": desired[key]}
    return changes


def _csv(values):
    return ",".join(str(v) for v in values)


def commands(interface: str, changes: Mapping[str, Mapping], desired: Mapping, *, rdma: str | None = None,
             port: int | None = None) -> list[dict]:
    """Pure: the steps that carry out ``changes`` - ``{"argv": [...]}`` or ``{"write": path, "value": text}``.

    One mlnx_qos call with every differing QoS option (when any of prio_tc/tsa/tc_bw differs, all of
    them that are managed go together: mlnx_qos sets the three at once). A unit run from udev at
    boot can replay the list as it is.
    """
    steps = []
    argv = ["mlnx_qos", "-i", interface]
    for key in QOS_KEYS:
        send = key in changes or (key in ETS_KEYS and key in desired and any(k in changes for k in ETS_KEYS))
        if send:
            value = desired[key]
            argv += [MLNX_QOS_FLAG[key], value if isinstance(value, str) else _csv(value)]
    if len(argv) > 3:
        steps.append({"argv": argv})
    for key in sorted(changes):
        match = re.match(r"^ecn_(np|rp)\[(\d)\]$", key)
        if match:
            steps.append({"write": ecn_path(interface, "roce_" + match.group(1), int(match.group(2))),
                          "value": str(changes[key]["after"])})
    for key in ("cnp_dscp", "cnp_802p_prio"):
        if key in changes:
            steps.append({"write": cnp_path(interface, key), "value": str(changes[key]["after"])})
    if "traffic_class" in changes:
        steps.append({"write": traffic_class_path(rdma, port), "value": str(changes["traffic_class"]["after"])})
    if "cma_roce_tos" in changes:
        steps.append({"argv": ["cma_roce_tos", "-d", rdma, "-p", str(port), "-t", str(changes["cma_roce_tos"]["after"])]})
    return steps


def replay(interface: str, desired: Mapping, *, rdma: str | None = None, port: int | None = None) -> list[dict]:
    """Pure: the steps that set EVERY managed setting of ``interface`` (not only what differs now) - what
    must run again after a reboot or a driver reload, when the driver is back at its defaults."""
    changes = {key: {"after": value} for key, value in desired.items() if not key.startswith("ecn_")}
    for point in ("ecn_np", "ecn_rp"):
        for prio, value in sorted((desired.get(point) or {}).items()):
            changes["%s[%d]" % (point, prio)] = {"after": value}
    return commands(interface, changes, desired, rdma=rdma, port=port)


def run_steps(reader: Host, interface: str, steps: Sequence[Mapping]) -> None:
    """Carry out ``commands``' steps in order; a tool or a write that fails raises naming the interface."""
    for step in steps:
        if "argv" in step:
            out = run_tool(reader, step["argv"], interface)
            if step["argv"][0] == "cma_roce_tos" and _tos(out) != int(step["argv"][-1]):
                raise MlnxError("%s: cma_roce_tos -t %s did not take: it reports %s" % (
                    interface, step["argv"][-1], (out or "").strip() or "nothing"), device=interface,
                    parameter="cma_roce_tos", cmd=step["argv"], stdout=out)
        else:
            try:
                reader.write_sys(step["write"], step["value"])
            except OSError as err:
                raise MlnxError("%s: writing %s to %s failed: %s" % (
                    interface, step["value"], step["write"], err.strerror or err), device=interface,
                    parameter=step["write"])


# ---------------------------------------------------------------------------------- the whole job

def converge(reader: Host, params: Mapping, *, check_mode: bool = False) -> dict:
    """Everything the module does. Returns ``{"changed", "interfaces": [...], "failed": {interface: msg}}``.

    Bad options, unknown or non-mlx5 or management interfaces, missing tools, unreadable
    interfaces and settings the driver lacks all raise before anything is written.
    """
    interfaces, desired = desired_state(params)
    check_tools(reader, desired)
    where = resolve(reader, interfaces, params=params)

    def read_and_plan(name):
        try:
            current = read_interface(reader, name, where[name], desired)
        except MlnxError:
            raise
        except Exception as exc:  # pylint: disable=broad-except  # a tool that cannot even start, named per interface
            raise MlnxError("%s: cannot read its QoS state: %s" % (name, exc), device=name) from exc
        changes = plan(current, desired, name)
        return current, changes, commands(name, changes, desired, rdma=where[name]["rdma"], port=where[name]["port"])

    planned = plan_all(read_and_plan, interfaces, named_by_item=True)

    def apply(item):
        name, (current, changes, steps) = item
        after = dict(current)
        for key, change in changes.items():
            match = re.match(r"^(ecn_np|ecn_rp)\[(\d)\]$", key)
            if match:
                after[match.group(1)] = dict(after[match.group(1)])
                after[match.group(1)][int(match.group(2))] = change["after"]
            else:
                after[key] = change["after"]
        if changes and not check_mode:
            run_steps(reader, name, steps)
            after = read_interface(reader, name, where[name], desired)
            still = plan(after, desired, name)
            if still:
                raise MlnxError("%s: %s did not take (now %s)" % (
                    name, ", ".join("%s=%s" % (k, _show(v["after"])) for k, v in sorted(still.items())),
                    ", ".join("%s=%s" % (k, _show(v["before"])) for k, v in sorted(still.items()))),
                    device=name, parameter=sorted(still)[0])
        return {"interface": name, "rdma_device": where[name]["rdma"], "port": where[name]["port"],
                "changed": bool(changes), "changes": changes, "before": _public(current),
                "after": _public(after), "commands": steps,
                "replay": replay(name, desired, rdma=where[name]["rdma"], port=where[name]["port"])}

    done = parallel(apply, planned)
    results = [res for _item, res, err in done if err is None]
    failed = {item[0]: str(err) for item, _res, err in done if err is not None}
    return {"changed": any(r["changed"] for r in results) or bool(failed), "interfaces": results, "failed": failed,
            "errors": [err for _n, _r, err in done if err is not None]}


def _show(value):
    return _csv(value) if isinstance(value, list) else value


def _public(state):
    """ECN dicts keyed by priority as strings (for JSON), everything else as read."""
    out = {}
    for key, value in state.items():
        out[key] = {str(p): v for p, v in value.items()} if isinstance(value, dict) else value
    return out


def summary(result: Mapping, *, check_mode: bool) -> str:
    """One line for the task's ``msg``: what failed, changed (would change), or that all is as wanted."""
    changed = [r for r in result["interfaces"] if r["changed"]]
    if result["failed"]:
        return "RoCE QoS failed on %d of %d interfaces: %s" % (
            len(result["failed"]), len(result["interfaces"]) + len(result["failed"]), "; ".join(result["failed"].values()))
    if not changed:
        return "RoCE QoS already as wanted on %s" % ", ".join(r["interface"] for r in result["interfaces"])
    return "%s %s" % ("would change" if check_mode else "changed", "; ".join(
        "%s: %s" % (r["interface"], ", ".join(sorted(r["changes"]))) for r in changed))
