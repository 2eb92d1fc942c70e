"""pytest-testinfra checks of the roce_qos lab after verify.yml: what a person would type on the host.

Run by verify.yml with ``--hosts podman://<container>,...``; MOLECULE_RAILS is the rails' interfaces.
The NIC side is the simulator's (its tools, its sysfs tree under /var/lib/mlxsim/root).
"""
import json
import os
import re

RAILS = json.loads(os.environ.get("MOLECULE_RAILS", "[]"))
ROOT = "/var/lib/mlxsim/root"


def test_every_rail_trusts_dscp_with_pfc_on_priority_3_only(host):
    assert len(RAILS) == 8
    for rail in RAILS:
        out = host.check_output("mlnx_qos -i %s", rail)
        assert "Priority trust state: dscp" in out, rail
        enabled = re.search(r"^\s*enabled\s+((?:\d\s+){8})", out, re.M).group(1).split()
        assert enabled == ["0", "0", "0", "1", "0", "0", "0", "0"], (rail, enabled)


def test_ecn_cnp_tos_and_traffic_class(host):
    for rail in RAILS:
        net = "%s/sys/class/net/%s" % (ROOT, rail)
        assert host.file(net + "/ecn/roce_np/enable/3").content_string.strip() == "1"
        assert host.file(net + "/ecn/roce_rp/enable/3").content_string.strip() == "1"
        assert host.file(net + "/ecn/roce_np/cnp_dscp").content_string.strip() == "48"
        assert host.file(net + "/ecn/roce_np/cnp_802p_prio").content_string.strip() == "6"
        rdma = host.check_output("ls %s/device/infiniband", net).split()[0]
        assert host.check_output("cma_roce_tos -d %s -p 1", rdma).strip() == "106", rail
        tclass = host.file("%s/sys/class/infiniband/%s/tc/1/traffic_class" % (ROOT, rdma)).content_string
        assert tclass.strip() == "Global tclass=106", (rail, tclass)


def test_persistence_files(host):
    script = host.file("/usr/local/sbin/gpufabric-roce-qos")
    assert script.exists and script.mode == 0o755 and script.user == "root"
    rule = host.file("/etc/udev/rules.d/90-gpufabric-roce-qos.rules").content_string
    assert 'ACTION=="add", SUBSYSTEM=="net", KERNEL=="%s"' % "|".join(RAILS) in rule
    assert 'RUN+="/usr/local/sbin/gpufabric-roce-qos $name"' in rule
    assert host.run("sh -n /usr/local/sbin/gpufabric-roce-qos").rc == 0


def test_the_script_by_hand_restores_a_rail(host):
    rail = RAILS[2]
    host.check_output("mlnx_qos -i %s --trust pcp", rail)
    assert "Priority trust state: pcp" in host.check_output("mlnx_qos -i %s", rail)
    run = host.run("/usr/local/sbin/gpufabric-roce-qos %s", rail)
    assert run.rc == 0, run.stderr
    assert "Priority trust state: dscp" in host.check_output("mlnx_qos -i %s", rail)


def test_management_interface_untouched(host):
    assert host.interface("eth0").exists
    assert any(a.startswith("198.19.60.") for a in host.interface("eth0").addresses)
    assert "eth0" not in host.file("/etc/udev/rules.d/90-gpufabric-roce-qos.rules").content_string
