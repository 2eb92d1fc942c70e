"""mlxconfig / mstconfig output compared with real captures, one test per column layout."""
import re

import pytest

from sim_helpers import real


def offsets(line):
    return [m.start() for m in re.finditer(r"\S+", line)]


def real_rows(lines):
    """name -> line for the table rows of a real capture (skips headers and template lines)."""
    out = {}
    for line in lines:
        if not line.startswith((" ", "*")) or "%" in line or line.strip() in ("", "(...)"):
            continue
        parts = line.split()
        name = parts[1] if parts[0] == "*" else parts[0]
        if len(parts) < 2:
            continue
        out[name] = line
    return out


def same_value_rows(ours, theirs):
    """Rows present in both with the same tokens (same values): these must be byte-identical."""
    return [(ours[n], line) for n, line in theirs.items() if n in ours and ours[n].split() == line.split()]


# ---------------------------------------------------------------------------- 4.31-4.35 (MFT 4.30.1)


def test_cx7_plain_query_matches_real_4_31_layout(sim):
    sim.init("mixed")
    sim.run("mst", "start", check_rc=0)
    lines = sim.out("mlxconfig", "-d", "/dev/mst/mt4129_pciconf0", "query").split("\n")
    cap = real("mlxconfig_query_cx7_partial_1.txt")
    assert cap[0] in lines                                   # the Configurations header, byte for byte
    assert "Configurations:                                          Next Boot" in lines
    pairs = same_value_rows(real_rows(lines), real_rows(cap))
    assert len(pairs) >= 12
    for mine, theirs in pairs:
        assert mine == theirs
    # the row whose value overflows the 20-char column
    assert "        MEMIC_ATOMIC                                MEMIC_ATOMIC_ENABLE(2)" in lines
    # header block: labels padded to 20, values padded to 20 (trailing spaces)
    cap2 = real("mlxconfig_query_cx7_1.txt")
    assert "Device type:        ConnectX7           " in lines
    assert cap2[cap2.index("Device type:        ConnectX7           ")] in lines
    assert "Device:             /dev/mst/mt4129_pciconf0" in lines       # echoed as typed
    name = [ln for ln in lines if ln.startswith("Name:")][0]
    real_name = [ln for ln in cap2 if ln.startswith("Name:")][0]
    assert len(name) == len(real_name) == 40 and name[:20] == real_name[:20]
    for r in ("        ADVANCED_PCI_SETTINGS                       False(0)            ",
              "        SAFE_MODE_THRESHOLD                         10                  "):
        assert r in cap2 and r in lines
    assert "        SAFE_MODE_ENABLE                            True(1)             " in lines
    assert lines[:6] == ["", "Device #1:", "----------", "", "Device type:        ConnectX7           ",
                         "Name:               MCX75310AAS-NEA_Ax  "]


def test_set_matches_real_4_31_layout(sim):
    sim.init("mixed")
    cap = real("mlxconfig_set_cx6_1.txt")
    out = sim.out("mlxconfig", "-d", "17:00.0", "-y", "set", "LINK_TYPE_P1=2").split("\n")
    hdr = "Configurations:                                          Next Boot       New"
    assert hdr in cap and hdr in out
    mine = [ln for ln in out if "LINK_TYPE_P1" in ln][0]
    k = [i for i, ln in enumerate(cap) if ln.startswith("        LINK_TYPE_P1") and "ETH(2)" in ln][0]
    # the capture's source strips trailing spaces; the New value is %-20s padded like every value
    assert mine.rstrip() == cap[k].rstrip()
    assert offsets(mine) == offsets(cap[k]) == [8, 52, 73]
    i = out.index(mine)
    # -y echoes the answer, so the tail equals the interactive capture
    assert out[i + 1:i + 5] == ["", " Apply new Configuration? (y/n) [n] : y", "Applying... Done!",
                                "-I- Please reboot machine to load new configurations."]
    assert cap[k + 2:k + 6] == out[i + 1:i + 5]
    out2 = sim.out("mlxconfig", "-d", "17:00.0", "-y", "set", "SRIOV_EN=1").split("\n")
    j = [k for k, ln in enumerate(cap) if "SRIOV_EN" in ln and "True(1)" in ln][0]
    mine = [ln for ln in out2 if "SRIOV_EN" in ln][0]
    assert mine.rstrip() == cap[j].rstrip()
    for label in ("Device type:", "Name:", "Description:", "Device:"):
        a = [ln for ln in out2 if ln.startswith(label)][0]
        b = [ln for ln in cap if ln.startswith(label)][0]
        assert a[:20] == b[:20]
    # interactive: the answer comes from stdin (not echoed, like the real tool on a pipe)
    out3 = sim.out("mlxconfig", "-d", "17:00.0", "set", "NUM_OF_VFS=8", input="y\n")
    assert " Apply new Configuration? (y/n) [n] : Applying... Done!\n" in out3


# ---------------------------------------------------------------------------- 4.26-4.30


def test_e_query_matches_real_4_26_layout(sim):
    sim.init("cx6dx-roce")
    cap = real("mstconfig_e_query_cx4lx_1.txt")
    out = sim.out("mstconfig", "-d", "3b:00.0", "-e", "q", env={"MLXSIM_MSTFLINT_VERSION": "4.28.0"}).split("\n")
    hdr = [ln for ln in cap if ln.startswith("Configurations:")][0]
    assert hdr in out
    assert offsets(hdr) == [0, 52, 73, 94, 99]
    pairs = same_value_rows(real_rows(out), real_rows(cap))
    assert len(pairs) >= 100
    for mine, theirs in pairs:
        assert mine == theirs
    atomic = [ln for ln in cap if "PCI_ATOMIC_MODE" in ln][0]
    assert atomic in out                                    # long enum: single-space separation
    dev_line = [ln for ln in cap if ln.startswith("Device:")][0]
    assert dev_line.replace("19:00.0", "3b:00.0") in out
    dtype = [ln for ln in out if ln.startswith("Device type:")][0]
    assert dtype == "Device type:        ConnectX6DX         "
    assert len(dtype) == len([ln for ln in cap if ln.startswith("Device type:")][0])
    assert out[1:4] == cap[0:3]                             # "Device #1:", "----------", ""


def test_mft_4_30_0_still_uses_4_26_layout(sim):
    sim.init("cx6dx-roce")
    sim.run("mst", "start", check_rc=0)
    out = sim.out("mlxconfig", "-d", "3b:00.0", "q", "NUM_OF_VFS", env={"MLXSIM_MFT_VERSION": "4.30.0"})
    assert "Configurations:                                     Next Boot\n" in out  # %-20s%41s
    out = sim.out("mlxconfig", "-d", "3b:00.0", "q", "NUM_OF_VFS", env={"MLXSIM_MFT_VERSION": "4.30.1-1210"})
    assert "Configurations:                                          Next Boot\n" in out  # %-20s%46s


# ---------------------------------------------------------------------------- 4.22-4.24


def test_e_query_matches_real_4_22_layout(sim):
    sim.init("dgx-h100")
    cap = real("mlxconfig_e_query_cx5_partial_1.txt")
    out = sim.out("mstconfig", "-d", "29:00.0", "-e", "q", env={"MLXSIM_MSTFLINT_VERSION": "4.23.0"}).split("\n")
    pairs = same_value_rows(real_rows(out), real_rows(cap))
    assert len(pairs) >= 7
    for mine, theirs in pairs:
        # the issue excerpt lost the last column's padding
        assert mine.rstrip() == theirs.rstrip()
        assert offsets(mine) == offsets(theirs)
    fec = [ln for ln in out if "PHY_FEC_OVERRIDE_P1" in ln][0]
    assert offsets(fec) == [9, 53, 71, 89]                  # DEVICE_DEFAULT(0) is 17 chars -> 1 space
    # header printf '%-16s%44s%16s%18s' (FORMAT_FACTS.md)
    assert "%-16s%44s%16s%18s" % ("Configurations:", "Default", "Current", "Next Boot") in out
    assert [ln for ln in out if ln.startswith("Device type:")][0] == "Device type:    ConnectX7       "


# ---------------------------------------------------------------------------- <= 4.21 (Debian mstflint)


def test_e_query_matches_real_4_21_layout(sim):
    sim.init("cx6dx-roce")
    cap = real("mlxconfig_e_query_cx6lx_partial_1.txt")
    out = sim.out("mstconfig", "-d", "3b:00.0", "-e", "q").split("\n")
    assert cap[0] in out
    pairs = same_value_rows(real_rows(out), real_rows(cap))
    assert len(pairs) >= 10
    for mine, theirs in pairs:
        assert mine == theirs                               # incl. the 16-char padding of the last column


# A real mstconfig 4.21-style session on a ConnectX-6 Dx MCX623106AN-CDA_Ax, from a public GitHub
# document (search-index file id 40929553731): header block and one set row, byte for byte.
REAL_421_SET = [
    "",
    "Device #1:",
    "----------",
    "",
    "Device type:    ConnectX6DX     ",
    "Name:           MCX623106AN-CDA_Ax",
    "Description:    ConnectX-6 Dx EN adapter card; 100GbE; Dual-port QSFP56; PCIe 4.0/3.0 x16;",
    "Device:         3d:00.1         ",
    "",
    "Configurations:                              Next Boot       New",
    "         ROCE_CC_LEGACY_DCQCN                False(0)        True(1)         ",
    "",
    " Apply new Configuration? (y/n) [n] : y",
    "Applying... Done!",
    "-I- Please reboot machine to load new configurations.",
    "",
]


def test_set_matches_real_4_21_session(sim):
    sim.init("cx6dx-roce")
    out = sim.out("mstconfig", "-d", "3b:00.1", "-y", "s", "ROCE_CC_LEGACY_DCQCN=1")
    assert out.split("\n") == [ln.replace("3d:00.1", "3b:00.1") for ln in REAL_421_SET]
    q = sim.out("mstconfig", "-d", "3b:00.1", "q")
    assert "         ROCE_CC_LEGACY_DCQCN                True(1)         \n" in q
    assert "         ROCE_CC_PRIO_MASK_P1                255             \n" in q
    assert "         ROCE_CONTROL                        ROCE_ENABLE(2)  \n" in q


def test_unsupported_param_error_after_header(sim):
    # fixtures/real/mlxconfig_error_header_cx4lx_fixture_1.txt: the header is printed, then the error
    sim.init("cx6dx-roce")
    cap = real("mlxconfig_error_header_cx4lx_fixture_1.txt")
    p = sim.run("mstconfig", "-d", "3b:00.0", "q", "INTERNAL_CPU_OFFLOAD_ENGINE")
    assert p.returncode == 3
    lines = p.stdout.split("\n")
    cap = [ln for ln in cap if ln]
    assert lines[-2] == cap[-1]
    assert lines[-3] == "%-16s%38s" % ("Configurations:", "Next Boot")   # <=4.21 header printf


# ---------------------------------------------------------------------------- 4.25 and >= 4.36 (FORMAT_FACTS)


def test_4_25_layout_from_format_facts(sim):
    sim.init("mixed")
    out = sim.out("mstconfig", "-d", "65:00.0", "-e", "q", "SRIOV_EN", "CRYPTO_POLICY",
                  env={"MLXSIM_MSTFLINT_VERSION": "4.25.0"}).split("\n")
    assert "%-16s%44s%16s%18s" % ("Configurations:", "Default", "Current", "Next Boot") in out
    row = [ln for ln in out if "CRYPTO_POLICY" in ln][0]
    # a plain row (the real listings never mark CRYPTO_POLICY read-only): diff(1) + 2 blanks + 5 spaces
    assert row.startswith("        CRYPTO_POLICY")
    assert offsets([ln for ln in out if "SRIOV_EN" in ln][0]) == [8, 52, 68, 84]   # 8 + 44, values %-16s
    assert offsets(row) == [8, 52, 70, 88]                      # DEVICE_DEFAULT(0) > 16 chars: +1 space
    assert "The 'RO' shows parameters which are for read only and cannot be changed" not in out


def test_4_36_layout_from_format_facts(sim):
    sim.init("mixed")
    out = sim.out("mstconfig", "-d", "65:00.0", "-e", "q", "SRIOV_EN",
                  env={"MLXSIM_MSTFLINT_VERSION": "4.36.0"}).split("\n")
    hdr = [ln for ln in out if ln.startswith("Configurations:")][0]
    assert hdr == "%-56s%-33s %-33s %-33s" % ("Configurations:", "Default", "Current", "Next Boot")
    row = [ln for ln in out if "SRIOV_EN" in ln][0]
    assert offsets(row) == [8, 56, 90, 124] and len(row) == 124 + 33


@pytest.mark.parametrize("version,label_w", [("4.21.0", 16), ("4.22.0", 16), ("4.26.0", 20), ("4.31.0", 20)])
def test_header_label_width(sim, version, label_w):
    sim.init("mixed")
    out = sim.out("mstconfig", "-d", "17:00.0", "q", "SRIOV_EN", env={"MLXSIM_MSTFLINT_VERSION": version})
    line = [ln for ln in out.split("\n") if ln.startswith("Device type:")][0]
    assert line == "%-*s%-*s" % (label_w, "Device type:", label_w, "ConnectX6")
    assert len(line) == 2 * label_w                              # trailing spaces kept
