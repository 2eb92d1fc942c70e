"""Simulator behaviour: NV config lifecycle, firmware lifecycle, sharing rules, CLI rules, JSON,
the call log and concurrent use of one host."""
import json
import subprocess
import time

import pytest


def nv(sim, pci, key, which="next"):
    card = sim.card(pci)
    for f in card["functions"]:
        if f["pci"].endswith(pci) and key in f["nv"]:
            return f["nv"][key][which]
    return card["nv"][key][which]


def test_init_is_deterministic_per_hostname(sim):
    sim.init("dgx-h100", "dgx-a01", cli=True)
    a = sim.state_data()
    sim.init("dgx-h100", "dgx-a01", cli=True)
    b = sim.state_data()
    assert a["cards"] == b["cards"]
    sim.init("dgx-h100", "dgx-a02")
    c = sim.state_data()

    def ids(s):
        return [(x["base_mac"], x["vpd"]["SN"]) for x in s["cards"]]

    assert not set(ids(a)) & set(ids(c))
    macs = [x["base_mac"] for x in a["cards"]]
    assert len(set(macs)) == len(macs) == 10
    assert a["cards"][0]["base_guid"] == a["cards"][0]["base_mac"][:6] + "0300" + a["cards"][0]["base_mac"][6:]
    p = sim.run("mlxsim", "init", "--profile", "dgx-h100", "--hostname", "x")
    assert p.returncode == 1 and "exists" in p.stderr


def test_set_changes_next_only_then_reset_and_reboot_activate(sim):
    sim.init("dgx-h100")
    sim.out("mlxconfig", "-d", "18:00.0", "-y", "set", "SRIOV_EN=True", "NUM_OF_VFS=8", "LINK_TYPE_P1=eth")
    assert nv(sim, "18:00.0", "SRIOV_EN") == 1 and nv(sim, "18:00.0", "SRIOV_EN", "current") == 0
    assert nv(sim, "18:00.0", "LINK_TYPE_P1") == 2 and nv(sim, "18:00.0", "LINK_TYPE_P1", "current") == 1
    q = sim.out("mlxconfig", "-d", "18:00.0", "-e", "q", "SRIOV_EN", "NUM_OF_VFS", "LINK_TYPE_P1")
    assert q.count("\n*       ") == 3 and "The '*' shows parameters" in q
    assert "*" not in sim.out("mlxconfig", "-d", "18:00.0", "q", "SRIOV_EN").split("Configurations:")[1]
    pending = json.loads(sim.out("mlxsim", "show", "--pending"))
    assert sorted(pending["cx7-compute0"]["nv"]) == ["LINK_TYPE_P1", "NUM_OF_VFS", "SRIOV_EN"]
    # lspci/ibdev2netdev still show the running (IB) configuration
    assert sim.out("lspci", "-s", "18:00.0").startswith("18:00.0 Infiniband controller")
    sim.out("mlxfwreset", "-d", "18:00.0", "-y", "reset")
    assert nv(sim, "18:00.0", "SRIOV_EN", "current") == 1
    assert nv(sim, "18:00.0", "LINK_TYPE_P1", "current") == 2
    assert sim.out("lspci", "-s", "18:00.0").startswith("18:00.0 Ethernet controller")
    assert "mlx5_0 port 1 ==> enp24s0np0 (Up)" in sim.out("ibdev2netdev")
    assert "Total VFs: 8" in sim.out("lspci", "-vv", "-s", "18:00.0")
    # other cards untouched by that reset; a reboot activates everything
    sim.out("mlxconfig", "-d", "40:00.0", "-y", "set", "PCI_ATOMIC_MODE=4")
    assert nv(sim, "40:00.0", "PCI_ATOMIC_MODE", "current") == 0
    sim.out("mlxsim", "reboot")
    assert nv(sim, "40:00.0", "PCI_ATOMIC_MODE", "current") == 4
    assert sim.state_data()["mst_started"] is False


def test_reset_command_restores_defaults_in_next(sim):
    sim.init("cx6dx-roce")
    sim.out("mstconfig", "-d", "3b:00.0", "-y", "set", "CNP_DSCP_P1=26", "ROCE_CC_PRIO_MASK_P2=8")
    out = sim.out("mstconfig", "-d", "3b:00.0", "-y", "reset")
    assert out == ("\n Reset configuration for device 3b:00.0? (y/n) [n] : y\nApplying... Done!\n"
                   "-I- Please reboot machine to load new configurations.\n")
    assert nv(sim, "3b:00.0", "CNP_DSCP_P1") == 48 and nv(sim, "3b:00.0", "ROCE_CC_PRIO_MASK_P2") == 255
    p = sim.run("mstconfig", "-d", "3b:00.0", "reset")                   # no answer on stdin
    assert p.returncode == 2 and p.stdout.endswith(": -E- Aborted by user.\n")


def test_global_shared_port_per_port_func_per_func(sim):
    sim.init("cx6dx-roce")
    sim.out("mstconfig", "-d", "3b:00.0", "-y", "set", "SRIOV_EN=1", "NUM_OF_VFS=16", "CNP_DSCP_P2=30",
            "ROCE_CONTROL=ROCE_DISABLE")
    q1 = sim.out("mstconfig", "-d", "3b:00.1", "q", "SRIOV_EN", "NUM_OF_VFS", "CNP_DSCP_P1", "CNP_DSCP_P2",
                 "ROCE_CONTROL")
    rows = {ln.split()[0]: ln.split()[1] for ln in q1.split("Configurations:")[1].split("\n")[1:] if ln.strip()}
    assert rows == {"SRIOV_EN": "True(1)", "NUM_OF_VFS": "16", "CNP_DSCP_P1": "48", "CNP_DSCP_P2": "30",
                    "ROCE_CONTROL": "ROCE_ENABLE(2)"}               # per-function: .1 keeps its own
    assert nv(sim, "3b:00.0", "ROCE_CONTROL") == 1
    # the other card is not affected
    assert nv(sim, "d8:00.0", "NUM_OF_VFS") == 0


def test_single_port_card_has_no_p2(sim):
    sim.init("dgx-h100")
    p = sim.run("mlxconfig", "-d", "18:00.0", "q", "LINK_TYPE_P2")
    assert p.returncode == 3 and p.stdout.endswith("-E- Unknown Parameter: LINK_TYPE_P2\n")
    p = sim.run("mstconfig", "-d", "3b:00.0", "q", "LINK_TYPE_P1")  # no such card here -> open error
    assert p.stdout == "-E- Failed to open the device\n" and p.returncode == 3


@pytest.mark.parametrize("value,shown", [("eth", "ETH(2)"), ("ETH", "ETH(2)"), ("2", "ETH(2)"), ("ib", "IB(1)")])
def test_enum_values(sim, value, shown):
    sim.init("mixed")
    out = sim.out("mlxconfig", "-d", "17:00.0", "-y", "set", "LINK_TYPE_P1=" + value)
    row = [ln for ln in out.split("\n") if "LINK_TYPE_P1" in ln][0]
    assert row.split()[-1] == shown


def test_value_errors(sim):
    sim.init("mixed")
    cases = [("SRIOV_EN=yes", "-E- Unknown value yes"), ("SRIOV_EN=2", "-E- Unknown value 2"),
             ("NUM_OF_VFS=70000", "-E- The value 70000 is not valid,  as its size is 16 bits"),
             ("NUM_OF_VFS=abc", "-E- Cannot parse the value"),
             ("CNP_802P_PRIO_P1=8", "-E- The value 8 is not valid,  as its size is 3 bits"),
             ("FOO=1", "-E- Unknown Parameter: FOO"),
             ("INTERNAL_CPU_MODEL=1", "-E- The Device doesn't support INTERNAL_CPU_MODEL parameter")]
    for arg, msg in cases:
        p = sim.run("mlxconfig", "-d", "17:00.0", "-y", "set", arg)
        assert p.returncode == 3, arg
        lines = p.stdout.split("\n")
        assert lines[-2] == msg, (arg, p.stdout)
        assert lines[-3].startswith("Configurations:") and lines[-3].endswith("New")
    for arg in ("SRIOV_EN=TRUE", "SRIOV_EN=false", "SRIOV_EN=1", "SRIOV_EN=0", "NUM_OF_VFS=0x10"):
        sim.out("mlxconfig", "-d", "17:00.0", "-y", "set", arg)
    assert nv(sim, "17:00.0", "NUM_OF_VFS") == 16
    # max from the device capability is checked when applying
    p = sim.run("mlxconfig", "-d", "17:00.0", "-y", "set", "NUM_OF_VFS=200")
    assert p.returncode == 3
    assert p.stdout.endswith("Applying... Failed!\n-E- Parameter NUM_OF_VFS' value is larger than maximum "
                             "allowed 127\n")
    # newer texts
    p = sim.run("mlxconfig", "-d", "17:00.0", "q", "FOO_P1", env={"MLXSIM_MFT_VERSION": "4.34.0"})
    assert p.stdout.endswith("-E- Failed to find Param / TLV with name 'FOO_P1' port 1 module -1\n")
    # CRYPTO_POLICY is a plain parameter (as the real listings print it); a card the state marks read-only
    sim.out("mlxconfig", "-d", "17:00.0", "-y", "set", "CRYPTO_POLICY=1")
    _mark_read_only(sim, "17:00.0", "CRYPTO_POLICY")
    p = sim.run("mlxconfig", "-d", "17:00.0", "-y", "set", "CRYPTO_POLICY=1")
    assert p.stdout.endswith("-E- The Device doesn't support CRYPTO_POLICY parameter\n")
    p = sim.run("mlxconfig", "-d", "17:00.0", "-y", "set", "CRYPTO_POLICY=1", env={"MLXSIM_MFT_VERSION": "4.36.0"})
    assert p.stdout.endswith("-E- Operation is not supported (Read only TLV: nv_crypto_conf)\n")


def _mark_read_only(sim, pci, name):
    data = sim.state_data()
    for card in data["cards"]:
        if any(f["pci"].endswith(pci) for f in card["functions"]):
            card["read_only"] = [name]
    with open(sim.state, "w") as fh:
        json.dump(data, fh)


def test_parse_errors_and_option_order(sim):
    sim.init("cx6dx-roce")
    # options after the command: q -e asks for a parameter called "-e"
    p = sim.run("mstconfig", "-d", "3b:00.0", "q", "-e")
    assert p.returncode == 3
    assert p.stdout.endswith("Configurations:                              Next Boot\n-E- Unknown Parameter: -e\n")
    p = sim.run("mstconfig", "-d", "3b:00.0", "set", "-y", "SRIOV_EN=1")
    assert p.returncode == 3
    assert p.stdout.startswith("-E- Invalid Configuration argument -y\n    NAME:\n        mstconfig\n")
    assert nv(sim, "3b:00.0", "SRIOV_EN") == 0
    for args, msg in [(["-d", "3b:00.0"], "-E- No command found. For more information please read the help message:"),
                      (["-d", "3b:00.0", "set"], "-E- missing configuration arguments. For more information please "
                                                 "run mstconfig -h|--help."),
                      (["-d", "3b:00.0", "set", "A=1", "A=2"], "-E- Duplicate parameter, A."),
                      (["-d", "3b:00.0", "set", "SRIOV_EN"], "-E- Invalid Configuration argument SRIOV_EN"),
                      (["-d", "3b:00.0", "r", "-y"], "-E- reset command expects no argument but 1 argument received"),
                      (["-d", "3b:00.0", "bogus"], "-E- invalid argument: bogus"),
                      (["set", "A=1"], "-E- set command expects device to be specified."),
                      (["-d", "3b:00.0", "-j", "x.json", "q"], "-E- invalid argument: -j")]:
        p = sim.run("mstconfig", *args)
        assert p.returncode == 3, args
        assert p.stdout.split("\n")[0] == msg, args
        assert "    SYNOPSIS:" in p.stdout
    # real mstconfig 4.21 help text (captured from Debian's binary)
    real = subprocess.run(["/usr/bin/mstconfig", "-h"], capture_output=True, text=True, check=False) \
        if __import__("os").path.exists("/usr/bin/mstconfig") else None
    if real is not None and real.returncode == 0:
        assert sim.out("mstconfig", "-h") == real.stdout
    assert sim.out("mstconfig", "-v") == "mstconfig, mstflint 4.21.0, Git SHA Hash: N/A\n"


def test_device_selection_and_mst(sim):
    sim.init("cx6dx-roce")
    p = sim.run("mlxconfig", "-d", "/dev/mst/mt4125_pciconf0", "q")
    assert (p.returncode, p.stdout) == (3, "-E- Failed to open the device\n")
    p = sim.run("mlxconfig", "q")
    assert p.returncode == 3
    assert p.stdout == ("-E- No devices found, mst might be stopped. You may need to run 'mst start' to load "
                        "MST modules. \n")
    sim.out("mst", "start")
    out = sim.out("mlxconfig", "q", "SRIOV_EN")                     # every device, one block per card
    assert out.count("Device #") == 2 and "Device #2:" in out
    assert "Device:             /dev/mst/mt4125_pciconf1" in out
    out = sim.out("mstconfig", "q", "SRIOV_EN")                     # every PCI function
    assert out.count("Device #") == 4 and "Device:         0000:d8:00.1    " in out
    for dev in ("/dev/mst/mt4125_pciconf0.1", "mlx5_1", "0000:3b:00.1", "3b:00.1"):
        out = sim.out("mlxconfig", "-d", dev, "q", "SRIOV_EN")
        assert "Device:             %-20s\n" % dev in out
    assert sim.run("mstconfig", "-d", "mlx5_1", "q").returncode == 3


def test_json_output(sim):
    sim.init("dgx-h100")
    f = sim.dir / "q.json"
    sim.out("mlxconfig", "-d", "29:00.0", "-y", "set", "NUM_OF_VFS=4")
    out = sim.out("mlxconfig", "-d", "29:00.0", "-e", "-j", f, "q", "NUM_OF_VFS", "LINK_TYPE_P2", "CRYPTO_POLICY")
    assert out == "Query output saved to %s successfully\n" % f
    text = f.read_text()
    assert text.startswith('{\n\t"Device #1" : \n\t{\n\t\t"description" : "NVIDIA ConnectX-7')
    data = json.loads(text)
    dev = data["Device #1"]
    assert sorted(dev) == ["description", "device", "device_type", "name", "tlv_configuration"]
    assert dev["device"] == "29:00.0" and dev["device_type"] == "ConnectX7" and dev["name"] == "MCX755106AS-HEA_Ax"
    tlv = dev["tlv_configuration"]
    assert tlv["NUM_OF_VFS"] == {"current_value": 0, "default_value": 0, "modified": True, "next_value": 4,
                                 "read_only": False}
    assert tlv["LINK_TYPE_P2"]["next_value"] == "ETH(2)"
    assert tlv["CRYPTO_POLICY"]["read_only"] is False           # a plain parameter, as the real listings show it
    keys = [k.strip().split('"')[1] for k in text.split("\n") if k.strip().startswith('"')]
    assert keys[:5] == ["Device #1", "description", "device", "device_type", "name"]   # sorted keys
    p = sim.run("mlxconfig", "-d", "29:00.0", "-j", f, "set", "NUM_OF_VFS=1")
    assert p.stdout.startswith("-E- Json format is only supported for query command.\n")
    p = sim.run("mlxconfig", "-d", "29:00.0", "-j", f, "q", "FOO")
    assert p.returncode == 3
    assert p.stdout == ("-E- Unknown Parameter: FOO\nQuery output saved to %s but one or more devices had an "
                        "error.\n" % f)


def test_firmware_lifecycle(sim):
    sim.init("mixed")
    img = sim.dir / "cx7.bin"
    sim.out("mlxsim", "mkimage", "--psid", "MT_0000000838", "--version", "28.43.2566", "--device-id", "4129",
            "--part-number", "MCX75310AAS-NEAT", "--pxe", "3.7.500", "--uefi", "14.36.16", "-o", img)
    q = sim.out("flint", "-i", img, "q")
    assert "FW Version:            28.43.2566" in q and "PSID:                  MT_0000000838" in q
    out = sim.out("mlxfwmanager", "-d", "65:00.0", "-i", img, "--query")
    assert "Update required" in out
    sim.out("flint", "-d", "65:00.0", "-i", img, "-y", "burn")
    card = sim.card("65:00.0")
    assert card["fw"]["burned"] == "28.43.2566" and card["fw"]["running"] == "28.42.1000"
    q = sim.out("flint", "-d", "65:00.0", "q")
    assert "FW Version:            28.43.2566\nFW Version(Running):   28.42.1000\n" in q
    assert "Firmware version: 28.42.1000" in sim.out("ibstat", "mlx5_1")
    # same version again: note + question
    p = sim.run("flint", "-d", "65:00.0", "-i", img, "burn", input="n\n")
    assert p.returncode == 1
    assert "Note: The new FW version is the same as the current FW version on flash." in p.stdout
    sim.out("mlxfwreset", "-d", "65:00.0", "-y", "-l", "3", "reset")
    card = sim.card("65:00.0")
    assert card["fw"]["running"] == "28.43.2566"
    assert "FW Version(Running)" not in sim.out("flint", "-d", "65:00.0", "q")
    # wrong device family
    p = sim.run("flint", "-d", "17:00.0", "-i", img, "-y", "burn")
    assert p.returncode == 1
    assert p.stdout == ("-E- Burning FS4 image failed: FW image file cannot be programmed to device ConnectX6, "
                        "it is intended for: ConnectX7 only\n")


def test_mlxfwmanager_update_is_sequential_and_returns_codes(sim):
    sim.init("dgx-h100")
    img = sim.dir / "cx7.bin"
    sim.out("mlxsim", "mkimage", "--psid", "MT_0000000838", "--version", "28.43.2566", "--device-id", "4129",
            "-o", img)
    p = sim.run("mlxfwmanager", "-u", "-i", img, "-y", env={"MLXSIM_TIME_SCALE": "0.001"})
    assert p.returncode == 254                     # 8 burnt, storage cards: no matching image
    assert p.stdout.count("Updating FW ...") == 8
    assert p.stdout.count("Error - no matching image found") == 2
    assert "-E- One or more errors were encountered." in p.stderr
    calls = [c for c in sim.calls() if c["tool"] == "mlxfwmanager"]
    assert calls[-1]["end"] - calls[-1]["start"] >= 8 * 90 * 0.001     # one burn after the other
    assert all(c["fw"]["burned"] == "28.43.2566" for c in sim.state_data()["cards"] if c["psid"] == "MT_0000000838")
    p = sim.run("mlxfwmanager", "-u", "-i", img, "-y", "-d", "18:00.0")
    assert p.returncode == 0
    assert p.stdout.endswith("---------\nAll listed device(s) firmware images are up to date.\n\n")
    p = sim.run("mlxfwmanager", "-u", "-i", img, "-y", "-f", "-d", "18:00.0")
    assert p.returncode == 0 and "Forced update required" in p.stdout and "Done" in p.stdout
    bad = sim.dir / "bad.bin"
    bad.write_text("not an image!")
    p = sim.run("mlxfwmanager", "-i", bad)
    assert p.returncode == 17 and "-E- Error parsing file: %s" % bad in p.stderr


def test_image_rejections_like_real(sim):
    sim.init("cx6dx-roce")
    junk = sim.dir / "junk.bin"
    junk.write_text("hello world")                 # 11 bytes: not 4-aligned
    p = sim.run("mstflint", "-i", junk, "q")
    assert (p.returncode, p.stdout) == (1, "-E- Cannot open Image: %s. Image size should be 4-bytes aligned. "
                                           "Make sure file %s is in the right format (binary image)\n" % (junk, junk))
    junk.write_text("hello world!")
    assert sim.run("mstflint", "-i", junk, "q").stdout == ("-E- Cannot open Image: %s. Invalid Firmware Format "
                                                           "(found FS Gen 1)\n" % junk)
    zero = sim.dir / "zero.bin"
    zero.write_bytes(b"\0" * 4096)
    assert sim.run("mstflint", "-i", zero, "q").stdout == "-E- Failed to query image: %s. No valid image found\n" % zero
    missing = sim.dir / "nope.bin"
    assert sim.run("mstflint", "-d", "3b:00.0", "-i", missing, "burn").stdout == (
        '-E- Cannot open Image: %s. Can not open file "%s" - No such file or directory\n' % (missing, missing))
    assert sim.run("mstflint", "-d", "18:00.0", "q").stdout == ("-E- Cannot open Device: 18:00.0. No such file or "
                                                                "directory. MFE_CR_ERROR\n")
    p = sim.run("mstflint", "-d", "3b:00.0", "xyz")
    assert p.returncode == 1 and p.stdout.startswith("Invalid command: xyz\nNAME\n    MstFlint - Flash Interface")
    p = sim.run("mstfwreset", "-d", "18:00.0", "q")
    assert p.stdout == "-E- Failed to Identify Device: 18:00.0, mopen: No such file or directory\n.\n"


def test_call_log(sim):
    sim.init("cx6dx-roce")
    sim.out("mstconfig", "-d", "3b:00.0", "q", "SRIOV_EN")
    sim.run("mstflint", "-d", "99:00.0", "q")
    calls = sim.calls()
    assert [c["tool"] for c in calls] == ["mstconfig", "mstflint"]
    assert calls[0]["argv"] == ["mstconfig", "-d", "3b:00.0", "q", "SRIOV_EN"]
    assert calls[1]["rc"] == 1 and calls[0]["rc"] == 0
    assert all(set(c) == {"tool", "argv", "start", "end", "rc", "pid"} for c in calls)
    assert calls[0]["start"] <= calls[0]["end"] <= calls[1]["start"]
    assert "mstconfig      1" in sim.out("mlxsim", "calls", "--summary")
    other = sim.dir / "other.jsonl"
    sim.out("lspci", env={"MLXSIM_LOG": str(other)})
    assert json.loads(other.read_text())["tool"] == "lspci"


def test_latency_model_scales(sim):
    sim.init("cx6dx-roce")
    sim.out("mstconfig", "-d", "3b:00.0", "q", "SRIOV_EN", env={"MLXSIM_TIME_SCALE": "0.1"})
    c = sim.calls()[-1]
    assert 0.15 <= c["end"] - c["start"] < 2


def test_concurrent_updates_are_not_lost(sim):
    sim.init("dgx-h100")
    img = sim.dir / "cx7.bin"
    sim.out("mlxsim", "mkimage", "--psid", "MT_0000000838", "--version", "28.43.2566", "--device-id", "4129",
            "-o", img)
    env = dict(sim.env)
    env["MLXSIM_TIME_SCALE"] = "0.005"          # each burn "takes" 0.45 s
    procs = []
    buses = ["18", "40", "4f", "5e", "9a", "c0", "ce", "dc"]
    for i, bus in enumerate(buses):
        procs.append(subprocess.Popen(["mlxconfig", "-d", "%s:00.0" % bus, "-y", "set", "NUM_OF_VFS=%d" % (i + 1),
                                       "CNP_DSCP_P1=%d" % (10 + i)], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, stdin=subprocess.DEVNULL))
        procs.append(subprocess.Popen(["flint", "-d", "%s:00.0" % bus, "-i", str(img), "-y", "burn"], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL))
    for p in procs:
        p.communicate(timeout=60)
        assert p.returncode == 0
    for i, bus in enumerate(buses):
        card = sim.card("%s:00.0" % bus)
        assert card["nv"]["NUM_OF_VFS"]["next"] == i + 1
        assert card["nv"]["CNP_DSCP_P1"]["next"] == 10 + i
        assert card["fw"]["burned"] == "28.43.2566"


def test_a_burn_does_not_hold_up_another_card(sim):
    """No global serialisation while "burning": a burn on one card finishes while a long one on another card
    is still running. (Not a timing bound: the long burn takes ~9 s, the short one none; were burns serialised,
    the short one would wait for the long one to end.)"""
    sim.init("dgx-h100")
    img = sim.dir / "cx7.bin"
    sim.out("mlxsim", "mkimage", "--psid", "MT_0000000838", "--version", "28.43.2566", "--device-id", "4129",
            "-o", img)
    slow = subprocess.Popen(["flint", "-d", "18:00.0", "-i", str(img), "-y", "burn"],
                            env=dict(sim.env, MLXSIM_TIME_SCALE="0.1"), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        time.sleep(1.5)  # let the slow burn start first
        fast = subprocess.run(["flint", "-d", "40:00.0", "-i", str(img), "-y", "burn"],
                              env=dict(sim.env, MLXSIM_TIME_SCALE="0"), capture_output=True, text=True,
                              timeout=120, check=False)
        assert fast.returncode == 0, fast.stderr
        assert slow.poll() is None, "the burn of 40:00.0 waited for the burn of 18:00.0"
    finally:
        slow.communicate(timeout=120)
    assert slow.returncode == 0
    assert sim.card("18:00.0")["fw"]["burned"] == sim.card("40:00.0")["fw"]["burned"] == "28.43.2566"


def test_show_confs(sim):
    sim.init("cx6dx-roce")
    out = sim.out("mstconfig", "-d", "3b:00.0", "i")
    assert out.startswith("\nList of configurations the device 3b:00.0 may support:\n")
    assert "\t\tGLOBAL PCI CONF:" in out
    assert "                    SRIOV_EN=<False|True>                   Enable Single-Root I/O Virtualization (SR-IOV)\n" in out
    assert "                    LINK_TYPE_P2=<ETH|IB>                   \n" in out
    assert len(out.split("\n")) > 1500


def test_mlxsim_admin(sim):
    assert "dgx-h100" in sim.out("mlxsim", "profiles")
    sim.init("mixed")
    data = json.loads(sim.out("mlxsim", "show"))
    assert data["profile"] == "mixed" and len(data["cards"]) == 3
    assert [c["family"] for c in data["cards"]] == ["ConnectX6", "ConnectX7", "BlueField3"]
    assert data["cards"][2]["psid"] == "MT_0000000884"


def test_arrays_and_hidden_advanced_params(sim):
    sim.init("cx6dx-roce")
    sim.out("mstconfig", "-d", "3b:00.0", "-y", "set", "ESWITCH_HAIRPIN_DESCRIPTORS[1]=3")
    out = sim.out("mstconfig", "-d", "3b:00.0", "-e", "q", "ESWITCH_HAIRPIN_DESCRIPTORS[0..1]",
                  "ESWITCH_HAIRPIN_DESCRIPTORS")
    assert "         ESWITCH_HAIRPIN_DESCRIPTORS[0]      0               0               0               \n" in out
    assert "*        ESWITCH_HAIRPIN_DESCRIPTORS[1]      0               0               3               \n" in out
    assert "*        ESWITCH_HAIRPIN_DESCRIPTORS         Array[0..7]     Array[0..7]     Array[0..7]     \n" in out
    p = sim.run("mstconfig", "-d", "3b:00.0", "-y", "set", "ESWITCH_HAIRPIN_DESCRIPTORS[9]=1")
    assert p.returncode == 3 and p.stdout.endswith("-E- Index 9 is out of range\n")
    # MAX_ACC_OUT_READ only shows up once ADVANCED_PCI_SETTINGS is active
    p = sim.run("mstconfig", "-d", "3b:00.0", "q", "MAX_ACC_OUT_READ")
    assert p.stdout.endswith("-E- The Device doesn't support MAX_ACC_OUT_READ parameter\n")
    sim.out("mstconfig", "-d", "3b:00.0", "-y", "set", "ADVANCED_PCI_SETTINGS=1")
    assert sim.run("mstconfig", "-d", "3b:00.0", "q", "MAX_ACC_OUT_READ").returncode == 3
    sim.out("mlxsim", "reboot")
    assert "         MAX_ACC_OUT_READ                    0               \n" in \
        sim.out("mstconfig", "-d", "3b:00.0", "q", "MAX_ACC_OUT_READ")


def test_boot_id_and_activity_count_what_changed_the_devices(sim):
    sim.init("cx6dx-roce", "node07")
    img = sim.dir / "MT_0000000359-22.43.2566.bin"
    sim.out("mlxsim", "mkimage", "--psid", "MT_0000000359", "--version", "22.43.2566", "--device-id", "4125",
            "-o", img)
    first = sim.out("mlxsim", "boot-id")
    assert first == "mlxsim-node07-boot-0\n"
    assert sim.out("mlxsim", "boot-id") == first           # stable while the host stays up
    act = json.loads(sim.out("mlxsim", "activity"))
    assert act == {"boots": 0, "cards": {"cx6dx0": {"burns": 0, "fwresets": 0, "pci": "0000:3b:00.0"},
                                         "cx6dx1": {"burns": 0, "fwresets": 0, "pci": "0000:d8:00.0"}}}
    sim.out("mstflint", "-d", "3b:00.0", "-i", img, "-y", "burn")
    sim.out("mstfwmanager", "-u", "-i", img, "-y", "-f")                  # both cards, forced
    sim.out("mstfwreset", "-d", "d8:00.0", "-y", "reset")
    sim.out("mlxsim", "fault", "add", "burn_fail", "--device", "3b:00.0")
    assert sim.run("mstflint", "-d", "3b:00.0", "-i", img, "-y", "burn").returncode == 1   # not counted
    sim.out("mlxsim", "reboot")
    act = json.loads(sim.out("mlxsim", "activity"))
    assert act["boots"] == 1
    assert act["cards"]["cx6dx0"] == {"burns": 2, "fwresets": 0, "pci": "0000:3b:00.0"}
    assert act["cards"]["cx6dx1"] == {"burns": 1, "fwresets": 1, "pci": "0000:d8:00.0"}
    assert sim.out("mlxsim", "boot-id") == "mlxsim-node07-boot-1\n"
