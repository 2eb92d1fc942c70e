"""mst status (_parsers/mst.py): the real captures, and text without modules or with NA columns."""
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers import parse

from ._captures import capture_test, checks, section

CHECKS, check = checks()


# ---------------------------------------------------------------- mst status captures

def pciconf(node, pci):
    return {"mst": node, "pci": pci, "device_type": None, "rev": None, "rdma": None, "net": [], "numa": None}


@check("mst_status_cx4_1.txt")
def _mst_status_cx4(text):
    assert parse("mst_status", text) == {
        "modules": {"pci": False, "pciconf": True},
        "devices": [pciconf("/dev/mst/mt4115_pciconf0", "0000:06:00.0")], "errors": [], "warnings": []}


@check("mst_status_cx6lx_1.txt")
def _mst_status_cx6lx(text):
    status = parse("mst_status", text)
    assert status["devices"] == [pciconf("/dev/mst/mt4127_pciconf0", "0002:01:00.0")]


@check("mst_status_cx7_1.txt")
def _mst_status_cx7_1(text):
    status = parse("mst_status", text)
    assert status["devices"] == [pciconf("/dev/mst/mt4129_pciconf0", "0000:05:00.0"),
                                 pciconf("/dev/mst/mt4129_pciconf1", "0001:05:00.0")]
    assert status["modules"] == {"pci": False, "pciconf": True}


@check("mst_status_cx7_2.txt")
def _mst_status_cx7_2(text):
    status = parse("mst_status", section(text, "sh-5.1# mst status"))
    assert status["devices"] == [pciconf("/dev/mst/mt4129_pciconf0", "0000:0d:00.0"),
                                 pciconf("/dev/mst/mt4129_pciconf1", "0000:37:00.0")]
    # "mst start" then "mst status" in one text: the start chatter is no error
    assert parse("mst_status", text) == status


@check("mst_status_v_bf2_1.txt")
def _mst_status_v_bf2(text):
    status = parse("mst_status", text)
    assert status["modules"] == {"pci": False, "pciconf": True}
    assert status["devices"] == [
        {"mst": "/dev/mst/mt41686_pciconf0.1", "pci": "0000:e2:00.1", "device_type": "BlueField2", "rev": "1",
         "rdma": "mlx5_1", "net": ["ens7f1"], "numa": "1"},
        {"mst": "/dev/mst/mt41686_pciconf0", "pci": "0000:e2:00.0", "device_type": "BlueField2", "rev": "1",
         "rdma": "mlx5_0", "net": ["ens7f0"], "numa": "1"},
    ]


@check("mst_status_v_bf3_1.txt")
def _mst_status_v_bf3(text):
    status = parse("mst_status", section(text, "sudo mst status -v"))
    assert [(d["mst"], d["pci"], d["device_type"], d["rev"], d["rdma"], d["numa"]) for d in status["devices"]] == [
        ("/dev/mst/mt41692_pciconf0.1", "0000:03:00.1", "BlueField3", "1", "mlx5_1", "-1"),
        ("/dev/mst/mt41692_pciconf0", "0000:03:00.0", "BlueField3", "1", "mlx5_0", "-1")]
    assert status["devices"][0]["net"] == ["p1", "pf1hpf", "en3f1pf1sf0"]
    assert status["devices"][1]["net"] == ["pf0hpf", "en3f0pf0sf0", "p0"]


@check("mst_start_fail_1.txt")
def _mst_start_fail(text):
    status = parse("mst_status", text)
    assert status["devices"] == [] and status["modules"] == {"pci": None, "pciconf": None}
    assert len(status["errors"]) == 5
    assert status["errors"][0].endswith("FATAL: Module mst_pci not found in directory "
                                        "/lib/modules/5.14.0-427.13.1.el9_4.aarch64")
    assert "mst_pci driver not found" in status["errors"]
    assert status["warnings"] == ['Missing "lsusb" command, skipping MTUSB devices detection']


@check("mst_status_unknown_arg_cx5_1.txt")
def _mst_status_unknown_arg_cx5(text):
    typo = parse("mst_status", section(text, " mst status --v", "root@sunset"))
    assert typo == {"modules": {"pci": False, "pciconf": True}, "devices": [],
                    "errors": ['Unknown argument "--v"'], "warnings": []}
    good = parse("mst_status", section(text, "# mst status -v", "# mst --help"))
    assert [(d["mst"], d["pci"], d["rdma"], d["net"]) for d in good["devices"]] == [
        ("/dev/mst/mt4121_pciconf0.1", "0000:01:00.1", "mlx5_1", ["redwest"]),
        ("/dev/mst/mt4121_pciconf0", "0000:01:00.0", "mlx5_0", ["redeast"])]
    assert good["errors"] == []


@check("mst_status_v_vfs_cx7_1.txt")
def _mst_status_v_vfs_cx7(text):
    # modules not loaded: MST "NA" (None) for every row; the 7 SR-IOV VFs are rows whose DEVICE_TYPE is "NA" (None),
    # so nothing tells them apart from a card but that: the two ConnectX-7 PFs are the only typed rows
    status = parse("mst_status", section(text, "sh-5.1# mst status -v"))
    assert status["modules"] == {"pci": False, "pciconf": False}
    devs = status["devices"]
    assert len(devs) == 9 and all(d["mst"] is None and d["numa"] == "0" for d in devs)
    assert [(d["pci"], d["rdma"]) for d in devs if d["device_type"]] == [("0000:37:00.0", "mlx5_1"),
                                                                         ("0000:0d:00.0", "mlx5_0")]
    vfs = sorted((d["pci"], d["rdma"]) for d in devs if d["device_type"] is None)
    assert vfs == [("0000:37:00.%d" % f, "mlx5_%d" % (f + 1)) for f in range(1, 8)]
    assert [d["net"] for d in devs if d["pci"] == "0000:37:00.2"] == [["net1"]]
    assert all(d["rev"] is None for d in devs if d["device_type"] is None)


@check("mst_status_v_bf2_2.txt")
def _mst_status_v_bf2_2(text):
    # no mlx5 driver bound: no RDMA cell at all (the row is 16 characters short), an empty NET cell, NUMA -1
    status = parse("mst_status", text)
    assert status["devices"] == [
        {"mst": "/dev/mst/mt41686_pciconf0", "pci": "0000:10:00.0", "device_type": "BlueField2", "rev": "1",
         "rdma": None, "net": [], "numa": "-1"},
        {"mst": "/dev/mst/mt41686_pciconf0.1", "pci": "0000:10:00.1", "device_type": "BlueField2", "rev": "1",
         "rdma": None, "net": [], "numa": "-1"},
        {"mst": "/dev/mst/mt49873_pciconf0.2", "pci": "0000:10:00.2", "device_type": "BlueField2", "rev": "1",
         "rdma": None, "net": [], "numa": "-1"},
    ]


@check("mst_status_v_bond_cx6dx_cx4lx_1.txt")
def _mst_status_v_bond(text):
    # two PCI functions share one RDMA bond device (mlx5_bond_0 on 31:00.0 and 31:00.1): each row keeps its own
    status = parse("mst_status", section(text, "# mst status -v"))
    assert status["modules"] == {"pci": False, "pciconf": False}
    assert [(d["pci"], d["device_type"], d["mst"], d["rdma"], d["net"], d["numa"]) for d in status["devices"]] == [
        ("0000:17:00.1", "ConnectX6DX", None, "mlx5_bond_1", ["bond1"], "0"),
        ("0000:31:00.0", "ConnectX4LX", None, "mlx5_bond_0", ["bond0"], "0"),
        ("0000:31:00.1", "ConnectX4LX", None, "mlx5_bond_0", ["bond0"], "0"),
        ("0000:17:00.0", "ConnectX6DX", None, "mlx5_bond_1", ["bond1"], "0")]


test_capture = capture_test(CHECKS)


def test_mst_status_without_modules_and_verbose_na():
    plain = ("MST modules:\n------------\n    MST PCI module is not loaded\n"
             "    MST PCI configuration module is not loaded\n\nPCI Devices:\n------------\n\n"
             "        3b:00.0\n        3b:00.1\n")
    status = parse("mst_status", plain)
    assert status["modules"] == {"pci": False, "pciconf": False}
    assert [(d["mst"], d["pci"]) for d in status["devices"]] == [(None, "0000:3b:00.0"), (None, "0000:3b:00.1")]
    verbose = ("PCI devices:\n------------\nDEVICE_TYPE             MST                           PCI       RDMA"
               "            NET                       NUMA\n"
               "ConnectX7(rev:0)        /dev/mst/mt4129_pciconf0      37:00.0   mlx5_0          net-ens1np0"
               "               0\n\n"
               "NA                      NA                            37:00.2   mlx5_2                        "
               "            0\n\n")
    devs = parse("mst_status", verbose)["devices"]
    assert devs[0] == {"mst": "/dev/mst/mt4129_pciconf0", "pci": "0000:37:00.0", "device_type": "ConnectX7",
                       "rev": "0", "rdma": "mlx5_0", "net": ["ens1np0"], "numa": "0"}
    assert devs[1] == {"mst": None, "pci": "0000:37:00.2", "device_type": None, "rev": None, "rdma": "mlx5_2",
                       "net": [], "numa": "0"}
