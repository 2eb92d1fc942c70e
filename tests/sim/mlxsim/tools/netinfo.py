"""ibdev2netdev, ibstat and ofed_info.

ibdev2netdev: "mlx5_0 port 1 ==> ibp24s0 (Up)" per port, RDMA devices in the lexical order of
/sys/class/infiniband (mlx5_10 before mlx5_2); -v as the mlnx-tools script prints it.
ibstat: TAB-indented as in fixtures/real/ibstat_h100_cx7_cx6dx_1.txt. A port that is not Active prints the
port's state and physical state: with the `link_down` fault an InfiniBand port is `Down` / `Polling` (cabled, no
peer: the link trains and finds nobody), `Rate: 10`, `Base lid: 0`, `SM lid: 0`, and an Ethernet (RoCE) port
`Down` / `Disabled`, `Rate: 40` (fixtures/real/ibstat_down_polling_cx3_1.txt); `link_down` with `phys=Disabled`
gives an administratively disabled IB port, `Down` / `Disabled` keeping its LID and SM lid
(fixtures/real/ibstat_cx3_debug_1.txt). A down port keeps its Port GUID (node GUID on IB, MAC-derived on RoCE),
as both captures show; the all-zero Port GUID of the real H100 capture (Active ConnectX-6 Dx RoCE ports) is not
modelled.
ofed_info -s: "MLNX_OFED_LINUX-<ver>:" with the trailing colon (fixtures/real/ofed_info_s_1.txt).
"""
import os
import re
import sys

from .. import faults, families, model
from .. import state as st
from ..common import out, outln


def _rdma_list(host):
    items = []
    for card in host.cards():
        for i, f in enumerate(card["functions"]):
            if f.get("rdma"):
                items.append((f["rdma"], card, i))
    return sorted(items, key=lambda x: x[0])


def _port(card, fidx, state=None):
    pidx = model.port_index(card, fidx)
    port = dict(card["ports"][pidx])
    if state is not None and not faults.link_up(state, card):
        port["link_state"] = "Down"
        ib = model.link_layer(card, pidx) == "InfiniBand"
        port["phys_state"] = faults.link_down_phys(state, card) or ("Polling" if ib else "Disabled")
    elif port.get("link_state") == "Down" and port.get("phys_state") in (None, "LinkUp"):
        port["phys_state"] = "Polling" if model.link_layer(card, pidx) == "InfiniBand" else "Disabled"
    return port


def ibdev2netdev(host, args):
    if args and args[0] in ("-h", "--help"):
        outln("ibdev2netdev <options>")
        outln("-h, --help                print help message")
        outln("-v, --verbose             print more info")
        return 0
    if len(args) > 1 or (args and args[0] != "-v"):
        outln("ibdev2netdev <options>")
        outln("-h, --help                print help message")
        outln("-v, --verbose             print more info")
        return 255
    verbose = bool(args)
    for name, card, fidx in _rdma_list(host):
        port = _port(card, fidx, host.state)
        up = port["link_state"] == "Active"
        link = "Up" if up else "Down"
        nd = model.netdev(card, fidx)
        if verbose:
            fam = families.of(card)
            ibstate = "%-6s" % ("ACTIVE" if up else "DOWN")
            outln("%s %s (%s - %-11s) %-15s fw %s port 1 (%s) ==> %s (%s)" % (
                card["functions"][fidx]["pci"], name, fam["ca_type"], card["vpd"]["PN"],
                card["vpd"]["product_name"], card["fw"]["running"], ibstate, nd, link))
        else:
            outln("%s port 1 ==> %s (%s)" % (name, nd, link))
    return 0


def _port_guid_eth(mac):
    b = bytearray.fromhex(mac)
    b[0] ^= 0x02
    return "%02x%02x%02xfffe%02x%02x%02x" % tuple(b)


def port_info(card, fidx, state):
    """The port of one RDMA device as the kernel reports it (ibstat, ibstatus, rdma link, ibv_devinfo all print
    this one view): link layer, state, physical state, rate (Gb/s), LID, SM LID and the GUIDs."""
    port = _port(card, fidx, state)
    pidx = card["functions"][fidx].get("port", 1) - 1
    ll = model.link_layer(card, min(pidx, model.num_ports(card) - 1))
    ib = ll == "InfiniBand"
    up = port["link_state"] == "Active"
    phys = "LinkUp" if up else port.get("phys_state") or "Disabled"
    keeps_lid = up or phys not in ("Polling", "Sleep")      # no link, no LID from the SM
    node_guid = model.guid_of(card, fidx)
    port_guid = node_guid if ib else _port_guid_eth(model.mac_of(card, fidx))
    cap_mask = "0xa651e848" if ib else "0x00010000"
    if card.get("vf"):
        # a VF in a VM: the hypervisor's node GUID, the port GUID the same with fffd for fffe, the VF's capability
        # mask (no SM/subnet-management bits): the MT4124 VF of fixtures/real/ibstat_ibpanic_vf_azure_1.txt
        node_guid = card["vf"]["node_guid"]
        if ib:
            port_guid = node_guid[:6] + "fffd" + node_guid[10:]
            cap_mask = "0x2651ec48"
    return {"link_layer": ll, "ib": ib, "up": up,
            "state": "Active" if up else port.get("link_state") or "Down",
            "phys_state": phys,
            "rate": port["rate"] if up else (10 if ib else 40),
            "lid": port["lid"] if ib and keeps_lid else 0,
            "sm_lid": 1 if ib and keeps_lid else 0,
            "node_guid": node_guid,
            "sys_image_guid": model.guid_of(card, 0),
            "port_guid": port_guid, "cap_mask": cap_mask,
            "netdev": model.netdev(card, fidx)}


def _ca_block(name, card, fidx, state, port_only=False):
    fam = families.of(card)
    p = port_info(card, fidx, state)
    lines = []
    if not port_only:
        lines += ["CA '%s'" % name,
                  "\tCA type: %s" % fam["ca_type"],
                  "\tNumber of ports: 1",
                  "\tFirmware version: %s" % card["fw"]["running"],
                  "\tHardware version: %d" % fam["rev"],
                  "\tNode GUID: 0x%s" % p["node_guid"],
                  "\tSystem image GUID: 0x%s" % p["sys_image_guid"],
                  "\tPort 1:"]
        ind = "\t\t"
    else:
        lines += ["CA: '%s'" % name, "Port 1:"]
        ind = ""
    lines += [ind + "State: %s" % p["state"],
              ind + "Physical state: %s" % p["phys_state"],
              ind + "Rate: %d" % p["rate"],
              ind + "Base lid: %d" % p["lid"],
              ind + "LMC: 0",
              ind + "SM lid: %d" % p["sm_lid"],
              ind + "Capability mask: %s" % p["cap_mask"],
              ind + "Port GUID: 0x%s" % p["port_guid"],
              ind + "Link layer: %s" % p["link_layer"]]
    return lines


STAT_FAIL_ERROR = "No such file or directory"


def _stat_failures(host, items):
    """{RDMA name: error text} of the devices an ``ibstat_stat_fail`` fault names (by RDMA name or PCI address)."""
    out = {}
    for f in faults.find(host.state, "ibstat_stat_fail"):
        for name, card, fidx in items:
            if f.get("device") in (name, card["functions"][fidx]["pci"], model.short_pci(card["functions"][fidx]["pci"])):
                out[name] = str(f.get("error") or STAT_FAIL_ERROR)
    return out


def rdma_core_panics(state):
    """True when the host's rdma-core is older than v54: ibstat panics on the first device it cannot stat (rdma-core
    commit 703b52c6e "ibdiags: Do not panic on ibstat query failure", in v54.0, made it warn and go on). The
    version: MLXSIM_RDMA_CORE_VERSION or the state's ``rdma_core_version`` ("50.0", "2410mlnx54": the number after
    "mlnx" is the upstream major); none given: older than v54 (the distributions' LTS releases: Ubuntu 22.04 39,
    24.04 50, RHEL 9.4 48) [invented default: the simulator models no rdma-core version otherwise]."""
    v = os.environ.get("MLXSIM_RDMA_CORE_VERSION") or state.get("rdma_core_version") or ""
    m = re.search(r"mlnx(\d+)", v) or re.match(r"(\d+)", v)
    return not m or int(m.group(1)) < 54


def ibstat(host, args):
    items = _rdma_list(host)
    if args and args[0] in ("-l", "--list_of_cas"):
        for name, _c, _f in items:
            outln(name)
        return 0
    if args and args[0] in ("-h", "--help"):
        outln("Usage: ibstat [options] <ca_name> [portnum]")
        return 0
    args = [a for a in args if not a.startswith("-")]
    if args:
        sel = [it for it in items if it[0] == args[0]]
        if not sel:
            sys.stdout.flush()
            sys.stderr.write("ibpanic: [%d] main: '%s' IB device can't be found: No such file or directory\n"
                             % (os.getpid(), args[0]))
            return 255
        items = sel
    broken = _stat_failures(host, items)
    for name, card, fidx in items:
        if name in broken:
            sys.stdout.flush()
            if rdma_core_panics(host.state):
                sys.stderr.write("ibpanic: [%d] main: stat of IB device '%s' failed: %s\n"
                                 % (os.getpid(), name, broken[name]))
                return 255
            sys.stderr.write("ibwarn: [%d] main: stat of IB device '%s' failed\n" % (os.getpid(), name))
            sys.stderr.flush()
            continue
        outln("\n".join(_ca_block(name, card, fidx, host.state, port_only=len(args) > 1)))
    return 0


def ofed_info(state, args):
    # A driver package installed on the host (the ofed role's tests install fake DOCA-OFED packages
    # with apt) ships the real /usr/bin/ofed_info: step aside, the installed package is the truth.
    import os
    real = "/usr/bin/ofed_info"
    if os.path.isfile(real) and os.access(real, os.X_OK) \
            and os.path.realpath(real) != os.path.realpath(sys.argv[0]):
        sys.stdout.flush()
        os.execv(real, [real] + list(args))
    ofed = state.get("ofed") or "MLNX_OFED_LINUX-24.10-2.1.8.0"
    ver = ofed.split("-", 1)[1] if ofed.startswith("MLNX_OFED_LINUX-") else ofed
    if args and args[0] == "-s":
        outln(ofed + ":")
        return 0
    if args and args[0] == "-n":
        outln(ver)
        return 0
    if args and args[0] in ("-h", "--help"):
        outln("Usage: ofed_info [-s|-n|-l|-h]")
        return 0
    short = ver.rsplit(".", 1)[0] if ofed.startswith("MLNX_OFED_LINUX-") else ver
    outln("%s (OFED-%s):" % (ofed, short))
    outln("")
    out("mlnx-tools:\nmlnx_ofed/mlnx-tools.git mlnx_ofed_%s\ncommit 8fbfd9cf\n\n" % short.replace(".", "_"))
    return 0


def run(tool, args):
    state = st.load()
    host = model.Host(state)
    if tool == "ibdev2netdev":
        return ibdev2netdev(host, args)
    if tool == "ibstat":
        return ibstat(host, args)
    return ofed_info(state, args)
