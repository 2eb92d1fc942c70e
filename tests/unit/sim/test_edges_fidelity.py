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
