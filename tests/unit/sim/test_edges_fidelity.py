"""The edge branches of issue 16 (section 4) vs real captures: `mst status --v`, the Reset-sync rows of
`mlxfwreset q`, ibstat's Polling / Disabled ports, `ethtool -i` and `mlxup`."""
import re

from sim_helpers import real


# ---------------------------------------------------------------------------- mst status --v


def test_mst_status_unknown_argument_matches_real(sim):
    sim.init("dgx-h100")
    sim.run("mst", "start", check_rc=0)
    cap = real("mst_status_unknown_arg_cx5_1.txt")
    expected = cap[cap.index(" mst status --v") + 1:cap.index('    -E- Unknown argument "--v"') + 1]
    p = sim.run("mst", "status", "--v")
    assert p.stdout.split("\n") == expected + [""]          # the modules block, the error, no device
    assert p.returncode == 1 and p.stderr == ""            # rc: [invented], not public
    for bad in ("-x", "--verbose", "v"):
        p = sim.run("mst", "status", "-v", bad)
        assert p.stdout.endswith('    -E- Unknown argument "%s"\n' % bad) and p.returncode == 1
        assert "PCI devices:" not in p.stdout and "/dev/mst/" not in p.stdout
    # not started: the module lines say so, the error line is the same
    sim.init("dgx-h100")
    out = sim.run("mst", "status", "--v").stdout.split("\n")
    assert out[2:] == ["    MST PCI module is not loaded", "    MST PCI configuration module is not loaded",
                       '    -E- Unknown argument "--v"', ""]


def test_mst_help_matches_real(sim):
    sim.init("dgx-h100")
    cap = real("mst_status_unknown_arg_cx5_1.txt")
    usage = cap[cap.index("root@sunset:~/ietf-123-pcpu/tests-trex# mst --help") + 1:]
    assert sim.out("mst", "--help").split("\n")[:4] == usage[:4]      # the capture ends with blank lines


# ---------------------------------------------------------------------------- mlxfwreset q


def _set_card(sim, pci, **values):
    import json
    data = sim.state_data()
    for c in data["cards"]:
        if any(f["pci"].endswith(pci) for f in c["functions"]):
            c.update(values)
    with open(sim.state, "w") as fh:
        json.dump(data, fh)


def test_mlxfwreset_query_bf3_matches_real(sim):
    sim.init("mixed")
    # the real card was in a state where live-patch (level 0) was possible and only a full chip reset offered
    _set_card(sim, "ca:00.0", reset_levels=[0, 3, 4], reset_types=[0])
    cap = real("mlxfwreset_query_bf3_1.txt")
    out = sim.out("mlxfwreset", "-d", "ca:00.0", "q").split("\n")
    assert [ln.rstrip() for ln in out] == cap + [""]        # the capture lost the trailing spaces
    assert "0: %-62s-%-14s" % ("Tool is the owner", "Not supported") in out   # %-14s: one trailing space
    assert out[-3] == "1: %-62s-%-14s(default)" % ("Driver is the owner", "Supported")


def test_mlxfwreset_query_sync_rows_per_family(sim):
    import importlib
    fwreset = importlib.import_module("mlxsim.tools.fwreset")
    families = importlib.import_module("mlxsim.families")
    sim.init("mixed")
    rows = {}
    for pci in ("17:00.0", "65:00.0", "ca:00.0"):          # ConnectX6, ConnectX7, BlueField3
        out = sim.out("mstfwreset", "-d", pci, "q").split("\n")
        sync = out[out.index("Reset-sync (relevant only for reset-level 3):") + 1:]
        rows[sim.card(pci)["family"]] = [ln for ln in sync if ln]
        for r in rows[sim.card(pci)["family"]]:
            assert re.match(r"^[01]: .{62}-(Supported     |Not supported )(\(default\))?$", r), r
            assert "Not Supported" not in r                 # the sync rows' lower-case s
    assert rows["ConnectX7"] == ["0: %-62s-%-14s(default)" % ("Tool is the owner", "Supported"),
                                 "1: %-62s-%-14s" % ("Driver is the owner", "Supported")]
    assert rows["BlueField3"][1].endswith("-Supported     (default)")
    # every family of the simulator has both sync flags; an unknown one gets the fallback
    assert set(fwreset.FAMILY_SYNC) == set(families.FAMILIES)
    assert all(len(flags) == 2 for flags in fwreset.FAMILY_SYNC.values())
    assert fwreset.family_sync({"family": "ConnectX9"}) is fwreset.FALLBACK_SYNC
    # a card without levels/types in its state takes its family's (families.py)
    _set_card(sim, "17:00.0", family="ConnectX4LX", reset_levels=[], reset_types=[])
    out = sim.out("mstfwreset", "-d", "17:00.0", "q").split("\n")
    assert "3: %-62s-%-14s(default)" % ("Driver restart and PCI reset", "Supported") in out
    assert "1: %-62s-%-14s" % ("Driver is the owner", "Not supported") in out


# ---------------------------------------------------------------------------- ibstat: Down ports


def _port_block(text, ca):
    lines = text.split("\n")
    i = lines.index("CA '%s'" % ca)
    return lines[i:i + 18]


def test_ibstat_down_ports_match_real(sim):
    sim.init("mixed")
    cap = real("ibstat_down_polling_cx3_1.txt")
    real_ib = [ln.strip() for ln in cap[cap.index("        Port 1:") + 1:cap.index("        Port 2:")]]
    real_eth = [ln.strip() for ln in cap[cap.index("        Port 2:") + 1:] if ln.strip()]
    sim.out("mlxsim", "fault", "add", "link_down")
    out = sim.out("ibstat")
    ib_card = sim.card("65:00.0")                              # ConnectX-7, InfiniBand
    ib = _port_block(out, "mlx5_1")
    ports = [ln.strip() for ln in ib[8:17]]
    assert ports[:4] == real_ib[:4] == ["State: Down", "Physical state: Polling", "Rate: 10", "Base lid: 0"]
    assert ports[5] == real_ib[5] == "SM lid: 0"
    assert [p.split(":")[0] for p in ports] == [p.split(":")[0] for p in real_ib]
    assert ports[7] == "Port GUID: 0x%016x" % int(ib_card["base_guid"], 16)   # a down port keeps its GUID
    names = [ln[4:-1] for ln in out.split("\n") if ln.startswith("CA '")]
    eth = next(b for b in ([ln.strip() for ln in _port_block(out, n)[8:17]] for n in names)
               if "Link layer: Ethernet" in b)
    for want in ("State: Down", "Physical state: Disabled", "Rate: 40", "Base lid: 0", "SM lid: 0",
                 "Capability mask: 0x00010000"):
        assert want in eth and want in real_eth
    assert re.match(r"^Port GUID: 0x[0-9a-f]{6}fffe[0-9a-f]{6}$", eth[7])      # MAC-derived, not zero
    assert sim.out("ibdev2netdev").count("(Down)") == sim.out("ibdev2netdev").count("==>")


def test_ibstat_disabled_ib_port_keeps_lid(sim):
    sim.init("dgx-h100")
    sim.out("mlxsim", "fault", "add", "link_down", "--device", "mlx5_0", "phys=Disabled")
    cap = real("ibstat_cx3_debug_1.txt")
    assert "\t\tPhysical state: Disabled" in cap and "\t\tBase lid: 38" in cap
    port = _port_block(sim.out("ibstat"), "mlx5_0")[8:17]
    assert port[:3] == ["\t\tState: Down", "\t\tPhysical state: Disabled", "\t\tRate: 10"]
    assert port[3] == "\t\tBase lid: %d" % sim.card("18:00.0")["ports"][0]["lid"] and port[5] == "\t\tSM lid: 1"
    # the same port with the plain fault: Polling, no LID
    sim.out("mlxsim", "fault", "clear")
    sim.out("mlxsim", "fault", "add", "link_down", "--device", "mlx5_0")
    port = _port_block(sim.out("ibstat", "mlx5_0"), "mlx5_0")[8:17]
    assert port[1:4] == ["\t\tPhysical state: Polling", "\t\tRate: 10", "\t\tBase lid: 0"]


def test_ibstat_parser_reads_simulated_down_ports(sim):
    from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers import parse
    sim.init("mixed")
    sim.out("mlxsim", "fault", "add", "link_down")
    cas = parse("ibstat", sim.out("ibstat"))
    states = {(p["state"], p["physical_state"], p["link_layer"]) for ca in cas for p in ca["ports"]}
    assert ("Down", "Polling", "InfiniBand") in states and ("Down", "Disabled", "Ethernet") in states
    assert all(p["port_guid"] != "0x0000000000000000" for ca in cas for p in ca["ports"])


# ---------------------------------------------------------------------------- ethtool -i


def _ethtool_blocks(name):
    cap = real(name)
    blocks, cur = [], None
    for ln in cap:
        if ln.startswith("driver: "):
            cur = []
            blocks.append(cur)
        if cur is not None and re.match(r"^[a-z-]+:( |$)", ln):
            cur.append(ln)
        elif cur is not None and ln:
            cur = None
    return blocks


def _ethtool_i_vs(sim, capture, netdev, pci):
    out = sim.out("ethtool", "-i", netdev).split("\n")
    card = sim.card(pci)
    for blk in _ethtool_blocks(capture):
        assert [ln.split(":")[0] for ln in out[:len(blk)]] == [ln.split(":")[0] for ln in blk]   # same keys, order
        assert out[0] == blk[0] == "driver: mlx5_core"
        assert out[3] == blk[3] == "expansion-rom-version:"                        # empty, no trailing space
        if len(blk) == 10:
            assert out[5:10] == blk[5:10] or blk[6] == "supports-test: no"          # the old-kernel capture
        fw = re.match(r"^firmware-version: (\S+)(?: \((\S+)\))?$", blk[2])
        assert fw
    assert out[2] == "firmware-version: %s (%s)" % (card["fw"]["running"], card["psid"])
    assert out[4] == "bus-info: %s" % card["functions"][[f["pci"] for f in card["functions"]].index(
        [f["pci"] for f in card["functions"] if f["pci"].endswith(pci)][0])]["pci"]
    assert out[-1] == "" and len(out) == 11
    return out


def test_ethtool_i_matches_real_cx4(sim):
    sim.init("cx6dx-roce", "node01", "--ofed", "")              # in-box driver: version = kernel release
    out = _ethtool_i_vs(sim, "ethtool_i_cx4_cx4lx_1.txt", "enp59s0f0np0", "3b:00.0")
    assert out[1] == "version: 6.1.0-26-amd64"
    assert out[5:10] == real("ethtool_i_cx4_cx4lx_1.txt")[6:11]


def test_ethtool_i_matches_real_cx4lx_and_cx6lx(sim):
    sim.init("cx6dx-roce")
    out = _ethtool_i_vs(sim, "ethtool_i_cx4lx_1.txt", "enp216s0f1np1", "d8:00.1")
    assert out[1] == "version: 24.10-2.1.8"                   # MLNX_OFED_LINUX-24.10-2.1.8.0's driver [invented]
    frag = real("ethtool_i_cx6lx_fragment_1.txt")
    assert [ln.split(":")[0] for ln in out[:3]] == [ln.split(":")[0] for ln in frag[0:3]]
    assert re.match(r"^firmware-version: \d+\.\d+\.\d+ \(MT_\d{10}\)$", frag[2]) and re.match(
        r"^firmware-version: \d+\.\d+\.\d+ \(MT_\d{10}\)$", out[2])
    sim.out("mlxsim", "fault", "add", "oem_psid", "--device", "d8:00.0", "psid=DEL0000000015")
    assert "firmware-version: 22.41.1000 (DEL0000000015)" in sim.out("ethtool", "-i", "enp216s0f0np0")


def test_ethtool_i_every_family_and_parser(sim):
    from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers import parse
    sim.init("mixed")
    for card_fn in sim.state_data()["cards"]:
        for f in card_fn["functions"]:
            if not f.get("rdma"):
                continue
            line = [ln for ln in sim.out("ibdev2netdev").split("\n") if ln.startswith(f["rdma"] + " ")][0]
            netdev = line.split()[4]
            info = parse("ethtool_i", sim.out("ethtool", "-i", netdev))
            assert info["driver"] == ("mlx5_core[ib_ipoib]" if netdev.startswith("ib") else "mlx5_core")
            assert info["bus_info"] == f["pci"]
            assert info["firmware_version"] == card_fn["fw"]["running"] and info["psid"] == card_fn["psid"]
            assert info["expansion_rom_version"] == "" and info["supports_priv_flags"] == "yes"


# ---------------------------------------------------------------------------- mlxup


def test_mlxup_help_matches_real(sim):
    sim.init("dgx-h100")
    assert sim.out("mlxup", "--help").split("\n")[:-1] == real("mlxup_help_1.txt")[:-1]
    assert sim.out("mlxup", "-h") == sim.out("mlxup", "--help")


def test_mlxup_query_matches_real(sim):
    sim.init("dgx-h100")
    sim.run("mst", "start", check_rc=0)
    cap = real("mlxup_query_cx7_1.txt")
    out = sim.out("mlxup", "--query", "-d", "/dev/mst/mt4129_pciconf1").split("\n")
    block = cap[:cap.index("  Status:           Update required") + 1]
    for i in range(10):                                    # same card model: identity lines byte-equal
        assert out[i] == block[i], i
    assert out[11] == block[11] == "  Versions:         Current        Available     "
    assert out[12] == "     FW             28.42.1000     28.43.1014    "      # the image mlxup carries
    assert block[12] == "     FW             28.40.1000     28.43.1014    "
    assert out[13:15] == ["     PXE            3.7.0500       N/A           ",
                          "     UEFI           14.35.0015     N/A           "]
    assert out[15:18] == block[15:17] + [""]
    # no -d: every card, the mst names; exit 0 although updates are required (as the real query)
    p = sim.run("mlxup", "--query")
    assert p.returncode == 0 and p.stdout.count("  Status:           Update required") == 10


def test_mlxup_query_cx6lx_roms_and_xml(sim):
    import importlib
    fwm = importlib.import_module("mlxsim.tools.fwmanager")
    assert fwm.MLXUP_BUNDLE["ConnectX6LX"] == ("26.43.1014", {"PXE": "3.7.500", "UEFI": "14.36.16"})
    cap = real("mlxup_query_cx6lx_1.txt")
    assert "     FW             26.33.1048     26.43.1014" in cap and "     UEFI           14.26.0017     14.36.0016" in cap
    sim.init("cx6dx-roce")
    xml = sim.out("mlxup", "--query", "--query-format", "XML", "-d", "0000:3b:00.0").split("\n")
    assert xml[0] == "<Devices>" and '        <FW current="22.41.1000" available="22.43.1014"/>' in xml
    assert "      <Status>Update required</Status>" in xml
    # an OEM PSID has no image in the bundle
    sim.out("mlxsim", "fault", "add", "oem_psid", "--device", "3b:00.0")
    out = sim.out("mlxup", "--query", "-d", "3b:00.0")
    assert "  Status:           No matching image found" in out


def test_mlxup_update_burns_like_mlxfwmanager(sim):
    sim.init("dgx-h100")
    sim.run("mst", "start", check_rc=0)
    cap = real("mlxup_update_cx7_1.txt")
    p = sim.run("mlxup", "-d", "/dev/mst/mt4129_pciconf1", "-u", input="y\n")
    assert p.returncode == 0, p.stdout + p.stderr
    out = p.stdout.split("\n")
    i, k = out.index("---------"), cap.index("---------")
    assert out[i:i + 3] == ["---------", "Found 1 device(s) requiring firmware update...", ""]
    assert cap[k + 1] == "Found 2 device(s) requiring firmware update..."
    assert out[i + 3] == "Perform FW update? [y/N]: Device #1: Updating FW ...     "
    assert out[-3:] == ["", "Restart needed for updates to take effect.", ""]
    card = sim.card("29:00.0")
    assert card["fw"]["burned"] == "28.43.1014" and card["fw"]["running"] == "28.42.1000"
    # -i IMAGE -y: the given image, no prompt text; the state changes as with mlxfwmanager
    img = sim.dir / "neat.bin"
    sim.out("mlxsim", "mkimage", "--psid", "MT_0000000838", "--version", "28.43.2566", "--device-id", "4129",
            "-o", img)
    p = sim.run("mlxup", "-u", "-i", img, "-y", "-d", "18:00.0")
    assert p.returncode == 0 and "Perform FW update" not in p.stdout
    assert sim.card("18:00.0")["fw"]["burned"] == "28.43.2566"


def test_mlxup_online_is_refused_without_the_server(sim):
    sim.init("cx6dx-roce")
    for args in (["--online", "-u"], ["--online", "--query"], ["--online-query-psid", "MT_0000000359"],
                 ["--download-default"]):
        p = sim.run("mlxup", *args)
        assert p.returncode == 24, args                      # the tool's online-connection-error code
        assert p.stderr == "-E- Failed to connect to the Mellanox server: no network in the simulator\n"
        assert "Device #1" not in p.stdout
    assert sim.card("3b:00.0")["fw"]["burned"] == "22.41.1000"
    p = sim.run("mlxfwmanager", "--online")
    assert p.returncode == 3 and "-E- Unknown option: --online" in p.stderr


SERVER = {"MLXSIM_NVIDIA_SERVER": "reachable"}


def test_mlxup_online_matches_real(sim):
    """mlxup_online_cx6lx_1.txt: `mlxup --online` on a ConnectX-6 Lx, answered N - the device block with the server's
    versions, the server's release-notes list, the summary and the prompt; only the card's identity differs."""
    sim.init("legacy-eth")
    sim.run("mst", "start", check_rc=0)
    cap = real("mlxup_online_cx6lx_1.txt")
    p = sim.run("mlxup", "--online", "-d", "/dev/mst/mt4127_pciconf0", input="N\n", env=SERVER)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    out = [ln.rstrip() for ln in p.stdout.split("\n")]          # the capture's trailing spaces were stripped
    card = sim.card("41:00.0")
    ident = {"e8ebd3030070cf12": card["base_guid"], "e8ebd370cf12": card["base_mac"]}
    want = [ln.replace(ln.split()[-1], ident[ln.split()[-1]]) if ln.split() and ln.split()[-1] in ident else ln
            for ln in cap]
    k = want.index("Perform FW update? [y/N]: N")
    assert out[:k] == want[:k]
    assert out[k] == "Perform FW update? [y/N]: No updates performed"     # the answer is not echoed; the line after it
    assert card["fw"]["burned"] == "26.33.1048"                         # is the mlxfwmanager code's
    # -y burns the server's image; a second run finds nothing to do; --query prints no release notes
    p = sim.run("mlxup", "--online", "-y", "-d", "41:00.0", env=SERVER)
    assert p.returncode == 0 and "Restart needed for updates to take effect." in p.stdout
    assert sim.card("41:00.0")["fw"]["burned"] == "26.43.1014"
    p = sim.run("mlxup", "--online", "--query", "-d", "41:00.0", env=SERVER)
    assert "Release notes" not in p.stdout and "  Status:           Up to date" in p.stdout
    # the options the simulator does not model are refused by name, nothing changes
    p = sim.run("mlxup", "--online-query-psid", "MT_0000000575", env=SERVER)
    assert p.returncode == 3 and "--online-query-psid" in p.stderr and "Device #1" not in p.stdout


def test_mlxup_without_an_action_updates_as_the_real_one(sim):
    """mlxup_update_cx7_1.txt was `mlxup` alone: mlxup's default action is the update, with its prompt -
    mlxfwmanager's is the query (`Please use -u flag`)."""
    sim.init("dgx-h100")
    sim.run("mst", "start", check_rc=0)
    assert "Command: mlxup" in real("mlxup_update_cx7_1.txt")[0]
    p = sim.run("mlxup", "-d", "/dev/mst/mt4129_pciconf1", input="n\n")
    assert "Perform FW update? [y/N]: " in p.stdout and "Please use -u flag" not in p.stdout
    assert sim.card("29:00.0")["fw"]["burned"] == "28.42.1000"
    img = sim.dir / "fw.bin"
    sim.out("mlxsim", "mkimage", "--psid", sim.card("29:00.0")["psid"], "--version", "28.43.1014", "--device-id",
            "4129", "-o", img)
    p = sim.run("mlxfwmanager", "-d", "/dev/mst/mt4129_pciconf1", "-i", img, input="n\n")
    assert "Please use -u flag to perform the update." in p.stdout and "Perform FW update" not in p.stdout
