# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Finding the NVIDIA NICs/DPUs of a host and choosing the ones a task names.

Discovery is one ``lspci -D -d 15b3: -vv`` (PCI address, part number and serial from VPD,
link capability and status, NUMA node) - it works with or without MFT, on every distro.
A task names devices by PCI address (``18:00.0`` or ``0000:18:00.0``), by RDMA name (passed to the tool as
written), by MST device path (MFT only), by ``all``, or by part number - each kind by its own grammar (check_names),
an MST path against the tools chosen (check_tool), before any tool runs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import DeviceNotFound, InvalidValue
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers import parse

if TYPE_CHECKING:  # _runner imports _host, which imports this module
    from ansible_collections.gpufabric.mlnx.plugins.module_utils._runner import Runner

NVIDIA_VENDOR = "15b3"
# A PCI function: domain (4 hex digits, optional), bus (2), device (00-1f: 5 bits), function (0-7: 3 bits).
PCI_RE = re.compile(r"^(?:(?P<dom>[0-9a-fA-F]{4}):)?(?P<bus>[0-9a-fA-F]{2}):(?P<dev>[01][0-9a-fA-F])\.(?P<fn>[0-7])\Z",
                    re.ASCII)


def pci_full(address: str) -> str:
    """``18:00.0`` -> ``0000:18:00.0``; anything not a PCI address is returned unchanged."""
    match = PCI_RE.match(address.strip())
    if not match:
        return address
    return "%s:%s:%s.%s" % ((match.group("dom") or "0000").lower(), match.group("bus").lower(),
                            match.group("dev").lower(), match.group("fn"))


def is_pci(address: str) -> bool:
    """``18:00.0`` or ``0000:18:00.0`` (domain optional)."""
    return bool(PCI_RE.match(address.strip()))


def card_of(address: str) -> str:
    """The card a PCI function belongs to: ``0000:18:00.1`` -> ``0000:18:00``."""
    return pci_full(address).rsplit(".", 1)[0]


NIC_CLASS_RE = re.compile(r"ethernet|infiniband|network", re.I)


def is_nic(dev: dict) -> bool:
    """A NIC/DPU network function: not a PCIe bridge or a management/DMA function of a
    BlueField or a ConnectX-7's own switch (vendor 15b3 too), not a virtual function."""
    if "virtual function" in (dev.get("description") or "").lower():
        return False
    klass = dev.get("class")
    if klass:
        return bool(NIC_CLASS_RE.search(klass))
    return "bridge" not in (dev.get("description") or "").lower()


def base_part_number(part_number: str | None) -> str:
    """``MCX715105AS-WEAT_Ax`` (as mlxconfig prints the name) -> ``MCX715105AS-WEAT``."""
    return (part_number or "").split("_", 1)[0].strip().upper()


def discover(runner: Runner) -> list[dict]:
    """Every NVIDIA NIC/DPU physical network function, from one lspci call, in PCI order."""
    result = runner.run("lspci", ["-D", "-d", NVIDIA_VENDOR + ":", "-vv"])
    devices = [dev for dev in parse("lspci", result.stdout) if is_nic(dev)]
    for dev in devices:
        dev["address"] = pci_full(dev["address"])
        dev["part_number"] = (dev.get("vpd") or {}).get("PN")
    return sorted(devices, key=lambda d: d["address"])


def describe(devices: Sequence[dict]) -> list[str]:
    """A short list of what is present, for error messages."""
    return [("%s %s" % (d["address"], d.get("part_number") or d.get("description") or "")).strip()
            for d in devices] or ["no NVIDIA device (vendor 15b3) is visible to lspci"]


def select(names: Sequence[str] | None, part_numbers: Sequence[str] | None,
           discovered: Sequence[dict] | None) -> list[str]:
    """The devices a task names, each once, in the order named.

    ``names``: PCI addresses, mst paths, RDMA names, or ``all`` (function 0 of every card).
    ``part_numbers``: function 0 of every card with that part number.
    ``discovered``: the result of ``discover`` (may be None when only explicit addresses
    were named and no discovery was needed). Raises DeviceNotFound listing what is present.
    """
    check_names(names)
    chosen = []

    def add(dev_name):
        if dev_name not in chosen:
            chosen.append(dev_name)

    for name in names or []:
        if name == "all":
            for dev in discovered:
                if dev["address"].endswith(".0"):
                    add(dev["address"])
        elif is_pci(name):
            full = pci_full(name)
            if discovered is not None and full not in [d["address"] for d in discovered]:
                raise DeviceNotFound("device %s is not on this host; present: %s"
                                     % (name, ", ".join(describe(discovered))),
                                     device=name, allowed=describe(discovered))
            add(full)
        else:
            add(name)
    for part in part_numbers or []:
        matches = [d for d in discovered if base_part_number(d.get("part_number")) == base_part_number(part)
                   and d["address"].endswith(".0")]
        if not matches:
            raise DeviceNotFound("no device with part number %s on this host; present: %s"
                                 % (part, ", ".join(describe(discovered))),
                                 device=part, allowed=describe(discovered))
        for dev in matches:
            add(dev["address"])
    return chosen


# A device as a task names it, passed to the tools as one argv word after -d - one grammar per kind, nothing the
# tool would read as an option (a leading "-") or a path elsewhere:
# - a PCI function (PCI_RE: 0000:18:00.0 or 18:00.0; a short 18:00 or a function 8 is none of the kinds);
# - an RDMA device, as the kernel or udev names it (mlx5_0, mlx5_bond_0, rocep24s0f0, ibp24s0): a letter, then
#   letters, digits and _ - never ":" or "." (so a malformed PCI address is not taken for one);
# - an MST device as MFT's `mst start` creates it: /dev/mst/mt<device id>_pciconf<N> or _pci_cr<N>, an optional
#   .<function> (mt4129_pciconf0, mt41686_pciconf0.1) - opened by NVIDIA MFT's tools only (check_tool);
# - all.
RDMA_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}", re.ASCII)
MST_RE = re.compile(r"/dev/mst/mt[0-9]{4,5}_pci(?:conf|_cr)[0-9]{1,2}(?:\.[0-7])?", re.ASCII)
DEVICE_ALLOWED = ("a PCI address (0000:18:00.0 or 18:00.0: domain, bus, device 00-1f, function 0-7), an RDMA device "
                  "(mlx5_0), an MST device (/dev/mst/mt4129_pciconf0; NVIDIA MFT only) or all")


def device_kind(name: object) -> str | None:
    """``pci``, ``rdma``, ``mst``, ``all``, or None for a name of no kind."""
    if not isinstance(name, str):
        return None
    if name == "all":
        return "all"
    if PCI_RE.match(name):
        return "pci"
    if MST_RE.fullmatch(name):
        return "mst"
    if RDMA_RE.fullmatch(name):
        return "rdma"
    return None


def check_names(names: object, parameter: str = "device") -> list[str]:
    """``names`` (None, a name, or a list of names) checked by kind (device_kind) before any tool runs; InvalidValue
    naming ``parameter[i]`` for a name that is none of a PCI address, an RDMA device, an MST device path or all."""
    return _checked_words(names, parameter, "devices", "a device", DEVICE_ALLOWED, lambda n: device_kind(n) is not None)


def _checked_words(values, parameter, plural, singular, allowed, good):
    """None, a word or a list of words, each ``good``; InvalidValue naming ``parameter[i]`` and what is allowed."""
    if values is None:
        return []
    items = [values] if isinstance(values, str) else values
    if not isinstance(items, list):
        raise InvalidValue("%s must be a list of %s (%s), not %r" % (parameter, plural, allowed, values),
                           parameter=parameter, allowed=allowed)
    for index, value in enumerate(items):
        if not good(value):
            raise InvalidValue("%s[%d]=%r is not %s; allowed: %s. Nothing was run." % (
                parameter, index, value, singular, allowed), parameter="%s[%d]" % (parameter, index),
                allowed=allowed)
    return list(items)


def check_tool(names: Sequence[str] | None, runner: Runner, parameter: str = "device") -> None:
    """The devices named (already through check_names) against the tools that will open them: an MST device path
    is MFT's (`mst start` creates it; Debian's mstflint opens a PCI address or an RDMA device). With ``tool: auto``
    asks ``runner`` for its family only when a path is named (a PATH lookup, no tool run); InvalidValue naming the
    device and the tool."""
    items = [names] if isinstance(names, str) else list(names or [])
    paths = [(i, n) for i, n in enumerate(items) if device_kind(n) == "mst"]
    # the tool the task chose, else the family auto finds (MFT when its mlxconfig is installed)
    if paths and (runner.requested if runner.requested != "auto" else runner.family) == "mstflint":
        index, name = paths[0]
        allowed = "a PCI address or an RDMA device with mstflint"
        raise InvalidValue("%s[%d]=%r is an MST device path, which only NVIDIA MFT's tools open (`mst start` creates "
                           "it); the tools here are mstflint's (tool: %s): name the device by its PCI address or RDMA "
                           "device. Nothing was run." % (parameter, index, name, runner.requested),
                           parameter="%s[%d]" % (parameter, index), allowed=allowed)


# A part number as NVIDIA and the OEMs print it (lspci's VPD [PN], mlxconfig's Part Number): MCX75310AAS-NEAT,
# MCX715105AS-WEAT_Ax (a revision suffix), 900-9D3B6-00CV-AA0 (BlueField-3), P23666-B21 (an OEM's).
PART_NUMBER_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{1,39}(?:_[A-Za-z0-9]{1,4})?", re.ASCII)
PART_NUMBER_ALLOWED = "a part number such as MCX75310AAS-NEAT or 900-9D3B6-00CV-AA0 (letters, digits, -, an _Ax suffix)"


def check_part_numbers(values: object, parameter: str = "part_number") -> list[str]:
    """Part numbers a task names, each by PART_NUMBER_RE, before any tool runs (an empty one would otherwise read
    every card's VPD and match nothing); InvalidValue naming ``parameter[i]``."""
    return _checked_words(values, parameter, "part numbers", "a part number", PART_NUMBER_ALLOWED,
                          lambda v: isinstance(v, str) and PART_NUMBER_RE.fullmatch(v.strip()) is not None)


def info_cards(devices: object, prefix: str = "") -> list[dict]:
    """One device per card of an ``mlx_info`` devices list (its lowest function; ``address`` the full PCI address,
    ``card`` its card), in the order of the list. Every device is checked first - a mapping whose ``address`` is a PCI
    function (PCI_RE), no address twice (two cards at one address are one card read twice, or a mistake: the rail
    plan refuses it too) - InvalidValue naming ``devices[i]`` (after ``prefix``, e.g. the host) otherwise."""
    if not isinstance(devices, list):
        raise InvalidValue("%sdevices must be the devices list gpufabric.mlnx.mlx_info returns, not %s"
                           % (prefix, type(devices).__name__), parameter="devices")
    chosen, seen = {}, {}
    for index, dev in enumerate(devices):
        address = dev.get("address") if isinstance(dev, dict) else None
        if not isinstance(address, str) or not address.strip():
            raise InvalidValue("%sdevices[%d] is not a device of gpufabric.mlnx.mlx_info (a mapping with address, card, "
                               "psid, part_number, fw_version, ...): %s" % (prefix, index, type(dev).__name__),
                               parameter="devices[%d]" % index)
        if not is_pci(address):
            raise InvalidValue("%sdevices[%d].address %r is not a PCI address (0000:18:00.0: domain, bus, device 00-1f, "
                               "function 0-7)" % (prefix, index, address), parameter="devices[%d].address" % index)
        full = pci_full(address)
        if full in seen:
            raise InvalidValue("%sdevices[%d].address %s is listed twice (devices[%d] too): one card read twice, or two "
                               "cards given one address" % (prefix, index, full, seen[full]),
                               parameter="devices[%d].address" % index)
        seen[full] = index
        given = dev.get("card")
        card = given.strip() if isinstance(given, str) and given.strip() else card_of(full)
        if card not in chosen or int(full[-1]) < int(chosen[card]["address"][-1]):
            chosen[card] = dict(dev, address=full, card=card)
    return list(chosen.values())


def needs_discovery(names: Sequence[str] | None, part_numbers: Sequence[str] | None) -> bool:
    """Whether ``select`` needs ``discover``'s list: ``all`` or a part number is named."""
    return bool(part_numbers) or any(n == "all" for n in names or [])
