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
