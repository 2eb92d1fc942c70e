"""ibstat stopping partway (the ``ibstat_stat_fail`` fault) and SR-IOV VF HCAs of cloud VMs (profiles
azure-nd-a100-vm / azure-nd-h200-vm) vs real captures (issue 39 item 3)."""
import json
import re

from sim_helpers import real

PID = re.compile(r"\[\d+\]")


def _fault(sim, device, **opts):
    data = sim.state_data()
    data.setdefault("faults", []).append(dict({"type": "ibstat_stat_fail", "device": device}, **opts))
    with open(sim.state, "w") as fh:
        json.dump(data, fh)


def _labels(lines):
    return [ln.split(":")[0] for ln in lines]


def test_ibstat_stops_partway_as_the_capture(sim):
    """ibstat_ibpanic_partial_1.txt: the CAs before mlx5_8 (strcmp order), the last mlx5_7, then on stderr
    `ibpanic: [PID] main: stat of IB device 'mlx5_8' failed: No such file or directory` and exit 255 (rdma-core
    before v54: IBPANIC's exit(-1))."""
    cap = [ln for ln in real("ibstat_ibpanic_partial_1.txt") if ln]
    sim.init("dgx-h100")
    _fault(sim, "mlx5_8")
    p = sim.run("ibstat")
    assert p.returncode == 255
    assert PID.sub("[N]", p.stderr) == PID.sub("[N]", cap[-1]) + "\n"
    out = p.stdout.split("\n")
    order = ("0", "1", "10", "11", "2", "3", "4", "5", "6", "7")
    assert [ln for ln in out if ln.startswith("CA '")] == ["CA 'mlx5_%s'" % n for n in order]
    assert out[-1] == ""                                           # the last CA block ends with its newline
    mine = out[out.index("CA 'mlx5_7'"):-1]
    want = cap[cap.index("CA 'mlx5_7'"):-1]
    assert _labels(mine) == _labels(want)                            # same lines, same TAB indentation
    for ln in want:
        if "..." not in ln and not ln.lstrip().startswith(("Base lid", "SM lid", "Link layer", "Rate")):
            assert ln in mine, ln                                    # Active / LinkUp / 1 port / hw 0 / LMC 0
    # by PCI address too; `ibstat mlx5_8` panics alone; another CA prints as before
    sim.init("dgx-h100")
    _fault(sim, "0000:aa:00.1")                                      # mlx5_8 is the storage card's second port
    p = sim.run("ibstat", "mlx5_8")
    assert p.returncode == 255 and p.stdout == "" and "'mlx5_8' failed: No such file or directory" in p.stderr
    p = sim.run("ibstat", "mlx5_7")
    assert p.returncode == 0 and p.stderr == "" and p.stdout.startswith("CA 'mlx5_7'\n")


def test_ibstat_warns_and_goes_on_from_rdma_core_54(sim):
    """rdma-core v54 (commit 703b52c6e): ibwarn without the error text, the device left out, the others printed,
    exit 0; an MLNX_OFED rdma-core (2410mlnx54) counts by its upstream major; error= gives the errno text."""
    sim.init("dgx-h100")
    _fault(sim, "mlx5_8", error="Invalid argument")
    for version in ("54.0", "2410mlnx54"):
        p = sim.run("ibstat", env={"MLXSIM_RDMA_CORE_VERSION": version})
        assert p.returncode == 0
        assert PID.sub("[N]", p.stderr) == "ibwarn: [N] main: stat of IB device 'mlx5_8' failed\n"
        cas = [ln for ln in p.stdout.split("\n") if ln.startswith("CA '")]
        assert len(cas) == 11 and "CA 'mlx5_8'" not in cas and cas[-1] == "CA 'mlx5_9'"
    for version in ("53.0", "2404mlnx51"):
        p = sim.run("ibstat", env={"MLXSIM_RDMA_CORE_VERSION": version})
        assert p.returncode == 255 and p.stderr.endswith("main: stat of IB device 'mlx5_8' failed: Invalid argument\n")


def test_ibstat_panics_on_the_first_device_and_a_vf_hca_as_azure(sim):
    """ibstat_ibpanic_vf_azure_1.txt: on an Azure VM ibstat panicked on its first device with nothing before it, and
    `ibstat mlx5_ib0` showed an HDR InfiniBand ConnectX-6 VF (MT4124) with a Hyper-V node GUID (the issue's text
    lost its TAB indentation)."""
    cap = [ln for ln in real("ibstat_ibpanic_vf_azure_1.txt") if ln]
    panic = [ln for ln in cap if ln.startswith("ibpanic:")][0]
    sim.init("azure-nd-a100-vm")
    _fault(sim, "mlx5_ib0")
    p = sim.run("ibstat")
    assert p.returncode == 255 and p.stdout == ""
    assert PID.sub("[N]", p.stderr) == PID.sub("[N]", panic.replace("mlx5_an0", "mlx5_ib0")) + "\n"
    sim.init("azure-nd-a100-vm")
    mine = [ln.strip() for ln in sim.out("ibstat", "mlx5_ib0").split("\n") if ln]
    want = cap[cap.index("~$ ibstat mlx5_ib0") + 1:]
    assert _labels(mine) == _labels(want)
    same = ("CA 'mlx5_ib0'", "CA type: MT4124", "Number of ports: 1", "Firmware version: 20.28.4000",
            "Hardware version: 0", "Port 1:", "Physical state: LinkUp", "Rate: 200", "LMC: 0",
            "Capability mask: 0x2651ec48", "Link layer: InfiniBand")
    for ln in same:
        assert ln in want and ln in mine, ln
    node = [ln for ln in mine if ln.startswith("Node GUID:")][0].split()[-1]
    assert re.match(r"^0x00155dfffe34[0-9a-f]{4}$", node)                  # Hyper-V's, as 0x00155dfffe34072b
    assert "Port GUID: " + node[:8] + "fffd" + node[12:] in mine            # ...fffd34072b as the capture
    assert [ln for ln in want if ln.startswith("Port GUID:")] == ["Port GUID: 0x00155dfffd34072b"]
    # the VM's other views of the same VF agree (ibv_devinfo, ibdev2netdev, mst without modules)
    dev = sim.out("ibv_devinfo", "-d", "mlx5_ib0")
    assert "\tvendor_part_id:\t\t\t4124\n" in dev and "\tfw_ver:\t\t\t\t20.28.4000\n" in dev
    assert "mlx5_ib0 port 1 ==> ib0 (Up)" in sim.out("ibdev2netdev").split("\n")
    rows = [ln for ln in sim.out("mst", "status", "-v").split("\n")[7:] if ln]
    assert len(rows) == 8 and all(r.startswith("NA                      NA       000") for r in rows)


def test_cx7_vf_vm_as_the_azure_h200_capture(sim):
    """ibv_devinfo_azure_h200_cx7vf_1.txt: a ConnectX-7 VF (vendor_part_id 4126, FW 28.40.1702, board_id
    MSF0000000047) of an Azure ND H200 v5 VM, Hyper-V node GUIDs consecutive over the VFs."""
    cap = real("ibv_devinfo_azure_h200_cx7vf_1.txt")
    sim.init("azure-nd-h200-vm")
    out = sim.out("ibv_devinfo").split("\n")
    for name in ("mlx5_ib0", "mlx5_ib1"):
        want = cap[cap.index("hca_id:\t%s" % name):]
        want = want[:want.index("")]
        mine = out[out.index("hca_id:\t%s" % name):][:len(want)]
        for ln in want:
            if not ln.startswith(("\tnode_guid", "\tsys_image_guid", "\t\t\tsm_lid", "\t\t\tport_lid")):
                assert ln in mine, ln                                       # byte-equal, TABs included
        assert _labels(mine) == _labels(want)
    guids = [ln.split()[-1] for ln in out if ln.startswith("\tnode_guid")]
    assert len(guids) == 8 and all(g.startswith("0015:5dff:fe34:") for g in guids)
    assert [int(g[-4:], 16) - int(guids[0][-4:], 16) for g in guids] == list(range(8))
    want_guids = [ln.split()[-1] for ln in cap if ln.startswith("\tnode_guid")]
    assert want_guids[:2] == ["0015:5dff:fe34:0033", "0015:5dff:fe34:0034"]
