"""Every injectable fault, from the state (mlxsim fault add) and from MLXSIM_FAULTS."""
import json
import time


def _img(sim, psid="MT_0000000359", version="22.43.2566", dev_id=4125):
    img = sim.dir / ("%s-%s.bin" % (psid, version))
    sim.out("mlxsim", "mkimage", "--psid", psid, "--version", version, "--device-id", str(dev_id), "-o", img)
    return img


def test_burn_fail(sim):
    sim.init("cx6dx-roce")
    img = _img(sim)
    sim.out("mlxsim", "fault", "add", "burn_fail", "--device", "3b:00.1")
    p = sim.run("mstflint", "-d", "3b:00.0", "-i", img, "-y", "burn")
    assert p.returncode == 1
    assert p.stdout.endswith("\rFSMST_INITIALIZE -   OK          \n\rWriting Boot image component -  47%\n"
                             "-E- Burning FS4 image failed: Firmware verifying failed!\n")
    assert sim.card("3b:00.0")["fw"]["burned"] == "22.41.1000"
    p = sim.run("mstfwmanager", "-u", "-i", img, "-y")
    assert p.returncode == 254                        # one card burnt, one failed
    assert "\b\b\b\bFail : Firmware verifying failed! \n" in p.stdout
    assert sim.card("3b:00.0")["fw"]["burned"] == "22.41.1000"
    assert sim.card("d8:00.0")["fw"]["burned"] == "22.43.2566"
    sim.out("mlxsim", "fault", "clear", "burn_fail")
    sim.out("mstflint", "-d", "3b:00.0", "-i", img, "-y", "burn")
    assert sim.card("3b:00.0")["fw"]["burned"] == "22.43.2566"


def test_semaphore_held_counts_down(sim):
    sim.init("cx6dx-roce")
    sim.out("mlxsim", "fault", "add", "semaphore_held", "--device", "3b:00.0", "count=2")
    p = sim.run("mstflint", "-d", "3b:00.0", "q")
    assert p.returncode == 1
    assert p.stdout == ('-E- Cannot open Device: 3b:00.0. Can not obtain Flash semaphore. You can run '
                        '"flint -clear_semaphore -d <device>" to force semaphore unlock. See help for details.\n')
    p = sim.run("mstconfig", "-d", "3b:00.1", "q")
    assert p.returncode == 3
    assert p.stdout.endswith("Next Boot\n-E- Failed to get nv_memic_conf settings ME_ICMD_STATUS_SEMAPHORE_TO\n")
    assert sim.run("mstflint", "-d", "3b:00.0", "q").returncode == 0          # consumed
    assert sim.run("mstflint", "-d", "d8:00.0", "q").returncode == 0          # other card never affected
    # mlxconfig clear_semaphore removes a stored fault
    sim.out("mlxsim", "fault", "add", "semaphore_held", "--device", "3b:00.0", "count=-1")
    assert sim.run("mstfwreset", "-d", "3b:00.0", "q").stdout == \
        "-E- Failed to send Register MFRL: ME_ICMD_STATUS_SEMAPHORE_TO.\n"
    p = sim.run("mstfwmanager", "--query", "-d", "3b:00.0")
    assert p.returncode == 1 and "  Status:           Failed to open device" in p.stdout
    assert "-E- Failed to query 3b:00.0 device, error : Failed to lock flash semaphore" in p.stderr
    assert sim.out("mstconfig", "-d", "3b:00.0", "clear_semaphore") == \
        "-W- Forcefully clearing device Semaphore...\n Done!\n"
    assert sim.run("mstflint", "-d", "3b:00.0", "q").returncode == 0
    sim.out("mlxsim", "fault", "add", "semaphore_held", "--device", "3b:00.0", "count=-1")
    assert sim.out("mstflint", "-d", "3b:00.0", "--clear_semaphore") == ""
    assert sim.run("mstflint", "-d", "3b:00.0", "q").returncode == 0


def test_faults_from_environment(sim):
    sim.init("cx6dx-roce")
    env = {"MLXSIM_FAULTS": json.dumps([{"type": "semaphore_held", "device": "d8:00.0", "count": 1},
                                        {"type": "oem_psid", "device": "mlx5_0"}])}
    assert sim.run("mstflint", "-d", "d8:00.0", "q", env=env).returncode == 1
    assert sim.run("mstflint", "-d", "d8:00.0", "q", env=env).returncode == 0   # count kept in the state
    assert "PSID:                  DEL0000000027" in sim.out("mstflint", "-d", "3b:00.0", "q", env=env)
    assert "PSID:                  MT_0000000359" in sim.out("mstflint", "-d", "3b:00.0", "q")


def test_missing_after_reset(sim):
    sim.init("cx6dx-roce")
    sim.out("mlxsim", "fault", "add", "missing_after_reset", "--device", "d8:00.0")
    assert "d8:00.1" in sim.out("lspci")
    sim.out("mstfwreset", "-d", "d8:00.0", "-y", "reset")
    for tool, args in (("lspci", []), ("ibdev2netdev", []), ("ibstat", []), ("mstconfig", ["q"])):
        assert "d8:00" not in sim.out(tool, *args) and "mlx5_2" not in sim.out(tool, *args), tool
    assert sim.run("mstconfig", "-d", "d8:00.0", "q").stdout == "-E- Failed to open the device\n"
    sim.out("mlxsim", "reboot")
    assert "d8:00.0" not in sim.out("lspci")
    sim.out("mlxsim", "fault", "clear")
    assert "d8:00.0" in sim.out("lspci")


def test_missing_after_reboot(sim):
    sim.init("mixed")
    sim.out("mlxsim", "fault", "add", "missing_after_reset", "--device", "65:00.0")
    sim.out("mlxsim", "reboot")
    assert "65:00.0" not in sim.out("lspci") and "17:00.0" in sim.out("lspci")
    assert sim.out("mst", "status", "-v").count("mlx5_") == 3


def test_hang(sim):
    sim.init("cx6dx-roce")
    sim.out("mlxsim", "fault", "add", "hang", "tool=mstflint", "seconds=0.4")
    t = time.time()
    sim.out("mstflint", "-d", "3b:00.0", "q")
    assert time.time() - t >= 0.4
    sim.out("lspci")
    assert sim.calls()[-1]["end"] - sim.calls()[-1]["start"] < 0.4
    p = sim.run("mstconfig", "-d", "3b:00.0", "q", env={"MLXSIM_FAULTS": '[{"type":"hang","seconds":0.5}]'},
                timeout=15)
    c = sim.calls()[-1]
    assert c["tool"] == "mstconfig" and c["end"] - c["start"] >= 0.5 and p.returncode == 0


def test_vpd_serial_faults(sim):
    sim.init("cx6dx-roce")
    sn = sim.card("3b:00.0")["vpd"]["SN"]
    assert "[SN] Serial number: %s" % sn in sim.out("lspci", "-vv", "-s", "3b:00.0")
    sim.out("mlxsim", "fault", "add", "vpd_missing_serial", "--device", "3b:00.0")
    out = sim.out("lspci", "-vv", "-s", "3b:00.0")
    assert "[SN]" not in out and "[PN] Part number: MCX623106AN-CDAT" in out
    sim.out("mlxsim", "fault", "clear")
    sim.out("mlxsim", "fault", "add", "vpd_duplicate_serial", "serial=MT2232X01234")
    out = sim.out("lspci", "-vvv")
    assert out.count("[SN] Serial number: MT2232X01234") == 4


def test_oem_psid(sim):
    sim.init("cx6dx-roce")
    sim.out("mlxsim", "fault", "add", "oem_psid", "--device", "3b:00.0", "psid=DEL0000000027")
    img = _img(sim)
    out = sim.out("mstfwmanager", "--query", "-i", img)
    assert out.count("PSID:             DEL0000000027") == 1
    assert "  Part Number:      MCX623106AN-CDA_Ax" in out and "No matching image found" in out
    assert sim.run("mstflint", "-d", "3b:00.0", "-i", img, "-y", "burn").returncode == 1
    p = sim.run("mstflint", "-d", "3b:00.0", "-i", img, "-y", "--allow_psid_change", "burn")
    assert p.returncode == 0
    assert ('    You are about to replace current PSID on flash - "DEL0000000027" with a different PSID - '
            '"MT_0000000359".\n    Note: It is highly recommended not to change the PSID.\n') in p.stdout
    assert "PSID:                  MT_0000000359" in sim.out("mstflint", "-d", "3b:00.0", "q")


def test_fwreset_unsupported_and_noreset_profile(sim):
    sim.init("cx6dx-roce")
    sim.out("mlxsim", "fault", "add", "fwreset_unsupported", "--device", "3b:00.0")
    q = sim.out("mstfwreset", "-d", "3b:00.0", "q")
    assert "3: %-62s-%-14s" % ("Driver restart and PCI reset", "Not Supported") in q
    assert "4: %-62s-%-14s(default)" % ("Warm Reboot", "Supported") in q
    p = sim.run("mstfwreset", "-d", "3b:00.0", "-l", "3", "-y", "reset")
    assert (p.returncode, p.stdout) == (1, "-E- Reset-level '3' is not supported in the current state of "
                                           "this device.\n")
    # default level is then 4: a warm reboot of the whole host
    sim.out("mstconfig", "-d", "d8:00.0", "-y", "set", "SRIOV_EN=1")
    out = sim.out("mstfwreset", "-d", "3b:00.0", "-y", "reset")
    assert "4: Warm Reboot" in out and "-I- %-40s-Done" % "Sending reboot command to machine" in out
    assert sim.card("d8:00.0")["nv"]["SRIOV_EN"]["current"] == 1
    sim.init("dgx-h100-noreset")
    p = sim.run("mlxfwreset", "-d", "18:00.0", "-y", "reset", "--level", "3")
    assert p.returncode == 1 and "Reset-level '3' is not supported" in p.stdout


def test_link_down_and_pcie_degraded(sim):
    sim.init("dgx-h100")
    sim.out("mlxsim", "fault", "add", "link_down", "--device", "mlx5_3")
    sim.out("mlxsim", "fault", "add", "pcie_degraded", "--device", "40:00.0", "speed=16GT/s", "width=8")
    assert "mlx5_3 port 1 ==> ibp64s0 (Down)" in sim.out("ibdev2netdev")
    assert "(DOWN  ) ==> ibp64s0 (Down)" in sim.out("ibdev2netdev", "-v")
    st = sim.out("ibstat", "mlx5_3")
    assert "\t\tState: Down\n" in st and "\t\tState: Active\n" in sim.out("ibstat", "mlx5_0")
    vv = sim.out("lspci", "-vv", "-s", "40:00.0")
    assert "\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM not supported\n" in vv
    assert "\t\tLnkSta:\tSpeed 16GT/s (downgraded), Width x8 (downgraded)\n" in vv
    # pciutils 3.7 (the simulator's, as Ubuntu 22.04 and RHEL 9) says "(ok)"; 3.8 and later mark only a downgrade
    assert "LnkSta:\tSpeed 32GT/s (ok), Width x16 (ok)" in sim.out("lspci", "-vv", "-s", "18:00.0")


def test_set_ignored(sim):
    """`set` prints its table, `Done!`, exits 0 - and the next-boot value stays (the simulator's
    modelling of firmware that acknowledges a TLV write and keeps the old value)."""
    sim.init("cx6dx-roce")
    sim.out("mlxsim", "fault", "add", "set_ignored", "--device", "3b:00.0", "param=SRIOV_EN")
    p = sim.run("mstconfig", "-d", "3b:00.0", "-y", "set", "SRIOV_EN=1", "NUM_OF_VFS=4")
    assert p.returncode == 0 and p.stdout.endswith(
        "Applying... Done!\n-I- Please reboot machine to load new configurations.\n")
    nv = sim.card("3b:00.0")["nv"]
    assert nv["SRIOV_EN"]["next"] == 0                     # ignored
    assert nv["NUM_OF_VFS"]["next"] == 4                   # the other parameter of the same set is taken
    sim.out("mstconfig", "-d", "d8:00.0", "-y", "set", "SRIOV_EN=1")
    assert sim.card("d8:00.0")["nv"]["SRIOV_EN"]["next"] == 1   # another card is not affected
    # without param: every parameter of the set; count: only that many sets
    sim.out("mlxsim", "fault", "clear")
    sim.out("mlxsim", "fault", "add", "set_ignored", "--device", "d8:00.1", "count=1")
    sim.out("mstconfig", "-d", "d8:00.0", "-y", "set", "SRIOV_EN=0", "NUM_OF_VFS=2")
    assert (sim.card("d8:00.0")["nv"]["SRIOV_EN"]["next"], sim.card("d8:00.0")["nv"]["NUM_OF_VFS"]["next"]) == (1, 0)
    sim.out("mstconfig", "-d", "d8:00.0", "-y", "set", "SRIOV_EN=0", "NUM_OF_VFS=2")
    assert (sim.card("d8:00.0")["nv"]["SRIOV_EN"]["next"], sim.card("d8:00.0")["nv"]["NUM_OF_VFS"]["next"]) == (0, 2)
