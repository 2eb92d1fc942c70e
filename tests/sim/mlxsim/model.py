"""The simulated host: building it from a profile, and reading/changing devices.

State layout (JSON, one file per host)::

    {"version": 1, "hostname": ..., "profile": ..., "mft_version": ..., "mstflint_version": ...,
     "ofed": ..., "mst_started": false, "boot_count": 0, "faults": [...], "fault_used": {...},
     "cards": [card, ...]}

    card = {"id", "family", "part_number", "name", "description", "psid", "orig_psid",
            "vpd": {"product_name", "PN", "EC", "SN", "V0", "V2", "V3", "VA"},
            "base_mac", "base_guid", "uids", "fw": {"running", "burned", "release_date",
            "roms": [[type, version, cpu], ...], "burned_roms", "security"},
            "numa", "slot", "pcie": {...}, "functions": [{"pci", "rdma", "nv": {...}}],
            "ports": [{"link_state", "phys_state", "rate", "lid"}],
            "reset_levels", "reset_types", "missing", "nv": {KEY: {"default", "current", "next"}}}

NV values are ints (arrays: lists of ints). Port parameters are keyed NAME_P<n>, module ones
NAME_M<n>. Parameters of class per_host_per_func live in each function's "nv"; all others
(global, per_host, port, module) live in the card's "nv" and are therefore shared by the
functions of one card.
"""
import copy

from . import families, paramdb

# NVIDIA/Mellanox OUIs seen in the real captures (fixtures/real and public mlxfwmanager/ibstat output).
OUIS = {"ConnectX7": ["a088c2", "9c63c0", "e09d73", "5c2573", "946dae"],
        "ConnectX6DX": ["e8ebd3", "08c0eb", "0c42a1", "b8599f"],
        "ConnectX6": ["b8cef6", "043f72", "1070fd"],
        "BlueField3": ["a088c2", "c470bd", "58a2e1"],
        # issue 16: the OUIs of the captures (ec0d9a: CX5 capture, e8ebd3: CX6 Lx capture, 043f72: BF2
        # capture), the rest NVIDIA/Mellanox OUIs picked for variety [invented pairing]
        "ConnectX4": ["7cfe90", "248a07"], "ConnectX4LX": ["248a07", "98039b"],
        "ConnectX5": ["ec0d9a", "98039b", "b8599f"], "ConnectX6LX": ["e8ebd3", "0c42a1"],
        "BlueField2": ["043f72", "0c42a1"], "ConnectX8": ["a088c2", "c470bd", "e09d73"]}


def _h(*parts):
    import hashlib
    return hashlib.sha256("/".join(str(p) for p in parts).encode()).hexdigest()


def norm_pci(text):
    """'18:00.0' / '0000:18:00.0' -> '0000:18:00.0'; None if not a PCI address."""
    import re
    m = re.match(r"^(?:([0-9a-fA-F]{1,4}):)?([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})\.([0-7])$", text or "")
    if not m:
        return None
    dom = int(m.group(1) or "0", 16)
    return "%04x:%02x:%02x.%d" % (dom, int(m.group(2), 16), int(m.group(3), 16), int(m.group(4)))


def short_pci(full):
    """'0000:18:00.0' -> '18:00.0' (domain kept when not 0)."""
    return full[5:] if full.startswith("0000:") else full


def bus_dev_fn(full):
    dom, bus, rest = full.split(":")
    dev, fn = rest.split(".")
    return int(dom, 16), int(bus, 16), int(dev, 16), int(fn)


# --------------------------------------------------------------------------------------------
# building


def _expand_layout(layout, nports):
    out = []
    for e in layout:
        if isinstance(e, tuple):
            for port in range(1, nports + 1):
                for name in e[1]:
                    out.append(("%s_P%d" % (name, port), name))
        elif e.endswith("_M0"):
            out.append((e, e[:-3]))
        else:
            out.append((e, e))
    return out


def _default_for(base, p, card_spec):
    overrides = card_spec.get("defaults", {})
    fam_over = families.FAMILY_DEFAULTS.get(card_spec["family"], {})
    if base in overrides:
        val = overrides[base]
    elif base in fam_over:
        val = fam_over[base]
    elif base == "NUM_OF_PF":
        val = len(card_spec["functions"])
    else:
        val = families.DEFAULTS.get(base, 0)
    n = p.get("array_len")
    if n:
        return [0] * n if not isinstance(val, list) else list(val)
    if p["type"] in ("ENUM", "BOOL") and val not in [v for _n, v in p.get("values", [])]:
        val = p["values"][0][1]
    return val


def build_card(spec, hostname, index, salt=""):
    """``salt`` (``mlxsim init --identity-salt``): another serial number, MAC and GUID for the same host and card -
    what the fleet twin asks for when a card's identity is already another machine's (a hash of the host name has
    about 20 million serial numbers: 12,500 cards share a few)."""
    fam = families.of(spec)
    nports = spec.get("ports", len(spec["functions"]))
    hid = _h(hostname, spec["id"], salt) if salt else _h(hostname, spec["id"])
    oui_list = OUIS[spec["family"]]
    oui = oui_list[int(hid[:2], 16) % len(oui_list)]
    low = (int(hid[2:8], 16) & 0xFFFFC0)
    mac = "%s%06x" % (oui, low)
    guid = mac[:6] + "0300" + mac[6:]
    year = 21 + int(hid[8:10], 16) % 4
    week = 1 + int(hid[10:12], 16) % 52
    serial = "MT%02d%02dX%05d" % (year, week, int(hid[12:20], 16) % 100000)
    v3 = _h(hostname, spec["id"], "uuid")[:32]
    pn = spec["part_number"]
    modl = spec.get("modl") or pn.split("-")[0][1:]
    card = {
        "id": spec["id"],
        "family": spec["family"],
        "part_number": pn,
        "name": spec["name"],
        "description": spec["description"],
        "psid": spec["psid"],
        "orig_psid": spec["psid"],
        "board_psid": spec.get("board_psid"),      # flint's Orig PSID while the image's PSID differs
        "vpd": {
            "product_name": spec["product_name"],
            "PN": pn,
            "EC": spec.get("ec", "A7"),
            "SN": serial,
            "V0": spec["v0"],
            "V2": pn,
            "V3": v3,
            "VA": "MLX:MN=MLNX:CSKU=V2:UUID=V3:PCI=V0:MODL=%s" % modl,
        },
        "base_mac": mac,
        "base_guid": guid,
        "uids": spec.get("uids", fam["uids"]),       # GuidsNumber: the card's image's (4 or 8 on a ConnectX-4 Lx)
        "fw": {
            "running": spec["fw"],
            "burned": spec["fw"],
            "release_date": spec["fw_date"],
            # an OEM/old image's own Product Version ("rel-14_14_2320"); None: flint prints the FW version
            "product_version": spec.get("product_version"),
            "roms": copy.deepcopy(spec["roms"]),
            "burned_roms": copy.deepcopy(spec["roms"]),
            "security": spec.get("security", "secure-fw"),
        },
        "numa": spec["numa"],
        "slot": spec.get("slot", str(index + 1)),
        "pcie": {"cap_speed": fam["pcie"][0], "cap_width": fam["pcie"][1],
                 "speed": spec.get("pcie_speed", fam["pcie"][0]), "width": spec.get("pcie_width", fam["pcie"][1])},
        "functions": [],
        "ports": [],
        "reset_levels": list(spec.get("reset_levels", fam["reset_levels"])),
        "reset_types": list(fam["reset_types"]),
        "missing": False,
        "nv": {},
    }
    if spec.get("silicon"):
        card["silicon"] = dict(spec["silicon"])
    if spec.get("vf"):
        # an SR-IOV VF given to a virtual machine (the card is the VF; its PF is the hypervisor's): Hyper-V gives it a
        # node GUID of its own, 00155d ff fe 34 + 2 bytes, consecutive over the VM's VFs (0015:5dff:fe34:0033, :0034
        # in fixtures/real/ibv_devinfo_azure_h200_cx7vf_1.txt; 00155dfffe34072b in ibstat_ibpanic_vf_azure_1.txt);
        # the system image GUID stays the physical card's (base_guid)
        low = (int(_h(hostname, "vf")[:4], 16) & 0xff00) + index
        card["vf"] = {"node_guid": "00155dfffe34%04x" % (low & 0xffff)}
    for i, f in enumerate(spec["functions"]):
        card["functions"].append({"pci": f["pci"], "rdma": f.get("rdma"), "netdev": f.get("netdev"),
                                  "port": i + 1 if i < nports else 1, "nv": {}})
    for p in range(nports):
        card["ports"].append({"link_state": "Active", "phys_state": "LinkUp", "rate": spec["rate"],
                              "lid": 1 + (int(hid[20 + p * 2:24 + p * 2], 16) % 1000) + index * 2 + p,
                              "carrier": True})
    for key, base in _expand_layout(fam["layout"], nports):
        p = paramdb.param(base)
        val = _default_for(base, p, spec)
        entry = {"default": val, "current": copy.deepcopy(val), "next": copy.deepcopy(val)}
        if p["cls"] == "per_func":
            for f in card["functions"]:
                f["nv"][key] = copy.deepcopy(entry)
        else:
            card["nv"][key] = entry
    for key, val in spec.get("configured", {}).items():
        if key in card["nv"]:
            card["nv"][key]["current"] = val
            card["nv"][key]["next"] = val
    return card


# --------------------------------------------------------------------------------------------
# reading


class Host:
    """Convenience wrapper around the state dict."""

    def __init__(self, state):
        self.state = state

    def cards(self, include_missing=False):
        cards = [c for c in self.state["cards"] if include_missing or not c.get("missing")]
        return sorted(cards, key=lambda c: c["functions"][0]["pci"])

    def functions(self):
        out = []
        for c in self.cards():
            for i in range(len(c["functions"])):
                out.append((c, i))
        return sorted(out, key=lambda cf: cf[0]["functions"][cf[1]]["pci"])

    @property
    def mst_started(self):
        return bool(self.state.get("mst_started"))

    def mst_index(self, card):
        """Per device-id ordinal used in /dev/mst/mtNNNN_pciconfN (counts every present card)."""
        same = [c for c in self.cards() if c["family"] == card["family"]]
        return [c["id"] for c in same].index(card["id"])

    def mst_path(self, card, func_idx=0):
        fam = families.of(card)
        base = "/dev/mst/%s_pciconf%d" % (families.MST_PREFIX[fam["dev_id"]], self.mst_index(card))
        return base + (".%d" % func_idx if func_idx else "")

    def resolve(self, dev, allow_mst=True, allow_ibdev=False, allow_netdev=False):
        """Find (card, function index) for a -d argument; None when it matches nothing."""
        if not dev:
            return None
        full = norm_pci(dev)
        for c in self.cards():
            for i, f in enumerate(c["functions"]):
                if full and f["pci"] == full:
                    return c, i
                if allow_ibdev and dev == f.get("rdma"):
                    return c, i
                if allow_netdev and dev == netdev(c, i):
                    return c, i
                if allow_mst and self.mst_started and dev == self.mst_path(c, i):
                    return c, i
        return None


def num_ports(card):
    return len(card["ports"])


def port_index(card, fidx):
    """The index in ``card["ports"]`` of the port PCI function ``fidx`` drives (a card with fewer ports than
    functions: the last port)."""
    return min(card["functions"][fidx].get("port", 1), num_ports(card)) - 1


def nv_entry(card, func_idx, key):
    f = card["functions"][func_idx]
    if key in f["nv"]:
        return f["nv"][key]
    return card["nv"].get(key)


def nv_keys(card, func_idx):
    """All NV keys of one function in the order the tool prints them."""
    fam = families.of(card)
    keys = []
    for key, base in _expand_layout(fam["layout"], num_ports(card)):
        if nv_entry(card, func_idx, key) is not None:
            keys.append((key, base))
    return keys


def visible(card, func_idx, base, tool_v=None):
    """False for parameters the firmware hides in the current configuration, and (given the tool's effective
    version) for those that tool generation does not list for the card's family (families.LISTED)."""
    if tool_v is not None and not families.listed(card, base, tool_v):
        return False
    if base in families.ADVANCED:
        adv = nv_entry(card, func_idx, "ADVANCED_PCI_SETTINGS")
        return bool(adv and adv["current"])
    return True


def read_only(card, base):
    """No family has read-only parameters (no real listing shows an RO row); a card of the state may
    still name some ("read_only": [...]) to exercise the tool's read-only paths."""
    return base in card.get("read_only", families.of(card).get("read_only", []))


def link_layer(card, port_idx):
    e = card["nv"].get("LINK_TYPE_P%d" % (port_idx + 1))
    if e is None:
        return "Ethernet"
    return "InfiniBand" if e["current"] == 1 else "Ethernet"


def netdev(card, func_idx):
    f = card["functions"][func_idx]
    port_idx = min(f.get("port", 1), num_ports(card)) - 1
    ll = link_layer(card, port_idx)
    names = f.get("netdev") or {}
    if isinstance(names, str):
        return names
    if ll in names:
        return names[ll]
    _dom, bus, dev, fn = bus_dev_fn(f["pci"])
    multi = len(card["functions"]) > 1
    base = "p%ds%d" % (bus, dev) + ("f%d" % fn if multi else "")
    if ll == "InfiniBand":
        return "ib" + base
    return "en" + base + "np%d" % port_idx


def numvfs(card, func_idx):
    """The virtual functions the PF has at runtime: its ``numvfs`` (sysfs ``sriov_numvfs``: 0 unless the state sets
    ``cards[i].functions[j].numvfs``; no simulated tool writes it yet), and only while the firmware offers SR-IOV
    (current SRIOV_EN true, at most the current NUM_OF_VFS). A VF exists only after both: NV configuration alone (SRIOV_EN=1 NUM_OF_VFS=8, then a reboot)
    gives none until something writes sriov_numvfs, as on a real host."""
    n = int(card["functions"][func_idx].get("numvfs") or 0)
    en = nv_entry(card, func_idx, "SRIOV_EN")
    total = nv_entry(card, func_idx, "NUM_OF_VFS")
    if not n or not en or not en.get("current") or not total:
        return 0
    return min(n, int(total.get("current") or 0))


def vf_functions(host_state):
    """Every VF of the host, PF by PF (cards by PCI address, functions in order): a dict with ``pf`` (the PF's
    PCI address), ``index``, ``pci``, ``rdma``, ``netdev``, ``numa``.

    PCI address: with ARI the VFs of PF ``f`` of an ``n``-function card start at devfn ``n + f * NUM_OF_VFS``
    of the card's bus (offset ``n`` from PF0, as lspci's "VF offset"; stride 1): the single-function
    ConnectX-7 of fixtures/real/mst_status_v_vfs_cx7_1.txt has its VFs at 37:00.1 ... 37:00.7. RDMA names
    follow the PFs' (the kernel probes VFs after the PFs: mlx5_2 ... mlx5_8 there). Netdev: the PF's name +
    ``v<index>`` (systemd's naming of SR-IOV VFs)."""
    cards = sorted((c for c in host_state["cards"] if not c.get("missing")), key=lambda c: c["functions"][0]["pci"])
    used = [int(f["rdma"].split("_")[-1]) for c in cards for f in c["functions"]
            if (f.get("rdma") or "").split("_")[-1].isdigit()]
    nxt = max(used) + 1 if used else 0
    out = []
    for c in cards:
        nfuncs = len(c["functions"])
        for fidx, f in enumerate(c["functions"]):
            n = numvfs(c, fidx)
            total = int((nv_entry(c, fidx, "NUM_OF_VFS") or {}).get("current") or 0)
            dom, bus, dev, _fn = bus_dev_fn(f["pci"])
            for i in range(n):
                devfn = dev * 8 + nfuncs + fidx * total + i
                out.append({"pf": f["pci"], "index": i, "numa": c["numa"],
                            "pci": "%04x:%02x:%02x.%x" % (dom, bus, devfn >> 3, devfn & 7),
                            "rdma": "mlx5_%d" % nxt, "netdev": "%sv%d" % (netdev(c, fidx), i)})
                nxt += 1
    return out


def mac_of(card, func_idx):
    return "%012x" % (int(card["base_mac"], 16) + func_idx)


def guid_of(card, func_idx):
    return "%016x" % (int(card["base_guid"], 16) + func_idx)


# --------------------------------------------------------------------------------------------
# changing


def activate_card(card, power_cycle=False):
    """What a firmware reset or a power cycle does to one card."""
    if card.get("privhost"):
        # mlxprivhost's port functions: tracer / counter_rd / port_owner with a FW reset, rshim only with a power
        # cycle (MFT docs); the level was applied when written
        active = card.setdefault("privhost_active", dict(card["privhost"]))
        for key, value in card["privhost"].items():
            if key != "disable_rshim" or power_cycle:
                active[key] = value
    for store in [card["nv"]] + [f["nv"] for f in card["functions"]]:
        for entry in store.values():
            entry["current"] = copy.deepcopy(entry["next"])
    card["fw"]["running"] = card["fw"]["burned"]
    card["fw"]["roms"] = copy.deepcopy(card["fw"].get("burned_roms", card["fw"]["roms"]))
    for p in card["ports"]:
        p["link_state"] = "Active"
        p["phys_state"] = "LinkUp"


def count(card, what):
    """Count an activity on the card (burns, fwresets) for `mlxsim activity`."""
    counters = card.setdefault("counters", {})
    counters[what] = counters.get(what, 0) + 1


def pending(card):
    out = {"fw": card["fw"]["running"] != card["fw"]["burned"], "nv": []}
    if card.get("privhost") and card.get("privhost_active") != card["privhost"]:
        out["privhost"] = sorted(k for k, v in card["privhost"].items() if card["privhost_active"].get(k) != v)
    for store in [card["nv"]] + [f["nv"] for f in card["functions"]]:
        for key, entry in store.items():
            if entry["next"] != entry["current"] and key not in out["nv"]:
                out["nv"].append(key)
    return out
