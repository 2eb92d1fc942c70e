"""The simulated lspci -vv/-vvv against the real captures' layout (capability headers, indentation, field names
per line, VPD padding, the slot power form of each pciutils release) and through the collection's parser."""
import json
import re

import pytest

from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers import parse

from sim_helpers import real

HOST_LINES = ("Physical Slot:", "IOMMU group:", "Region 2:", "DeviceName:", "lspci:")


def block(text):
    """The lines of the first device of an lspci -vvv text (comments and prompt lines dropped)."""
    lines = [ln for ln in text if not ln.startswith("#") and "# lspci" not in ln]
    out = []
    for ln in lines:
        if out and (not ln.strip() or re.match(r"^\s*[0-9a-f]{2}:[0-9a-f]{2}\.\d ", ln)):
            break
        if out or re.match(r"^\s*[0-9a-f]{2}:[0-9a-f]{2}\.\d ", ln):
            out.append(ln)
    return out


def skeleton(lines, spaces=None):
    """(indent level, field name) per detail line: the name up to ':' or the first word without its +/-."""
    out = []
    for ln in lines[1:]:
        body = ln.strip()
        if body.startswith(HOST_LINES) or body.startswith("```"):
            continue
        if spaces is None:
            level = len(ln) - len(ln.lstrip("\t"))
        else:
            level = (len(ln) - len(ln.lstrip(" ")) - spaces) // 8
        word = body.split(":")[0] if re.match(r"^[A-Za-z\[][^ ]*( [A-Za-z]+)*:", body) else body.split()[0]
        out.append((level, word.rstrip("+-,")))
    return out


def headers(lines):
    return [re.sub(r"\s*<\?>$", "", ln.strip()) for ln in lines if ln.strip().startswith("Capabilities:")]


def with_vfs(sim, dev):
    """SR-IOV on (as in every capture): SRIOV_EN/NUM_OF_VFS set, then the reboot that applies them."""
    sim.out("mlxconfig", "-y", "-d", dev, "set", "SRIOV_EN=1", "NUM_OF_VFS=16")
    sim.out("mlxsim", "reboot")


def sim_block(sim, addr):
    return block(sim.out("lspci", "-vvv", "-s", addr).split("\n"))


def test_cx6dx_matches_the_bluefield2_capture(sim):
    """ConnectX-6 Dx (no capture of its own) has the layout of BlueField-2's integrated ConnectX-6 Dx; on a RHEL 9
    host (pciutils 3.7) line for line the capture's fields, tabs and 25.000W."""
    sim.init("cx6dx-roce", "node01", "--bootloader", "bls")
    with_vfs(sim, "3b:00.0")
    got = sim_block(sim, "3b:00.0")
    cap = block(real("lspci_vvv_bf2_2.txt"))
    assert headers(got) == headers(cap)
    assert skeleton(got) == skeleton(cap)
    assert "\t\t\tExtTag+ AttnBtn- AttnInd- PwrInd- RBE+ FLReset+ SlotPowerLimit 25.000W" in got
    assert [ln for ln in cap if "SlotPowerLimit" in ln] == [
        "\t\t\tExtTag+ AttnBtn- AttnInd- PwrInd- RBE+ FLReset+ SlotPowerLimit 25.000W"]
    for name in ("LnkSta:", "IOVCap:", "IOVCtl:", "DevCtl2:", "Compliance De-emphasis", "UESvrt:", "AERCap:"):
        g = [ln for ln in got if ln.strip().startswith(name)]
        c = [ln for ln in cap if ln.strip().startswith(name)]
        assert [ln.split(":")[0] for ln in g] == [ln.split(":")[0] for ln in c], name
    assert "\t\tLnkSta:\tSpeed 16GT/s (ok), Width x16 (ok)" in got


def test_bluefield_vpd_keeps_the_real_padding(sim):
    """The BlueField VPD values are padded with blanks to the widths of the BlueField-2 capture, byte for byte."""
    sim.init("mixed", "node01", "--bootloader", "bls")
    with_vfs(sim, "ca:00.0")
    got = sim_block(sim, "ca:00.0")
    cap = block(real("lspci_vvv_bf2_2.txt"))

    def fields(lines):
        out = {}
        for ln in lines:
            m = re.match(r"^\t\t(?:\t\[(\w\w)\] [^:]*|(Product Name)): (.*)$", ln)
            if m:
                out[m.group(1) or m.group(2)] = m.group(3)
        return out
    g, c = fields(got), fields(cap)
    assert list(g) == list(c)
    for key in ("PN", "V2", "SN", "VA", "V0", "VU", "Product Name"):
        assert c[key] != c[key].rstrip(" "), key
        assert len(g[key]) == max(len(c[key]), len(g[key].rstrip(" "))), (key, g[key])
    assert g["EC"] == g["EC"].rstrip() and g["V3"] == g["V3"].rstrip()
    assert g["VU"].rstrip() == g["SN"].rstrip() + "MLNXS0D0F0"


def test_cx7_matches_the_cx7_capture(sim):
    """ConnectX-7 against lspci_vvv_cx7_1.txt (pciutils 3.7): the same lines but the retail card's ACS capability and
    VPD fields (the capture's OEM card has [MN] and no [EC]); [VU] padded to 22 like the capture's."""
    sim.init("dgx-h100", "node01", "--bootloader", "bls")
    with_vfs(sim, "18:00.0")
    got = sim_block(sim, "18:00.0")
    cap = block(real("lspci_vvv_cx7_1.txt"))
    want = headers(cap)
    want.insert(want.index("Capabilities: [320 v1] Lane Margining at the Receiver"),
                "Capabilities: [230 v1] Access Control Services")
    assert headers(got) == want
    drop_vpd = {(3, "[MN] Manufacture ID"), (3, "[EC] Engineering changes"), (2, "ACSCap"), (2, "ACSCtl"),
                (1, "Kernel modules")}
    no_acs = [ln for ln in got if "[230 v1]" not in ln]
    assert [x for x in skeleton(no_acs) if x not in drop_vpd] == [x for x in skeleton(cap) if x not in drop_vpd]
    vu = [ln.split(": ", 1)[1] for ln in got if "[VU]" in ln][0]
    assert len(vu) == len([ln.split(": ", 1)[1] for ln in cap if "[VU]" in ln][0]) == 22
    assert "\t\tLnkSta:\tSpeed 32GT/s (ok), Width x16 (ok)" in got
    assert "SlotPowerLimit 75.000W" in got[got.index("\t\tDevCap:\tMaxPayload 512 bytes, PhantFunc 0, Latency L0s "
                                                     "unlimited, L1 unlimited") + 1]


def test_new_pciutils_form_matches_the_cx4_capture(sim):
    """With Debian 12's pciutils 3.9 (platform ``pciutils``) the Express, AER and SR-IOV lines have the fields of
    lspci_vvvvv_vpd_cx4_1.txt
    (taken with pciutils >= 3.8): SlotPowerLimit 25W form, LnkSta without (ok), 10BitTagReq in DevCtl2/IOV*,
    Compliance Preset/De-emphasis. The capture's indentation is the author's (+4 spaces, tabs as 8)."""
    sim.init("cx6dx-roce")
    with_vfs(sim, "3b:00.0")
    data = sim.state_data()
    data["platform"]["pciutils"] = "3.9.0"
    with open(sim.state, "w") as fh:
        json.dump(data, fh)
    got = sim_block(sim, "3b:00.0")
    cap = block(real("lspci_vvvvv_vpd_cx4_1.txt"))
    cap = [ln for ln in cap if not ln.strip().startswith("root@")]

    def part(sk, first, last):
        names = [n for _l, n in sk]
        return sk[names.index(first):names.index(last) + 1]
    gs, cs = skeleton(got), skeleton(cap, spaces=4)
    for first, last in (("Capabilities", "LnkSta2"), ("UESta", "HeaderLog"), ("IOVCap", "VF Migration")):
        assert part(gs, first, last) == part(cs, first, last), first
    assert "\t\t\tExtTag+ AttnBtn- AttnInd- PwrInd- RBE+ FLReset+ SlotPowerLimit 25W" in got
    assert any(ln.strip().endswith("SlotPowerLimit 25W") for ln in cap)
    assert "\t\tLnkSta:\tSpeed 16GT/s, Width x16" in got
    assert any(ln.strip() == "LnkSta: Speed 8GT/s, Width x8 (downgraded)" for ln in cap)


def test_second_function_has_no_lnkcap2(sim):
    """LnkCap2/LnkCtl2 only for function 0 of an endpoint (pciutils ls-caps.c); LnkSta2 for every function."""
    sim.init("cx6dx-roce")
    first, second = sim_block(sim, "3b:00.0"), sim_block(sim, "3b:00.1")
    assert [ln for ln in first if "LnkCap2:" in ln] and [ln for ln in first if "LnkCtl2:" in ln]
    assert not [ln for ln in second if "LnkCap2:" in ln or "LnkCtl2:" in ln]
    assert [ln for ln in second if "LnkSta2:" in ln]
    assert "\t\tARICap:\tMFVC- ACS-, Next Function: 1" in first
    assert "\t\tARICap:\tMFVC- ACS-, Next Function: 0" in second


def test_vv_and_vvv_print_the_same(sim):
    sim.init("mixed")
    for addr in ("17:00.0", "65:00.0", "ca:00.1", "ca:00.2"):
        assert sim.out("lspci", "-vv", "-s", addr) == sim.out("lspci", "-vvv", "-s", addr) \
            == sim.out("lspci", "-vvvvv", "-s", addr)


def test_host_properties(sim):
    """Physical Slot / IOMMU group / Cache Line Size are the host's: the mixed (AMD) host has an IOMMU group, the
    DGX none; a platform can turn each off."""
    sim.init("mixed")
    assert "\tIOMMU group: " in sim.out("lspci", "-vv", "-s", "17:00.0")
    assert ", IOMMU group " in sim.out("lspci", "-v", "-s", "17:00.0")
    sim.init("dgx-h100")
    out = sim.out("lspci", "-vv", "-s", "18:00.0")
    assert "IOMMU group" not in out and "\tPhysical Slot: 1\n" in out and "Cache Line Size: 64 bytes" in out
    data = sim.state_data()
    data["platform"]["lspci"] = {"slot": False, "cache_line": 0}
    with open(sim.state, "w") as fh:
        json.dump(data, fh)
    out = sim.out("lspci", "-vv", "-s", "18:00.0")
    assert "Physical Slot" not in out and "\tLatency: 0\n" in out


PROFILES = ("dgx-h100", "dgx-h100-eth", "cx6dx-roce", "mixed", "gpu4-cx7-eth")


@pytest.mark.parametrize("bootloader", ("grub", "bls"))
@pytest.mark.parametrize("profile", PROFILES)
def test_parser_reads_every_profiles_full_output(sim, profile, bootloader):
    """The collection's lspci parser on the full -vvv of every profile: link, VPD, slot, NUMA node per function."""
    from mlxsim import model
    from mlxsim import state as st

    sim.init(profile, "node01", "--bootloader", bootloader)
    devs = {d["address"]: d for d in parse("lspci", sim.out("lspci", "-vvv", "-D"))}
    host = model.Host(st.load(sim.state))
    seen = 0
    for card in host.cards():
        p, vpd = card["pcie"], card["vpd"]
        for func in card["functions"]:
            dev = devs[func["pci"]]
            seen += 1
            assert dev["lnkcap"] == {"speed": p["cap_speed"], "width": "x%d" % p["cap_width"]}
            assert dev["lnksta"] == {"speed": p["speed"], "width": "x%d" % p["width"], "downgraded": False}
            assert dev["physical_slot"] == card["slot"] and dev["numa_node"] == str(card["numa"])
            assert dev["product_name"] == vpd["product_name"]
            assert dev["vpd"]["PN"] == vpd["PN"] and dev["vpd"]["SN"] == vpd["SN"]
            assert dev["vpd"]["V0"] == vpd["V0"] and dev["vpd"]["EC"] == vpd["EC"]
            assert dev["vpd"]["VU"] == vpd["SN"] + "MLNXS0D0F0"
            assert dev["driver"] == "mlx5_core"
    assert seen == sum(len(c["functions"]) for c in host.cards())
