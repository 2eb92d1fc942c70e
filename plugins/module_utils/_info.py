# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Inventory of the NVIDIA NICs/DPUs of one host (the core of ``mlx_info``).

Where each fact comes from, and how many tool runs it costs:

- ``lspci -D -d 15b3: -vv`` (once, via ``_devices.discover``): every physical function,
  VPD (part number, serial, product name), NUMA node, slot, PCIe LnkCap/LnkSta.
- ``mst status -v`` (at most once, MFT family only, when ``mst`` is installed): device type,
  RDMA and net names, and the ``/dev/mst`` names when MST is started. Not started is skipped
  silently (``start_mst`` starts it: ``mst start`` and a second ``mst status -v``).
- ``ibstat`` or ``ibdev2netdev -v`` (at most one of them, when installed): ports. ``ibstat``
  is preferred when the RDMA-name -> PCI mapping is already known (from ``mst``), since it
  gives link layer, port state, physical state and rate; otherwise ``ibdev2netdev -v``, which
  names the PCI address, the netdev and the states, but no link layer or rate.
- ``flint -d PCI q`` / ``mstflint -d PCI q`` (once per card, on its lowest function):
  PSID, burned and running firmware, ROM versions, base MAC/GUID, security attributes.
- ``mlxconfig -d PCI -e q`` / ``mstconfig`` (once per function, only with ``nv_config``):
  default, current and next-boot NV configuration.

The tool runs after discovery happen in parallel. A tool that fails for a device never
hides the device: it is listed from lspci with ``errors`` carrying the tool's words.
Assembling the result from the parsed outputs is pure (``assemble``) apart from the sysfs
look-ups of the host (``_host.Host``: a PCI function's netdevs and RDMA devices, an RDMA
device's PCI function and link layer) that join what the tools leave unjoined; without a
host there are none.
"""

from __future__ import annotations

import os
import re

from ansible_collections.gpufabric.mlnx.plugins.module_utils import _devices as devices_
from ansible_collections.gpufabric.mlnx.plugins.module_utils import _values as values
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError, ToolFailed, ToolNotFound
from ansible_collections.gpufabric.mlnx.plugins.module_utils._host import Host, parallel
from ansible_collections.gpufabric.mlnx.plugins.module_utils._mlxconfig import Query, pending
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers import parse
from ansible_collections.gpufabric.mlnx.plugins.module_utils._runner import Runner

# PCI device id -> the device-type token mlxconfig and mst print. The /dev/mst name
# (mt4129) and ibstat's "CA type: MT4129" carry the same id in decimal (4129 == 0x1021).
DEVICE_IDS = {
    0x1013: "ConnectX4",
    0x1015: "ConnectX4LX",
    0x1017: "ConnectX5",
    0x1019: "ConnectX5",
    0x101B: "ConnectX6",
    0x101D: "ConnectX6DX",
    0x101F: "ConnectX6LX",
    0x1021: "ConnectX7",
    0x1023: "ConnectX8",
    0xA2D6: "BlueField2",
    0xA2DC: "BlueField3",
}

# lspci's (pci.ids) names, most specific first: "MT43244 BlueField-3 integrated ConnectX-7
# network controller" is a BlueField3, "MT2892 Family [ConnectX-6 Dx]" a ConnectX6DX.
DESCRIPTION_TYPES = (
    (re.compile(r"BlueField-?3", re.I), "BlueField3"),
    (re.compile(r"BlueField-?2", re.I), "BlueField2"),
    (re.compile(r"ConnectX-?9", re.I), "ConnectX9"),
    (re.compile(r"ConnectX-?8", re.I), "ConnectX8"),
    (re.compile(r"ConnectX-?7", re.I), "ConnectX7"),
    (re.compile(r"ConnectX-?6 ?Dx", re.I), "ConnectX6DX"),
    (re.compile(r"ConnectX-?6 ?Lx", re.I), "ConnectX6LX"),
    (re.compile(r"ConnectX-?6", re.I), "ConnectX6"),
    (re.compile(r"ConnectX-?5", re.I), "ConnectX5"),
    (re.compile(r"ConnectX-?4 ?Lx", re.I), "ConnectX4LX"),
    (re.compile(r"ConnectX-?4", re.I), "ConnectX4"),
)
# An lspci whose pci.ids is older than the card prints "Mellanox Technologies Device 1021".
UNNAMED_DEVICE_RE = re.compile(r"\bDevice ([0-9a-fA-F]{4})\b")
MT_NUMBER_RE = re.compile(r"(?<![A-Za-z0-9])mt(\d{4,5})(?!\d)", re.I)

# PCI classes that are NIC functions. Bridges (the ConnectX-7 / BlueField-3 PCIe switch),
# the BlueField SoC management DMA function and the like are not listed.

SPEED_RE = re.compile(r"(\d+(?:\.\d+)?)\s*GT/s", re.I)
WIDTH_RE = re.compile(r"(\d+)")
# A port netdev among a BlueField's representors (p0, p1) or a ConnectX uplink (..np0).
UPLINK_RE = re.compile(r"^p\d+\Z|np\d+\Z", re.ASCII)

PORT_STATES = {"ACTIVE": "Active", "DOWN": "Down", "INIT": "Initializing", "ARMED": "Armed",
               "POLLING": "Polling"}


# ---------------------------------------------------------------- small pure helpers

def device_type_from_id(number: object) -> str | None:
    """``0x1021`` or ``4129`` (the same id) -> ``ConnectX7``; None when unknown."""
    try:
        return DEVICE_IDS.get(int(number))
    except (TypeError, ValueError):
        return None


def device_type_from_text(text: str | None) -> str | None:
    """The token from an lspci description, an mst name or an ibstat CA type."""
    text = text or ""
    for pattern, token in DESCRIPTION_TYPES:
        if pattern.search(text):
            return token
    match = UNNAMED_DEVICE_RE.search(text)
    if match:
        return device_type_from_id(int(match.group(1), 16))
    match = MT_NUMBER_RE.search(text)
    if match:
        return device_type_from_id(int(match.group(1)))
    return None


def clean_type(token: str | None) -> str | None:
    """``ConnectX7(rev:0)`` -> ``ConnectX7``; ``NA``/``N/A`` -> None."""
    token = (token or "").split("(", 1)[0].strip()
    return None if token.upper() in ("", "NA", "N/A") else token


def _int_or_none(value):
    try:
        number = int(str(value).strip())
    except (TypeError, ValueError):
        return None
    return None if number < 0 else number


def _speed(value):
    match = SPEED_RE.search(str(value or ""))
    return float(match.group(1)) if match else None


def _link(raw):
    """lspci's ``{speed, width}`` -> ``{"speed": "16GT/s", "width": 16}`` (None when unread)."""
    if not raw:
        return None
    speed_num = _speed(raw.get("speed"))
    width = WIDTH_RE.search(str(raw.get("width") or ""))
    speed = None
    if speed_num is not None:
        speed = ("%g" % speed_num) + "GT/s"
    return {"speed": speed, "width": int(width.group(1)) if width else None}


def pcie_status(lnkcap: dict | None, lnksta: dict | None) -> dict:
    """``{lnkcap, lnksta, degraded}``: degraded when the link trained narrower or slower than
    the device can run (LnkSta under LnkCap), None when lspci could not read both."""
    cap, sta = _link(lnkcap), _link(lnksta)
    degraded = None
    if cap and sta:
        checks = []
        if cap["width"] is not None and sta["width"] is not None:
            checks.append(sta["width"] < cap["width"])
        if cap["speed"] is not None and sta["speed"] is not None:
            checks.append(_speed(sta["speed"]) < _speed(cap["speed"]))
        if (lnksta or {}).get("downgraded"):
            checks.append(True)
        degraded = any(checks) if checks else None
    return {"lnkcap": cap, "lnksta": sta, "degraded": degraded}


def _rate(value):
    """ibstat's ``Rate: 400`` (Gb/s) -> 400; ``2.5`` -> 2.5; anything else as printed."""
    text = str(value).strip() if value is not None else ""
    if re.match(r"^\d+$", text):
        return int(text)
    if re.match(r"^\d+\.\d+$", text):
        return float(text)
    return value


def _guid_int(guid):
    try:
        return int(str(guid).lower().replace("0x", "").replace(":", ""), 16)
    except (TypeError, ValueError):
        return None


def _port_state(state):
    if not state:
        return None
    word = str(state).rsplit(":", maxsplit=1)[-1].strip()
    return PORT_STATES.get(word.upper(), word)


def _uplink(netdevs):
    """The netdev of a function's port: the only one, or the uplink among representors."""
    if len(netdevs) == 1:
        return netdevs[0]
    for name in netdevs:
        if UPLINK_RE.search(name):
            return name
    return netdevs[0] if netdevs else None


def _add(seq, item):
    if item and item not in seq:
        seq.append(item)


def _tool_error(result):
    """``flint -d 0000:e2:00.0 q failed (rc 1): Cannot open Device: ...``: the tool's words."""
    argv = [os.path.basename(result.cmd[0])] + list(result.cmd[1:])
    return "%s failed (rc %s): %s" % (" ".join(argv), result.rc, result.reason())


# ---------------------------------------------------------------- reading (tools)

def family_of(runner: Runner) -> tuple[str | None, str | None]:
    """``(family, None)`` or ``(None, message)`` when neither MFT nor mstflint is installed."""
    try:
        return runner.family, None
    except ToolNotFound as err:
        return None, str(err)


def _mst_rows(result):
    """``(rows, started)`` from ``mst status -v``.

    MST is started when rows carry ``/dev/mst`` names. Not started, ``mst status`` prints only
    the module lines ("... module is not loaded"), or (``-v``) rows whose MST column is ``NA``;
    their RDMA and NET columns are still right (they come from sysfs) and are used.
    """
    if result.rc != 0:
        return [], False
    started = "/dev/mst/" in result.stdout
    try:
        parsed = parse("mst_status", result.stdout)
    except ValueError:
        if started:
            raise
        return [], False
    rows = [d for d in parsed.get("devices") or [] if d.get("pci")]
    return rows, started


def read_mst(runner: Runner, *, start_mst: bool = False, check_mode: bool = False) -> tuple[dict, str]:
    """``(rows_by_pci, source)`` from ``mst status -v``.

    ``source`` is ``started``, ``not started`` (skipped silently: no /dev/mst names),
    ``started now`` (with ``start_mst``), ``would start`` (check mode), or a failure text.
    MST is never started unless asked.
    """
    rows, started = _mst_rows(runner.run("mst", ["status", "-v"], check=False))
    source = "started" if started else "not started"
    if not started and start_mst:
        if check_mode:
            source = "would start"
        else:
            start = runner.run("mst", ["start"], check=False)
            if start.rc != 0:
                return {devices_.pci_full(str(d["pci"])): d for d in rows}, _tool_error(start)
            rows, started = _mst_rows(runner.run("mst", ["status", "-v"], check=False))
            source = "started now"
    return {devices_.pci_full(str(d["pci"])): d for d in rows}, source


def choose_port_tool(runner: Runner, rdma_known: bool) -> str | None:
    """``ibstat`` when the RDMA -> PCI join is known (it tells link layer and rate),
    else ``ibdev2netdev`` (its ``-v`` names the PCI address), else whichever exists."""
    order = ("ibstat", "ibdev2netdev") if rdma_known else ("ibdev2netdev", "ibstat")
    for role in order:
        if runner.has(role):
            return role
    return None


def read_ports(runner: Runner, tool: str) -> list:
    """The parsed port listing: ibstat CAs or ibdev2netdev rows."""
    if tool == "ibstat":
        # stderr too: a device ibstat cannot read is an ibpanic line there and exit 255 before rdma-core v54 (after
        # the CAs before it on stdout), an ibwarn line and exit 0 from v54; the parser refuses either, naming the
        # device (the rc alone would be reported with stdout's last line, a CA's "Link layer:")
        result = runner.run("ibstat", [], check=False)
        text = result.stdout + ("\n" + result.stderr if result.stderr.strip() else "")
        if result.rc != 0:
            if "ibpanic:" in result.stderr:
                parse("ibstat", text)
            raise ToolFailed("%s failed with rc %s: %s" % (" ".join(result.cmd), result.rc, result.reason()),
                             cmd=result.cmd, rc=result.rc, stdout=result.stdout, stderr=result.stderr)
        return parse("ibstat", text)
    return parse("ibdev2netdev", runner.run("ibdev2netdev", ["-v"]).stdout)


def read_flint(runner: Runner, address: str) -> dict:
    result = runner.run("flint", ["-d", address, "q"], check=False)
    if result.rc != 0:
        raise MlnxError(_tool_error(result), device=address, cmd=result.cmd, rc=result.rc,
                        stdout=result.stdout, stderr=result.stderr)
    return parse("flint", result.stdout)


# ---------------------------------------------------------------- assembling (pure)

def _port_entry(rdma, number, link_layer, state, *, physical_state=None, rate=None, netdev=None, netdev_state=None):
    """One ``ports[]`` entry of a device, from ibstat (physical state, rate) or ibdev2netdev (netdev and its state)."""
    return {"port": _int_or_none(number), "rdma": rdma, "link_layer": link_layer, "state": _port_state(state),
            "physical_state": physical_state, "rate": rate, "netdev": netdev, "netdev_state": netdev_state}


def _ports_by_pci(port_tool, port_data, mst, host, flint_by_card):
    """``({pci: [port]}, {pci: [rdma]}, {pci: [netdev]}, {pci: ca_type})`` from the port tool."""
    rdma_to_pci = {}
    for pci, entry in mst.items():
        if entry.get("rdma"):
            rdma_to_pci[entry["rdma"]] = pci
    ports, rdmas, nets, ca_types = {}, {}, {}, {}

    def locate(rdma, pci=None, node_guid=None):
        if pci:
            return devices_.pci_full(str(pci))
        if rdma in rdma_to_pci:
            return rdma_to_pci[rdma]
        found = host.rdma_pci(rdma) if host else None
        if found:
            return found
        # Last resort: a function's node GUID is its card's base GUID plus the function.
        node = _guid_int(node_guid)
        if node is not None:
            for card, info in flint_by_card.items():
                base = _guid_int((info or {}).get("base_guid"))
                if base is not None and 0 <= node - base < 8:
                    return "%s.%d" % (card, node - base)
        return None

    def card(rdma, ca_type, **where):
        """The PCI function of ``rdma`` (None: not found), with the RDMA device and its CA type filed under it."""
        pci = locate(rdma, **where)
        if pci:
            _add(rdmas.setdefault(pci, []), rdma)
            ca_types.setdefault(pci, ca_type)
        return pci

    if port_tool == "ibstat":
        for ca in port_data or []:
            pci = card(ca.get("name"), ca.get("ca_type"), node_guid=ca.get("node_guid"))
            if not pci:
                continue
            for port in ca.get("ports") or []:
                ports.setdefault(pci, []).append(_port_entry(
                    ca.get("name"), port.get("port"), port.get("link_layer"), port.get("state"),
                    physical_state=port.get("physical_state"), rate=_rate(port.get("rate"))))
    elif port_tool == "ibdev2netdev":
        for row in port_data or []:
            pci = card(row.get("rdma"), row.get("hca_type"), pci=row.get("pci"))
            if not pci:
                continue
            netdev = row.get("netdev")
            if netdev and netdev.upper() not in ("N/A", "NA"):
                _add(nets.setdefault(pci, []), netdev)
            else:
                netdev = None
            ports.setdefault(pci, []).append(_port_entry(
                row.get("rdma"), row.get("port"), host.link_layer(row.get("rdma"), row.get("port")) if host else None,
                row.get("port_state"), netdev=netdev, netdev_state=row.get("state")))
    return ports, rdmas, nets, ca_types


def _card_fields(info):
    info = info or {}
    burned = info.get("fw_version")
    running = info.get("fw_version_running") or burned
    roms = {}
    for rom in info.get("rom_info") or []:
        if rom.get("type"):
            roms[rom["type"]] = rom.get("version")
    return {
        "psid": info.get("psid"),
        "fw_version": burned,
        "fw_running": running,
        "fw_pending": bool(burned and running and burned != running),
        "fw_release_date": info.get("fw_release_date"),
        "rom_versions": roms,
        "base_mac": info.get("base_mac"),
        "base_guid": info.get("base_guid"),
        "security_attributes": info.get("security_attributes"),
    }


def _nv_fields(parsed):
    params = parsed.get("params") or {}
    table = {}
    for name, entry in params.items():
        default, current, nxt = entry.get("default"), entry.get("current"), entry.get("next")
        modified = entry.get("modified")
        if modified is None and default is not None and nxt is not None:
            modified = not values.equal(default, nxt)
        table[name] = {"default": default, "current": current, "next": nxt, "modified": modified}
    return table, pending(params)


def assemble(lspci: list[dict], mst: dict, flint_by_card: dict, flint_errors: dict, ports_info: tuple, *,
             nv_by_device: dict | None = None, nv_errors: dict | None = None, common_errors: list | None = None,
             host: Host | None = None) -> list[dict]:
    """Every function, one dict each, from what the tools said (pure apart from ``host``'s sysfs look-ups)."""
    ports, rdmas, nets, ca_types = ports_info
    out = []
    for dev in lspci:
        address = dev["address"]
        card = devices_.card_of(address)
        vpd = dict(dev.get("vpd") or {})
        entry = mst.get(address) or {}
        flint = flint_by_card.get(card) or {}
        errors = list(common_errors or []) + list(flint_errors.get(card) or [])

        netdevs = []
        for name in entry.get("net") or []:
            _add(netdevs, re.sub(r"^net-", "", name))
        for name in nets.get(address) or []:
            _add(netdevs, name)
        if not netdevs and host:
            netdevs = host.pci_netdevs(address)
        rdma = []
        _add(rdma, entry.get("rdma") if entry.get("rdma") not in ("NA", "N/A") else None)
        for name in rdmas.get(address) or []:
            _add(rdma, name)
        if not rdma and host:
            rdma = host.pci_rdma_devices(address)

        port_list = [dict(p) for p in ports.get(address) or []]
        for port in port_list:
            if port["netdev"] is None:
                port["netdev"] = _uplink(netdevs)

        device_type = (clean_type(entry.get("device_type"))
                       or device_type_from_text(dev.get("description"))
                       or device_type_from_text(os.path.basename(str(entry.get("mst") or ""))))
        if device_type is None:
            device_type = device_type_from_text(ca_types.get(address))
        numa = _int_or_none(dev.get("numa_node"))
        if numa is None:
            numa = _int_or_none(entry.get("numa"))

        item = {
            "address": address,
            "function": int(address.rsplit(".", 1)[1]),
            "card": card,
            "mst": entry.get("mst") if str(entry.get("mst") or "").startswith("/dev/mst") else None,
            "device_type": device_type,
            "part_number": vpd.get("PN") or flint.get("part_number"),
            "description": dev.get("product_name") or flint.get("description") or dev.get("description"),
            "serial_number": vpd.get("SN"),
            "vpd": vpd,
            "physical_slot": dev.get("physical_slot"),
            "driver": dev.get("driver"),
            "netdevs": netdevs,
            "rdma_devices": rdma,
            "ports": port_list,
            "numa_node": numa,
            "pcie": pcie_status(dev.get("lnkcap"), dev.get("lnksta")),
            "errors": errors,
        }
        item.update(_card_fields(flint))
        if nv_by_device is not None:
            parsed = nv_by_device.get(address)
            if parsed is not None:
                item["nv_config"], item["pending_nv"] = _nv_fields(parsed)
                if not item["device_type"]:
                    item["device_type"] = clean_type(parsed.get("device_type"))
            else:
                item["nv_config"], item["pending_nv"] = None, None
            item["errors"] += list((nv_errors or {}).get(address) or [])
        out.append(item)
    return out


def summarize(devices: list[dict], family: str | None) -> dict:
    cards = {}
    for dev in devices:
        cards.setdefault(dev["card"], dev)

    def count(key, seq):
        table = {}
        for item in seq:
            if item.get(key):
                table[item[key]] = table.get(item[key], 0) + 1
        return table

    out = {
        "devices": len(devices),
        "cards": len(cards),
        "device_types": count("device_type", cards.values()),
        "part_numbers": count("part_number", cards.values()),
        "fw_versions": count("fw_running", cards.values()),
        "fw_pending": sum(1 for dev in cards.values() if dev.get("fw_pending")),
        "pcie_degraded": sum(1 for dev in devices if dev["pcie"].get("degraded")),
        "with_errors": sum(1 for dev in devices if dev["errors"]),
        "ports_active": sum(1 for dev in devices for port in dev["ports"] if port.get("state") == "Active"),
        "tool_family": family,
    }
    if any("nv_config" in dev for dev in devices):
        out["nv_pending"] = sum(1 for dev in devices if dev.get("pending_nv"))
    return out


# ---------------------------------------------------------------- the whole job

def gather(runner: Runner, *, nv_config: bool = False, start_mst: bool = False, check_mode: bool = False,
           host: Host | None = None) -> dict:
    """The inventory: ``{"devices", "summary", "tool_family", "sources", "changed", "warnings"}``.

    ``host`` (a ``_host.Host``, usually ``runner.host``) joins in sysfs what the tools leave unjoined;
    None: no sysfs look-ups. Raises only when discovery itself fails (no lspci); everything else
    lands in a device's ``errors``.
    """
    lspci = devices_.discover(runner)
    family, family_error = family_of(runner)
    sources = {"lspci": "ok", "mst": "absent", "ports": None, "flint": None, "nv_config": None}
    warnings = []

    mst = {}
    if family == "mft" and runner.has("mst"):
        try:
            mst, sources["mst"] = read_mst(runner, start_mst=start_mst, check_mode=check_mode)
        except Exception as err:  # pylint: disable=broad-except  # mst only adds names; never fatal
            sources["mst"] = "mst status failed: %s" % err
        if sources["mst"] not in ("started", "not started", "started now", "would start"):
            warnings.append("mst: %s" % sources["mst"])
    elif family == "mstflint":
        sources["mst"] = "not in mstflint"

    addresses = [dev["address"] for dev in lspci]
    rdma_known = bool(addresses) and all(mst.get(a, {}).get("rdma") for a in addresses)
    port_tool = choose_port_tool(runner, rdma_known) if addresses else None
    sources["ports"] = port_tool

    # one flint per card, on its lowest function present
    cards = {}
    for address in addresses:
        cards.setdefault(devices_.card_of(address), address)
    jobs, query = [], None
    if port_tool:
        jobs.append(("ports", port_tool))
    if family:
        sources["flint"] = runner.name("flint")
        jobs += [("flint", address) for address in cards.values()]
        if nv_config:
            sources["nv_config"] = runner.name("config")
            query = Query(runner)
            jobs += [("config", address) for address in addresses]

    def run(job):
        kind, target = job
        if kind == "ports":
            return read_ports(runner, target)
        if kind == "flint":
            return read_flint(runner, target)
        return query.read(target)

    flint_by_card, flint_errors, nv_by_device, nv_errors = {}, {}, {}, {}
    port_data, port_error = None, None
    for (kind, target), result, error in parallel(run, jobs):
        if kind == "ports":
            port_data, port_error = result, error
        elif kind == "flint":
            card = devices_.card_of(target)
            if error is None:
                flint_by_card[card] = result
                if result.get("errors"):   # -E- lines printed with rc 0
                    flint_errors[card] = ["%s -d %s q: %s" % (runner.name("flint"), target, "; ".join(result["errors"]))]
            else:
                flint_errors[card] = [str(error)]
        elif error is None:
            nv_by_device[target] = result
        else:
            nv_errors[target] = [str(error)]
    if port_error is not None:
        sources["ports"] = "%s: %s" % (port_tool, port_error)
        warnings.append("ports not read: %s" % sources["ports"])
        port_tool = None

    common = ["%s (firmware facts not read)" % family_error] if family_error else []
    ports_info = _ports_by_pci(port_tool, port_data, mst, host, flint_by_card)
    found = assemble(lspci, mst, flint_by_card, flint_errors, ports_info,
                     nv_by_device=nv_by_device if nv_config else None, nv_errors=nv_errors, common_errors=common,
                     host=host)
    return {
        "devices": found,
        "summary": summarize(found, family),
        "tool_family": family,
        "sources": sources,
        "changed": sources["mst"] == "started now",
        "warnings": warnings,
    }
