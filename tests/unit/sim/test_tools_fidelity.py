"""mst, mlxfwmanager, flint, mlxfwreset, lspci, ibstat, ibdev2netdev, ofed_info vs real captures."""
import re

from sim_helpers import real


def offsets(line):
    return [m.start() for m in re.finditer(r"\S+", line)]


# ---------------------------------------------------------------------------- mst


def test_mst_status_matches_real(sim):
    sim.init("dgx-h100")
    cap = real("mst_status_cx7_2.txt")
    start_cap = cap[cap.index("sh-5.1# mst start ") + 1:cap.index("sh-5.1# mst status")]
    out = sim.out("mst", "start").split("\n")
    assert out[0] == start_cap[0] and out[-3:] == start_cap[-3:]   # ..., Create devices, Unloading ..., ''
    assert out[1] == start_cap[1] == "Loading MST PCI module - Success"
    status = sim.out("mst", "status").split("\n")
    real_status = cap[cap.index("sh-5.1# mst status") + 1:]
    assert status[:8] == real_status[:8]                          # modules block, heading, first device
    assert status[7] == "/dev/mst/mt4129_pciconf0         - PCI configuration cycles access."
    assert status[8] == real_status[8].replace("0000:0d:00.0", "0000:18:00.0")
    assert status[9] == real_status[9]                             # Chip revision is: 00
    assert status[-2:] == ["", ""]                                 # blank line after the list


def test_mst_status_not_started(sim):
    sim.init("cx6dx-roce")
    out = sim.out("mst", "status")
    assert out == ("MST modules:\n------------\n    MST PCI module is not loaded\n"
                   "    MST PCI configuration module is not loaded\n")


def test_mst_status_v_matches_real(sim):
    sim.init("mixed")
    sim.run("mst", "start", check_rc=0)
    # the fixture is from an MFT older than 4.24 (NET %-26s, mst.verbose_layout); it lost the NUMA padding
    out = sim.out("mst", "status", "-v", env={"MLXSIM_MFT_VERSION": "4.22.0"}).split("\n")
    cap = real("mst_status_v_bf2_1.txt")
    assert out[:6] == cap[:6]
    hdr = [ln for ln in cap if ln.startswith("DEVICE_TYPE")][0]
    assert out[6].rstrip() == hdr and out[6] == hdr + "  "           # NUMA %-6s
    rows = [ln for ln in out[7:] if ln]
    assert all(out[out.index(r) + 1] == "" for r in rows)         # blank line after every row
    bf3 = [r for r in rows if r.startswith("BlueField3")]
    assert bf3[0].split()[:3] == ["BlueField3(rev:1)", "/dev/mst/mt41692_pciconf0.1", "ca:00.1"]
    assert bf3[1].split()[:3] == ["BlueField3(rev:1)", "/dev/mst/mt41692_pciconf0", "ca:00.0"]
    for r in rows:
        assert offsets(r) == offsets(cap[7])
        assert r.split()[4].startswith("net-")
    cx7 = [r for r in rows if r.startswith("ConnectX7")][0]
    assert cx7.split() == ["ConnectX7(rev:0)", "/dev/mst/mt4129_pciconf0", "65:00.0", "mlx5_1", "net-ibp101s0", "0"]


# ---------------------------------------------------------------------------- mlxfwmanager


def test_mlxfwmanager_query_matches_real(sim):
    sim.init("dgx-h100")
    sim.run("mst", "start", check_rc=0)
    cap = real("mlxup_query_cx7_1.txt")
    out = sim.out("mlxfwmanager", "--query", "-d", "/dev/mst/mt4129_pciconf1").split("\n")
    block = cap[:cap.index("  Status:           Update required") + 2]
    # same card model (MCX755106AS-HEAT, ETH): identity lines byte-equal
    for i in range(10):
        assert out[i] == block[i], i
    assert out[10] == "  Base MAC:         %s" % sim.card("29:00.0")["base_mac"]   # ETH card: MAC only
    assert out[10][:20] == block[10][:20] and len(out[10]) == len(block[10])
    assert out[11] == block[11] == "  Versions:         Current        Available     "  # trailing spaces as real
    for i in (12, 13, 14):
        assert offsets(out[i])[:2] == offsets(block[i])[:2] and len(out[i]) == len(block[i])
    assert out[12] == "     FW             28.42.1000     N/A           "
    assert out[13] == "     PXE            3.7.0500       N/A           "
    assert out[14] == "     UEFI           14.35.0015     N/A           "
    assert out[15:18] == ["", "  Status:           No matching image found", ""]
    assert block[15:17] == ["", "  Status:           Update required"]


def test_mlxfwmanager_running_row_matches_real(sim):
    # "FW (Running)" row as in an mlxup query of a MCX75310AAS-NEAT (search-index file id 58145501009)
    sim.init("dgx-h100")
    img = sim.dir / "cx7.bin"
    sim.out("mlxsim", "mkimage", "--psid", "MT_0000000838", "--version", "28.43.2566", "--device-id", "4129",
            "--pxe", "3.7.500", "--uefi", "14.36.16", "-o", img)
    sim.out("flint", "-d", "18:00.0", "-i", img, "-y", "burn")
    out = sim.out("mlxfwmanager", "--query", "-d", "0000:18:00.0", "-i", img).split("\n")
    assert "     FW             28.43.2566     28.43.2566    " in out
    assert "     FW (Running)   28.42.1000     N/A           " in out
    assert "  PCI Device Name:  0000:18:00.0" in out
    assert "  Status:           Up to date" in out
    assert out.index("  Base GUID:        %s" % sim.card("18:00.0")["base_guid"]) + 1 == \
        out.index("  Base MAC:         %s" % sim.card("18:00.0")["base_mac"])


def test_mlxfwmanager_xml_matches_real_structure(sim):
    sim.init("cx6dx-roce")
    cap = real("mlxup_query_xml_cx6lx_1.txt")
    out = sim.out("mlxfwmanager", "--query", "--query-format", "XML", "-d", "0000:3b:00.0").split("\n")

    def tags(lines):
        return [re.sub(r'"[^"]*"', '""', re.sub(r">[^<]*<", "><", ln)) for ln in lines if ln]

    assert tags(out) == tags(cap)
    assert out[1] == ('    <Device pciName="0000:3b:00.0" type="ConnectX6DX" psid="MT_0000000359" '
                      'partNumber="MCX623106AN-CDA_Ax">')
    assert "      <Status>No matching image found</Status>" in out
    p = sim.run("mlxfwmanager", "--query", "--query-format", "json")
    assert p.returncode == 3
    assert "-E- Value :'json' is not valid, valid values are : XML | Text" in p.stderr


def test_mlxfwmanager_update_matches_real_flow(sim):
    sim.init("dgx-h100")
    sim.run("mst", "start", check_rc=0)
    img = sim.dir / "heat.bin"
    sim.out("mlxsim", "mkimage", "--psid", "MT_0000000834", "--version", "28.43.1014", "--device-id", "4129",
            "--pxe", "3.7.500", "--uefi", "14.36.16", "-o", img)
    cap = real("mlxup_update_cx7_1.txt")
    p = sim.run("mlxfwmanager", "-u", "-i", img, "-d", "/dev/mst/mt4129_pciconf1;/dev/mst/mt4129_pciconf6",
                input="y\n")
    assert p.returncode == 0, p.stdout + p.stderr
    out = p.stdout.split("\n")
    i = out.index("---------")
    k = cap.index("---------")
    assert out[i:i + 4] == cap[k:k + 3] + ["Perform FW update? [y/N]: Device #1: Updating FW ...     "]
    assert "\rFSMST_INITIALIZE -   OK          " in out
    assert "\rWriting Boot image component -   OK          " in out
    assert out.count("\b\b\b\bDone") == 2
    assert out[-3:] == ["", "Restart needed for updates to take effect.", ""]
    # -y: no prompt text at all
    sim.init("dgx-h100")
    p = sim.run("mlxfwmanager", "-u", "-i", img, "-y", "-d", "29:00.0")
    assert "Perform FW update" not in p.stdout
    assert "Found 1 device(s) requiring firmware update...\n\nDevice #1: Updating FW ...     \n" in p.stdout


def test_mlxfwmanager_summary_lines(sim):
    sim.init("cx6dx-roce")
    img = sim.dir / "dx.bin"
    sim.out("mlxsim", "mkimage", "--psid", "MT_0000000359", "--version", "22.43.2566", "--device-id", "4125",
            "--pxe", "3.7.500", "--uefi", "14.36.16", "-o", img)
    p = sim.run("mlxfwmanager", "-i", img)
    assert p.returncode == 0
    assert p.stdout.endswith("---------\nFound 2 device(s) requiring firmware update. "
                             "Please use -u flag to perform the update.\n")
    other = sim.dir / "other.bin"
    sim.out("mlxsim", "mkimage", "--psid", "MT_0000000838", "--version", "28.43.2566", "--device-id", "4129",
            "-o", other)
    p = sim.run("mlxfwmanager", "-i", other)
    assert p.returncode == 9
    assert p.stderr == "---------\n-E- Could not find matching firmware images for 2 device(s).\n"
    assert p.stdout.count("  Status:           No matching image found") == 2


# ---------------------------------------------------------------------------- flint


def test_flint_query_matches_real(sim):
    sim.init("dgx-h100")
    sim.run("mst", "start", check_rc=0)
    cap = real("flint_query_cx7_1.txt")[1:]
    out = sim.out("flint", "-d", "/dev/mst/mt4129_pciconf0", "query").split("\n")
    assert [ln[:23] for ln in out if ln] == [ln[:23] for ln in cap if ln]
    same = ["Image type:            FS4", "FW Version:            28.42.1000", "FW Release Date:       8.8.2024",
            "Product Version:       28.42.1000", "Rom Info:              type=UEFI version=14.35.15 cpu=AMD64,AARCH64",
            "                       type=PXE version=3.7.500 cpu=AMD64",
            "Description:           UID                GuidsNumber", "Image VSD:             N/A",
            "Device VSD:            N/A", "Security Attributes:   secure-fw"]
    for s in same:
        assert s in out
    guid = [ln for ln in out if ln.startswith("Base GUID:")][0]
    mac = [ln for ln in out if ln.startswith("Base MAC:")][0]
    assert offsets(guid) == offsets([ln for ln in cap if ln.startswith("Base GUID:")][0])
    assert offsets(mac) == offsets([ln for ln in cap if ln.startswith("Base MAC:")][0])
    assert guid.endswith("16") and mac.endswith("16")
    assert "PSID:                  MT_0000000838" in out


def test_mstflint_query_matches_real(sim):
    sim.init("cx6dx-roce")
    cap = real("mstflint_query_cx6lx_1.txt")
    cap = cap[cap.index("# mstflint -d 0002:01:00.0 q") + 1:]
    out = sim.out("mstflint", "-d", "0000:3b:00.0", "q").split("\n")
    assert [ln[:23] for ln in out if ln] == [ln[:23] for ln in cap if ln]
    assert "Rom Info:              type=UEFI version=14.34.12 cpu=AMD64,AARCH64" in out


def test_psid_mismatch_matches_real(sim):
    sim.init("cx6dx-roce")
    sim.out("mlxsim", "fault", "add", "oem_psid", "--device", "3b:00.0", "psid=DEL0000000015")
    img = sim.dir / "dx.bin"
    sim.out("mlxsim", "mkimage", "--psid", "MT_0000000359", "--version", "22.43.2566", "--device-id", "4125",
            "-o", img)
    cap = real("mstflint_burn_psid_mismatch_cx4lx_1.txt")
    cap = cap[cap.index("root@kube01:~/mlnx# mstflint -d $CX_ADDRESS -i $FW_FILE_NAME burn") + 1:]
    cap = cap[:cap.index("```")]
    p = sim.run("mstflint", "-d", "3b:00.0", "-i", img, "burn")
    assert p.returncode == 1
    expected = [ln.replace("14.14.2320", "22.41.1000").replace("14.32.1900", "22.43.2566")
                .replace("DEL2420110034", "DEL0000000015").replace("MT_2420110034", "MT_0000000359") for ln in cap]
    assert p.stdout.split("\n")[:-1] == expected
    assert sim.card("3b:00.0")["fw"]["burned"] == "22.41.1000"


def test_burn_matches_real_flow(sim):
    sim.init("cx6dx-roce")
    img = sim.dir / "dx.bin"
    sim.out("mlxsim", "mkimage", "--psid", "MT_0000000359", "--version", "22.43.2566", "--device-id", "4125",
            "-o", img)
    cap = [ln.strip() for ln in real("mstflint_burn_cx4_fs3_1.txt")]
    out = sim.out("mstflint", "-d", "3b:00.0", "-i", img, "-y", "burn").split("\n")
    flat = [ln.strip() for ln in out]
    assert flat[:3] == ["", "Current FW version on flash:  22.41.1000", "New FW version:               22.43.2566"]
    assert out[1] == "    Current FW version on flash:  22.41.1000"
    assert flat[4:7] == cap[5:8]          # FSMST_INITIALIZE / Writing Boot image component / -I- ...
    assert out[-2] == "-I- To load new FW run mstfwreset or reboot machine."


# ---------------------------------------------------------------------------- mlxfwreset


def test_mlxfwreset_reset_matches_real(sim):
    sim.init("dgx-h100")
    sim.run("mst", "start", check_rc=0)
    cap = real("mlxfwreset_reset_cx7_1.txt")
    expected = cap[1:cap.index("sh-5.1# flint -d /dev/mst/mt4129_pciconf0 query") - 1]
    out = sim.out("mlxfwreset", "-d", "/dev/mst/mt4129_pciconf0", "reset", "-y").split("\n")
    assert out[:-1] == expected


def test_mlxfwreset_query_format(sim):
    sim.init("cx6dx-roce")
    out = sim.out("mstfwreset", "-d", "3b:00.0", "q").split("\n")
    assert out[0] == "Reset-levels:"
    rows = [ln for ln in out if re.match(r"^\d: ", ln)]
    for r in rows:
        assert re.match(r"^\d: .{62}-(Supported     |Not Supported |Not supported )(\(default\))?$", r), r
    assert "3: %-62s-%-14s(default)" % ("Driver restart and PCI reset", "Supported") in out
    assert "Reset-sync (relevant only for reset-level 3):" in out


# ---------------------------------------------------------------------------- lspci / ibstat / ibdev2netdev / ofed_info


def test_lspci_lines_match_real(sim):
    sim.init("mixed")
    out = sim.out("lspci", "-nn", "-d", "15b3:").split("\n")
    cap = real("lspci_nn_cx6_bf2_1.txt")
    assert out[0] == cap[1].replace("0f:00.0", "17:00.0")
    gb = real("lspci_gb200_1.txt")
    d = sim.out("lspci", "-D").split("\n")
    cx7 = [ln for ln in gb if ln.startswith("0000:03:00.0")][0].replace("0000:03:00.0", "0000:65:00.0")
    bf3 = [ln for ln in gb if ln.startswith("0006:03:00.0")][0].replace("0006:03:00.0", "0000:ca:00.0")
    dma = [ln for ln in gb if ln.startswith("0006:03:00.2")][0].replace("0006:03:00.2", "0000:ca:00.2")
    assert cx7 in d and bf3 in d and dma in d
    assert sim.out("lspci", "-n", "-s", "17:00.0") == "17:00.0 0207: 15b3:101b\n"


def test_lspci_vv_vpd_and_link(sim):
    sim.init("mixed")
    out = sim.out("lspci", "-vv", "-s", "ca:00.0")
    cap = [ln.strip() for ln in real("lspci_vvv_bf2_2.txt")]
    lines = [ln.strip() for ln in out.split("\n")]
    vpd = lines[lines.index("Capabilities: [48] Vital Product Data"):]
    vpd = vpd[:vpd.index("End") + 1]
    real_vpd = cap[cap.index("Capabilities: [48] Vital Product Data"):]
    real_vpd = [ln for ln in real_vpd[:real_vpd.index("End") + 1] if ln]
    assert [ln.split(":")[0] for ln in vpd] == [ln.split(":")[0] for ln in real_vpd]
    assert "\t\t\t[PN] Part number: 900-9D3B6-00CV-AA0       \n" in out  # BlueField padding (25)
    assert "\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM not supported\n" in out
    assert "\t\tLnkSta:\tSpeed 32GT/s (ok), Width x16 (ok)\n" in out  # pciutils 3.7
    assert "\tNUMA node: 1\n" in out and "\tPhysical Slot: 6\n" in out
    assert out.rstrip("\n").endswith("\tKernel driver in use: mlx5_core\n\tKernel modules: mlx5_core")


def test_ibstat_matches_real(sim):
    sim.init("dgx-h100")
    cap = real("ibstat_h100_cx7_cx6dx_1.txt")
    out = sim.out("ibstat").split("\n")

    def keys(lines):
        return [ln.split(":")[0] for ln in lines if ln]

    blocks = [i for i, ln in enumerate(cap) if ln.startswith("CA '")]
    real_block = cap[blocks[0]:blocks[1]]
    mine = out[:len(real_block)]
    assert keys(mine) == keys(real_block)
    assert mine[1] == real_block[1] == "\tCA type: MT4129"
    cas = [ln for ln in out if ln.startswith("CA '")]
    assert cas[:4] == ["CA 'mlx5_0'", "CA 'mlx5_1'", "CA 'mlx5_10'", "CA 'mlx5_11'"]   # lexical order
    eth = out[out.index("CA 'mlx5_1'"):out.index("CA 'mlx5_10'")]
    assert "\t\tLink layer: Ethernet" in eth and "\t\tCapability mask: 0x00010000" in eth
    ib = out[:out.index("CA 'mlx5_1'")]
    assert "\t\tLink layer: InfiniBand" in ib and "\t\tRate: 400" in ib


def test_ibdev2netdev_format(sim):
    sim.init("dgx-h100")
    out = sim.out("ibdev2netdev").split("\n")
    assert out[:3] == ["mlx5_0 port 1 ==> ibp24s0 (Up)", "mlx5_1 port 1 ==> enp41s0f0np0 (Up)",
                       "mlx5_10 port 1 ==> ibp206s0 (Up)"]
    names = [ln.split()[0] for ln in out if ln]
    assert names == sorted(names)
    v = sim.out("ibdev2netdev", "-v").split("\n")[0]
    assert re.match(r"^0000:18:00\.0 mlx5_0 \(MT4129 - MCX75310AAS-NEAT\) NVIDIA ConnectX-7 .* fw 28\.42\.1000 "
                    r"port 1 \(ACTIVE\) ==> ibp24s0 \(Up\)$", v)


def test_ofed_info(sim):
    sim.init("cx6dx-roce")
    cap = real("ofed_info_s_1.txt")
    assert cap[0] == "MLNX_OFED_LINUX-5.4-3.1.0.0:"
    assert sim.out("ofed_info", "-s") == "MLNX_OFED_LINUX-24.10-2.1.8.0:\n"
    assert sim.out("ofed_info", "-n") == "24.10-2.1.8.0\n"
    sim.init("cx6dx-roce", "node01", "--ofed", "OFED-internal-25.01-0.6.0")
    assert sim.out("ofed_info", "-s") == "OFED-internal-25.01-0.6.0:\n"
