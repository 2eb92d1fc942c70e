"""The exact podman command lines lab.py runs (no podman needed)."""
import os
import subprocess
from pathlib import Path

import pytest

LAB = {
    "name": "t",
    "mgmt": {"network": "mgmt", "subnet": "198.19.30.0/24"},
    "rails": 2,
    "rail_mtu": 9000,
    "nic_mtu": 1500,
    "time_scale": 0.5,
    "env": {"MLXSIM_MFT_VERSION": "4.30.1"},
    "racks": [{"name": "r1", "servers": [{"name": "s1", "profile": "dgx-h100"}]}],
    "leaves": {},
}
MASK = "mask=" + ":".join(f"/proc/sys/{d}" for d in
                          ("abi", "crypto", "debug", "dev", "fs", "kernel", "user", "vm"))


@pytest.fixture()
def t(lab):
    return lab.load_lab(LAB)


def test_networks(lab, t):
    assert lab.network_create_argvs(t) == [
        ["podman", "network", "create", "--driver", "bridge", "--internal", "--disable-dns",
         "--ipam-driver", "host-local", "--subnet", "198.19.30.0/24",
         "--label", "gpufabric.lab=t", "--label", "gpufabric.net=mgmt", "t-mgmt"],
        ["podman", "network", "create", "--driver", "bridge", "--internal", "--disable-dns",
         "--ipam-driver", "none", "--opt", "mtu=9000",
         "--label", "gpufabric.lab=t", "--label", "gpufabric.net=rail0", "t-rail0"],
        ["podman", "network", "create", "--driver", "bridge", "--internal", "--disable-dns",
         "--ipam-driver", "none", "--opt", "mtu=9000",
         "--label", "gpufabric.lab=t", "--label", "gpufabric.net=rail1", "t-rail1"],
    ]


def test_server_container(lab, t):
    assert lab.container_run_argv(t, t.servers[0]) == [
        "podman", "run", "--detach", "--pull", "never", "--init",
        "--name", "t-s1", "--hostname", "s1",
        "--label", "gpufabric.lab=t", "--label", "gpufabric.role=server",
        "--label", "gpufabric.rack=r1", "--label", "gpufabric.profile=dgx-h100",
        "--cap-add", "NET_ADMIN", "--cap-add", "NET_RAW",
        "--security-opt", "unmask=/proc/sys", "--security-opt", MASK,
        "--dns", "none",
        "--sysctl", "net.ipv6.conf.all.disable_ipv6=1",
        "--sysctl", "net.ipv6.conf.default.disable_ipv6=1",
        "--env", "MLXSIM_TIME_SCALE=0.5", "--env", "MLXSIM_MFT_VERSION=4.30.1",
        "--network", "t-mgmt:ip=198.19.30.11,interface_name=eth0",
        "--network", "t-rail0:interface_name=eth1",
        "--network", "t-rail1:interface_name=eth2",
        "localhost/gpufabric-host:bookworm",
    ]


def test_leaf_container_has_mgmt_and_its_rail(lab, t):
    argv = lab.container_run_argv(t, t.leaves[1])
    nets = [argv[i + 1] for i, a in enumerate(argv) if a == "--network"]
    assert nets == ["t-mgmt:ip=198.19.30.202,interface_name=eth0", "t-rail1:interface_name=eth1"]
    assert "gpufabric.role=leaf" in argv
    assert not any(a.startswith("gpufabric.profile=") for a in argv)


def test_ipv6_lab_keeps_ipv6(lab):
    t6 = lab.load_lab(LAB | {"ipv6": True})
    assert "--sysctl" not in lab.container_run_argv(t6, t6.servers[0])


def test_never_privileged_and_net_stays_writable(lab, t):
    argv = lab.container_run_argv(t, t.servers[0], lab.sysctl_mask_dirs())
    assert "--privileged" not in argv
    assert not any("/proc/sys/net" in a for a in argv)


def test_sysctl_mask_dirs_reads_the_host_but_never_masks_net(lab, tmp_path):
    for name in ("net", "kernel", "newthing"):
        (tmp_path / name).mkdir()
    dirs = lab.sysctl_mask_dirs(tmp_path)
    assert "net" not in dirs
    assert {"newthing", "kernel", "vm"} <= set(dirs)
    assert lab.sysctl_mask_dirs(tmp_path / "absent") == lab.PROC_SYS_GLOBAL


def test_sim_copy_and_provision(lab, t):
    assert lab.sim_copy_argv(t.servers[0], Path("/repo/tests/sim")) == [
        "podman", "cp", "/repo/tests/sim", "t-s1:/opt/mlxsim"]
    argv = lab.provision_argv(t, t.servers[0])
    assert argv[:6] == ["podman", "exec", "t-s1", "sh", "-c", lab.PROVISION_SCRIPT]
    # values travel as positional parameters, never inside the script text
    assert argv[6:] == ["provision", "dgx-h100", "s1", "1500", "", "eth1", "eth2"]
    assert lab.provision_argv(t, t.servers[0], with_sim=False)[7] == ""
    # leaves keep the fabric MTU and, without a profile, skip mlxsim init
    assert lab.provision_argv(t, t.leaves[0])[6:] == ["provision", "", "leaf-rail0", "1500", ""]


def test_boot_kernel_gives_the_servers_a_kernel_as_a_real_host_has(lab, tmp_path):
    data = {"name": "t", "mgmt": {"subnet": "198.19.30.0/24"}, "rails": 1, "boot_kernel": "6.1.0-26-amd64",
            "racks": [{"name": "r1", "servers": [{"name": "s1", "profile": "dgx-h100"}]}], "leaves": True}
    t = lab.load_lab(data)
    assert lab.provision_argv(t, t.servers[0])[6:] == ["provision", "dgx-h100", "s1", "1500", "6.1.0-26-amd64", "eth1"]
    assert lab.provision_argv(t, t.leaves[0])[6:] == ["provision", "", "leaf-rail0", "1500", ""]
    for bad in ("6.1 amd64", "$(reboot)", "../x", "6.1.0\n", 6, "-rc1"):
        with pytest.raises(lab.LabError, match="boot_kernel: must be a kernel release"):
            lab.load_lab(dict(data, boot_kernel=bad))
    # the script's kernel part, run for real on a scratch /boot: the files appear, an existing one is kept
    boot = tmp_path / "boot"
    part = lab.PROVISION_SCRIPT.split("if [ -n \"$kernel\" ]; then", 1)[1].split("fi\n", 1)[0]
    script = "kernel=$1\n" + part.replace("/boot", str(boot))
    subprocess.run(["sh", "-euc", script, "sh", "6.1.0-26-amd64"], check=True)
    assert sorted(os.listdir(boot)) == ["initrd.img-6.1.0-26-amd64", "vmlinuz-6.1.0-26-amd64"]


def test_rail_names_pin_the_servers_rail_interfaces(lab):
    data = {"name": "t", "mgmt": {"subnet": "198.19.30.0/24"}, "rails": 2, "rail_names": ["enp24s0np0", "enp64s0np0"],
            "racks": [{"name": "r1", "servers": [{"name": "s1", "profile": "dgx-h100"}]}]}
    t = lab.load_lab(data)
    nets = [a for a in lab.container_run_argv(t, t.servers[0]) if a.startswith("t-") and ":" in a]
    assert nets == ["t-mgmt:ip=198.19.30.11,interface_name=eth0", "t-rail0:interface_name=enp24s0np0",
                    "t-rail1:interface_name=enp64s0np0"]
    assert lab.provision_argv(t, t.servers[0])[-2:] == ["enp24s0np0", "enp64s0np0"]
    for bad, words in ((["enp24s0np0"], "must be a list of 2"), (["eth0", "x1"], "not eth0"),
                       (["a", "a"], "twice"), (["a" * 16, "b"], "is not an interface name")):
        with pytest.raises(lab.LabError, match=words):
            lab.load_lab(dict(data, rail_names=bad))


def test_provision_script_is_valid_sh(lab):
    subprocess.run(["sh", "-n", "-c", lab.PROVISION_SCRIPT], check=True)


def test_provisioning_installs_the_bytecode_cache_in_the_containers_python(lab):
    """The provisioning script runs the copied tests/accel module, which writes its .pth into python3's site
    directory; without the copy (a lab started --no-sim) it does nothing."""
    line = next(x for x in lab.PROVISION_SCRIPT.splitlines() if "gpufabric_bytecode_cache" in x)
    assert line == ("if [ -f /opt/gpufabric-accel/gpufabric_bytecode_cache.py ]; then "
                    "python3 /opt/gpufabric-accel/gpufabric_bytecode_cache.py >/dev/null; fi")
    assert (lab.ACCEL / "gpufabric_bytecode_cache.py").is_file()


def test_removal_commands_ignore_absent_things(lab):
    assert lab.remove_containers_argv(["a", "b"]) == [
        "podman", "rm", "--force", "--ignore", "--time", "0", "a", "b"]
    assert lab.remove_networks_argv(["n"]) == ["podman", "network", "rm", "--force", "n"]


def test_plan_order(lab, t):
    steps = lab.plan(t, Path("/sim"))
    verbs = [" ".join(s[1:3]) if s[1] == "network" else s[1] for s in steps]
    assert verbs == ["network create"] * 3 + ["run"] * 3 + ["cp", "cp", "exec"] * 3
    # the simulator, then the tests' bytecode cache (tests/accel), then the provisioning that loads it
    assert [s[2:] for s in steps[6:8]] == [["/sim", "t-s1:/opt/mlxsim"],
                                           [str(lab.REPO / "tests" / "accel"), "t-s1:/opt/gpufabric-accel"]]
    assert [s[1] for s in lab.plan(t, None)][-3:] == ["exec"] * 3


def test_every_address_is_in_the_lab_range(lab, repo):
    import ipaddress

    for path in (repo / "tests/lab/labs").glob("*.yml"):
        x = lab.read_lab(path)
        for node in x.nodes:
            assert ipaddress.ip_address(node.mgmt_ip) in lab.LAB_RANGE
            assert ipaddress.ip_address(node.mgmt_ip) in ipaddress.ip_network(x.mgmt_subnet)
