"""`mst status -v` (issue 39 item 2) vs real captures: widths as mdevices_info computes them, the MST column when the
modules are not loaded, NUMA padding, SR-IOV VFs as rows, and the ConnectX-5 capture whole."""
import json

from sim_helpers import real


def _edit(sim, change):
    data = sim.state_data()
    change(data)
    with open(sim.state, "w") as fh:
        json.dump(data, fh)


def _sriov(card, numvfs, total=8):
    card["nv"]["SRIOV_EN"] = {"default": 0, "current": 1, "next": 1}
    card["nv"]["NUM_OF_VFS"] = {"default": 0, "current": total, "next": total}
    card["functions"][0]["numvfs"] = numvfs


def _two_cx7(data):
    """The capture's host: two single-port ConnectX-7 at 0d:00.0 (mlx5_0) and 37:00.0 (mlx5_1), NUMA 0, the second
    with SR-IOV on and 7 VFs created (mlx5_2 ... mlx5_8)."""
    for c in data["cards"]:
        c["missing"] = True
    for c, pci, rdma in ((data["cards"][0], "0000:0d:00.0", "mlx5_0"), (data["cards"][1], "0000:37:00.0", "mlx5_1")):
        c["missing"] = False
        c["numa"] = 0
        c["functions"][0].update(pci=pci, rdma=rdma)
    _sriov(data["cards"][1], 7)


def test_mst_status_v_vfs_without_modules_as_the_capture(sim):
    """mst_status_v_vfs_cx7_1.txt: modules not loaded - MST is "NA" in a 9-wide column, the VFs are rows of their
    own with DEVICE_TYPE "NA", NUMA is %-6s, NET %-40s (MFT 4.30)."""
    cap = real("mst_status_v_vfs_cx7_1.txt")
    cap = cap[cap.index("sh-5.1# mst status -v") + 1:]
    sim.init("dgx-h100")
    _edit(sim, _two_cx7)
    out = sim.out("mst", "status", "-v").split("\n")
    assert out[:7] == cap[:7]                                        # modules block, title, header byte-equal
    assert out[6] == "%-24s%-9s%-10s%-16s%-40s%-6s" % ("DEVICE_TYPE", "MST", "PCI", "RDMA", "NET", "NUMA")
    rows = [ln for ln in out[7:] if ln]
    want = [ln for ln in cap[7:] if ln]
    assert all(out[out.index(r) + 1] == "" for r in rows)           # a blank line after every row
    # the NET cells differ (the capture ran in a pod: it sees only its own net1); the rest byte-equal, in any order
    # (the real order is the sysfs directory's); the capture's last row lost its padding
    cells = sorted((r[:59], r[99:]) for r in rows)
    assert cells == sorted((w[:59], (w[99:] + " " * 6)[:6]) for w in want)
    assert len(rows) == 9 and sum(r.startswith("NA ") for r in rows) == 7
    assert "NA                      NA       37:00.4   mlx5_5          " in [r[:59] for r in rows]
    for r in rows:
        assert r[59:63] == "net-" and len(r) == 105 and r.endswith("0     ")
    # the same host with the modules loaded: /dev/mst nodes for the PFs, MST 30 wide, no VF row [invented]
    sim.run("mst", "start", check_rc=0)
    out = sim.out("mst", "status", "-v").split("\n")
    rows = [ln for ln in out[7:] if ln]
    assert out[6] == "%-24s%-30s%-10s%-16s%-40s%-6s" % ("DEVICE_TYPE", "MST", "PCI", "RDMA", "NET", "NUMA")
    assert [r.split()[:4] for r in rows] == [["ConnectX7(rev:0)", "/dev/mst/mt4129_pciconf0", "0d:00.0", "mlx5_0"],
                                             ["ConnectX7(rev:0)", "/dev/mst/mt4129_pciconf1", "37:00.0", "mlx5_1"]]


def test_vfs_need_sriov_on_and_numvfs(sim):
    """A VF row only when the firmware offers SR-IOV (current SRIOV_EN, NUM_OF_VFS) and sriov_numvfs is set; never
    more than NUM_OF_VFS."""
    sim.init("dgx-h100")

    def rows():
        return [ln for ln in sim.out("mst", "status", "-v").split("\n")[7:] if ln.startswith("NA ")]

    def numvfs_only(data):
        data["cards"][0]["functions"][0]["numvfs"] = 4          # SRIOV_EN / NUM_OF_VFS still 0
    _edit(sim, numvfs_only)
    assert rows() == []

    def nv_only(data):
        _sriov(data["cards"][0], 0)
    _edit(sim, nv_only)
    assert rows() == []

    def too_many(data):
        _sriov(data["cards"][0], 12, total=2)
    _edit(sim, too_many)
    got = rows()
    assert [r.split()[2:4] for r in got] == [["18:00.1", "mlx5_12"], ["18:00.2", "mlx5_13"]]
    assert [r[59:99].rstrip() for r in got] == ["net-ibp24s0v0", "net-ibp24s0v1"]


def test_mst_status_v_cx5_whole_capture(sim):
    """mst_status_unknown_arg_cx5_1.txt, both halves: the typo `mst status --v` and then `mst status -v` of a dual-port
    ConnectX-5 (modules loaded, NET %-40s; the capture lost the trailing spaces of NUMA)."""
    cap = real("mst_status_unknown_arg_cx5_1.txt")
    sim.init("hpc-cx5ex")

    def one_card(data):
        data["cards"][1]["missing"] = True
        c = data["cards"][0]
        for f, pci, name in zip(c["functions"], ("0000:01:00.0", "0000:01:00.1"), ("redeast", "redwest")):
            f.update(pci=pci, netdev=name)
    _edit(sim, one_card)
    sim.run("mst", "start", check_rc=0)
    typo = cap[cap.index(" mst status --v") + 1:cap.index("root@sunset:~/ietf-123-pcpu/tests-trex# mst status -v")]
    p = sim.run("mst", "status", "--v")
    assert p.stdout.split("\n") == typo + [""]
    v = cap[cap.index("root@sunset:~/ietf-123-pcpu/tests-trex# mst status -v") + 1:
            cap.index("root@sunset:~/ietf-123-pcpu/tests-trex# mst --help")]
    out = sim.out("mst", "status", "-v").split("\n")
    assert [ln.rstrip() for ln in out] == v[:-1] + [""]               # the capture ends with one more blank line
    assert out[6] == v[6] + "  " and out[7] == v[7] + " " * 5           # NUMA %-6s
    assert out[7].index("0", 80) - out[7].index("net-redwest") == 40


def test_mst_status_v_layout_by_version(sim):
    """The NET width and the columns after NUMA by MFT version (mst.verbose_layout, from mstflint's mdevices_info.c):
    no capture of the 4.33+ tables is public."""
    sim.init("mixed")
    sim.run("mst", "start", check_rc=0)

    def table(version):
        out = sim.out("mst", "status", "-v", env={"MLXSIM_MFT_VERSION": version}).split("\n")
        return out[6], [ln for ln in out[7:] if ln]

    head, rows = table("4.23.0")
    assert head.index("NUMA") - head.index("NET") == 26 and head.endswith("NUMA  ")
    head, rows = table("4.24.0")
    assert head.index("NUMA") - head.index("NET") == 40 and head.endswith("NUMA  ")
    head, rows = table("4.33.0")
    assert head.endswith("NUMA  VFIO            ")
    assert all(r.endswith("vfio-" + r.split()[2]) for r in rows)
    head, rows = table("4.34.0")
    assert head.endswith("NUMA  VFIO            ") and all(r.endswith("  ") and r[-7:-1].strip() for r in rows)
    head, rows = table("4.35.0")
    longest = max(len(r.split()[4]) for r in rows)              # net-ibp101s0 ... net-enp202s0f1np1
    assert head.index("NUMA") - head.index("NET") == longest + 2
    assert head.endswith("NUMA  " + "%-18s%-25s%-12s" % ("VFIO", "FWCTL", "STATE"))
    assert all(len(r) == len(head) for r in rows)


def test_mst_status_v_unbound_functions_as_the_capture(sim):
    """mst_status_v_bf2_2.txt: a BlueField-2 whose functions have no mlx5 driver bound (no RDMA device, no netdev),
    modules loaded, NUMA -1: the header as always, every row without an RDMA cell (16 characters short: mstflint
    v4.31's print_pci_info prints it only for an RDMA device or a netdev), NET one padded space, NUMA %-6s."""
    cap = real("mst_status_v_bf2_2.txt")
    sim.init("legacy-eth")

    def unbound(data):
        for c in data["cards"]:
            c["missing"] = c["family"] != "BlueField2"
            if c["family"] == "BlueField2":
                c["numa"] = -1
                for f, pci in zip(c["functions"], ("0000:10:00.0", "0000:10:00.1")):
                    f.update(pci=pci, rdma=None)
    _edit(sim, unbound)
    sim.run("mst", "start", check_rc=0)
    out = sim.out("mst", "status", "-v").split("\n")
    assert out[4:7] == [cap[0], cap[1], cap[3]]                      # the capture has a blank line after the dashes
    rows = [ln for ln in out[7:] if ln]
    want = [ln for ln in cap[4:] if ln]
    assert sorted(rows) == sorted(want[:2])                           # byte-equal (mt49873 .2: not modelled)
    assert all(len(r) == len(out[6]) - 16 and r.endswith("-1    ") for r in rows)
    # HEAD (4.35) always prints the RDMA cell; NET is then 2 wide (no netdev anywhere)
    out = sim.out("mst", "status", "-v", env={"MLXSIM_MFT_VERSION": "4.35.0"}).split("\n")
    rows = [ln for ln in out[7:] if ln]
    assert all(r[64:80] == " " * 16 and r[80:82] == "  " and r[82:88] == "-1    " for r in rows)


def test_mst_status_v_older_mft_without_modules_as_the_capture(sim):
    """mst_status_v_bond_cx6dx_cx4lx_1.txt: an MFT printing NET 26 wide (older than 4.24 here), modules not loaded:
    MST "NA" 9 wide, DEVICE_TYPE kept for PFs; the capture's NUMA lost its padding; RDMA bonds are not modelled."""
    cap = real("mst_status_v_bond_cx6dx_cx4lx_1.txt")        # (real() drops the leading "# mst status -v" too)
    sim.init("cx6dx-roce")
    out = sim.out("mst", "status", "-v", env={"MLXSIM_MFT_VERSION": "4.22.0"}).split("\n")
    assert out[:6] == cap[:6]
    assert out[6] == cap[6] + "  "
    rows = [ln for ln in out[7:] if ln]
    want = [ln for ln in cap[7:] if ln.startswith("ConnectX6DX")]
    assert len(rows) == 4 and all(out[out.index(r) + 1] == "" for r in rows)
    for r in rows:
        assert r[:33] == want[0][:33] == "ConnectX6DX(rev:0)      NA       "
        assert r[33:40] in ("3b:00.0", "3b:00.1", "d8:00.0", "d8:00.1") and r[40:43] == "   "
        assert r[59:63] == "net-" and r[85:] in ("0     ", "1     ") and want[0][85:] == "0"
