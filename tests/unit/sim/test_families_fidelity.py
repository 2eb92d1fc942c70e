"""The older and newer families (issue 16: ConnectX-4, ConnectX-4 Lx, ConnectX-5, ConnectX-6 Lx, BlueField-2,
ConnectX-8) against the real captures of the same family and tool layout: headers, columns, widths, trailing
spaces, parameter order, plain (non-RO) rows, exit codes."""
import re

import pytest

from sim_helpers import real


def rows(lines):
    """[(name, line)] of the table rows (skips headers, template and elision lines)."""
    out = []
    for line in lines:
        if not line.startswith((" ", "*")) or "%" in line or not line.strip() or line.strip() == "...":
            continue
        parts = line.split()
        name = parts[1] if parts[0] == "*" else parts[0]
        if re.match(r"^_?[A-Z][A-Z0-9_]+(\[\d+\])?$", name):
            out.append((name, line))
    return out


def in_order(sub, full):
    it = iter(full)
    return all(x in it for x in sub)


def test_cx4lx_full_listing_order_and_bytes_4_26(sim):
    """mstconfig -e q of a ConnectX-4 Lx (4.26-4.30 layout): every parameter of the real listing, in its
    order, and nothing else; rows with the same values are byte-identical (trailing spaces included)."""
    sim.init("refresh-cx5-storage")
    out = sim.out("mstconfig", "-d", "03:00.0", "-e", "q", env={"MLXSIM_MSTFLINT_VERSION": "4.26.0"}).split("\n")
    cap = real("mstconfig_e_query_cx4lx_1.txt")
    ours, theirs = rows(out), rows(cap)
    # NUM_OF_VFS and SRIOV_EN are the Go template's %d/%s rows (skipped by rows()); they sit where ours are
    assert [n for n, _v in ours if n not in ("NUM_OF_VFS", "SRIOV_EN")] == [n for n, _v in theirs]
    names = [n for n, _v in ours]
    assert names[names.index("NUM_OF_PF") - 1] == "NUM_OF_VFS" and names[names.index("NUM_OF_PF") + 1] == "SRIOV_EN"
    ours = [(n, line) for n, line in ours if n not in ("NUM_OF_VFS", "SRIOV_EN")]
    same = [(a, b) for (_n, a), (_m, b) in zip(ours, theirs) if a.split() == b.split()]
    assert len(same) >= 100
    for mine, real_line in same:
        assert mine == real_line
    for line in ("Device type:        ConnectX4LX         ",
                 "Configurations:                                     Default              Current              Next Boot"):
        assert line in cap and line in out
    assert not any("RO " in ln[:4] for ln in out)


def test_cx5_listing_order_and_rows_mft_4_30_1(sim):
    """mlxconfig q of a ConnectX-5 with MFT 4.30.1 (the 4.31 layout) - order as the real MCX555A listing."""
    sim.init("refresh-cx5-storage")
    sim.run("mst", "start", check_rc=0)
    out = sim.out("mlxconfig", "-d", "/dev/mst/mt4119_pciconf0", "q").split("\n")
    cap = real("mlxconfig_query_cx5_1.txt")
    assert [n for n, _v in rows(out)] == [n for n, _v in rows(cap)]
    theirs = dict(rows(cap))
    same = [(line, theirs[n]) for n, line in rows(out) if line.split() == theirs[n].split()]
    assert len(same) >= 120
    for mine, real_line in same:
        assert mine.rstrip() == real_line                     # the capture's trailing spaces are stripped
    assert "Configurations:                                          Next Boot" in out and cap[8] in out
    assert "Device type:        ConnectX5           " in out
    assert "        PCIE_CREDIT_TOKEN_TIMEOUT                   0                   " in out
    assert not any("MAX_ACC_OUT_READ" in ln for ln in out)   # ADVANCED_PCI_SETTINGS False(0), as the capture
    # MAX_ACC_OUT_READ is refused while hidden; PCIE_CREDIT_TOKEN_TIMEOUT is not
    sim.out("mlxconfig", "-d", "29:00.0", "q", "PCIE_CREDIT_TOKEN_TIMEOUT")
    p = sim.run("mlxconfig", "-d", "29:00.0", "q", "MAX_ACC_OUT_READ")
    assert p.returncode == 3 and p.stdout.endswith("-E- The Device doesn't support MAX_ACC_OUT_READ parameter\n")


def test_cx5_partial_e_listing_4_22(sim):
    """mlxconfig_e_query_cx5_partial_1.txt (MFT 4.22-4.24, a dual-port ConnectX-5): on the dual-port ConnectX-5 Ex
    the same rows in the same order, byte for byte but the last column's padding the excerpt lost - the port
    groups P1 then P2, and none of the parameters that MFT did not know yet (PHY_AUTO_NEG, PHY_RATE_MASK_OVERRIDE,
    PF_SD_GROUP); the capture's last row is a modified marker cut after the name."""
    sim.init("hpc-cx5ex")
    old = {"MLXSIM_MFT_VERSION": "4.22.0"}
    out = sim.out("mlxconfig", "-d", "10:00.0", "-e", "q", env=old).split("\n")
    theirs, ours = rows(real("mlxconfig_e_query_cx5_partial_1.txt")), rows(out)
    names = [n for n, _l in ours]
    start = names.index(theirs[0][0])
    assert names[start:start + len(theirs)] == [n for n, _l in theirs]
    for (_n, mine), (_m, real_line) in zip(ours[start:start + len(theirs) - 1], theirs[:-1]):
        assert mine.rstrip() == real_line
    assert theirs[-1][1] == "*        ROCE_CONTROL" and ours[start + len(theirs) - 1][1].startswith("         ROCE_CONTROL")
    # DEVICE_DEFAULT(0) is 17 chars: the columns collapse to one space, as in the capture
    assert dict(ours)["PHY_FEC_OVERRIDE_P1"].rstrip() == dict(theirs)["PHY_FEC_OVERRIDE_P1"]
    # the old tool does not know the newer parameters: not listed, refused by name; the 4.30.1 tool lists them
    for name in ("PHY_AUTO_NEG_P1", "PHY_RATE_MASK_OVERRIDE_P2", "PF_SD_GROUP"):
        assert name not in names
        p = sim.run("mlxconfig", "-d", "10:00.0", "q", name, env=old)
        assert p.returncode == 3 and "-E- " in p.stdout and name in p.stdout
        p = sim.run("mlxconfig", "-d", "10:00.0", "-y", "set", "%s=0" % name, env=old)
        assert p.returncode == 3 and "Done!" not in p.stdout
    new = [n for n, _l in rows(sim.out("mlxconfig", "-d", "10:00.0", "q").split("\n"))]
    assert {"PHY_AUTO_NEG_P1", "PHY_RATE_MASK_OVERRIDE_P2", "PF_SD_GROUP"} <= set(new)
    full = [n for n, _l in rows(real("mlxconfig_query_cx5_1.txt"))]
    assert "PHY_AUTO_NEG_P1" in full and "PF_SD_GROUP" in full                  # MFT 4.30.1's own listing


def test_cx5_ex_silicon(sim):
    """A ConnectX-5 Ex (MCX556A-EDAT) is a ConnectX5 to MFT (Device Type, firmware 16.x, its parameters) with its
    own PCI id 0x1019, mst name mt4121, lspci name, CA type MT4121 and a PCIe Gen4 x16 link."""
    sim.init("hpc-cx5ex")
    sim.run("mst", "start", check_rc=0)
    mst = sim.out("mst", "status", "-v")
    assert "ConnectX5(rev:0)        /dev/mst/mt4121_pciconf0      10:00.0   mlx5_0" in mst
    assert "10:00.0 Infiniband controller [0207]: Mellanox Technologies MT28800 Family [ConnectX-5 Ex] [15b3:1019]" \
        in sim.out("lspci", "-nn")
    vvv = sim.out("lspci", "-vvv", "-s", "10:00.0")
    assert re.search(r"LnkCap:\tPort #0, Speed 16GT/s, Width x16", vvv)
    assert "\tCA type: MT4121" in sim.out("ibstat", "mlx5_0")
    q = sim.out("mlxfwmanager", "--query", "-d", "/dev/mst/mt4121_pciconf0")
    assert "  Device Type:      ConnectX5" in q and "  PSID:             MT_0000000009" in q
    assert "  Base GUID:" in q and "     FW             16.30.1004" in q
    assert "Device type:        ConnectX5" in sim.out("mlxconfig", "-d", "10:00.0", "q", "LINK_TYPE_P1")
    assert "vendor_part_id:\t\t\t4121" in sim.out("ibv_devinfo", "-v", "-d", "mlx5_0")


def test_cx6lx_partial_e_listing_4_21(sim):
    sim.init("legacy-eth")
    out = sim.out("mstconfig", "-d", "41:00.0", "-e", "q").split("\n")      # mstflint 4.21 (bookworm)
    cap = real("mlxconfig_e_query_cx6lx_partial_1.txt")
    assert cap[0] in out                                                    # header, byte for byte
    theirs = rows(cap)
    ours = rows(out)
    n = len(theirs) - 1                                                     # the last capture row is cut
    assert [x for x, _v in ours[:n]] == [x for x, _v in theirs[:n]]
    for (_n, mine), (_m, real_line) in zip(ours[:n], theirs[:n]):
        assert mine == real_line
    assert not any("LINK_TYPE" in ln for ln in out)                         # Ethernet-only silicon


def test_bf2_old_mft_order(sim):
    """<=4.21 BlueField-2: INTERNAL_CPU_MODEL right after HOST_CHAINING_*, LINK_TYPE_P1/P2 before the SR-IOV
    block; the hidden _INTERNAL_CPU_MODEL row of the capture is not modelled."""
    sim.init("legacy-eth")
    sim.run("mst", "start", check_rc=0)
    out = sim.out("mlxconfig", "-d", "/dev/mst/mt41686_pciconf0", "q", env={"MLXSIM_MFT_VERSION": "4.20.0"})
    out = out.split("\n")
    cap = real("mlxconfig_query_bf2_1.txt")
    want = [n for n, _v in rows(cap) if not n.startswith("_")]
    assert [n for n, _v in rows(out)][:len(want)] == want
    theirs = dict(rows(cap))
    for n, line in rows(out)[:len(want)]:
        assert line.rstrip() == theirs[n]
    for label in ("Device type:", "Name:", "Description:", "Device:", "Configurations:"):
        assert [ln.rstrip() for ln in out if ln.startswith(label)] == [ln for ln in cap if ln.startswith(label)]
    names = [n for n, _v in rows(out)]
    assert names.index("NUM_OF_VFS") > names.index("LINK_TYPE_P2")


def test_crypto_policy_plain_row_4_25(sim):
    """BlueField-3 with mstflint 4.25: the crypto group as the real listing prints it - plain rows, no RO."""
    sim.init("mixed")
    out = sim.out("mstconfig", "-d", "ca:00.0", "q", env={"MLXSIM_MSTFLINT_VERSION": "4.25.0"}).split("\n")
    cap = real("mstconfig_query_bf3_excerpt_1.txt")
    assert cap[7] in out                                                    # "Configurations: ... Next Boot"
    # every row of the excerpt (ICM_CACHE_MODE ... LINK_TYPE_P2), byte for byte, one after another
    theirs, ours = rows(cap), rows(out)
    names = [n for n, _v in ours]
    start = names.index(theirs[0][0])
    assert ours[start:start + len(theirs)] == theirs
    assert not any(ln.startswith(" RO") for ln in out)
    assert "The 'RO' shows parameters which are for read only and cannot be changed" not in "\n".join(out)


def test_mst_status_new_families(sim):
    sim.init("legacy-eth")
    sim.run("mst", "start", check_rc=0)
    out = sim.out("mst", "status").split("\n")
    for cap, node in (("mst_status_cx4_1.txt", "/dev/mst/mt4115_pciconf0"),
                      ("mst_status_cx6lx_1.txt", "/dev/mst/mt4127_pciconf0")):
        line = [ln for ln in real(cap) if ln.startswith(node)][0]
        assert line in out
    cap = real("mst_status_v_bf2_1.txt")
    # the fixture is from an MFT older than 4.24 (NET %-26s, mst.verbose_layout)
    out = sim.out("mst", "status", "-v", env={"MLXSIM_MFT_VERSION": "4.22.0"}).split("\n")
    real_row = [ln for ln in cap if ln.startswith("BlueField2(rev:1)") and "pciconf0.1" in ln][0]
    mine = [ln for ln in out if ln.startswith("BlueField2(rev:1)") and "pciconf0.1" in ln][0]
    assert [m.start() for m in re.finditer(r"\S+", mine)] == [m.start() for m in re.finditer(r"\S+", real_row)]
    assert mine.split()[:3] == real_row.split()[:3]                         # e2:00.1 as in the capture


def test_flint_query_new_families(sim):
    sim.init("legacy-eth")
    cap = real("mstflint_query_cx6lx_1.txt")
    out = sim.out("mstflint", "-d", "41:00.0", "q").split("\n")
    q = cap[cap.index("# mstflint -d 0002:01:00.0 q") + 1:]
    q = [ln for ln in q if ln]
    mine = [ln for ln in out if ln]
    assert [ln[:23] for ln in mine] == [ln[:23] for ln in q]               # same labels, same order
    same = {ln for ln in q if not ln.startswith(("Base GUID:", "Base MAC:"))}
    assert same <= set(mine)                                                # FW, date, ROMs, PSID, secure-fw
    assert [m.start() for m in re.finditer(r"\S+", [x for x in mine if x.startswith("Base MAC:")][0])] == \
        [m.start() for m in re.finditer(r"\S+", [x for x in q if x.startswith("Base MAC:")][0])]
    fs3 = sim.out("mstflint", "-d", "06:00.0", "q").split("\n")
    assert "Image type:            FS3" in fs3 and "Security Attributes:   N/A" in fs3
    # as mstflint_query_cx4_cx4lx_oem_1.txt: UEFI first, no zero padding, cpu= (test_oem_rom_fidelity.py)
    assert "Rom Info:              type=UEFI version=14.21.17 cpu=AMD64,AARCH64" in fs3
    cx8 = sim.init("spectrum-x-cx8")
    out = sim.out("flint", "-d", "18:00.0", "q")
    assert "FW Version:            40.48.1000" in out and "PSID:                  MT_0000001222" in out


def test_fwmanager_new_families(sim):
    sim.init("legacy-eth")
    sim.run("mst", "start", check_rc=0)
    out = sim.out("mlxfwmanager", "--query").split("\n\n")
    cap = "\n".join(real("mlxfwmanager_query_bf2_1.txt"))
    bf2 = [b for b in out if "BlueField2" in b][0]
    for line in ("  Device Type:      BlueField2", "  Part Number:      MBF2M516A-EEEO_Ax", "  PSID:             MT_0000000559",
                 "  PCI Device Name:  /dev/mst/mt41686_pciconf0"):
        assert line in cap and line in bf2
    assert "Base MAC:" in bf2 and "Base GUID:" not in bf2                  # as the capture
    cx6lx = [b for b in out if "ConnectX6LX" in b][0]
    cap6 = real("mlxup_query_cx6lx_1.txt")
    assert "  Base GUID:        e8ebd3030070cf12" in cap6 and "  Base MAC:         e8ebd370cf12" in cap6
    card = sim.card("41:00.0")
    assert ("  Base GUID:        %s\n  Base MAC:         %s" % (card["base_guid"], card["base_mac"])) in cx6lx
    sim.init("refresh-cx5-storage")
    out = sim.out("mlxfwmanager", "--query")
    cap5 = real("mlxfwmanager_query_and_mlxconfig_e_query_cx5_1.txt")
    cx5 = [b for b in out.split("Device #") if "ConnectX5" in b][0]
    for line in ("  Device Type:      ConnectX5", "  Part Number:      MCX515A-CCA_Ax_Bx", "  PSID:             MT_0000000011"):
        assert line in cap5 and line in cx5
    assert "  Base GUID:" in cx5 and "  Base MAC:" in cx5                  # the EN card prints both


@pytest.mark.parametrize("profile", ["refresh-cx5-storage", "legacy-eth", "spectrum-x-cx8", "hpc-cx5ex"])
def test_every_tool_runs_on_the_new_profiles(sim, profile):
    sim.init(profile)
    sim.run("mst", "start", check_rc=0)
    mst = sim.out("mst", "status", "-v")
    devices = re.findall(r"(/dev/mst/mt\d+_pciconf\d+(?:\.\d)?)", mst)
    assert devices
    for dev in devices:
        sim.out("flint", "-d", dev, "q")
        sim.out("mlxconfig", "-d", dev, "q")
        sim.out("mlxconfig", "-d", dev, "-e", "q")
        assert "Reset-levels:" in sim.out("mlxfwreset", "-d", dev, "q")
    sim.out("mlxfwmanager", "--query")
    lspci = sim.out("lspci")
    names = {"refresh-cx5-storage": ["MT27800 Family [ConnectX-5]", "MT27710 Family [ConnectX-4 Lx]",
                                     "MT2910 Family [ConnectX-7]"],
             "legacy-eth": ["MT27700 Family [ConnectX-4]", "MT2894 Family [ConnectX-6 Lx]",
                            "MT42822 BlueField-2 integrated ConnectX-6 Dx network controller (rev 01)",
                            "MT42822 BlueField-2 SoC Management Interface"],
             "spectrum-x-cx8": ["CX8 Family [ConnectX-8]"],
             "hpc-cx5ex": ["Infiniband controller: Mellanox Technologies MT28800 Family [ConnectX-5 Ex]"]}[profile]
    for name in names:
        assert name in lspci
    sim.out("ibstat")
