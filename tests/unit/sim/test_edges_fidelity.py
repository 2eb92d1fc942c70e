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
    # every family named in the table has levels, types and both sync flags; an unknown one gets the fallback
    for fam, entry in fwreset.FAMILY_RESET.items():
        assert set(entry) == {"levels", "types", "sync"} and len(entry["sync"]) == 2, fam
    assert {"ConnectX4", "ConnectX4LX", "ConnectX5", "ConnectX6LX", "BlueField2", "ConnectX8"} <= set(
        fwreset.FAMILY_RESET)
    assert fwreset.family_reset({"family": "ConnectX9"}) is fwreset.FALLBACK
    # a family without levels/types in its state takes the table's
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
