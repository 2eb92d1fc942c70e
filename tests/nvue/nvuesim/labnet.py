# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``lab`` provider: a leaf container's own interfaces and real LLDP frames, and the applied configuration
carried to those interfaces.

- ``LabProvider.ports``: link state from ``/sys/class/net/<swp>/operstate`` and ``carrier``, the real MTU
  (``mtu``), the speed of the state (a veth has none), the LLDP neighbours a ``LldpListener`` heard.
- ``parse_lldp``: a pure parser of one Ethernet frame (IEEE 802.1AB TLVs); never raises.
- ``link_plan``: pure - the ``ip`` argv lists that make the swp ports what the applied config says (MTU, admin
  state, addresses, access-VLAN bridges with their SVI address); ``sync_links`` reads ``ip -j -d addr show``,
  runs them (argv lists, no shell) and remembers what it added in ``<state>/links.json``.
"""
import ipaddress
import json
import os
import re
import select
import socket
import struct
import subprocess
import threading
import time

from . import model, tree
from .operational import register

SYS_CLASS_NET = "/sys/class/net"
ETH_P_LLDP = 0x88CC
ETH_P_8021Q = 0x8100
LLDP_MULTICAST = bytes.fromhex("0180c200000e")
SOL_PACKET = 263
PACKET_ADD_MEMBERSHIP = 1
PACKET_MR_MULTICAST = 0
VLAN_RE = re.compile(r"^vlan([0-9]{1,4})\Z", re.ASCII)
MGMT = "eth0"                          # never touched
LINKS_FILE = "links.json"

# TLV types (IEEE 802.1AB-2016 8.4) and the subtypes read here.
TLV_END, TLV_CHASSIS, TLV_PORT, TLV_TTL, TLV_PORT_DESC, TLV_SYSNAME = 0, 1, 2, 3, 4, 5
CHASSIS_MAC, CHASSIS_NETADDR = 4, 5
PORT_MAC, PORT_NETADDR = 3, 4
PORT_SUBTYPES = {1: "ifalias", 2: "port", 3: "mac", 4: "netaddr", 5: "ifname", 6: "agent-circuit-id", 7: "local"}
CHASSIS_SUBTYPES = {1: "chassis-component", 2: "ifalias", 3: "port", 4: "mac", 5: "netaddr", 6: "ifname",
                    7: "local"}


# ------------------------------------------------------------------------------------------------ LLDP parser
def _mac(data):
    return ":".join("%02x" % b for b in data)


def _text(data):
    """A TLV string: UTF-8 with control characters dropped (a malformed peer cannot inject newlines)."""
    return "".join(ch for ch in data.decode("utf-8", "replace") if ch.isprintable())


def _id(subtype, data, mac_subtype, netaddr_subtype):
    if subtype == mac_subtype and len(data) == 6:
        return _mac(data)
    if subtype == netaddr_subtype and len(data) >= 2:
        family, addr = data[0], data[1:]
        try:
            if family == 1 and len(addr) == 4:
                return str(ipaddress.IPv4Address(addr))
            if family == 2 and len(addr) == 16:
                return str(ipaddress.IPv6Address(addr))
        except ValueError:
            pass
        return addr.hex()
    return _text(data)


def parse_lldp(frame):
    """One Ethernet frame -> {"chassis-id", "chassis-subtype", "port", "port-subtype", "ttl", "description",
    "system-name"}, or None when it is not a well-formed LLDPDU (not LLDP, truncated TLV, wrong lengths, the
    mandatory chassis / port / TTL TLVs missing or out of order)."""
    try:
        return _parse(bytes(frame))
    except Exception:   # noqa: BLE001 - a frame from the wire must never stop the listener
        return None


def _parse(frame):
    if len(frame) < 14:
        return None
    offset, ethertype = 12, struct.unpack_from("!H", frame, 12)[0]
    if ethertype == ETH_P_8021Q:
        if len(frame) < 18:
            return None
        offset, ethertype = 16, struct.unpack_from("!H", frame, 16)[0]
    if ethertype != ETH_P_LLDP:
        return None
    pos = offset + 2
    out = {}
    order = []
    while True:
        if pos + 2 > len(frame):
            return None                        # no End TLV: truncated
        header = struct.unpack_from("!H", frame, pos)[0]
        kind, length = header >> 9, header & 0x1FF
        pos += 2
        if pos + length > len(frame):
            return None                        # the TLV runs past the frame
        value = frame[pos:pos + length]
        pos += length
        if kind == TLV_END:
            if length != 0:
                return None
            break
        order.append(kind)
        if kind in (TLV_CHASSIS, TLV_PORT):
            if not 2 <= length <= 256 or kind in out.get("_seen", ()):
                return None
            subtype, data = value[0], value[1:]
            if kind == TLV_CHASSIS:
                out["chassis-subtype"] = CHASSIS_SUBTYPES.get(subtype, str(subtype))
                out["chassis-id"] = _id(subtype, data, CHASSIS_MAC, CHASSIS_NETADDR)
            else:
                out["port-subtype"] = PORT_SUBTYPES.get(subtype, str(subtype))
                out["port"] = _id(subtype, data, PORT_MAC, PORT_NETADDR)
            out.setdefault("_seen", []).append(kind)
        elif kind == TLV_TTL:
            if length != 2 or "ttl" in out:
                return None
            out["ttl"] = struct.unpack("!H", value)[0]
        elif kind == TLV_PORT_DESC:
            out["description"] = _text(value)
        elif kind == TLV_SYSNAME:
            out["system-name"] = _text(value)
    if order[:3] != [TLV_CHASSIS, TLV_PORT, TLV_TTL]:
        return None                            # 802.1AB: chassis id, port id, TTL first, in this order
    out.pop("_seen", None)
    out.setdefault("description", "")
    out.setdefault("system-name", "")
    return out


def build_lldp(chassis_mac, port, ttl=120, system_name=None, description=None, src=None):
    """An LLDP frame (for tests and the README): MAC chassis id, interface-name port id."""
    def tlv(kind, value):
        return struct.pack("!H", (kind << 9) | len(value)) + value
    body = tlv(TLV_CHASSIS, bytes([CHASSIS_MAC]) + bytes.fromhex(chassis_mac.replace(":", "")))
    body += tlv(TLV_PORT, bytes([5]) + port.encode())
    body += tlv(TLV_TTL, struct.pack("!H", ttl))
    if description is not None:
        body += tlv(TLV_PORT_DESC, description.encode())
    if system_name is not None:
        body += tlv(TLV_SYSNAME, system_name.encode())
    body += tlv(TLV_END, b"")
    src = bytes.fromhex((src or chassis_mac).replace(":", ""))
    return LLDP_MULTICAST + src + struct.pack("!H", ETH_P_LLDP) + body


# ------------------------------------------------------------------------------------------------ LLDP table
class LldpTable:
    """What each port heard: per port, per (chassis id, port id), the last LLDPDU and when. An entry older than
    its TTL is gone; a TTL of 0 (a shutdown LLDPDU) removes it at once."""

    def __init__(self, clock=time.monotonic):
        self.clock = clock
        self.lock = threading.Lock()
        self.entries = {}

    def heard(self, port, lldpdu):
        key = (lldpdu["chassis-id"], lldpdu["port"])
        with self.lock:
            if lldpdu["ttl"] == 0:
                self.entries.get(port, {}).pop(key, None)
            else:
                self.entries.setdefault(port, {})[key] = (dict(lldpdu), self.clock())

    def neighbors(self, port):
        now = self.clock()
        with self.lock:
            current = self.entries.get(port, {})
            for key in [k for k, (e, seen) in current.items() if now - seen > e["ttl"]]:
                del current[key]
            return [dict(e, age=round(now - seen, 1)) for e, seen in current.values()]


LLDP = LldpTable()      # the table of this nvued process (the listener fills it, the provider reads it)


class LldpListener:
    """A thread reading LLDP frames on the switch ports (AF_PACKET raw sockets, ethertype 0x88cc) into a table.
    A port that is missing (or was re-created) is opened again every few seconds."""

    def __init__(self, ports, table=LLDP, reopen_seconds=2.0):
        self.ports = list(ports)
        self.table = table
        self.reopen_seconds = reopen_seconds
        self.socks = {}
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.run, name="lldp", daemon=True)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.stopped.set()

    def _open(self, port):
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_LLDP))
        try:
            sock.bind((port, ETH_P_LLDP))
            ifindex = socket.if_nametoindex(port)
            mreq = struct.pack("iHH8s", ifindex, PACKET_MR_MULTICAST, 6, LLDP_MULTICAST)
            sock.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP, mreq)
        except OSError:
            sock.close()
            raise
        return sock, ifindex

    def _reopen(self):
        for port in self.ports:
            try:
                index = socket.if_nametoindex(port)
            except OSError:
                index = None
            have = self.socks.get(port)
            if have and have[1] == index:
                continue
            if have:
                have[0].close()
                del self.socks[port]
            if index is not None:
                try:
                    self.socks[port] = self._open(port)
                except OSError:
                    pass

    def run(self):
        last = 0.0
        while not self.stopped.is_set():
            if time.monotonic() - last >= self.reopen_seconds:
                self._reopen()
                last = time.monotonic()
            by_fd = {s.fileno(): (port, s) for port, (s, _i) in self.socks.items()}
            if not by_fd:
                self.stopped.wait(self.reopen_seconds)
                continue
            try:
                ready = select.select(list(by_fd), [], [], 0.5)[0]
            except (OSError, ValueError):
                last = 0.0
                continue
            for fd in ready:
                port, sock = by_fd[fd]
                try:
                    frame, addr = sock.recvfrom(2048)
                except OSError:
                    last = 0.0
                    continue
                if len(addr) > 2 and addr[2] == socket.PACKET_OUTGOING:
                    continue
                lldpdu = parse_lldp(frame)
                if lldpdu is not None:
                    self.table.heard(port, lldpdu)


# ------------------------------------------------------------------------------------------------ provider
def _read(path):
    try:
        with open(path) as fh:
            return fh.read().strip()
    except OSError:
        return None


@register("lab")
class LabProvider:
    """The leaf container's own ports: /sys/class/net and what the LLDP listener heard."""

    def __init__(self, sys_root=None, table=None):
        self.sys_root = sys_root or os.environ.get("NVUESIM_SYS_CLASS_NET") or SYS_CLASS_NET
        self.table = table or LLDP

    def ports(self, state):
        out = {}
        for name, port in state.get("ports", {}).items():
            base = os.path.join(self.sys_root, name)
            operstate = _read(os.path.join(base, "operstate"))
            carrier = _read(os.path.join(base, "carrier"))   # unreadable (EINVAL) while admin down
            mtu = _read(os.path.join(base, "mtu"))
            neighbors = []
            for nb in self.table.neighbors(name):
                system = nb.get("system-name") or nb["chassis-id"]
                neighbors.append({"system-name": system, "chassis-id": nb["chassis-id"], "port": nb["port"],
                                  "description": nb.get("description") or nb["port"], "ttl": nb["ttl"],
                                  "age": nb.get("age")})
            out[name] = {"carrier": operstate == "up" and carrier == "1",
                         "speed": port.get("speed", "400G"),
                         "mtu": int(mtu) if mtu and mtu.isdigit() else None,
                         "present": operstate is not None,
                         "neighbors": neighbors, "counters": port.get("counters", {})}
        return out


# ------------------------------------------------------------------------------------------------ config -> links
def parse_ip_json(text):
    """``ip -j -d addr show`` -> {ifname: {"mtu", "up", "master", "kind", "addrs": [cidr...]}}."""
    out = {}
    for row in json.loads(text or "[]"):
        name = row.get("ifname")
        if not name:
            continue
        addrs = ["%s/%s" % (a["local"], a["prefixlen"]) for a in row.get("addr_info") or []
                 if a.get("family") in ("inet", "inet6") and a.get("local") and a.get("scope", "global") != "link"]
        out[name] = {"mtu": row.get("mtu"), "up": "UP" in (row.get("flags") or []), "master": row.get("master"),
                     "kind": (row.get("linkinfo") or {}).get("info_kind"), "addrs": addrs}
    return out


def _addresses(intf):
    out = []
    for addr in sorted((tree.get(intf, ["ip", "address"], None) or {})):
        try:
            out.append(str(ipaddress.ip_interface(addr)))
        except ValueError:
            continue            # not an address (validation is the engine's business): nothing to put there
    return out


def desired_links(applied, ports):
    """What the applied config asks of the ports: {port: {"mtu", "up", "addrs", "bridge"}} and the access-VLAN
    bridges {vlan<vid>: {"ports": [...], "addrs": [...]}}."""
    interfaces = applied.get("interface") or {}
    want, bridges = {}, {}
    for port in ports:
        if port == MGMT or not model.PORT_RE.match(port):
            continue
        intf = interfaces.get(port) if isinstance(interfaces.get(port), dict) else {}
        mtu = tree.get(intf, ["link", "mtu"], None)
        if isinstance(mtu, bool) or not isinstance(mtu, int) or not model.MTU_MIN <= mtu <= model.MTU_MAX:
            mtu = model.DEFAULT_MTU
        up = "down" not in (tree.get(intf, ["link", "state"], None) or {})
        vid = tree.get(intf, ["bridge", "domain", "br_default", "access"], None)
        bridge = None
        if isinstance(vid, int) and not isinstance(vid, bool) and 1 <= vid <= 4094:
            bridge = "vlan%d" % vid
            svi = interfaces.get(bridge) if isinstance(interfaces.get(bridge), dict) else {}
            entry = bridges.setdefault(bridge, {"ports": [], "addrs": _addresses(svi)})
            entry["ports"].append(port)
        want[port] = {"mtu": mtu, "up": up, "addrs": [] if bridge else _addresses(intf), "bridge": bridge}
    return want, bridges


def link_plan(applied, ports, live, owned):
    """The ``ip`` argv lists that carry the applied config to the interfaces, and what the emulator then owns.

    live: parse_ip_json's view; owned: {"addrs": {ifname: [cidr]}, "bridges": [name]} - what an earlier sync
    added. Addresses: exactly the configured ones (missing ones added; ones the emulator added earlier and no
    longer configured removed; others left alone). eth0 is never touched."""
    want, bridges = desired_links(applied, ports)
    owned_addrs = {k: list(v) for k, v in (owned.get("addrs") or {}).items()}
    owned_bridges = set(owned.get("bridges") or [])
    argvs = []

    def addresses(ifname, desired, present):
        mine = set(owned_addrs.get(ifname, []))
        for addr in desired:
            if addr not in present:
                argvs.append(["ip", "address", "add", addr, "dev", ifname])
        for addr in sorted(mine - set(desired)):
            if addr in present:
                argvs.append(["ip", "address", "del", addr, "dev", ifname])
        if desired:
            owned_addrs[ifname] = list(desired)
        else:
            owned_addrs.pop(ifname, None)

    for name, entry in sorted(bridges.items()):
        if name not in live:
            argvs.append(["ip", "link", "add", "name", name, "type", "bridge"])
        if name not in live or not live[name]["up"]:
            argvs.append(["ip", "link", "set", "dev", name, "up"])
        owned_bridges.add(name)
    for port, entry in want.items():
        have = live.get(port)
        if have is None:
            continue                            # not cabled (yet): nothing to set
        if have["mtu"] != entry["mtu"]:
            argvs.append(["ip", "link", "set", "dev", port, "mtu", str(entry["mtu"])])
        if entry["bridge"] and have.get("master") != entry["bridge"]:
            argvs.append(["ip", "link", "set", "dev", port, "master", entry["bridge"]])
        elif not entry["bridge"] and have.get("master") in owned_bridges:
            argvs.append(["ip", "link", "set", "dev", port, "nomaster"])
        if have["up"] != entry["up"]:
            argvs.append(["ip", "link", "set", "dev", port, "up" if entry["up"] else "down"])
        addresses(port, entry["addrs"], have["addrs"])
    for name, entry in sorted(bridges.items()):
        addresses(name, entry["addrs"], (live.get(name) or {}).get("addrs", []))
    for name in sorted(owned_bridges - set(bridges)):
        if name in live:
            argvs.append(["ip", "link", "del", "dev", name])
        owned_addrs.pop(name, None)
        owned_bridges.discard(name)
    for argv in argvs:
        assert MGMT not in argv, argv           # never eth0
    return argvs, {"addrs": owned_addrs, "bridges": sorted(owned_bridges)}


def sync_links(store, runner=subprocess.run):
    """Read the interfaces, run the plan for the applied config, remember what the emulator owns, log it."""
    state = store.load()
    if state.get("provider") != "lab":
        return []
    owned_path = os.path.join(store.dir, LINKS_FILE)
    try:
        with open(owned_path) as fh:
            owned = json.load(fh)
    except (OSError, ValueError):
        owned = {}
    proc = runner(["ip", "-j", "-d", "address", "show"], capture_output=True, text=True, check=False)
    live = parse_ip_json(proc.stdout)
    argvs, owned = link_plan(state["applied"], list(state.get("ports", {})), live, owned)
    failed = []
    for argv in argvs:
        res = runner(argv, capture_output=True, text=True, check=False)
        if res.returncode != 0:
            failed.append({"argv": argv, "rc": res.returncode, "stderr": (res.stderr or "").strip()[:200]})
    tmp = owned_path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(owned, fh, sort_keys=True)
    os.replace(tmp, owned_path)
    if argvs:
        with store.transaction() as tx:
            tx.event("links", "admin", commands=[" ".join(a) for a in argvs], failed=failed)
    return argvs
