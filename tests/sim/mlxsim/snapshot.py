"""A simulated host seeded from a snapshot of a real one (``mlxsim init --snapshot FILE``).

The file is what ``playbooks/snapshot.yml`` writes for a server (schema 1): ``{"schema": 1, "host", "kind":
"server", "taken", "collection", "mlx_info": <the module's result: devices with nv_config>, "platform": {"kernel",
"os_family", "ofed": {"raw", ...}, ...}}``.

Each card of the snapshot (its functions grouped by ``card``, the PCI address without the function) becomes the
closest modelled card (profiles.MODELS): the one of the same part number, else of the same PSID, else the first of
the same device type (family). Then what the snapshot says is put over the model: PCI functions, RDMA devices,
netdev names, part number, description, VPD, PSID, base MAC/GUID, firmware burned and running, its release date,
the ROMs, security attributes, NUMA node, slot, PCIe link, the ports' state and rate, and every NV parameter's
default/current/next value the model also has. What the snapshot lacks stays the model's (tests/sim/README.md,
"Seeded from a snapshot"). Every value taken is checked by a strict grammar first: it ends up in tool output the
collection parses and in file names of the simulated tree; a value that does not fit is an error naming the
host, the card, the field and the value, as is a card no model matches.
"""
import copy
import json
import re

from . import families, model, paramdb, profiles
from .state import SimError

SCHEMA = 1

# What a value taken from a snapshot must look like (whole string, ASCII).
GRAMMARS = {
    "psid": (r"[A-Za-z0-9_]{1,16}", "letters, digits and _ (at most 16)"),
    "part_number": (r"[A-Za-z0-9][A-Za-z0-9_.-]{0,39}", "a letter or digit, then letters, digits, _ . - (at most 40)"),
    "fw_version": (r"\d{1,3}\.\d{1,4}\.\d{1,4}", "MAJOR.MINOR.SUBMINOR, e.g. 28.42.1000"),
    "fw_release_date": (r"\d{1,2}\.\d{1,2}\.\d{4}", "day.month.year, e.g. 8.8.2024"),
    "serial_number": (r"[A-Za-z0-9_.-]{1,40}", "letters, digits, _ . - (at most 40)"),
    "text": (r"[\x20-\x7e]{0,240}", "printable ASCII on one line (at most 240)"),
    "mac": (r"[0-9a-fA-F]{12}", "12 hex digits"),
    "guid": (r"[0-9a-fA-F]{16}", "16 hex digits"),
    "ifname": (r"(?!\.\.?\Z)[A-Za-z0-9_.+-]{1,15}", "a network interface name: 1-15 letters, digits, _ . + -"),
    "rdma": (r"[A-Za-z0-9_]{1,32}", "an RDMA device name: letters, digits and _"),
    "slot": (r"[A-Za-z0-9_.-]{1,16}", "letters, digits, _ . - (at most 16)"),
    "speed": (r"\d{1,2}(\.\d)?GT/s", "a PCIe speed, e.g. 32GT/s"),
    "rom_type": (r"[A-Za-z0-9][A-Za-z0-9 _-]{0,31}", "a ROM type, e.g. UEFI"),
    "rom_version": (r"\d{1,3}(\.\d{1,5}){1,3}", "a version, e.g. 14.35.15"),
    "port_state": (r"Active|Down|Initializing|Armed|Polling", "Active, Down, Initializing, Armed or Polling"),
    "phys_state": (r"[A-Za-z]{1,24}", "letters, e.g. LinkUp"),
    "kernel": (r"[A-Za-z0-9][A-Za-z0-9._+~-]{0,99}", "a kernel release, e.g. 6.1.0-26-amd64"),
    "ofed": (r"(MLNX_OFED_LINUX|OFED-internal)-\d[A-Za-z0-9._-]{0,40}",
             "ofed_info -s's package, e.g. MLNX_OFED_LINUX-24.10-2.1.8.0"),
}
# The VPD fields the simulated lspci prints (tools/lspci.py); any other is not kept.
VPD_KEYS = ("PN", "EC", "SN", "V0", "V2", "V3", "VA")
_ENUM_RE = re.compile(r"[A-Za-z0-9_]*\((\d+)\)", re.ASCII)


class Refused(SimError):
    pass


def word(value, grammar, where, field):
    """``value`` when the whole of it matches GRAMMARS[grammar]; else the error naming where and what."""
    pattern, allowed = GRAMMARS[grammar]
    if isinstance(value, str) and re.fullmatch(pattern, value, re.ASCII):
        return value
    raise Refused("mlxsim init --snapshot: %s: %s %s cannot be taken: allowed is %s"
                  % (where, field, json.dumps(value), allowed))


def _given(value):
    return value not in (None, "", "N/A")


# ------------------------------------------------------------------------------------------ reading the file

def load(path):
    """The snapshot document of ``path`` (a server's), checked."""
    try:
        with open(path) as fh:
            doc = json.load(fh)
    except (OSError, ValueError) as exc:
        raise SimError("mlxsim init --snapshot %s: %s" % (path, exc)) from None
    return check(doc, path)


def check(doc, path="the snapshot"):
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise SimError("mlxsim init --snapshot %s: not a snapshot of schema %d (playbooks/snapshot.yml writes one "
                       "JSON file per host)" % (path, SCHEMA))
    if doc.get("kind") != "server":
        raise SimError("mlxsim init --snapshot %s: the snapshot of %s is of a %s, not a server" % (
            path, doc.get("host"), doc.get("kind")))
    devices = (doc.get("mlx_info") or {}).get("devices") if isinstance(doc.get("mlx_info"), dict) else None
    if not isinstance(devices, list) or not all(isinstance(d, dict) for d in devices):
        raise SimError("mlxsim init --snapshot %s: no mlx_info devices in the snapshot of %s" % (path, doc.get("host")))
    return doc


# ------------------------------------------------------------------------------------------ choosing a model

def _model(host, address, dev):
    """(model card spec, how it was chosen) of the card at ``address`` whose first function is ``dev``."""
    pn, psid, kind = dev.get("part_number"), dev.get("psid"), dev.get("device_type")
    for field, value in (("part_number", pn), ("psid", psid)):
        for spec in profiles.MODELS:
            if _given(value) and spec[field] == value:
                return spec, "%s %s" % (field.replace("_", " "), value)
    for spec in profiles.MODELS:
        if _given(kind) and spec["family"].lower() == str(kind).lower():
            return spec, "device %s" % kind
    raise SimError(
        "mlxsim init --snapshot: %s: the card at %s (part number %s, device %s, PSID %s) is no modelled card: the "
        "simulator models part numbers %s, PSIDs %s and devices %s (tests/sim/mlxsim/profiles.py)" % (
            host, address, pn or "unknown", kind or "unknown", psid or "unknown",
            ", ".join(s["part_number"] for s in profiles.MODELS), ", ".join(s["psid"] for s in profiles.MODELS),
            ", ".join(sorted(families.FAMILIES))))


# ------------------------------------------------------------------------------------------ values

def nv_value(p, text):
    """The simulator's int of a value as mlx_info reports it (``True(1)``, ``ETH(2)``, ``8``); None when the
    parameter cannot hold it."""
    if isinstance(text, bool):
        text = str(int(text))
    elif isinstance(text, int):
        text = str(text)
    if not isinstance(text, str):
        return None
    m = _ENUM_RE.fullmatch(text.strip())
    try:
        return paramdb.parse_value(p, m.group(1) if m else text.strip())
    except paramdb.ValueError_:
        return None


def _ports_of(devs):
    """The card's port count: the highest _P<n> of its NV parameters, else its number of functions."""
    highest = 0
    for dev in devs:
        for key in dev.get("nv_config") or {}:
            m = re.fullmatch(r".*_P(\d)", key)
            if m:
                highest = max(highest, int(m.group(1)))
    return highest or len(devs)


def _roms(spec_roms, reported, where):
    """The ROMs: the model's when mlx_info would report them as the snapshot does (it keeps one version per
    first word of a type), else the snapshot's."""
    shown = {}
    for rtype, version, _cpu in spec_roms:
        shown[rtype.split()[0]] = version
    if not isinstance(reported, dict) or not reported or shown == reported:
        return copy.deepcopy(spec_roms)
    cpus = {rtype: cpu for rtype, _v, cpu in spec_roms}
    return [[word(rtype, "rom_type", where, "ROM type"), word(version, "rom_version", where, "ROM %s" % rtype),
             cpus.get(rtype, "AMD64" if rtype == "PXE" else "AMD64,AARCH64")]
            for rtype, version in reported.items()]


# ------------------------------------------------------------------------------------------ one card

def _spec(host, address, devs):
    """The model's card spec with the snapshot's identity, functions and firmware over it."""
    first = devs[0]
    base, how = _model(host, address, first)
    where = "%s, card %s" % (host, address)
    spec = copy.deepcopy(base)
    spec["id"] = "snapshot-" + address
    spec["ports"] = _ports_of(devs)
    functions = []
    for dev in devs:
        pci = model.norm_pci(dev.get("address") if isinstance(dev.get("address"), str) else "")
        if pci is None:
            raise Refused("mlxsim init --snapshot: %s: address %s is not a PCI address" % (
                where, json.dumps(dev.get("address"))))
        rdma = (dev.get("rdma_devices") or [None])[0]
        functions.append({"pci": pci, "rdma": word(rdma, "rdma", where, "RDMA device") if _given(rdma) else None})
    spec["functions"] = functions
    pn = first.get("part_number")
    if _given(pn) and pn != spec["part_number"]:
        spec["part_number"] = word(pn, "part_number", where, "part number")
        spec["name"] = pn[:-1] + "_Ax"          # [invented] flint's Part Number, as the models' names are made
        spec["description"] = spec["product_name"] = "%s (%s)" % (pn, first.get("device_type") or spec["family"])
    if _given(first.get("description")):
        spec["product_name"] = word(first["description"], "text", where, "description")
        if spec["part_number"] != base["part_number"]:
            spec["description"] = spec["product_name"]
    if _given(first.get("psid")):
        spec["psid"] = word(first["psid"], "psid", where, "PSID")
    if _given(first.get("fw_version")):
        spec["fw"] = word(first["fw_version"], "fw_version", where, "firmware")
    if _given(first.get("fw_release_date")):
        spec["fw_date"] = word(first["fw_release_date"], "fw_release_date", where, "firmware release date")
    spec["roms"] = _roms(spec["roms"], first.get("rom_versions"), where)
    numa = first.get("numa_node")
    spec["numa"] = numa if isinstance(numa, int) and not isinstance(numa, bool) and 0 <= numa < 64 else 0
    if _given(first.get("physical_slot")):
        spec["slot"] = word(str(first["physical_slot"]), "slot", where, "slot")
    rate = next((p.get("rate") for d in devs for p in d.get("ports") or [] if isinstance(p, dict)), None)
    if isinstance(rate, (int, float)) and not isinstance(rate, bool) and 0 < rate <= 3200:
        spec["rate"] = rate
    return spec, how


def _overlay(card, devs, host, address, dropped):
    """What build_card cannot take from a spec: running firmware, VPD, MAC/GUID, PCIe, ports, netdevs, NV."""
    first = devs[0]
    where = "%s, card %s" % (host, address)
    if _given(first.get("fw_running")):
        card["fw"]["running"] = word(first["fw_running"], "fw_version", where, "running firmware")
    if _given(first.get("security_attributes")):
        card["fw"]["security"] = word(first["security_attributes"], "text", where, "security attributes")
    vpd = first.get("vpd") if isinstance(first.get("vpd"), dict) else {}
    for key in VPD_KEYS:
        if _given(vpd.get(key)):
            card["vpd"][key] = word(vpd[key], "serial_number" if key == "SN" else "text", where, "VPD " + key)
    if _given(first.get("serial_number")):
        card["vpd"]["SN"] = word(first["serial_number"], "serial_number", where, "serial number")
    if _given(first.get("part_number")):
        card["vpd"]["PN"] = card["part_number"]
    if _given(first.get("description")):
        card["vpd"]["product_name"] = word(first["description"], "text", where, "description")
    if _given(first.get("base_mac")):
        card["base_mac"] = word(first["base_mac"], "mac", where, "base MAC").lower()
    if _given(first.get("base_guid")):
        card["base_guid"] = word(first["base_guid"], "guid", where, "base GUID").lower()
    pcie = first.get("pcie") if isinstance(first.get("pcie"), dict) else {}
    for name, speed_key, width_key in (("lnkcap", "cap_speed", "cap_width"), ("lnksta", "speed", "width")):
        link = pcie.get(name) if isinstance(pcie.get(name), dict) else {}
        if _given(link.get("speed")):
            card["pcie"][speed_key] = word(link["speed"], "speed", where, "PCIe %s speed" % name)
        if isinstance(link.get("width"), int) and 1 <= link["width"] <= 32:
            card["pcie"][width_key] = link["width"]
    for index, dev in enumerate(devs):
        _nv(card, index, dev.get("nv_config"), "%s, %s" % (host, card["functions"][index]["pci"]), dropped)
    for index, dev in enumerate(devs):
        func = card["functions"][index]
        port_index = min(func.get("port", 1), len(card["ports"])) - 1
        for port in dev.get("ports") or []:
            if not isinstance(port, dict):
                continue
            if _given(port.get("state")):
                card["ports"][port_index]["link_state"] = word(port["state"], "port_state", where, "port state")
            if _given(port.get("physical_state")):
                card["ports"][port_index]["phys_state"] = word(port["physical_state"], "phys_state", where,
                                                               "physical port state")
            break
        netdev = next((p.get("netdev") for p in dev.get("ports") or [] if isinstance(p, dict) and p.get("netdev")),
                      None) or (dev.get("netdevs") or [None])[0]
        if _given(netdev):
            func["netdev"] = {model.link_layer(card, port_index): word(netdev, "ifname", where, "netdev")}


def _nv(card, index, values, where, dropped):
    """Every NV parameter of the snapshot the model also has, its default/current/next values taken."""
    for key, entry in sorted((values or {}).items()) if isinstance(values, dict) else ():
        target = model.nv_entry(card, index, key)
        base, _port, _module = paramdb.split_name(key, len(card["ports"]))
        p = paramdb.param(base)
        if target is None or p is None:
            dropped.append("%s %s: the model has no such parameter" % (where, key))
            continue
        if p.get("array_len"):
            continue            # mlx_info reports an array as Array[0..N] only: the model's values stay
        taken = {}
        for which in ("default", "current", "next"):
            text = entry.get(which) if isinstance(entry, dict) else None
            if text is None:
                continue
            value = nv_value(p, text)
            if value is None:
                dropped.append("%s %s: %s value %s is not one the parameter holds"
                               % (where, key, which, json.dumps(text)))
                taken = None
                break
            taken[which] = value
        if taken:
            target.update(taken)


def _name_rdma(cards):
    """[invented] A function the snapshot names no RDMA device of (mlx_info without the driver's view) gets the
    first free mlx5_N in PCI order, as mlx5_ib names them at probe: without one it would have no netdev here."""
    used = {f["rdma"] for c in cards for f in c["functions"] if f.get("rdma")}
    free = (name for name in ("mlx5_%d" % n for n in range(4096)) if name not in used)
    for func in sorted((f for c in cards for f in c["functions"] if not f.get("rdma")), key=lambda f: f["pci"]):
        func["rdma"] = next(free)


# ------------------------------------------------------------------------------------------ the host

def seed(doc, hostname):
    """What the simulator takes from a server's snapshot: ``{"cards", "kernel", "bootloader", "ofed", "record"}``
    (kernel, bootloader and ofed None when the snapshot does not say); ``record`` is kept in the state
    (``snapshot``): the file's host and time, the model each card was made from, what was not taken."""
    host = hostname or doc.get("host") or "the host"
    cards_of = {}
    for dev in sorted(doc["mlx_info"]["devices"], key=lambda d: str(d.get("address"))):
        address = dev.get("card") or str(dev.get("address"))[:-2]
        cards_of.setdefault(str(address), []).append(dev)
    cards, models, dropped = [], {}, []
    for index, (address, devs) in enumerate(sorted(cards_of.items())):
        spec, how = _spec(host, address, devs)
        card = model.build_card(spec, hostname or host, index)
        _overlay(card, devs, host, address, dropped)
        cards.append(card)
        models[address] = "%s %s (by %s)" % (spec["family"], spec["part_number"], how)
    _name_rdma(cards)
    plat = doc.get("platform") if isinstance(doc.get("platform"), dict) else {}
    kernel = word(plat["kernel"], "kernel", host, "kernel") if _given(plat.get("kernel")) else None
    family = plat.get("os_family")
    bootloader = None if not _given(family) else ("bls" if family == "RedHat" else "grub")
    ofed = plat.get("ofed") if isinstance(plat.get("ofed"), dict) else {}
    ofed = word(ofed["raw"], "ofed", host, "driver (ofed_info -s)") if _given(ofed.get("raw")) else None
    record = {"host": doc.get("host"), "taken": doc.get("taken"), "collection": doc.get("collection"),
              "models": models, "not_taken": dropped}
    return {"cards": cards, "kernel": kernel, "bootloader": bootloader, "ofed": ofed, "record": record}
