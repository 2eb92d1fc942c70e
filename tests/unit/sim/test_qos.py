"""mlnx_qos, cma_roce_tos and the simulated sysfs/configfs root vs the real captures and mlnx-tools;
volatility (reboot, driver reload); the collection's roce_qos core end to end against the simulator."""
import os

import pytest

from sim_helpers import real

ETH = "enp59s0f0np0"          # cx6dx-roce: mlx5_0 port 1
ETH2 = "enp216s0f1np1"        # mlx5_3
IB = "ibp24s0"                # dgx-h100: mlx5_0 (InfiniBand)


def block(cap, command, stop="root@"):
    """The output lines after the prompt line ending with ``command`` up to the next prompt."""
    start = [i for i, ln in enumerate(cap) if ln.rstrip().endswith(command)][0] + 1
    end = next((i for i in range(start, len(cap)) if cap[i].startswith(stop) or cap[i].startswith("+ ")), len(cap))
    return cap[start:end]


def detab(lines):
    """The captures were published with TABs expanded to 8 columns (INDEX.md: 'tabs->spaces')."""
    return [ln.expandtabs(8) for ln in lines]


def root(sim):
    return sim.dir / "root"


def qos(sim, *args, rc=0):
    return sim.run("mlnx_qos", "-i", *args, check_rc=rc).stdout


# ---------------------------------------------------------------------------- fidelity


def test_default_state_matches_the_pcp_capture(sim):
    sim.init("cx6dx-roce", cli=True)
    cap = real("mlnx_qos_pcp_and_show_gids_1.txt")
    out = qos(sim, ETH).split("\n")
    assert out[-1] == ""
    assert detab(out[:-1]) == block(cap, "# mlnx_qos -i ens6")
    assert out[6] == "\tenabled     0   0   0   0   0   0   0   0   "          # TAB, trailing spaces
    assert out[7] == "\tbuffer      0   0   0   0   0   0   0   0   "
    assert out[9] == "\t priority:  1" and out[8] == "tc: 0 ratelimit: unlimited, tsa: vendor"


def test_trust_dscp_matches_both_captures(sim):
    sim.init("cx6dx-roce", cli=True)
    out = detab(qos(sim, ETH, "--trust", "dscp").split("\n")[:-1])
    assert out == block(real("mlnx_qos_pcp_and_show_gids_1.txt"), "# mlnx_qos -i ens6 --trust dscp")
    old = block(real("mlnx_qos_trust_pfc_cma_roce_tos_1.txt"), "+ mlnx_qos -i eth4 --trust dscp", stop="+ ")
    # the older MLNX_OFED of that capture has no buffer rows; everything else is the same
    assert [ln for ln in out if "buffer" not in ln] == [ln.replace("0   0   0   1", "0   0   0   0") for ln in old]
    assert qos(sim, ETH) == qos(sim, ETH, "--trust", "dscp")                 # the state stays


def test_pfc_matches_the_capture(sim):
    sim.init("cx6dx-roce", cli=True)
    qos(sim, ETH, "--trust", "dscp")
    out = detab(qos(sim, ETH, "--pfc", "0,0,0,1,0,0,0,0").split("\n")[:-1])
    cap = real("mlnx_qos_trust_pfc_cma_roce_tos_1.txt")
    want = block(cap, "+ mlnx_qos -i eth4 --pfc 0,0,0,1,0,0,0,0", stop="+ ")
    want = [ln for ln in want if ln.strip()]
    assert [ln for ln in out if "buffer" not in ln] == want
    assert "        enabled     0   0   0   1   0   0   0   0   " in out


def test_cma_roce_tos_prints_only_the_value(sim):
    sim.init("cx6dx-roce", cli=True)
    cap = real("mlnx_qos_trust_pfc_cma_roce_tos_1.txt")
    i = cap.index("+ sudo cma_roce_tos -d mlx5_2 -t 106")
    assert sim.out("cma_roce_tos", "-d", "mlx5_2", "-t", "106") == cap[i + 1] + "\n" == "106\n"
    assert sim.out("cma_roce_tos", "-d", "mlx5_2") == "106\n"
    assert sim.out("cma_roce_tos", "-d", "mlx5_1") == "0\n"                 # per device, default 0
    assert sim.out("cma_roce_tos", "-t", "32") == "32\n"                    # default device mlx5_0
    assert sim.out("cma_roce_tos", "-d", "mlx5_0", "-p", "1") == "32\n"
    # the script removes the configfs directory it made; the value stays in the kernel
    assert os.listdir(root(sim) / "sys/kernel/config/rdma_cm") == []


# ---------------------------------------------------------------------------- options


def _prio_tc_0_3(out):
    """--prio_tc 0,0,0,3,0,0,0,0: priority 3 alone in tc 3, the others in tc 0, tc 1 not printed (it holds none)."""
    tc0 = "tc: 0 ratelimit: unlimited, tsa: vendor\n\t priority:  0\n\t priority:  1\n\t priority:  2\n\t priority:  4\n"
    tc3 = "tc: 3 ratelimit: unlimited, tsa: vendor\n\t priority:  3\n"
    return tc0 in out and tc3 in out and "tc: 1 " not in out


@pytest.mark.parametrize("args, check", [
    (["--trust", "dscp"], lambda o: "Priority trust state: dscp" in o and "\tprio:3 dscp:31,30,29,28,27,26,25,24," in o),
    (["--pfc", "0,0,0,1,0,0,1,0"], lambda o: "\tenabled     0   0   0   1   0   0   1   0   \n" in o),
    (["--prio_tc", "0,0,0,3,0,0,0,0"], _prio_tc_0_3),
    (["--tsa", "ets,ets,ets,strict,ets,ets,ets,ets", "--tcbw", "10,10,20,0,20,20,10,10"],
     lambda o: "tc: 0 ratelimit: unlimited, tsa: ets, bw: 10%\n" in o and "tc: 3 ratelimit: unlimited, tsa: strict\n" in o
     and "tc: 4 ratelimit: unlimited, tsa: ets, bw: 20%\n" in o),
    (["--ratelimit", "0,0,0,25,0,0,0,0"], lambda o: "tc: 3 ratelimit: 25.0 Gbps, tsa: vendor\n" in o),
    (["--cable_len", "20"], lambda o: "Cable len: 20\n" in o),
    (["--dcbx", "fw"], lambda o: o.startswith("DCBX mode: Firmware controlled\n")),
    (["--dscp2prio", "set,26,5"], lambda o: "Priority trust state: dscp\ndscp2prio mapping:\n\tprio:5 dscp:26,\n" in o),
])
def test_option_round_trip(sim, args, check):
    sim.init("cx6dx-roce", cli=True)
    out = qos(sim, ETH, *args)
    assert check(out), out
    assert qos(sim, ETH) == out                     # printed after the change = what a later read shows
    assert qos(sim, ETH2) != out                    # per port


def test_trust_back_to_pcp_and_get_pfc(sim):
    sim.init("cx6dx-roce", cli=True)
    qos(sim, ETH, "--trust", "dscp", "--pfc", "0,0,0,1,0,0,0,0")
    assert "Priority trust state: pcp\nReceive buffer" in qos(sim, ETH, "--trust", "pcp")
    assert qos(sim, ETH, "--get_pfc", "3") == "1\n" and qos(sim, ETH, "-P", "2") == "0\n"
    assert qos(sim, ETH, "-F", "x,1,x,x,x,x,x,x") == ""
    assert "\tenabled     0   1   0   1   0   0   0   0   " in qos(sim, ETH)


USAGE = "Usage: mlnx_qos -i <interface> [options]\n\n"


@pytest.mark.parametrize("args, text", [
    (["--pfc", "0,2,0,0,0,0,0,0"], "Bad value for PFC: 2 is not in the range 0..1\n" + USAGE),
    (["--pfc", "0,0,0,1"], "pfc list must have 8 items\n"),
    (["--pfc", "0,0,0,1,0,0,0,0,0"], "Too many items for PFC\n"),
    (["--pfc", "0,a,0,1,0,0,0,0"], "Bad value for PFC: invalid literal for int() with base 10: 'a'\n" + USAGE),
    (["--trust", "ip"], "Invalid trust state command. Refer to the help.\n"),
    (["--prio_tc", "0,1,2,8,4,5,6,7"], "Bad value for UP => TC mapping: 8 is not in the range 0..7\n" + USAGE),
    (["--prio_tc", "0,1,2"], "prio_tc list must have 8 items\n"),
    (["--tsa", "ets,ets,wfq,ets,ets,ets,ets,ets"], "('Bad TSA value: ', 'wfq')\n" + USAGE),
    (["--tsa", "ets,ets"], "tsa list must have 8 items\n"),
    (["--tcbw", "50,50,0,0,0,0,0,0"], "ETS BW for a strict/vendor TC must be 0\n" + USAGE),   # default tsa: vendor
    (["--tsa", "ets,ets,strict,strict,strict,strict,strict,strict", "--tcbw", "50,40,0,0,0,0,0,0"],
     "Netlink error: Invalid argument (22)\n"),                                          # the driver: sum != 100
    (["--tsa", "ets,ets,ets,ets,ets,ets,ets,ets"], "Netlink error: Invalid argument (22)\n"),  # 8 x 100%
    (["--tsa", "ets,strict,strict,strict,strict,strict,strict,strict", "--tcbw", "101,0,0,0,0,0,0,0"],
     "Bad value for ETS BW: 101 is not in the range 0..100\n" + USAGE),
    (["--dcbx", "auto"], "Invalid dcbx mode command. Refer to the help.\n"),
])
def test_bad_values(sim, args, text):
    sim.init("cx6dx-roce", cli=True)
    before = qos(sim, ETH)
    p = sim.run("mlnx_qos", "-i", ETH, *args)
    assert (p.returncode, p.stdout) == (1, text)
    assert qos(sim, ETH) == before                                              # nothing applied


def test_earlier_options_are_applied_before_a_later_one_is_refused(sim):
    sim.init("cx6dx-roce", cli=True)
    p = sim.run("mlnx_qos", "-i", ETH, "--pfc", "0,0,0,1,0,0,0,0", "--trust", "ip")
    assert p.returncode == 1
    assert "\tenabled     0   0   0   1   0   0   0   0   " in qos(sim, ETH)      # as the real script: pfc first


def test_command_line_errors(sim):
    sim.init("cx6dx-roce", cli=True)
    p = sim.run("mlnx_qos")
    assert (p.returncode, p.stdout) == (1, "Interface name is required\n" + USAGE)
    p = sim.run("mlnx_qos", "-i", ETH, "extra")
    assert (p.returncode, p.stdout) == (1, "Bad arguments\n" + USAGE)
    p = sim.run("mlnx_qos", "-i", ETH, "--bogus")
    assert p.returncode == 2 and p.stderr.endswith("mlnx_qos: error: no such option: --bogus\n")


@pytest.mark.parametrize("iface", ["eth9", "lo", IB])
def test_not_an_mlx5_ethernet_netdev(sim, iface):
    sim.init("dgx-h100", cli=True)
    p = sim.run("mlnx_qos", "-i", iface)
    assert p.returncode == 1
    assert p.stdout == ("Priority trust state is not supported on your system\n"
                        "Buffers commands are not supported on your system\n"
                        "Rate limit is not supported on your system!\n"
                        "ETS features are not supported on your system\n")
    p = sim.run("mlnx_qos", "-i", iface, "--trust", "dscp")          # the script exits after the trust block
    assert (p.returncode, p.stdout) == (1, "Priority trust state is not supported on your system\n")
    p = sim.run("mlnx_qos", "-i", iface, "--cable_len", "7")           # outside the script's try: a traceback
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr.splitlines()[-1] == ("OSError: Netlink error: No such device (19)" if iface == "eth9"
                                         else "OSError: Netlink error: Operation not supported (95)")
    p = sim.run("mlnx_qos", "-i", iface, "--pfc", "0,0,0,1,0,0,0,0")   # 'Error setting pfc:' + e -> TypeError
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr.splitlines()[-1] == 'TypeError: can only concatenate str (not "OSError") to str'


def test_cma_roce_tos_errors(sim):
    sim.init("cx6dx-roce", cli=True)
    p = sim.run("cma_roce_tos", "-d", "mlx5_9", "-t", "106")
    assert (p.returncode, p.stdout) == (1, "Failed to create configuration for mlx5_9\n")
    assert "cannot create directory 'mlx5_9': No such device" in p.stderr
    p = sim.run("cma_roce_tos", "-d", "mlx5_0", "-t", "300")                  # kstrtou8: EINVAL, rc 0
    assert (p.returncode, p.stdout) == (0, "0\n") and "write error: Invalid argument" in p.stderr
    p = sim.run("cma_roce_tos", "-d", "mlx5_0", "-t", "abc")
    assert (p.returncode, p.stdout) == (0, "0\n") and "integer expression expected" in p.stderr
    p = sim.run("cma_roce_tos", "-d", "mlx5_0", "-p", "2")
    assert (p.returncode, p.stdout) == (1, "Device mlx5_0 port 2 does not exist\n")
    assert sim.out("cma_roce_tos", "-h").startswith("Set/Show RoCE default ToS of RDMA_CM applications\n")
    p = sim.run("cma_roce_tos", "-d", "mlx5_0", "-t", "0x20")                 # [ 0x20 -ge 0 ]: not an integer
    assert (p.returncode, p.stdout) == (0, "0\n") and "[: 0x20: integer expression expected" in p.stderr
    assert sim.out("cma_roce_tos", "-d", "mlx5_0", "-t", "010") == "8\n"      # test(1) says 10 >= 0, kstrtou8 base 0: octal


# ---------------------------------------------------------------------------- the sysfs tree, volatility


def read(path):
    return path.read_text()


def test_init_creates_the_tree(sim):
    sim.init("cx6dx-roce", cli=True)
    r = root(sim)
    net = r / "sys/class/net"
    assert sorted(os.listdir(net)) == sorted([ETH, "enp59s0f1np1", "enp216s0f0np0", ETH2])
    for p in range(8):
        assert read(net / ETH / "ecn/roce_np/enable" / str(p)) == "1\n"
        assert read(net / ETH / "ecn/roce_rp/enable" / str(p)) == "1\n"
    assert read(net / ETH / "ecn/roce_np/cnp_dscp") == "48\n"
    assert read(net / ETH / "ecn/roce_np/cnp_802p_prio") == "6\n"
    assert read(net / ETH / "device/power/control") == "auto\n"
    assert os.path.basename(os.readlink(net / ETH / "device/driver")) == "mlx5_core"
    assert os.listdir(net / ETH2 / "device/infiniband") == ["mlx5_3"]
    assert os.listdir(r / "sys/class/infiniband/mlx5_3/ports") == ["1"]
    assert read(r / "sys/class/infiniband/mlx5_3/tc/1/traffic_class") == ""
    assert os.path.isdir(r / "sys/kernel/config/rdma_cm")
    # pcie_aspm_get_policy (drivers/pci/pcie/aspm.c) prints "%s " per policy, then the newline
    assert read(r / "sys/module/pcie_aspm/parameters/policy") == "[default] performance powersave powersupersave \n"


def test_ib_ports_have_no_ecn(sim):
    sim.init("dgx-h100", cli=True)
    net = root(sim) / "sys/class/net"
    assert (net / IB / "device/power/control").exists() and not (net / IB / "ecn").exists()
    assert (net / "enp41s0f0np0" / "ecn/roce_np/cnp_dscp").exists()


def test_root_from_the_environment(sim, tmp_path):
    elsewhere = tmp_path / "other-root"
    sim.run("mlxsim", "init", "--profile", "cx6dx-roce", "--hostname", "h", "--force",
            env={"MLXSIM_ROOT": str(elsewhere)}, check_rc=0)
    assert (elsewhere / "sys/class/net" / ETH / "ecn/roce_np/cnp_dscp").exists()
    assert not root(sim).exists()


def test_traffic_class_reads_back_as_the_driver_prints_it(sim):
    sim.init("cx6dx-roce", cli=True)
    tc = root(sim) / "sys/class/infiniband/mlx5_2/tc/1/traffic_class"
    tc.write_text("106\n")
    qos(sim, ETH)
    assert read(tc) == "Global tclass=106\n"           # fixtures: 'cat .../traffic_class' -> Global tclass=106


def change_everything(sim):
    qos(sim, ETH, "--trust", "dscp", "--pfc", "0,0,0,1,0,0,0,0")
    sim.out("cma_roce_tos", "-d", "mlx5_0", "-t", "106")
    net = root(sim) / "sys/class/net" / ETH
    (net / "ecn/roce_np/enable/3").write_text("0\n")
    (net / "ecn/roce_np/cnp_dscp").write_text("26\n")
    (net / "device/power/control").write_text("on\n")
    (root(sim) / "sys/class/infiniband/mlx5_0/tc/1/traffic_class").write_text("106\n")
    (root(sim) / "sys/kernel/config/rdma_cm/mlx5_0/ports/1").mkdir(parents=True)


@pytest.mark.parametrize("command", ["reboot", "driver-reload"])
def test_reboot_and_driver_reload_lose_the_runtime_settings(sim, command):
    sim.init("cx6dx-roce", cli=True)
    fresh = qos(sim, ETH)
    change_everything(sim)
    nv_before = sim.state_data()["cards"]
    sim.run("mlxsim", command, check_rc=0)
    assert qos(sim, ETH) == fresh
    assert sim.out("cma_roce_tos", "-d", "mlx5_0") == "0\n"
    net = root(sim) / "sys/class/net" / ETH
    assert read(net / "ecn/roce_np/enable/3") == "1\n" and read(net / "ecn/roce_np/cnp_dscp") == "48\n"
    # runtime PM control belongs to the PCI device, not to the driver: only the power cycle resets it
    assert read(net / "device/power/control") == ("auto\n" if command == "reboot" else "on\n")
    assert read(root(sim) / "sys/class/infiniband/mlx5_0/tc/1/traffic_class") == ""
    assert os.listdir(root(sim) / "sys/kernel/config/rdma_cm") == []
    if command == "driver-reload":                      # NV config and firmware untouched, no power cycle
        assert sim.state_data()["cards"] == nv_before
        assert sim.state_data()["boot_count"] == 0


def test_driver_reload_keeps_pending_nv_config(sim):
    sim.init("cx6dx-roce", cli=True)
    sim.run("mlxconfig", "-d", "3b:00.0", "-y", "set", "SRIOV_EN=1", check_rc=0)
    sim.run("mlxsim", "driver-reload", check_rc=0)
    assert "SRIOV_EN" in sim.out("mlxsim", "show", "--pending")


# ---------------------------------------------------------------------------- the collection's roce_qos core


def test_roce_qos_converges_on_the_simulator(sim, monkeypatch):
    from ansible_collections.gpufabric.mlnx.plugins.module_utils._host import Host
    from ansible_collections.gpufabric.mlnx.plugins.module_utils._roce_qos import converge

    sim.init("cx6dx-roce", cli=True)
    for key in ("PATH", "MLXSIM_STATE", "MLXSIM_TIME_SCALE", "PYTHONPYCACHEPREFIX"):
        monkeypatch.setenv(key, sim.env[key])
    monkeypatch.delenv("MLXSIM_ROOT", raising=False)
    monkeypatch.delenv("SSH_CONNECTION", raising=False)
    reader = Host(root=str(root(sim)), timeout=60)
    params = {"interfaces": [ETH, ETH2], "mgmt_interface": "eth-mgmt"}

    first = converge(reader, params)
    assert first["changed"] and not first["failed"]
    by_if = {r["interface"]: r for r in first["interfaces"]}
    assert by_if[ETH2]["rdma_device"] == "mlx5_3" and by_if[ETH2]["port"] == 1
    assert sorted(by_if[ETH]["changes"]) == ["cma_roce_tos", "pfc", "traffic_class", "trust"]
    out = sim.out("mlnx_qos", "-i", ETH2)
    assert "Priority trust state: dscp" in out and "\tenabled     0   0   0   1   0   0   0   0   " in out
    assert sim.out("cma_roce_tos", "-d", "mlx5_3") == "106\n"
    assert read(root(sim) / "sys/class/infiniband/mlx5_3/tc/1/traffic_class") == "Global tclass=106\n"

    second = converge(reader, params)
    assert not second["changed"] and all(not r["changes"] for r in second["interfaces"])

    sim.run("mlxsim", "driver-reload", check_rc=0)
    third = converge(reader, params)
    assert third["changed"]
    assert sorted(r["interface"] for r in third["interfaces"] if r["changed"]) == sorted([ETH, ETH2])
    assert not converge(reader, params)["changed"]


def test_mlxfwreset_level_3_restarts_only_that_cards_driver(sim):
    sim.init("cx6dx-roce", cli=True)
    fresh = qos(sim, ETH)
    for iface in (ETH, ETH2):
        qos(sim, iface, "--trust", "dscp")
    sim.out("cma_roce_tos", "-d", "mlx5_0", "-t", "106")
    sim.out("cma_roce_tos", "-d", "mlx5_3", "-t", "106")
    (root(sim) / "sys/class/net" / ETH / "ecn/roce_np/cnp_dscp").write_text("26\n")
    sim.run("mlxfwreset", "-d", "3b:00.0", "-y", "--level", "3", "reset", check_rc=0)
    assert qos(sim, ETH) == fresh                                   # card 3b:00: driver restarted
    assert sim.out("cma_roce_tos", "-d", "mlx5_0") == "0\n"
    assert read(root(sim) / "sys/class/net" / ETH / "ecn/roce_np/cnp_dscp") == "48\n"
    assert "Priority trust state: dscp" in qos(sim, ETH2)            # card d8:00 untouched
    assert sim.out("cma_roce_tos", "-d", "mlx5_3") == "106\n"


def test_level_3_resets_of_all_cards_at_once_keep_the_tree_whole(sim):
    """mlx_fwreset resets the cards of a host at the same time: each removes and re-creates its
    files while the others do the same (the tree is locked; without it a reset failed with rc 1)."""
    import subprocess
    sim.init("dgx-h100", cli=True)
    cards = [c["functions"][0]["pci"] for c in sim.state_data()["cards"]]
    assert len(cards) >= 8
    for _round in range(3):
        procs = [subprocess.Popen(["mlxfwreset", "-d", card, "-y", "--level", "3", "reset"], env=sim.env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE) for card in cards]
        results = [(p.wait(timeout=60), p.stdout.read().decode(), p.stderr.read().decode()) for p in procs]
        assert [rc for rc, _o, _e in results] == [0] * len(cards), results
    from mlxsim import sysfs
    for port in sysfs.ports(sim.state_data()):
        net = root(sim) / "sys/class/net" / port["netdev"]
        assert (net / "device/power/control").read_text() == "auto\n"
        assert (net / "device/infiniband" / port["rdma"]).is_dir()
        assert (root(sim) / "sys/class/infiniband" / port["rdma"] / "tc/1/traffic_class").exists()


# ---------------------------------------------------------------------------- uevents and the udev rule subset


def test_udev_rule_subset():
    from mlxsim import udev
    rules = udev.parse_rules(
        '# comment\n'
        'ACTION=="add", SUBSYSTEM=="net", KERNEL=="enp24s0np0|enp41s0np*", RUN+="/x $name"\n'
        'ACTION=="add", SUBSYSTEM=="net", DRIVERS!="mlx5_core", RUN+="/never %k"\n'
        'ACTION=="add", SUBSYSTEM=="net", ATTR{type}=="1", RUN+="/unknown-key"\n'
        'ACTION=="remove", RUN+="/remove"\n'
        'broken line\n'
        'SUBSYSTEM=="net", \\\n  KERNEL=="enp41s0np0", RUN+="/y %k $$HOME"\n')
    assert len(rules) == 5
    ev = {"ACTION": "add", "SUBSYSTEM": "net", "KERNEL": "enp41s0np0", "NAME": "enp41s0np0", "DRIVERS": "mlx5_core"}
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".rules", delete=False) as fh:
        fh.write('KERNEL=="enp41s0np0", RUN+="/a"\nKERNEL=="enp41s0np0", RUN="/b $kernel"\n'
                 'KERNEL=="enp24s0np0", RUN+="/c"\n')
    try:
        assert udev.programs(ev, [fh.name]) == ["/b enp41s0np0"]           # RUN= drops what came before
    finally:
        os.unlink(fh.name)
    matched = [p for pairs in rules if udev._matches(pairs, ev) for k, _o, p in pairs if k == "RUN"]
    assert matched == ["/x $name", "/y %k $$HOME"]
    assert udev._expand("/y %k $$HOME $name", ev) == "/y enp41s0np0 $HOME enp41s0np0"


def _core_env(sim, monkeypatch, rules=None):
    for key in ("PATH", "MLXSIM_STATE", "MLXSIM_TIME_SCALE", "PYTHONPYCACHEPREFIX"):
        monkeypatch.setenv(key, sim.env[key])
    monkeypatch.delenv("MLXSIM_ROOT", raising=False)
    monkeypatch.delenv("SSH_CONNECTION", raising=False)
    if rules:
        monkeypatch.setenv("MLXSIM_UDEV_RULES", str(rules))
        sim.env["MLXSIM_UDEV_RULES"] = str(rules)


@pytest.mark.parametrize("event", [("mlxsim", "driver-reload"), ("mlxsim", "reboot"),
                                   ("mlxfwreset", "-d", "d8:00.0", "-y", "--level", "3", "reset")])
def test_the_replay_script_run_by_udev_restores_everything(sim, monkeypatch, tmp_path, event):
    """The role's persistence, end to end on the simulator: the module's replay list rendered by the
    roce_qos_script filter, run by the udev rule on the "add" uevent of a driver reload, a reboot or
    a level-3 reset; the module then finds nothing to change. Without the rule it would."""
    from ansible_collections.gpufabric.mlnx.plugins.module_utils._host import Host
    from ansible_collections.gpufabric.mlnx.plugins.module_utils._roce_qos import converge
    from ansible_collections.gpufabric.mlnx.plugins.module_utils._roce_qos_script import replay_script

    sim.init("cx6dx-roce", cli=True)
    rules = tmp_path / "rules.d"
    rules.mkdir()
    _core_env(sim, monkeypatch, rules)
    reader = Host(root=str(root(sim)), timeout=60)
    params = {"interfaces": [ETH, ETH2], "mgmt_interface": "eth-mgmt", "cnp_dscp": 40, "tc_bw": None,
              "prio_tc": [0, 0, 0, 3, 0, 0, 0, 0]}
    first = converge(reader, params)
    assert first["changed"] and not first["failed"]

    sim.run(*event, check_rc=0)                                  # no rule yet: the settings are gone
    lost = converge(reader, params, check_mode=True)
    changed = sorted(r["interface"] for r in lost["interfaces"] if r["changed"])
    assert changed == ([ETH2] if event[0] == "mlxfwreset" else sorted([ETH, ETH2]))
    converge(reader, params)

    script = tmp_path / "gpufabric-roce-qos"
    script.write_text(replay_script(first["interfaces"], root=str(root(sim)), path=str(script)))
    (rules / "90-gpufabric-roce-qos.rules").write_text(
        'ACTION=="add", SUBSYSTEM=="net", KERNEL=="%s|%s", RUN+="/bin/sh %s $name"\n' % (ETH, ETH2, script))
    sim.run(*event, check_rc=0)
    after = converge(reader, params, check_mode=True)
    assert [r["changes"] for r in after["interfaces"]] == [{}, {}]
    assert read(root(sim) / "sys/class/net" / ETH2 / "ecn/roce_np/cnp_dscp") == "40\n"
    log = (tmp_path / "uevents.log").read_text().splitlines()
    assert log and all(line.endswith("rc=0") for line in log)
    expected = {"add " + ETH2} if event[0] == "mlxfwreset" else {"add " + ETH, "add " + ETH2}
    assert {line.split(":")[0] for line in log} == expected


def test_the_replay_script_reports_a_setting_that_fails(sim, monkeypatch, tmp_path):
    import subprocess
    from ansible_collections.gpufabric.mlnx.plugins.module_utils._host import Host
    from ansible_collections.gpufabric.mlnx.plugins.module_utils._roce_qos import converge
    from ansible_collections.gpufabric.mlnx.plugins.module_utils._roce_qos_script import replay_script

    sim.init("cx6dx-roce", cli=True)
    _core_env(sim, monkeypatch)
    reader = Host(root=str(root(sim)), timeout=60)
    first = converge(reader, {"interfaces": [ETH], "mgmt_interface": "eth-mgmt"})
    text = replay_script(first["interfaces"], root=str(root(sim)))
    cnp = root(sim) / "sys/class/net" / ETH / "ecn/roce_np/cnp_dscp"
    cnp.unlink()
    cnp.mkdir()                                      # a write to it fails (as root, permissions would not)
    p = subprocess.run(["/bin/sh", "-s", ETH], input=text, capture_output=True, text=True, env=sim.env, check=False)
    assert p.returncode == 1
    assert "gpufabric-roce-qos: %s: cannot write 48 to /sys/class/net/%s/ecn/roce_np/cnp_dscp" % (ETH, ETH) in p.stderr
    assert subprocess.run(["/bin/sh", "-s", "eth-other"], input=text, text=True, env=sim.env, check=False).returncode == 0
