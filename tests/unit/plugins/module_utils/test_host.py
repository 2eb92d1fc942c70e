"""The host layer (plugins/module_utils/_host.py): running commands (argv, environment, timeout, the tool's
words), files under a root, the interfaces, PCI functions and RDMA devices sysfs tells, kernels and boots,
parallel() and plan_all(), and MlnxError.combine (plugins/module_utils/_errors.py) that plan_all raises."""
import os
import subprocess
import threading

import pytest

from _fakehost import FakeHost
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import (
    DeviceNotFound,
    InvalidValue,
    MlnxError,
    ToolFailed,
    ToolNotFound,
    ToolTimeout,
)
from ansible_collections.gpufabric.mlnx.plugins.module_utils._host import ENV, Host, parallel, plan_all

A, B, C = "0000:18:00.0", "0000:29:00.0", "0000:3a:00.0"


# ---------------------------------------------------------------------------------- commands

def test_run_finds_the_tool_and_gives_lang_c_and_the_extra_env():
    seen = []

    def execute(argv, env, timeout, data):
        seen.append((argv, env, timeout, data))
        return 0, "out\n", ""
    host = Host(execute=execute, which=lambda name: "/usr/sbin/" + name, timeout=7)
    assert host.run(["apt-get", "install", 3], env={"DEBIAN_FRONTEND": "noninteractive"}, data="in") == (0, "out\n", "")
    argv, env, timeout, data = seen[0]
    assert argv == ["/usr/sbin/apt-get", "install", "3"] and timeout == 7 and data == "in"
    assert env["DEBIAN_FRONTEND"] == "noninteractive" and all(env[k] == v for k, v in ENV.items())
    assert env["PATH"] == os.environ["PATH"]          # the rest of the environment is kept
    host.run(["uname"], timeout=2)
    assert seen[1][2] == 2


def test_run_names_a_missing_tool_and_a_failing_one():
    host = FakeHost(None, {"dkms": lambda args: (3, "", "Error! Bad module\nsecond line\n")}).host()
    with pytest.raises(ToolNotFound, match="^ofed_info is not installed on this host$"):
        host.run(["ofed_info", "-s"])
    with pytest.raises(ToolFailed) as err:
        host.run(["dkms", "status", "-m", "x"])
    assert err.value.msg == "dkms status failed (rc=3): second line"
    assert err.value.cmd == ["/usr/bin/dkms", "status", "-m", "x"] and err.value.rc == 3
    assert host.run(["dkms", "status"], check=False)[0] == 3


def test_a_hung_command_is_stopped_and_named():
    def execute(argv, env, timeout, data):
        raise subprocess.TimeoutExpired(argv, timeout)
    host = Host(execute=execute, which=lambda name: "/usr/bin/" + name, timeout=5)
    with pytest.raises(ToolTimeout, match="^/usr/bin/apt-get update did not finish within 5s and was stopped$"):
        host.run(["apt-get", "update"])
    result = Host(execute=lambda *a: (1, "-E- no\n", None)).call(["/x"])
    assert (result.cmd, result.rc, result.stdout, result.stderr, result.reason()) == (["/x"], 1, "-E- no\n", "", "no")


def test_the_default_execute_runs_no_shell(tmp_path):
    host = Host(root=str(tmp_path))
    rc, out, _err = host.run(["echo", "$HOME; `reboot`"])
    assert rc == 0 and out == "$HOME; `reboot`\n"
    assert host.run(["cat"], data="typed\n")[1] == "typed\n"


# ---------------------------------------------------------------------------------- files, interfaces, sysfs

def test_files_under_root(tmp_path):
    fake = FakeHost(tmp_path)
    fake.put("/sys/class/net/eth0/mtu", "1500")
    host = fake.host()
    assert host.path("/sys/class/net") == str(tmp_path / "sys/class/net")
    assert host.read_sys("/sys/class/net/eth0/mtu") == "1500" and host.read_sys("/sys/nothing") is None
    host.write_sys("/sys/class/net/eth0/mtu", 9000)
    assert fake.get("/sys/class/net/eth0/mtu") == "9000\n" and fake.writes == [("/sys/class/net/eth0/mtu", 9000)]
    with pytest.raises(FileNotFoundError):
        host.write_sys("/sys/class/net/eth0/new_attribute", 1)     # an attribute is never created
    assert not os.path.exists(fake.path("/sys/class/net/eth0/new_attribute"))
    assert host.netdevs() == ["eth0"] and host.listdir("/nowhere") == []


def test_pci_functions_and_rdma_devices_in_sysfs(tmp_path):
    fake = FakeHost(tmp_path)
    fake.netdev("enp24s0np0", "mlx5_core", pci=A, rdma="mlx5_0")
    fake.link("/sys/bus/pci/devices/%s/net/enp24s0np0" % A, "/sys/class/net/enp24s0np0")
    fake.link("/sys/class/infiniband/mlx5_0/device", "/sys/bus/pci/devices/" + A)
    fake.put("/sys/class/infiniband/mlx5_0/ports/1/link_layer", "Ethernet")
    fake.netdev("veth0")
    host = fake.host()
    assert host.pci_of("enp24s0np0") == A and host.pci_of("veth0") is None
    assert host.driver_of("enp24s0np0") == "mlx5_core" and host.driver_of("veth0") is None
    assert host.pci_netdevs(A) == ["enp24s0np0"] and host.pci_rdma_devices(A) == ["mlx5_0"]
    assert host.pci_netdevs(B) == [] and host.pci_rdma_devices(B) == []
    assert host.rdma_pci("mlx5_0") == A and host.rdma_pci("mlx5_9") is None
    assert host.link_layer("mlx5_0", 1) == "Ethernet" and host.link_layer("mlx5_0", 2) is None


def test_rdma_maps_from_ibdev2netdev():
    def ibdev2netdev(args):
        if args == ["-v"]:
            return 0, ("0000:18:00.0 mlx5_0 (MT4129 - MCX75310AAS-NEAT) ConnectX-7 fw 28.39.1002 port 1 (ACTIVE) ==> "
                       "ibp24s0 (Up)\n"), ""
        return 0, "mlx5_0 port 1 ==> ibp24s0 (Up)\n", ""
    host = FakeHost(None, {"ibdev2netdev": ibdev2netdev}).host()
    assert host.rdma_ports() == {"ibp24s0": ("mlx5_0", 1)} and host.rdma_netdevs() == {"ibp24s0": "mlx5_0"}
    assert host.netdev_pci() == {"ibp24s0": A}
    assert FakeHost(None, {"ibdev2netdev": lambda args: (0, "garbage\n", "")}).host().rdma_ports() == {}
    assert FakeHost(None).host().netdev_pci() == {}          # not installed


def test_boot_id(tmp_path):
    fake = FakeHost(tmp_path, {"cat-boot": lambda args: (0, "from-the-command\n", "")})
    host = fake.host()
    assert host.boot_id() is None
    fake.put("/proc/stat", "cpu 1 2 3\nbtime 1795995176")
    assert host.boot_id() == "btime 1795995176"
    fake.put("/proc/sys/kernel/random/boot_id", "0b6f0a4e-2f55-4a1f-9d0c-3d2b1e1f0a11")
    assert host.boot_id() == "0b6f0a4e-2f55-4a1f-9d0c-3d2b1e1f0a11"
    assert host.boot_id(["cat-boot"]) == "from-the-command"


def test_boot_kernel_detection(tmp_path):
    reader = FakeHost(tmp_path).host()
    assert reader.boot_kernel() == (None, "no boot loader entry found (no grubby, /vmlinuz or /boot/vmlinuz-*)")
    (tmp_path / "boot").mkdir()
    for k in ("6.1.0-28-amd64", "6.1.0-9-amd64", "6.12.0-1-amd64"):
        (tmp_path / "boot" / ("vmlinuz-" + k)).write_text("")
    assert reader.boot_kernel()[0] == "6.12.0-1-amd64"
    os.symlink("boot/vmlinuz-6.1.0-28-amd64", str(tmp_path / "vmlinuz"))
    assert reader.boot_kernel() == ("6.1.0-28-amd64", "/vmlinuz -> boot/vmlinuz-6.1.0-28-amd64")
    assert reader.boot_kernel("6.1.0-9-amd64") == ("6.1.0-9-amd64", "gpufabric_ofed_boot_kernel")


def test_boot_kernel_from_grubby(tmp_path):
    def grubby(args):
        assert args == ["--default-kernel"]
        return 0, "/boot/vmlinuz-5.14.0-427.13.1.el9_4.x86_64\n", ""
    fake = FakeHost(tmp_path, {"grubby": grubby}, bindir="/usr/sbin")
    assert fake.host().boot_kernel()[0] == "5.14.0-427.13.1.el9_4.x86_64"
    assert fake.calls == [("/usr/sbin/grubby", "--default-kernel")]


def test_interfaces_under_bonds_vlans_and_bridges(tmp_path):
    net = tmp_path / "sys/class/net"
    for name in ("br0", "bond0", "bond0.100", "enp1s0f0np0", "enp1s0f1np1", "eno1"):
        (net / name).mkdir(parents=True)
    (net / "br0/brif").mkdir()
    (net / "br0/brif/bond0.100").write_text("")
    os.symlink("../bond0", str(net / "bond0.100/lower_bond0"))
    (net / "bond0/bonding").mkdir()
    (net / "bond0/bonding/slaves").write_text("enp1s0f0np0 enp1s0f1np1\n")
    drivers = tmp_path / "sys/bus/pci/drivers"
    (drivers / "mlx5_core").mkdir(parents=True)
    for name in ("enp1s0f0np0", "enp1s0f1np1"):
        (net / name / "device").mkdir()
        os.symlink(str(drivers / "mlx5_core"), str(net / name / "device/driver"))
    reader = FakeHost(tmp_path).host()
    assert reader.lower("br0") == ["enp1s0f0np0", "enp1s0f1np1"]
    assert reader.lower("eno1") == ["eno1"]
    assert reader.driver_of("enp1s0f0np0") == "mlx5_core" and reader.driver_of("eno1") is None


# ---------------------------------------------------------------------------------- many devices at once

def test_parallel_keeps_order_and_errors():
    def func(n):
        if n == 2:
            raise ValueError("two")
        return n * 10
    res = parallel(func, [1, 2, 3])
    assert [(i, r) for i, r, _e in res] == [(1, 10), (2, None), (3, 30)]
    assert isinstance(res[1][2], ValueError)
    assert parallel(func, []) == []


def test_plan_all_runs_everything_at_once_and_returns_pairs():
    barrier = threading.Barrier(3, timeout=5)

    def func(device):
        barrier.wait()          # one after the other, the first would time out here
        return device.lower()
    assert plan_all(func, ["A", "B", "C"]) == [("A", "a"), ("B", "b"), ("C", "c")]
    assert plan_all(func, []) == []


def test_plan_all_raises_every_error_at_once():
    def func(device):
        if device == B:
            raise InvalidValue("%s: SRIOV_EN=maybe is not a boolean" % device, device=device, parameter="SRIOV_EN",
                               allowed=["true", "false"])
        if device == C:
            raise InvalidValue("%s: NUM_OF_VFS=-1 is out of range" % device, device=device, parameter="NUM_OF_VFS")
        return device
    with pytest.raises(InvalidValue) as err:
        plan_all(func, [A, B, C])
    assert err.value.msg == "%s: SRIOV_EN=maybe is not a boolean; %s: NUM_OF_VFS=-1 is out of range" % (B, C)
    assert err.value.device == [B, C] and err.value.parameter == "SRIOV_EN" and err.value.allowed == ["true", "false"]


def test_plan_all_names_each_failing_item_when_asked():
    def func(name):
        if name == "eth1":
            raise KeyError("no such file")
        raise MlnxError("cannot read it")
    with pytest.raises(MlnxError) as err:
        plan_all(func, ["eth0", "eth1"], named_by_item=True)
    assert err.value.device == ["eth0", "eth1"] and err.value.msg == "cannot read it; 'no such file'"
    assert err.value.__class__ is MlnxError      # errors of different kinds: the base class
    single = MlnxError("eth0: cannot read it", device="eth0")

    def fails(_name):
        raise single
    with pytest.raises(MlnxError) as err:
        plan_all(fails, ["eth0"], named_by_item=True)
    assert err.value is single                   # one error is raised as it is


def test_combine():
    one = DeviceNotFound("%s is not on this host" % A, device=A, allowed=[B])
    assert MlnxError.combine([one]) is one
    same = [ToolFailed("%s: -E- Failed to open the device" % d, device=d, rc=3) for d in (A, B)]
    both = MlnxError.combine(same + [ToolFailed(same[0].msg, device=A)])
    assert isinstance(both, ToolFailed) and both.device == [A, B, A]
    assert both.msg == "%s: -E- Failed to open the device; %s: -E- Failed to open the device" % (A, B)  # once each
    assert MlnxError.combine([MlnxError("x"), MlnxError("y")]).device is None
    assert MlnxError.combine([MlnxError("x"), MlnxError("y")], devices=["eth0", "eth1"]).device == ["eth0", "eth1"]
    with pytest.raises(ValueError):
        MlnxError.combine([])


def test_combine_errors_whose_class_has_its_own_constructor():
    """Two cards whose flint output cannot be parsed, two bad QoS settings: one error naming both, of the nearest
    class that takes a joined message (ParseError and BadSetting build their message from other arguments)."""
    from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidValue
    from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.common import ParseError
    from ansible_collections.gpufabric.mlnx.plugins.module_utils._roce_qos import BadSetting
    parsed = MlnxError.combine([ParseError("flint", "no FW Version line"), ParseError("flint", "no PSID line")],
                               devices=[A, B])
    assert type(parsed) is MlnxError  # pylint: disable=unidiomatic-typecheck
    assert parsed.msg == "flint: no FW Version line; flint: no PSID line" and parsed.device == [A, B]
    settings = MlnxError.combine([BadSetting("roce_qos: cnp_dscp=64.", "cnp_dscp=64", parameter="cnp_dscp"),
                                  BadSetting("roce_qos: tc_bw=[1].", "tc_bw=[1]", parameter="tc_bw")])
    assert type(settings) is InvalidValue  # pylint: disable=unidiomatic-typecheck
    assert settings.msg == "roce_qos: cnp_dscp=64.; roce_qos: tc_bw=[1]." and settings.parameter == "cnp_dscp"
