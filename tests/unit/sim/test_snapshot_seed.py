"""mlxsim init --snapshot: a simulated host made from a snapshot of a real one (the JSON file playbooks/snapshot.yml
writes per server). Each card the closest modelled one - by part number, else PSID, else device type - with the
snapshot's values over it, seen through the simulated tools as a real host shows them; what the snapshot lacks
stays the model's; a card no model matches and a value outside its grammar are refused, naming host and card."""
import copy
import json
import re

import pytest

# One dual-port ConnectX-6 Dx of a real host, as mlx_info reports it (values unlike the simulator's model).
FUNCTION = {
    "address": "0000:af:00.0", "function": 0, "card": "0000:af:00", "device_type": "ConnectX6DX",
    "part_number": "MCX623106AN-CDAT", "description": "ConnectX-6 Dx EN adapter card, 100GbE, Dual-port QSFP56",
    "serial_number": "MT2301X00042", "psid": "MT_0000000359", "fw_version": "22.39.1002", "fw_running": "22.36.1010",
    "fw_pending": True, "fw_release_date": "1.2.2024", "rom_versions": {"UEFI": "14.32.17", "PXE": "3.7.300"},
    "base_mac": "b8599f001120", "base_guid": "b8599f0300001120", "security_attributes": "secure-fw",
    "vpd": {"PN": "MCX623106AN-CDAT", "EC": "A5", "SN": "MT2301X00042", "V0": "PCIeGen4 x16"},
    "physical_slot": "7", "numa_node": 1, "rdma_devices": ["mlx5_4"], "netdevs": ["ens7f0np0"],
    "ports": [{"port": 1, "rdma": "mlx5_4", "link_layer": "Ethernet", "state": "Active", "physical_state": "LinkUp",
               "rate": 100, "netdev": "ens7f0np0"}],
    "pcie": {"lnkcap": {"speed": "16GT/s", "width": 16}, "lnksta": {"speed": "8GT/s", "width": 16}, "degraded": True},
    "nv_config": {"SRIOV_EN": {"default": "False(0)", "current": "True(1)", "next": "True(1)", "modified": True},
                  "NUM_OF_VFS": {"default": "0", "current": "8", "next": "16", "modified": True},
                  "CNP_DSCP_P1": {"default": "48", "current": "26", "next": "26", "modified": True},
                  "A_PARAMETER_OF_A_NEWER_FIRMWARE": {"default": "0", "current": "1", "next": "1"}},
}


def function(pci, rdma, netdev, **over):
    dev = copy.deepcopy(FUNCTION)
    dev.update(address=pci, function=int(pci[-1]), card=pci[:-2], rdma_devices=[rdma], netdevs=[netdev])
    dev["ports"][0].update(rdma=rdma, netdev=netdev)
    dev.update(over)
    return dev


def snapshot(*devices, platform=None, host="real-01"):
    return {"schema": 1, "host": host, "kind": "server", "taken": "20261205T101622Z",
            "collection": {"name": "gpufabric.mlnx", "version": "0.1.0"},
            "mlx_info": {"devices": list(devices)}, "platform": platform or {}}


def seed(sim, doc, *extra, rc=0):
    path = sim.dir / "snapshot.json"
    path.write_text(json.dumps(doc))
    return sim.run("mlxsim", "init", "--snapshot", path, *extra, check_rc=rc)


def row(text, name):
    """(default, current, next) of ``name`` in mlxconfig -e q's table."""
    m = re.search(r"^\*?\s+%s\s+(\S+)\s+(\S+)\s+(\S+)" % re.escape(name), text, re.M)
    return m.groups() if m else None


def test_the_snapshots_values_are_what_the_tools_show(sim):
    seed(sim, snapshot(function("0000:af:00.0", "mlx5_4", "ens7f0np0"),
                       function("0000:af:00.1", "mlx5_5", "ens7f1np1")))
    flint = sim.out("flint", "-d", "af:00.0", "q")
    for line in ("FW Version:            22.39.1002", "FW Version(Running):   22.36.1010",
                 "FW Release Date:       1.2.2024", "PSID:                  MT_0000000359",
                 "Rom Info:              type=UEFI version=14.32.17 cpu=AMD64,AARCH64",
                 "                       type=PXE version=3.7.300 cpu=AMD64"):
        assert line in flint.splitlines(), flint
    assert re.search(r"^Base MAC:\s+b8599f001120\b", flint, re.M), flint
    query = sim.out("mlxconfig", "-d", "af:00.0", "-e", "q", "SRIOV_EN", "NUM_OF_VFS", "CNP_DSCP_P1")
    assert row(query, "SRIOV_EN") == ("False(0)", "True(1)", "True(1)"), query
    assert row(query, "NUM_OF_VFS") == ("0", "8", "16"), query
    assert row(query, "CNP_DSCP_P1") == ("48", "26", "26"), query
    lspci = sim.out("lspci", "-s", "af:00.0", "-vv")
    for words in ("Physical Slot: 7", "NUMA node: 1", "[SN] Serial number: MT2301X00042",
                  "Speed 8GT/s (downgraded), Width x16 (ok)", "[EC] Engineering changes: A5",
                  "Product Name: ConnectX-6 Dx EN adapter card, 100GbE, Dual-port QSFP56"):
        assert words in lspci, lspci
    assert sim.out("ibdev2netdev").splitlines() == ["mlx5_4 port 1 ==> ens7f0np0 (Up)",
                                                    "mlx5_5 port 1 ==> ens7f1np1 (Up)"]
    state = sim.state_data()
    assert state["hostname"] == "real-01" and state["snapshot"]["host"] == "real-01"
    assert state["snapshot"]["models"] == {"0000:af:00": "ConnectX6DX MCX623106AN-CDAT (by part number "
                                                         "MCX623106AN-CDAT)"}
    assert state["snapshot"]["not_taken"] == [
        "real-01, 0000:af:00.0 A_PARAMETER_OF_A_NEWER_FIRMWARE: the model has no such parameter",
        "real-01, 0000:af:00.1 A_PARAMETER_OF_A_NEWER_FIRMWARE: the model has no such parameter"]
    (card,) = state["cards"]
    assert card["nv"]["NUM_OF_VFS"] == {"default": 0, "current": 8, "next": 16}


def test_a_card_is_the_model_of_its_psid_or_else_of_its_device_type(sim):
    by_psid = function("0000:3b:00.0", "mlx5_0", "ens1np0", part_number="MCX623106AC-CDAT",
                       vpd={"PN": "MCX623106AC-CDAT"})
    eth = {"LINK_TYPE_P1": {"default": "ETH(2)", "current": "ETH(2)", "next": "ETH(2)"}}
    by_type = function("0000:5e:00.0", "mlx5_1", "ens2np0", part_number="MCX713106AC-VEAT", psid="MT_0000001233",
                       device_type="ConnectX7", fw_version="28.39.1002", fw_running="28.39.1002",
                       vpd={"PN": "MCX713106AC-VEAT"}, nv_config=eth)
    seed(sim, snapshot(by_psid, by_type))
    models = sim.state_data()["snapshot"]["models"]
    assert models == {"0000:3b:00": "ConnectX6DX MCX623106AC-CDAT (by psid MT_0000000359)",
                      "0000:5e:00": "ConnectX7 MCX713106AC-VEAT (by device ConnectX7)"}
    flint = sim.out("flint", "-d", "5e:00.0", "q")
    assert "PSID:                  MT_0000001233" in flint and "FW Version:            28.39.1002" in flint
    assert "[PN] Part number: MCX713106AC-VEAT" in sim.out("lspci", "-s", "5e:00.0", "-vv")
    assert sim.card("5e:00.0")["family"] == "ConnectX7" and sim.card("3b:00.0")["family"] == "ConnectX6DX"
    assert row(sim.out("mlxconfig", "-d", "5e:00.0", "-e", "q", "LINK_TYPE_P1"), "LINK_TYPE_P1") == (
        "ETH(2)", "ETH(2)", "ETH(2)")


def test_what_the_snapshot_lacks_stays_the_models(sim):
    seed(sim, snapshot({"address": "0000:18:00.0", "card": "0000:18:00", "part_number": "MCX75310AAS-NEAT"}))
    card = sim.card("18:00.0")
    assert (card["psid"], card["fw"]["burned"], card["fw"]["running"]) == ("MT_0000000838", "28.42.1000", "28.42.1000")
    assert card["nv"]["LINK_TYPE_P1"] == {"default": 1, "current": 1, "next": 1}       # the model's (IB)
    assert (sim.dir / "root" / "sys" / "class" / "net" / "ibp24s0").is_dir()          # named by its PCI address
    assert sim.out("ibdev2netdev").splitlines() == ["mlx5_0 port 1 ==> ibp24s0 (Up)"]   # [invented] mlx5_0


def test_the_platform_the_snapshot_names(sim):
    seed(sim, snapshot(function("0000:af:00.0", "mlx5_4", "ens7f0np0"),
                       platform={"kernel": "5.14.0-503.15.1.el9_5.x86_64", "os_family": "RedHat",
                                 "ofed": {"version": "25.01-0.6.0", "flavour": "doca-ofed",
                                          "raw": "OFED-internal-25.01-0.6.0"}}))
    state = sim.state_data()
    assert (state["platform"]["kernel"], state["platform"]["bootloader"]) == ("5.14.0-503.15.1.el9_5.x86_64", "bls")
    assert (sim.dir / "root" / "boot" / "vmlinuz-5.14.0-503.15.1.el9_5.x86_64").exists()
    assert sim.out("ofed_info", "-s").strip() == "OFED-internal-25.01-0.6.0:"


def test_a_card_no_model_matches_is_refused_naming_host_card_part_number_and_device(sim):
    alien = function("0000:e2:00.0", "mlx5_9", "ens9np0", part_number="MCX94315A-XXXX", psid="MT_0000009999",
                     device_type="ConnectX9")
    p = seed(sim, snapshot(function("0000:af:00.0", "mlx5_4", "ens7f0np0"), alien), rc=1)
    assert ("real-01: the card at 0000:e2:00 (part number MCX94315A-XXXX, device ConnectX9, PSID MT_0000009999) is "
            "no modelled card") in p.stderr, p.stderr
    assert "MCX75310AAS-NEAT" in p.stderr      # what is modelled
    assert not (sim.dir / "state.json").exists()


@pytest.mark.parametrize("over, words", [
    ({"serial_number": "MT2301\nX"}, 'real-01, card 0000:af:00: serial number "MT2301\\nX" cannot be taken'),
    ({"netdevs": ["../../etc"], "ports": []}, 'real-01, card 0000:af:00: netdev "../../etc" cannot be taken'),
    ({"address": "0000:af:00.0; reboot"}, 'real-01, card 0000:af:00: address "0000:af:00.0; reboot" is not a PCI'),
    ({"psid": "MT_0000000359 --yes"}, 'PSID "MT_0000000359 --yes" cannot be taken'),
    ({"rdma_devices": ["mlx5_4/.."]}, 'RDMA device "mlx5_4/.." cannot be taken'),
])
def test_a_value_outside_its_grammar_is_refused(sim, over, words):
    p = seed(sim, snapshot(function("0000:af:00.0", "mlx5_4", "ens7f0np0", **over)), rc=1)
    assert words in p.stderr, p.stderr
    assert not (sim.dir / "state.json").exists()


def test_a_kernel_outside_its_grammar_and_a_file_that_is_no_server_snapshot_are_refused(sim):
    p = seed(sim, snapshot(function("0000:af:00.0", "mlx5_4", "ens7f0np0"), platform={"kernel": "6.1/../../x"}),
             rc=1)
    assert 'real-01: kernel "6.1/../../x" cannot be taken' in p.stderr, p.stderr
    leaf = dict(snapshot(), kind="leaf", host="leaf01")
    assert "the snapshot of leaf01 is of a leaf, not a server" in seed(sim, leaf, rc=1).stderr
    assert "not a snapshot of schema 1" in seed(sim, {"schema": 2}, rc=1).stderr
    assert "init needs --profile and --hostname, or --snapshot" in sim.run("mlxsim", "init").stderr
