"""The performance model behind the simulated perftest and nccl-tests (tools/perftest.py, tools/nccl.py).

What a measurement gives is computed from what the simulated host really has: the card's port rate and link
state (the state), the negotiated PCIe link (LnkSta, the ``pcie_degraded`` fault), the netdev's MTU as the
container's kernel has it (``/sys/class/net/<netdev>/mtu``, the real one), the runtime QoS of the port
(``mlnx_qos``: trust, DSCP map, PFC) and the faults ``bad_card`` and ``link_flap``. Every factor below that no
source gives is marked [invented] here and in the README.

The traffic is real: both tools connect over the rail interface of the device they are given (SO_BINDTODEVICE
on the netdev, when the kernel has it) to the peer's address, so a wrong address, a missing route, a peer that
is not up or a cable on the wrong rail fails as it would on a real fabric.
"""
import fcntl
import hashlib
import json
import os
import socket
import struct
import time

from . import faults, model, sysfs
from . import state as st

IB_MTUS = (4096, 2048, 1024, 512, 256)
# RoCE (include/rdma/ib_addr.h iboe_get_mtu, include/rdma/ib_pack.h sizes): the netdev MTU minus the headers
# (IB_GRH_BYTES 40 + IB_UDP_BYTES 8 + IB_BTH_BYTES 12 + IB_EXT_XRC_BYTES 4 + IB_EXT_ATOMICETH_BYTES 28 +
# IB_ICRC_BYTES 4 = 96), rounded down to an IB MTU; mlx5 (drivers/infiniband/hw/mlx5/main.c mlx5_query_port_roce)
# reports min(max_mtu 4096, that) as the port's active MTU: 1500 -> 1024, 9000 -> 4096.
ROCE_OVERHEAD = 40 + 8 + 12 + 4 + 28 + 4
# InfiniBand: the port's active MTU is the link's, not the IPoIB netdev's - 4096 on HDR/NDR (ibv_devinfo
# `active_mtu: 4096 (5)` of the ConnectX-7 NDR ports in fixtures/real/ibv_devinfo_azure_h200_cx7vf_1.txt). The
# simulator gives every InfiniBand port 4096 (no subnet manager limits it).
IB_ACTIVE_MTU = 4096
# ibv_mtu enum (IBV_MTU_256 = 1 ... IBV_MTU_4096 = 5), what ibv_devinfo and perftest print in "(N)" / "- N"
MTU_ENUM = {256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}
# PCIe usable bit rate per lane (Gb/s) after line encoding: 8b/10b up to 5 GT/s, 128b/130b from 8 GT/s,
# FLIT (242/256) at 64 GT/s.
PCIE_LANE_GBPS = {"2.5GT/s": 2.0, "5GT/s": 4.0, "8GT/s": 7.877, "16GT/s": 15.754, "32GT/s": 31.508,
                  "64GT/s": 60.5}
PCIE_PROTOCOL_EFFICIENCY = 0.86      # TLP/DLLP overhead at 256-byte payloads [invented: a round figure]
WIRE_EFFICIENCY_4K = 0.98            # 392 of 400 Gb/s at MTU 4096 (nccl#2409: "perftest reaches 392 Gb/s")
BAD_CARD_FACTOR = 0.35               # a card marked bad delivers about a third [invented]
INCAST_COLLAPSE = 0.1                # lossy RoCE under many-to-one [invented]
MSG_HALF_BYTES = 1024                # message size at which a BW test reaches half of its peak [invented]
BASE_LAT_USEC = 1.6                  # one hop through a leaf, ib_write_lat -s 2 (1.85-2.40 us seen) [invented]
NCCL_LAT_USEC = 20.0                 # per-collective latency term of the NCCL model [invented]
NCCL_NET_EFFICIENCY = 0.96           # 47 GB/s per 400G NIC (nccl-tests#290: "46-48GB/s per NIC")
NVLINK_BUSBW_GBS = 370.0             # 8 x H100, one node, no NVLS (nccl-tests#212)
DEFAULT_NCCL_VERSION = "2.23.4"


class PerfError(Exception):
    """A failure the tool reports with its own message and exit code."""

    def __init__(self, lines, rc=1):
        Exception.__init__(self, "\n".join(lines))
        self.lines = list(lines)
        self.rc = rc


# ------------------------------------------------------------------------------------------------ the device
def find_device(host, name):
    """(card, function index) of an RDMA device name (mlx5_N); None when the host has none such."""
    return host.resolve(name, allow_mst=False, allow_ibdev=True)


def first_device(host):
    for card, fidx in host.functions():
        if card["functions"][fidx].get("rdma"):
            return card, fidx
    return None


def kernel_mtu(netdev):
    """The MTU the kernel gives the netdev (the container's real interface); where the kernel has no such netdev
    (a developer's machine), the simulated tree's ``sys/class/net/<netdev>/mtu`` when a test wrote one; else None."""
    for base in ("/sys/class/net", os.path.join(sysfs.root_path(), "sys", "class", "net")):
        try:
            with open(os.path.join(base, netdev, "mtu")) as fh:
                return int(fh.read().strip())
        except (OSError, ValueError):
            continue
    return None


def kernel_has(netdev):
    return os.path.isdir(os.path.join("/sys/class/net", netdev))


def ipv4_of(netdev):
    """The first IPv4 address of a real interface (SIOCGIFADDR), None when it has none."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        packed = fcntl.ioctl(sock.fileno(), 0x8915, struct.pack("256s", netdev.encode()[:15]))
        return socket.inet_ntoa(packed[20:24])
    except OSError:
        return None
    finally:
        sock.close()


def roce_mtu(netdev_mtu):
    """The active MTU of a RoCE port whose netdev has ``netdev_mtu`` (iboe_get_mtu). Below 352 (256 + 96) the
    kernel gives 0 (no valid MTU); the simulator then gives 256 [invented]."""
    usable = (netdev_mtu or 1500) - ROCE_OVERHEAD
    for mtu in IB_MTUS:
        if usable >= mtu:
            return mtu
    return 256


def port_active_mtu(link_layer, netdev_mtu):
    """The port's active MTU as ibv_query_port gives it (what ibv_devinfo prints and perftest takes): on
    InfiniBand the link's (IB_ACTIVE_MTU), on Ethernet (RoCE) the netdev's MTU turned into an IB MTU (roce_mtu)."""
    if link_layer == "InfiniBand":
        return IB_ACTIVE_MTU
    return roce_mtu(netdev_mtu)


def pcie_gbps(speed, width):
    return PCIE_LANE_GBPS.get(speed, 15.754) * int(width) * PCIE_PROTOCOL_EFFICIENCY


def lossless(state, netdev, tos):
    """True when RoCE traffic of this TOS is lossless on the port: trust dscp, the DSCP's priority has PFC."""
    qos = (state.get("runtime") or {}).get("qos", {}).get(netdev)
    if not qos:
        return False
    dscp = (int(tos) >> 2) & 0x3f
    prio = 0
    if qos.get("app_dscp"):
        for entry_dscp, entry_prio in qos["app_dscp"]:
            if entry_dscp == dscp:
                prio = entry_prio
    else:
        return False   # trust pcp: RoCE over L3 carries no PCP the fabric honours here
    return bool(int(qos.get("pfc_en", 0)) >> prio & 1)


def endpoint(state, name, tos=0):
    """What this end brings to a measurement: a dict that the peer receives as JSON."""
    host = model.Host(state)
    found = find_device(host, name) if name else first_device(host)
    if found is None:
        return None
    card, fidx = found
    netdev = model.netdev(card, fidx)
    port = card["ports"][model.port_index(card, fidx)]
    speed, width = faults.pcie_status(state, card)
    mtu = kernel_mtu(netdev) or 1500
    layer = model.link_layer(card, model.port_index(card, fidx))
    from .tools.netinfo import port_info       # the port as ibstat / ibv_devinfo show it (LID, port GUID)
    view = port_info(card, fidx, state)
    return {
        "hostname": state.get("hostname"),
        "device": card["functions"][fidx]["rdma"],
        "netdev": netdev,
        "link_layer": layer,
        # InfiniBand addresses by LID (the subnet manager's, ibstat's "Base lid"); a RoCE port has none (0)
        "lid": int(view["lid"] or 0),
        "port_guid": view["port_guid"],
        "rate": float(port.get("rate") or 0),
        "up": faults.link_up(state, card),
        "pcie": [speed, width],
        "pcie_gbps": round(pcie_gbps(speed, width), 3),
        "netdev_mtu": mtu,
        "active_mtu": port_active_mtu(layer, mtu),
        "lossless": lossless(state, netdev, tos),
        "bad": bool(faults.find(state, "bad_card", card)),
        "flapping": bool(faults.find(state, "link_flap", card)),
        "pci": card["functions"][fidx]["pci"],
        "numa": card.get("numa", 0),
        "nccl_version": nccl_version(state),
    }


def nccl_version(state):
    return os.environ.get("MLXSIM_NCCL_VERSION") or state.get("nccl_version") or DEFAULT_NCCL_VERSION


def nccl_code(version):
    """NCCL_VERSION_CODE as NVIDIA/nccl's src/nccl.h.in defines NCCL_VERSION(X,Y,Z) (021e804): X*1000 + Y*100 + Z
    while X <= 2 and Y <= 8 (before 2.9: 2.8.4 is 2804), X*10000 + Y*100 + Z from 2.9 on (2.23.4 is 22304)."""
    major, minor, patch = [int(p) for p in (version.split(".") + ["0", "0"])[:3]]
    if major <= 2 and minor <= 8:
        return major * 1000 + minor * 100 + patch
    return major * 10000 + minor * 100 + patch


# ------------------------------------------------------------------------------------------------ the model
def path_gbps(local, remote, mtu):
    """The Gb/s one direction of a pair carries at large messages."""
    line = min(local["rate"], remote["rate"])
    cap = min(line, local["pcie_gbps"], remote["pcie_gbps"])
    bw = cap * WIRE_EFFICIENCY_4K * (mtu / 4096.0)
    if local["bad"] or remote["bad"]:
        bw *= BAD_CARD_FACTOR
    return bw


def size_factor(size):
    return size / float(size + MSG_HALF_BYTES)


def jitter(*parts):
    """A stable number in [0, 1) from the names involved: reruns print the same figures."""
    digest = hashlib.sha256("|".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:4], "big") / 2.0 ** 32


def latency_usec(local, remote, size, mtu):
    lat = BASE_LAT_USEC + 0.1 * jitter(local["hostname"], remote["hostname"], local["device"])
    gbps = max(path_gbps(local, remote, mtu), 1.0)
    lat += size * 8 / (gbps * 1000.0)
    if local["bad"] or remote["bad"]:
        lat *= 4
    if local["pcie_gbps"] < local["rate"] or remote["pcie_gbps"] < remote["rate"]:
        lat += 0.3
    return lat


# ------------------------------------------------------------------------------------------------ the sockets
def bound_socket(kind, netdev, source=None):
    """A socket that leaves through the rail's netdev (SO_BINDTODEVICE) when the kernel has it."""
    sock = socket.socket(socket.AF_INET, kind)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if netdev and kernel_has(netdev):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, netdev.encode())
    if source:
        sock.bind((source, 0))
    return sock


class Channel:
    """JSON lines and counted bulk data over one TCP connection (buffered: a line and the data after it may arrive
    in one segment)."""

    def __init__(self, sock):
        self.sock = sock
        self.reader = sock.makefile("rb")

    def send(self, data):
        self.sock.sendall((json.dumps(data, sort_keys=True) + "\n").encode())

    def recv(self, limit=1 << 20):
        line = self.reader.readline(limit)
        if not line.endswith(b"\n"):
            raise ConnectionError("peer closed the connection")
        return json.loads(line.decode())

    def send_bulk(self, seconds):
        """Send data for ``seconds`` (real time); the count goes first."""
        block = b"\x5a" * 65536
        count = 0
        end = time.monotonic() + seconds
        blocks = []
        while True:
            blocks.append(block)
            count += len(block)
            if time.monotonic() >= end or count >= 64 << 20:
                break
        self.send({"bulk": count})
        for chunk in blocks:
            self.sock.sendall(chunk)
        while time.monotonic() < end:
            time.sleep(min(0.05, end - time.monotonic()))
        return count

    def recv_bulk(self):
        count = int(self.recv()["bulk"])
        left = count
        while left > 0:
            chunk = self.reader.read(min(left, 1 << 16))
            if not chunk:
                raise ConnectionError("peer closed the connection")
            left -= len(chunk)
        return count

    def close(self):
        self.reader.close()


def echo(sock, stop):
    """Answer every datagram of the MTU probe with ``ok`` until ``stop`` is set (a thread of the server)."""
    sock.settimeout(0.2)
    while not stop.is_set():
        try:
            _data, addr = sock.recvfrom(65536)
            sock.sendto(b"ok", addr)
        except socket.timeout:
            continue
        except OSError:
            return


def mtu_probe(local_netdev, peer, port, mtu, timeout=1.0):
    """Send one UDP datagram as large as a RoCE frame of ``mtu`` (Don't Fragment) to the peer's echo port and
    wait for the echo: False when the path drops frames that large (a hop with a smaller MTU)."""
    sock = bound_socket(socket.SOCK_DGRAM, local_netdev, ipv4_of(local_netdev) if kernel_has(local_netdev) else None)
    try:
        sock.setsockopt(socket.IPPROTO_IP, 10, 2)   # IP_MTU_DISCOVER = IP_PMTUDISC_DO
        sock.settimeout(timeout)
        payload = b"\0" * (mtu + 32)     # IP length mtu + 60: IP 20, UDP 8, BTH 12, RETH 16, ICRC 4
        for _attempt in range(3):
            try:
                sock.sendto(payload, (peer, port))
                data, _addr = sock.recvfrom(16)
                if data == b"ok":
                    return True
            except socket.timeout:
                continue
            except OSError:
                return False
        return False
    finally:
        sock.close()


def account(me, sent=0, received=0):
    """What a run over this end leaves in its ``ethtool -S`` counters (tools/ethtool.py): the bytes, and what its
    faults do - a flapping link's down events, a bad card's symbol errors [invented amounts]."""
    from .tools import ethtool
    values = {"tx_bytes": int(sent), "rx_bytes": int(received), "tx_packets": int(sent) // 4096,
              "rx_packets": int(received) // 4096}
    if me.get("flapping"):
        values["link_down_events_phy"] = 2
    if me.get("bad"):
        values.update({"rx_symbol_err_phy": 1200, "rx_corrected_bits_phy": 4800000, "rx_pcs_symbol_err_phy": 900})
    try:
        ethtool.bump(me["netdev"], values)
    except (OSError, ValueError, st.SimError):
        pass


def scaled(seconds):
    """Real seconds a simulated duration takes (MLXSIM_TIME_SCALE)."""
    return max(0.0, float(seconds) * st.time_scale())
