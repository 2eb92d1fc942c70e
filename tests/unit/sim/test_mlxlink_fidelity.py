"""mlxlink and mlxprivhost vs the real captures (issue 16: a fidelity test for every real capture):
mlxlink_bf3_1.txt, mlxlink_cx7_ndr_1.txt, the mlxlink lines of mixed_mlxconfig_mlxlink_flint_grep_cx7_1.txt and
mlxprivhost_query_bf2_1.txt. The collection parses neither tool (plugins/module_utils has no mlxlink/mlxprivhost
parser), so there is no parser run here."""
import re

from sim_helpers import real

ROW = re.compile(r"^(\S.*?) +: (.*)$")


def _layout(lines):
    """Per line: ('title', text) / ('rule', length) / ('row', label, column of ':', value) / ('blank',)."""
    out = []
    for ln in lines:
        m = ROW.match(ln)
        if not ln:
            out.append(("blank",))
        elif set(ln) == {"-"}:
            out.append(("rule", len(ln)))
        elif m:
            out.append(("row", m.group(1), ln.index(": ")))
        else:
            out.append(("title", ln))
    return out


def _sections(lines):
    """{title: [(label, value), ...]} of an mlxlink output."""
    secs, cur = {}, None
    for i, ln in enumerate(lines):
        if ln and i + 1 < len(lines) and lines[i + 1] == "-" * len(ln):
            cur = secs.setdefault(ln, [])
        elif cur is not None and ROW.match(ln):
            m = ROW.match(ln)
            cur.append((m.group(1), m.group(2)))
    return secs


# ---------------------------------------------------------------------------- mlxlink


def test_mlxlink_bf3_every_section_matches_real(sim):
    sim.init("mixed")
    cap = real("mlxlink_bf3_1.txt")
    assert cap[0].endswith("mlxlink -d /dev/mst/mt41692_pciconf0 -p 1 -m -c")
    sim.run("mst", "start", check_rc=0)
    p = sim.run("mlxlink", "-d", "/dev/mst/mt41692_pciconf0", "-p", "1", "-m", "-c")
    assert p.returncode == 0 and p.stderr == ""
    out = p.stdout.split("\n")
    expected = cap[1:]
    while expected and expected[-1] == "":
        expected.pop()
    assert out[-1] == "" and out[-2] != ""                 # one newline after the last row
    out = out[:-1]
    # the same lines in the same places: titles, underlines, labels and the ':' column (35)
    assert [x[:2] for x in _layout(out)] == [x[:2] for x in _layout(expected)]
    assert [x for x in _layout(out) if x[0] == "row"] == [x for x in _layout(expected) if x[0] == "row"]
    assert all(ln.index(": ") == 35 for ln in out if ROW.match(ln))
    assert not any(ln != ln.rstrip() for ln in out)        # no trailing blank (as the capture and mstflint)
    assert "\x1b" not in p.stdout                          # colour-free
    sim_s, cap_s = _sections(out), _sections(expected)
    assert list(sim_s) == list(cap_s) == ["Operational Info", "Supported Info", "Troubleshooting Info",
                                          "Tool Information", "Module Info", "Physical Counters and BER Info"]
    # values that are the card's / the tool's: same form as the capture
    sv, cv = dict(sim_s["Operational Info"]), dict(cap_s["Operational Info"])
    for key in ("State", "Physical state", "Width", "Loopback Mode", "Auto Negotiation"):
        assert sv[key] == cv[key], key
    assert re.match(r"^\d+G$", sv["Speed"]) and sv["Speed"] == "200G"        # the B3220's 200GbE port
    assert dict(sim_s["Troubleshooting Info"]) == dict(cap_s["Troubleshooting Info"])
    tv, ct = dict(sim_s["Tool Information"]), dict(cap_s["Tool Information"])
    assert tv["amBER Version"] == ct["amBER Version"] == "3.6"               # MFT 4.30.1
    assert tv["MFT Version"] == "mft 4.30.1-1210" and ct["MFT Version"] == "mft 4.30.1-8"
    assert re.match(r"^32\.\d+\.\d+$", tv["Firmware Version"])
    for key, value in cap_s["Supported Info"]:
        assert re.match(r"^0x[0-9a-f]{8} \([0-9A-Z_,]+\)$", dict(sim_s["Supported Info"])[key]), key
        assert re.match(r"^0x[0-9a-f]{8} \([0-9A-Z_,]+\)$", value)
    mv = dict(sim_s["Module Info"])
    for key, value in cap_s["Module Info"]:
        if value == "N/A":
            assert mv[key] == "N/A", key
    assert re.match(r"^\d\d_\d\d_\d\d$", mv["Manufacturing Date"])
    kv = dict(sim_s["Physical Counters and BER Info"])
    assert re.match(r"^\d+\.\d$", kv["Time Since Last Clear [Min]"])
    assert kv["Effective Physical BER"] == kv["Raw Physical BER"] == "15E-255"
    assert kv["Raw Physical Errors Per Lane"] == "0,0,0,0"


def test_mlxlink_bf3_100g_port_as_the_capture(sim):
    """The capture's port ran 100G over 25G lanes: the same state gives the capture's FEC and masks' form."""
    import json
    sim.init("mixed")
    data = sim.state_data()
    for c in data["cards"]:
        if c["family"] == "BlueField3":
            for p in c["ports"]:
                p["rate"] = 100
    with open(sim.state, "w") as fh:
        json.dump(data, fh)
    out = _sections(sim.out("mlxlink", "-d", "ca:00.0").split("\n"))
    cap = _sections(real("mlxlink_bf3_1.txt"))
    assert dict(out["Operational Info"]) == dict(cap["Operational Info"])
    # the capture's cable is a QSFP28 100G DAC: its capability is the 25G-lane list
    assert dict(cap["Supported Info"])["Supported Cable Speed (Ext.)"] == \
        "0x000002f2 (100G_4X,50G_2X,40G,25G,10G,1G)"


def test_mlxlink_cx7_ib_ndr_matches_real(sim):
    sim.init("dgx-h100")
    cap = real("mlxlink_cx7_ndr_1.txt")
    assert "mlxlink -d /dev/mst/mt4129_pciconf0 --show_mo" in cap[0]
    sim.run("mst", "start", check_rc=0)
    out = sim.out("mlxlink", "-d", "/dev/mst/mt4129_pciconf0", "--show_module").split("\n")
    # the capture stops at the elided Troubleshooting Info ('...'); its values carry a trailing blank, which
    # mlxlink does not print (mstflint's MlxlinkRecord: key, padding, ': ', value, newline; the BF3 capture has
    # none): compared without it
    expected = [ln.rstrip() for ln in cap[1:cap.index("...")]]
    assert all(ln.endswith(" ") for ln in cap[1:cap.index("...")] if ROW.match(ln))
    assert out[:len(expected)] == expected
    assert out[len(expected) - 1] == "--------------------"


def test_mlxlink_cx7_ethernet_matches_real_grep(sim):
    sim.init("dgx-h100")
    cap = real("mixed_mlxconfig_mlxlink_flint_grep_cx7_1.txt")
    start = cap.index("Link Status:") + 1
    block = cap[start:cap.index("", start)]
    # the grep kept these rows of the dual-port MCX755106AS-HEAT (200GbE, Ethernet)
    out = sim.out("mlxlink", "-d", "29:00.0").split("\n")
    rows = dict((m.group(1), m.group(2)) for m in map(ROW.match, out) if m)
    assert block[0] == "Operational Info" and "Operational Info" in out
    for ln in block[1:]:
        label, value = ROW.match(ln).groups()
        assert ln.index(": ") == 35 and label in rows, label
        if label != "Supported Cable Speed (Ext.)":       # the capture's cable is a 200G_4X one [modelled: own]
            assert rows[label] == value, label
    assert rows["Supported Cable Speed (Ext.)"].startswith("0x")


def test_mlxlink_ethernet_ib_speeds_and_link_down(sim):
    sim.init("dgx-h100-eth")
    rows = dict(ROW.match(ln).groups() for ln in sim.out("mlxlink", "-d", "18:00.0").split("\n") if ROW.match(ln))
    assert rows["Speed"] == "400G" and rows["Width"] == "4x"
    assert "Enabled Link Speed (Ext.)" in rows and "400G_4X" in rows["Enabled Link Speed (Ext.)"]
    sim.init("mixed")
    rows = dict(ROW.match(ln).groups() for ln in sim.out("mlxlink", "-d", "17:00.0").split("\n") if ROW.match(ln))
    assert rows["Speed"] == "IB-HDR" and rows["Enabled Link Speed"] == "0x00000071 (HDR,EDR,FDR,SDR)"
    # link_down: IB Polling (as ibstat), Ethernet Disable; Speed/Width/FEC N/A
    sim.run("mlxsim", "fault", "add", "link_down", "--device", "65:00.0", check_rc=0)
    rows = dict(ROW.match(ln).groups() for ln in sim.out("mlxlink", "-d", "65:00.0").split("\n") if ROW.match(ln))
    assert (rows["State"], rows["Speed"], rows["Width"], rows["FEC"]) == ("Polling", "N/A", "N/A", "N/A")
    assert "Physical state: Polling" in sim.out("ibstat", "mlx5_1")
    sim.run("mlxsim", "fault", "add", "link_down", "--device", "ca:00.0", check_rc=0)
    out = sim.out("mlxlink", "-d", "ca:00.0")
    assert "State                              : Disable\n" in out and "Loopback Mode" not in out


def test_mlxlink_unknown_device(sim):
    sim.init("dgx-h100")
    p = sim.run("mlxlink", "-d", "X")
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr == '-E- Failed to open device: "X", No such file or directory\n'
    # /dev/mst names need `mst start`
    p = sim.run("mlxlink", "-d", "/dev/mst/mt4129_pciconf0")
    assert p.returncode == 1 and "Failed to open device" in p.stderr


def test_mlxlink_amber_per_release_and_family(sim):
    sim.init("refresh-cx5-storage")
    out = sim.out("mlxlink", "-d", "29:00.0", env={"MLXSIM_MFT_VERSION": "4.28.0-92"})
    assert "amBER Version" not in out and "MFT Version                        : mft 4.28.0-92" in out   # CX5
    out = sim.out("mlxlink", "-d", "18:00.0", env={"MLXSIM_MFT_VERSION": "4.28.0-92"})
    assert "amBER Version                      : 2.8\n" in out


# ---------------------------------------------------------------------------- mlxprivhost


def test_mlxprivhost_query_bf2_matches_real(sim):
    sim.init("legacy-eth")
    cap = real("mlxprivhost_query_bf2_1.txt")
    # the capture is the old layout (title "Current device configurations:", MFT up to 4.16)
    p = sim.run("mlxprivhost", "-d", "e2:00.0", "q", env={"MLXSIM_MFT_VERSION": "4.16.0"})
    assert p.returncode == 0 and p.stderr == ""
    assert p.stdout.split("\n") == cap                   # byte for byte, the blank line after the last row too
    assert "-" * 23 in p.stdout.split("\n")                # "\nPort functions status:" underline
    # from 4.17 the title is "Host configurations", the rest unchanged
    new = sim.out("mlxprivhost", "-d", "e2:00.0", "query").split("\n")
    assert new[:2] == ["Host configurations", "-" * 19] and new[2:] == p.stdout.split("\n")[2:]


def test_mlxprivhost_restrict_privilege_and_errors(sim):
    sim.init("legacy-eth")
    # from the x86 host (MFT >= 4.20): not permitted
    p = sim.run("mlxprivhost", "-d", "e2:00.0", "r")
    assert p.returncode == 1 and p.stdout == "-E- Operation is not permitted (refer to the DPU user manual)\n"
    arm = {"MLXSIM_DPU_ARM": "1"}
    p = sim.run("mlxprivhost", "-d", "e2:00.0", "r", "--disable_rshim", "--disable_tracer", env=arm, check_rc=0)
    assert p.stdout == "-I- preparing configuration file...Done!\n-I- configuring device...Done!\n"
    out = sim.out("mlxprivhost", "-d", "e2:00.0", "q")
    assert "level                         : RESTRICTED\n" in out and "disable_rshim                 : TRUE\n" in out
    assert "disable_port_owner            : FALSE\n" in out
    # the port functions wait: tracer for a FW reset, rshim for a power cycle; the level is in effect
    assert sim.card("e2:00.0")["privhost_active"]["level"] == "RESTRICTED"
    assert sim.card("e2:00.0")["privhost_active"]["disable_tracer"] is False
    sim.run("mlxfwreset", "-d", "e2:00.0", "-y", "reset", check_rc=0)
    act = sim.card("e2:00.0")["privhost_active"]
    assert act["disable_tracer"] is True and act["disable_rshim"] is False
    sim.run("mlxsim", "reboot", check_rc=0)
    assert sim.card("e2:00.0")["privhost_active"]["disable_rshim"] is True
    sim.run("mlxprivhost", "-d", "e2:00.0", "p", env=arm, check_rc=0)
    assert "PRIVILEGED" in sim.out("mlxprivhost", "-d", "e2:00.0", "q")
    # not a BlueField / unknown: stdout, rc 1
    p = sim.run("mlxprivhost", "-d", "06:00.0", "q")
    assert p.returncode == 1
    assert p.stdout == "-E- Device '06:00.0' is not supported, only BlueField devices are supported!\n"
    p = sim.run("mlxprivhost", "-d", "99:00.0", "q")
    assert p.returncode == 1 and p.stdout == "-E- Unknown device '99:00.0'!\n"
    p = sim.run("mlxprivhost", "-d", "e2:00.0", "p", "--disable_rshim")
    assert p.returncode == 2 and "disable flags are not allowed in privilege mode" in p.stderr
