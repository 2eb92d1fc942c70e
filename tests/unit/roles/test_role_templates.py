"""The files the roles write (udev rules, the governor's systemd unit) and the shared handlers of roles/common that
reload udev and systemd.

No role writes them from a template any more: the platform role's rule and unit are written by its module
(gpufabric.mlnx.platform_host, module_utils/_platform.py renders them), the RoCE QoS rule by the roce_qos module
(module_utils/_roce_qos_script.py).
Each is compared with the text the roles wrote before (every byte); every value from the inventory that reaches a
rule, a unit or a shell command line must match a strict grammar (the strict_word filter, the module's own check), so
a value with a quote, a space, '$', '%', a glob or a newline fails naming the host and the variable or option. The
platform role runs on a simulated host to show the rule written (udevd made to read it only where it runs) and not
again on a rerun."""
import json
import subprocess
import sys

import pytest
import yaml

from _ansible import env, tool
from ansible_collections.gpufabric.mlnx.plugins.module_utils import _platform
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidValue
from ansible_collections.gpufabric.mlnx.plugins.module_utils._roce_qos_script import udev_rule

LOCAL = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}


def playbook(tmp_path, plays, hosts=None, **extra_env):
    """ansible-playbook of ``plays`` on the local hosts ``hosts`` ({name: vars}) of group servers; (proc, JSON)."""
    inventory = {name: dict(LOCAL, **host_vars) for name, host_vars in (hosts or {"srv-r01-01": {}}).items()}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": {"servers": {"hosts": inventory}}}}))
    (tmp_path / "play.yml").write_text(yaml.safe_dump(plays))
    proc = subprocess.run([str(tool("ansible-playbook")), "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml")],
                          env=env(tmp_path, ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", **extra_env),
                          capture_output=True, text=True, timeout=300, check=False, cwd=str(tmp_path))
    return proc, json.loads(proc.stdout)


# The text each role wrote with an inline copy content: before templates/, byte for byte.
NIC_RULE_TEXT = (
    "# gpufabric.mlnx platform - managed by Ansible, local changes are overwritten.\n"
    "# NVIDIA networking PCI functions are never runtime-suspended (no wake-up latency on the rails).\n"
    'ACTION=="add|bind", SUBSYSTEM=="pci", ATTR{vendor}=="0x15b3", ATTR{class}=="0x02*", '
    'ATTR{power/control}="%s"\n')
UNIT_TEXT = (
    "# gpufabric.mlnx platform - managed by Ansible, local changes are overwritten.\n"
    "[Unit]\n"
    "Description=cpufreq governor %(g)s on every CPU (gpufabric.mlnx)\n"
    "After=systemd-modules-load.service\n"
    "\n"
    "[Service]\n"
    "Type=oneshot\n"
    "ExecStart=/bin/sh -c 'for g in %(root)s/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor; "
    "do echo %(g)s > \"$g\"; done; exit 0'\n"
    "\n"
    "[Install]\n"
    "WantedBy=multi-user.target\n")
QOS_RULE_TEXT = (
    "# gpufabric.mlnx roce_qos - managed by Ansible, local changes are overwritten.\n"
    "# The mlx5 driver forgets RoCE QoS on reboot, driver reload and firmware reset; re-apply it when the\n"
    "# compute rail's netdev appears.\n"
    'ACTION=="add", SUBSYSTEM=="net", KERNEL=="%s", RUN+="%s $name"\n')


def qos_rule(names, script="/usr/local/sbin/gpufabric-roce-qos"):
    """The RoCE QoS rule as the roce_qos module writes it; the text or the refusal's message."""
    try:
        return udev_rule(names, script, host="srv-r01-01")
    except InvalidValue as err:
        return err.msg


def test_the_files_are_what_the_roles_wrote_before():
    assert _platform.render_nic_rule(False) == NIC_RULE_TEXT % "on"
    assert _platform.render_nic_rule(True) == NIC_RULE_TEXT % "auto"
    assert _platform.render_governor_unit("performance", "/") == UNIT_TEXT % {"g": "performance", "root": ""}
    assert _platform.render_governor_unit("powersave", "/var/lib/mlxsim/root//") == UNIT_TEXT % {
        "g": "powersave", "root": "/var/lib/mlxsim/root"}
    assert _platform.render_governor_unit(" schedutil\n", "/") == UNIT_TEXT % {"g": "schedutil", "root": ""}
    out = {"qos": qos_rule(["enp24s0np0", "enp64s0np0"]),
           "qos-one": qos_rule(["rail0.100"], "/opt/gpufabric/bin/roce-qos")}
    assert out == {
        "qos": QOS_RULE_TEXT % ("enp24s0np0|enp64s0np0", "/usr/local/sbin/gpufabric-roce-qos"),
        "qos-one": QOS_RULE_TEXT % ("rail0.100", "/opt/gpufabric/bin/roce-qos"),
    }


PATH = "an absolute path of ASCII letters, digits and _ . + - /"
GOVERNOR = "a cpufreq governor name (lower-case ASCII letters, digits, _ and -, e.g. performance)"


@pytest.mark.parametrize("governor, root, message", [
    ("performance; reboot", "/", "srv-r01-01: cpu_governor='performance; reboot' cannot be written into a udev rule, "
                                 "systemd unit or script: allowed is " + GOVERNOR),
    ("performance\nExecStartPre=/bin/reboot", "/", "srv-r01-01: cpu_governor='performance\\nExecStartPre=/bin/reboot' "
                                                   "cannot be written into a udev rule, systemd unit or script: allowed "
                                                   "is " + GOVERNOR),
    ("performance", "/srv/sim root", "srv-r01-01: root='/srv/sim root' cannot be written into a udev rule, systemd "
                                     "unit or script: allowed is " + PATH),
    ("performance", "/x'$(reboot)'", "srv-r01-01: root=\"/x'$(reboot)'\" cannot be written into a udev rule, systemd "
                                     "unit or script: allowed is " + PATH),
    ("performance", "/run/%H", "srv-r01-01: root='/run/%H' cannot be written into a udev rule, systemd unit or "
                               "script: allowed is " + PATH),
    ("performance", "sim/root", "srv-r01-01: root='sim/root' cannot be written into a udev rule, systemd unit or "
                                "script: allowed is " + PATH),
])
def test_no_value_reaches_the_governor_unit_outside_its_grammar(governor, root, message):
    with pytest.raises(InvalidValue) as err:
        _platform.render_governor_unit(governor, root, host="srv-r01-01")
    assert str(err.value) == message


def test_no_inventory_value_reaches_a_rule_outside_its_grammar():
    """The roce_qos module refuses these before writing anything, with the words the strict_word filter uses."""
    path = PATH
    ifname = "a network interface name of 1-15 ASCII letters, digits and _ . + - (not '.' or '..')"
    out = {"name-quote": qos_rule(["enp24s0np0", 'x", RUN+="/bin/reboot']),
           "name-glob": qos_rule(["enp*"]),
           "name-long": qos_rule(["enp24s0np0abcdef"]),
           "script-space": qos_rule(["enp24s0np0"], "/usr/local/sbin/roce qos"),
           "script-dollar": qos_rule(["enp24s0np0"], "/usr/local/sbin/$name")}
    assert out == {
        "name-quote": "srv-r01-01: gpufabric_roce_qos_interfaces='x\", RUN+=\"/bin/reboot' cannot be written into "
                      "a udev rule, systemd unit or script: allowed is " + ifname,
        "name-glob": "srv-r01-01: gpufabric_roce_qos_interfaces='enp*' cannot be written into a udev rule, "
                     "systemd unit or script: allowed is " + ifname,
        "name-long": "srv-r01-01: gpufabric_roce_qos_interfaces='enp24s0np0abcdef' cannot be written into a udev "
                     "rule, systemd unit or script: allowed is " + ifname,
        "script-space": "srv-r01-01: gpufabric_roce_qos_script='/usr/local/sbin/roce qos' cannot be written into a "
                        "udev rule, systemd unit or script: allowed is " + path,
        "script-dollar": "srv-r01-01: gpufabric_roce_qos_script='/usr/local/sbin/$name' cannot be written into a "
                         "udev rule, systemd unit or script: allowed is " + path,
    }


# ------------------------------------------------------------------------------------------ handlers

HANDLERS_PLAY = {"hosts": "servers", "gather_facts": False, "roles": ["gpufabric.mlnx.common"], "tasks": [
    {"name": "Write a rule", "ansible.builtin.copy": {"dest": "{{ playbook_dir }}/r.rules", "content": "# r\n"},
     "notify": "gpufabric.mlnx udev rules changed"},
    {"name": "Write another rule", "ansible.builtin.copy": {"dest": "{{ playbook_dir }}/s.rules", "content": "# s\n"},
     "notify": "gpufabric.mlnx udev rules changed"},
    {"name": "Write a unit", "ansible.builtin.copy": {"dest": "{{ playbook_dir }}/u.service", "content": "# u\n"},
     "notify": "gpufabric.mlnx systemd units changed"}]}
HANDLERS = ["Is udevd running", "Make udevd read the rules", "Is systemd running", "Make systemd read the unit files"]


def handler_runs(data):
    """[(handler name, skipped?)] in the order the handlers ran on srv-r01-01."""
    return [(t["task"]["name"].split(" : ")[-1], bool(t["hosts"]["srv-r01-01"].get("skipped")))
            for p in data["plays"] for t in p["tasks"] if t["task"]["name"].split(" : ")[-1] in HANDLERS]


def test_the_shared_handlers_run_once_per_topic_and_only_where_the_daemon_runs(tmp_path):
    """Two rules and a unit written: each topic's handlers run once, in order; this machine runs neither udevd nor
    systemd (no /run/udev/control, no /run/systemd/system), so the reloads themselves are skipped. A rerun that
    changes nothing notifies nothing."""
    proc, data = playbook(tmp_path, [HANDLERS_PLAY])
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert handler_runs(data) == [("Is udevd running", False), ("Make udevd read the rules", True),
                                  ("Is systemd running", False), ("Make systemd read the unit files", True)]
    proc, data = playbook(tmp_path, [HANDLERS_PLAY])
    assert proc.returncode == 0 and handler_runs(data) == []


@pytest.fixture
def platform_host(sim_host, tmp_path):
    """A simulated DGX H100 whose NIC power rule goes to tmp_path/udev (no governor unit: it would go to /etc)."""
    sim = sim_host("dgx-h100", hostname="srv-r01-01")
    root = str(tmp_path / "root")
    return sim, {"gpufabric_sysfs_root": root, "gpufabric_platform_boot_root": root,
                 "gpufabric_platform_pcie_check": False, "gpufabric_platform_cpu_governor": "",
                 "gpufabric_platform_nic_runtime_pm": False,
                 "gpufabric_platform_nic_udev_rule": str(tmp_path / "udev" / "90-gpufabric-nic-power.rules")}


def test_the_platform_role_writes_its_rule_and_reloads_udev_only_where_it_runs(platform_host, tmp_path):
    """The module writes the rule itself (no handler to notify); this machine runs no udevd (no /run/udev/control), so
    nothing is reloaded. A rerun writes nothing."""
    sim, host_vars = platform_host
    rule = tmp_path / "udev" / "90-gpufabric-nic-power.rules"
    play = [{"hosts": "servers", "gather_facts": False, "roles": ["gpufabric.mlnx.platform"]}]
    proc, data = playbook(tmp_path, play, {"srv-r01-01": host_vars}, **sim.env)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert rule.read_text() == NIC_RULE_TEXT % "on" and oct(rule.stat().st_mode & 0o777) == "0o644"
    host_side = host_task(data)
    assert host_side["files"] == [str(rule)] and host_side["reloaded"] == []
    assert handler_runs(data) == []
    proc, data = playbook(tmp_path, play, {"srv-r01-01": host_vars}, **sim.env)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert host_task(data)["files"] == [] and handler_runs(data) == []


def host_task(data):
    """The result of the platform role's host-side task on srv-r01-01."""
    [result] = [t["hosts"]["srv-r01-01"] for p in data["plays"] for t in p["tasks"]
                if t["task"]["name"].endswith(" : Kernel command line, power policy and PCIe links")]
    return result


def test_platform_and_roce_qos_in_one_play_share_one_udev_reload(platform_host, tmp_path):
    """Both roles write a rule: the platform module reloads udev itself where udevd runs (not here), the roce_qos
    module task notifies the handler of gpufabric.mlnx.common: the udev handlers run once. The RoCE QoS rule is the
    module's, for the rails it configured on the simulated host."""
    sim, host_vars = platform_host
    host_vars = dict(host_vars, gpufabric_roce_qos_interfaces=["enp41s0f0np0", "enp41s0f1np1"],
                     gpufabric_roce_qos_mgmt_interface="eno1",
                     gpufabric_roce_qos_script=str(tmp_path / "sbin" / "gpufabric-roce-qos"),
                     gpufabric_roce_qos_udev_rule=str(tmp_path / "udev" / "90-gpufabric-roce-qos.rules"))
    (tmp_path / "sbin").mkdir()
    play = [{"hosts": "servers", "gather_facts": False,
             "roles": ["gpufabric.mlnx.platform", "gpufabric.mlnx.roce_qos"]}]
    proc, data = playbook(tmp_path, play, {"srv-r01-01": host_vars}, **sim.env)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert (tmp_path / "udev" / "90-gpufabric-roce-qos.rules").read_text() == QOS_RULE_TEXT % (
        "enp41s0f0np0|enp41s0f1np1", tmp_path / "sbin" / "gpufabric-roce-qos")
    assert handler_runs(data) == [("Is udevd running", False), ("Make udevd read the rules", True)]
