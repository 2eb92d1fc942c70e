"""lspci, -nn and -vv with VPD (_parsers/lspci.py): the real captures and the link annotations of newer
lspci."""
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers import parse

from ._captures import capture_test, checks, only, section

CHECKS, check = checks()


@check("rdma_link_ibstat_lspci_cx5_1.txt")
def _rdma_link_ibstat_lspci_cx5(text):
    pci = parse("lspci", section(text, "lspci -nn | grep Mellanox", "#"))
    assert [dev["address"] for dev in pci] == ["0000:86:00.0", "0000:86:00.1"]
    assert {(dev["class"], dev["class_id"], dev["vendor_id"], dev["device_id"]) for dev in pci} == {
        ("Infiniband controller", "0207", "15b3", "1017")}
    assert pci[0]["description"] == "Mellanox Technologies MT27800 Family [ConnectX-5]"


@check("mstflint_query_cx6lx_1.txt")
def _mstflint_query_cx6lx(text):
    pci = parse("lspci", section(text, "lspci -d 15b3:", "mstflint"))
    assert [(d["address"], d["class"]) for d in pci] == [("0002:01:00.0", "Ethernet controller"),
                                                         ("0002:01:00.1", "Ethernet controller")]
    assert pci[0]["description"] == "Mellanox Technologies MT2894 Family [ConnectX-6 Lx]"


# ---------------------------------------------------------------- lspci captures

@check("lspci_gb200_1.txt")
def _lspci_gb200(text):
    devs = parse("lspci", text)
    assert len(devs) == 87
    ib = [d["address"] for d in devs if d["class"] == "Infiniband controller"]
    assert ib == ["0000:03:00.0", "0002:03:00.0", "0010:03:00.0", "0012:03:00.0"]
    bf3 = [d for d in devs if d["description"].startswith("Mellanox Technologies MT43244 BlueField-3 integrated")]
    assert [d["address"] for d in bf3] == ["0006:03:00.0", "0006:03:00.1", "0016:03:00.0", "0016:03:00.1"]
    assert {d["revision"] for d in bf3} == {"01"}
    assert bf3[0]["description"] == "Mellanox Technologies MT43244 BlueField-3 integrated ConnectX-7 network controller"
    gpu = [d for d in devs if d["class"] == "3D controller"]
    assert len(gpu) == 4 and gpu[0]["revision"] == "a1"
    assert devs[-1]["address"] == "0019:01:00.0"  # no newline after the last line


@check("lspci_nn_cx6_bf2_1.txt")
def _lspci_nn_cx6_bf2(text):
    devs = parse("lspci", text)
    assert [(d["address"], d["class_id"], d["device_id"]) for d in devs] == [
        ("0000:0f:00.0", "0207", "101b"), ("0000:0f:00.1", "0207", "101b"),
        ("0000:92:00.0", "0207", "101b"), ("0000:92:00.1", "0207", "101b"),
        ("0000:e1:00.0", "0200", "a2d6"), ("0000:e1:00.1", "0801", "c2d3")]
    assert {d["vendor_id"] for d in devs} == {"15b3"}
    assert devs[4]["description"] == ("Mellanox Technologies MT42822 BlueField-2 integrated ConnectX-6 Dx "
                                      "network controller")
    assert devs[4]["revision"] == "01" and devs[0]["revision"] is None
    assert devs[5]["class"] == "DMA controller"


@check("lspci_vv_vpd_bf2_1.txt")
def _lspci_vv_vpd_bf2(text):
    first, second = text.split("---- (second fixture")
    dev = only(parse("lspci", first))
    assert dev["address"] == "0000:e2:00.0" and dev["class"] == "Ethernet controller"
    assert dev["physical_slot"] == "7-1" and dev["numa_node"] == "1"
    assert dev["product_name"].startswith("BlueField-2 DPU 100GbE/EDR/HDR100 VPI Dual-Port QSFP56")
    assert dev["vpd"] == {
        "PN": "MBF2M516A-EEEOT", "EC": "A4", "V2": "MBF2M516A-EEEOT", "SN": "MT2050X00614",
        "V3": "9c20a1608d3feb118000043f72ff4c16", "VA": "MLX:MN=MLNX:CSKU=V2:UUID=V3:PCI=V0:MODL=BF2M516A",
        "V0": "PCIeGen4 x16", "RV": "checksum good, 1 byte(s) reserved"}
    # The second fixture is only the capability: give it its device line back.
    empty = only(parse("lspci", first.split("\n")[0] + "\n" + second.split("\n", 1)[1]))
    assert empty["vpd"] == {} and empty["product_name"] is None


@check("lspci_vvvvv_vpd_cx4_1.txt")
def _lspci_vvvvv_vpd_cx4(text):
    dev = only(parse("lspci", text))  # doc-indented, followed by markdown prose
    assert dev["address"] == "0000:81:00.0"
    assert dev["description"] == "Mellanox Technologies MT27700 Family [ConnectX-4]"
    assert dev["subsystem"] == "Mellanox Technologies ConnectX-4 Stand-up dual-port 100GbE MCX416A-CCAT"
    assert dev["numa_node"] == "1" and dev["driver"] == "mlx5_core"
    assert dev["product_name"] == "CX416A - ConnectX-4 QSFP28"
    assert dev["vpd"] == {"PN": "MCX416A-CCAT", "EC": "AG", "SN": "MT1838X04950", "V0": "PCIeGen3 x16",
                          "RV": "checksum good, 2 byte(s) reserved"}
    assert dev["lnkcap"] == {"speed": "8GT/s", "width": "x16"}
    assert dev["lnksta"] == {"speed": "8GT/s", "width": "x8", "downgraded": True}


@check("lspci_vvv_bf2_2.txt")
def _lspci_vvv_bf2(text):
    dev = only(parse("lspci", text))  # VPD values padded with blanks, as the card stores them
    assert dev["address"] == "0000:01:00.0" and dev["numa_node"] == "0" and dev["physical_slot"] is None
    assert dev["product_name"] == ("BlueField-2 DPU 100GbE Dual-Port QSFP56, Crypto and Secure Boot Enabled, 16GB "
                                   "on-board DDR, 1GbE OOB management, Tall Bracket")
    assert dev["vpd"] == {
        "PN": "MBF2M516A-CECOT", "EC": "B5", "V2": "MBF2M516A-CECOT", "SN": "MT2206X07512",
        "V3": "520c948e04afec1180001070fd2bdf68", "VA": "MLX:MN=MLNX:CSKU=V2:UUID=V3:PCI=V0:MODL=BF2M516A",
        "V0": "PCIeGen4 x16", "VU": "MT2206X07512MLNXS0D0F0", "RV": "checksum good, 1 byte(s) reserved"}
    assert dev["lnkcap"] == {"speed": "16GT/s", "width": "x16"}
    assert dev["lnksta"] == {"speed": "16GT/s", "width": "x16", "downgraded": False}
    assert dev["driver"] == "mlx5_core" and dev["kernel_modules"] == "mlx5_core"


@check("lspci_vvv_cx7_1.txt")
def _lspci_vvv_cx7(text):
    dev = only(parse("lspci", text))  # ends with lspci's libkmod warning
    assert dev["address"] == "0000:03:00.0" and dev["subsystem"] == "Mellanox Technologies Device 0055"
    assert dev["product_name"] == "Nvidia ConnectX-7 4-chip VPI PCIe Gen5 Mezz Controller"
    assert dev["vpd"]["PN"] == "SN37B23797" and dev["vpd"]["SN"] == "X1LM37Z004B" and dev["vpd"]["MN"] == "A3"
    assert dev["vpd"]["VU"] == "X1LM37Z004BMLNXS0D0F0" and "EC" not in dev["vpd"]
    assert dev["lnkcap"] == {"speed": "32GT/s", "width": "x16"}
    assert dev["lnksta"] == {"speed": "32GT/s", "width": "x16", "downgraded": False}
    assert dev["driver"] == "mlx5_core" and dev["kernel_modules"] is None


test_capture = capture_test(CHECKS)


def test_lspci_link_annotations_of_newer_lspci():
    text = ("0000:37:00.0 Ethernet controller [0200]: Mellanox Technologies MT2910 Family [ConnectX-7] [15b3:1021]\n"
            "\tSubsystem: Mellanox Technologies Device [15b3:0041]\n"
            "\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM not supported\n"
            "\t\tLnkSta:\tSpeed 16GT/s (downgraded), Width x16 (ok)\n"
            "\tKernel driver in use: mlx5_core\n"
            "0000:37:00.1 Ethernet controller [0200]: Mellanox Technologies MT2910 Family [ConnectX-7] [15b3:1021]\n"
            "\t\tLnkSta:\tSpeed 32GT/s (ok), Width x16 (ok)\n")
    first, second = parse("lspci", text)
    assert (first["vendor_id"], first["device_id"], first["class_id"]) == ("15b3", "1021", "0200")
    assert first["description"] == "Mellanox Technologies MT2910 Family [ConnectX-7]"
    assert first["subsystem"] == "Mellanox Technologies Device [15b3:0041]"
    assert first["lnkcap"] == {"speed": "32GT/s", "width": "x16"}
    assert first["lnksta"] == {"speed": "16GT/s", "width": "x16", "downgraded": True}
    assert second["lnksta"] == {"speed": "32GT/s", "width": "x16", "downgraded": False}
    assert first["vpd"] is None and first["driver"] == "mlx5_core"
    assert parse("lspci", "") == []
