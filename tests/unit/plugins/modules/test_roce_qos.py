"""The roce_qos module: arguments, results, diff, check mode and failures, on the fake host of fake_roce_qos."""
import pytest
from _modules import run_module

from ansible_collections.gpufabric.mlnx.plugins.modules import roce_qos
from unit.plugins.module_utils.fake_roce_qos import Port, QosHost, compliant_port

A, B = "enp24s0np0", "enp41s0np0"


@pytest.fixture
def run(monkeypatch, tmp_path):
    """run(args, ports, check=False, **host) -> (failed?, result, fake)."""
    def _run(args, ports, check=False, fake=None, **kwargs):
        fake = fake or QosHost(tmp_path, ports, **kwargs)

        def reader(root="/", timeout=None):
            fake.roots.append(root)
            return fake.reader()
        fake.roots = []
        monkeypatch.setattr(roce_qos, "Host", reader)
        failed, out = run_module(roce_qos, args, check=check)
        return failed, out, fake
    return _run


def test_compliant_host(run):
    failed, out, fake = run({"interfaces": [A, B]}, {A: compliant_port("mlx5_0"), B: compliant_port("mlx5_1")},
                            compliant=True)
    assert not failed and out["changed"] is False and fake.writes == []
    assert out["msg"] == "RoCE QoS already as wanted on %s, %s" % (A, B)
    assert out["diff"][0]["before"] == out["diff"][0]["after"]


def test_root_reaches_the_host_reader_and_replay_sets_everything(run):
    failed, out, fake = run({"interfaces": [A], "root": "/var/lib/mlxsim/root"}, {A: compliant_port("mlx5_0")},
                            compliant=True)
    assert not failed and fake.roots == ["/var/lib/mlxsim/root"]
    replay = out["interfaces"][0]["replay"]
    assert replay[0] == {"argv": ["mlnx_qos", "-i", A, "--trust", "dscp", "--pfc", "0,0,0,1,0,0,0,0"]}
    assert replay[-1] == {"argv": ["cma_roce_tos", "-d", "mlx5_0", "-p", "1", "-t", "106"]}
    assert out["interfaces"][0]["commands"] == []


def test_fresh_host_then_idempotent(run):
    ports = {A: Port("mlx5_0"), B: Port("mlx5_1")}
    failed, out, fake = run({"interfaces": [A, B]}, ports)
    assert not failed and out["changed"] is True
    assert out["msg"] == "changed %s: cma_roce_tos, cnp_802p_prio, cnp_dscp, ecn_np[3], ecn_rp[3], pfc, " \
                         "traffic_class, trust; %s: cma_roce_tos, cnp_802p_prio, cnp_dscp, ecn_np[3], ecn_rp[3], pfc, " \
                         "traffic_class, trust" % (A, B)
    one = out["interfaces"][0]
    assert one["changes"]["trust"] == {"before": "pcp", "after": "dscp"}
    assert one["commands"][0] == {"argv": ["mlnx_qos", "-i", A, "--trust", "dscp", "--pfc", "0,0,0,1,0,0,0,0"]}
    assert out["diff"][0]["before"][A]["ecn_np"] == {"3": 0} and out["diff"][0]["after"][A]["ecn_np"] == {"3": 1}
    assert out["diff"][0]["after"][B]["traffic_class"] == 106 and out["diff"][0]["before"][B]["traffic_class"] is None
    fake.writes.clear()
    failed, again, _fake = run({"interfaces": [A, B]}, None, fake=fake)
    assert not failed and again["changed"] is False and fake.writes == []


def test_check_mode_predicts_and_writes_nothing(run):
    ports = {A: Port("mlx5_0")}
    failed, out, fake = run({"interfaces": [A]}, ports, check=True)
    assert not failed and out["changed"] and out["msg"].startswith("would change %s: " % A)
    assert fake.writes == [] and ports[A].trust == "pcp" and ports[A].tos == 0
    assert out["diff"][0]["after"][A]["trust"] == "dscp"


@pytest.mark.parametrize("args, parameter, words", [
    ({"pfc_priorities": [3, 8]}, "pfc_priorities[1]", ["0-7", A]),
    ({"cnp_dscp": 64}, "cnp_dscp", ["0-63", A]),
    ({"cma_roce_tos": 300}, "cma_roce_tos", ["0-255", A]),
    ({"prio_tc": [0, 1, 2]}, "prio_tc", ["8 integers 0-7", A]),
    ({"tsa": ["ets"] * 8, "tc_bw": [10] * 8}, "tc_bw", ["100", A]),
    ({"interfaces": [A, "eth7"]}, "interfaces", ["eth7", A]),
    ({"mgmt_interface": A}, "interfaces", [A, "management", "allow_mgmt"]),
])
def test_bad_input_fails_naming_what_it_must_and_changes_nothing(run, args, parameter, words):
    failed, out, fake = run(dict({"interfaces": [A]}, **args), {A: Port("mlx5_0")})
    assert failed and out["parameter"] == parameter
    assert all(w in out["msg"] for w in words), out["msg"]
    assert fake.writes == [] and [c for c in fake.calls if c[0].endswith(("mlnx_qos", "cma_roce_tos"))] == []


def test_value_that_does_not_take_fails_the_task(run):
    failed, out, _fake = run({"interfaces": [A, B]}, {A: Port("mlx5_0", stuck=["trust"]), B: Port("mlx5_1")})
    assert failed and list(out["failed_interfaces"]) == [A]
    assert "trust=dscp did not take (now trust=pcp)" in out["failed_interfaces"][A]
    assert out["parameter"] == "trust" and [r["interface"] for r in out["interfaces"]] == [B]


def test_leave_switches_a_setting_off(run):
    failed, out, fake = run({"interfaces": [A], "leave": ["traffic_class", "cma_roce_tos"]}, {A: Port("mlx5_0")})
    assert not failed and out["changed"]
    changes = out["interfaces"][0]["changes"]
    assert "traffic_class" not in changes and "cma_roce_tos" not in changes and "trust" in changes
    assert not [s for s in out["interfaces"][0]["replay"] if s.get("argv", [""])[0] == "cma_roce_tos"]
    failed, out, _fake = run({"interfaces": [A], "leave": ["mtu"]}, {}, fake=fake)
    assert failed and "leave" in out["msg"] and "traffic_class" in out["msg"]


SCRIPT, RULE = "/usr/local/sbin/gpufabric-roce-qos", "/etc/udev/rules.d/90-gpufabric-roce-qos.rules"
PERSIST = {"persist": True, "script": SCRIPT, "udev_rule": RULE, "host": "srv-a"}


def test_persist_writes_the_script_and_the_rule_once_with_diffs_in_check_mode(run, tmp_path):
    """The script and the rule (the fake host's files under its root): --check shows both texts and writes nothing;
    the run writes them (0755, 0644, the rules directory made); a rerun changes nothing; the fact is returned."""
    ports = {A: compliant_port("mlx5_0"), B: compliant_port("mlx5_1")}
    script, rule = tmp_path / SCRIPT.lstrip("/"), tmp_path / RULE.lstrip("/")
    script.parent.mkdir(parents=True)
    failed, out, fake = run(dict(PERSIST, interfaces=[A, B]), ports, check=True, compliant=True)
    assert not failed and out["changed"] and fake.writes == [] and not script.exists() and not rule.exists()
    assert out["msg"] == ("RoCE QoS already as wanted on %s, %s; re-applied on interface add by %s (would change)"
                          % (A, B, SCRIPT))
    assert [d.get("after_header") for d in out["diff"]] == [None, SCRIPT, RULE]
    assert out["diff"][2]["after"] == (
        "# gpufabric.mlnx roce_qos - managed by Ansible, local changes are overwritten.\n"
        "# The mlx5 driver forgets RoCE QoS on reboot, driver reload and firmware reset; re-apply it when the\n"
        "# compute rail's netdev appears.\n"
        'ACTION=="add", SUBSYSTEM=="net", KERNEL=="%s|%s", RUN+="%s $name"\n' % (A, B, SCRIPT))
    assert out["ansible_facts"]["gpufabric_roce_qos"] == {"changed": False, "interfaces": [A, B], "drift": [],
                                                          "waiting_for_driver": False, "waiting_for_activation": False}

    failed, out, fake = run(dict(PERSIST, interfaces=[A, B]), ports, fake=fake)
    assert not failed and out["changed"] and fake.writes == []
    assert script.read_text() == out["diff"][1]["after"] and script.read_text().startswith("#!/bin/sh\n")
    assert "    %s)\n" % A in script.read_text() and oct(script.stat().st_mode & 0o7777) == "0o755"
    assert oct(rule.stat().st_mode & 0o7777) == "0o644" and oct(rule.parent.stat().st_mode & 0o7777) == "0o755"
    assert out["files"] == [{"path": SCRIPT, "changed": True, "reasons": ["created"]},
                            {"path": RULE, "changed": True, "reasons": ["created"]}]

    failed, out, fake = run(dict(PERSIST, interfaces=[A, B]), ports, fake=fake)
    assert not failed and not out["changed"] and [d.get("after_header") for d in out["diff"]] == [None]
    assert out["msg"] == "RoCE QoS already as wanted on %s, %s" % (A, B)


@pytest.mark.parametrize("option, value, words", [
    ("script", "/usr/local/sbin/roce qos", "srv-a: gpufabric_roce_qos_script='/usr/local/sbin/roce qos' cannot be "
                                           "written into a udev rule, systemd unit or script: allowed is an absolute "
                                           "path of ASCII letters, digits and _ . + - /"),
    ("script", "/usr/local/sbin/$name", "gpufabric_roce_qos_script='/usr/local/sbin/$name' cannot be written"),
    ("udev_rule", "/etc/udev/rules.d/../x.rules", "srv-a: gpufabric_roce_qos_udev_rule='/etc/udev/rules.d/../x.rules' "
                                                  "is not a file the module can write: allowed is an absolute path of a "
                                                  "file (no newline or NUL, no '..' part, not ending in /)"),
])
def test_a_file_path_outside_the_grammar_fails_before_anything_runs(run, option, value, words):
    failed, out, fake = run(dict(PERSIST, interfaces=[A], **{option: value}), {A: compliant_port("mlx5_0")})
    assert failed and words in out["msg"] and fake.calls == [] and fake.writes == []
    failed, out, fake = run(dict(PERSIST, interfaces=[A], persist=False, **{option: value}), None, fake=fake)
    assert not failed and out["files"] == []     # not persisted: the path is not used


def test_not_in_the_rail_plan_and_the_forecasts(run):
    failed, out, fake = run({"interfaces": [], "host": "srv-r09-01", "plan_hosts": 4}, {A: compliant_port("mlx5_0")})
    assert failed and out["msg"] == ("srv-r09-01 is not in the rail plan (it plans the 4 hosts of group servers): add "
                                     "it to that group with its rack and position.") and fake.calls == []
    # a driver change coming: nothing read, not even the tools
    failed, out, fake = run({"interfaces": [A, B], "driver_action": "upgrade"}, None, check=True, fake=fake)
    assert not failed and out["changed"] and fake.calls == [] and out["interfaces"] == []
    assert out["msg"] == "the driver would change (upgrade): RoCE QoS of %s, %s would be set on the new driver" % (A, B)
    assert out["ansible_facts"]["gpufabric_roce_qos"]["waiting_for_driver"] is True
    # an activation coming and B not on the host: after the activation; A alone is there: read
    failed, out, fake = run({"interfaces": [A, B], "pending_activation": "reboot"}, None, check=True, fake=fake)
    assert not failed and out["msg"] == ("%s not on the host before the activation (reboot) of this run: RoCE QoS of "
                                         "%s, %s would be set after it" % (B, A, B))
    assert out["ansible_facts"]["gpufabric_roce_qos"] == {"changed": True, "interfaces": [A, B], "drift": [A, B],
                                                          "waiting_for_driver": False, "waiting_for_activation": True}
    failed, out, fake = run({"interfaces": [A], "pending_activation": "reboot"}, None, check=True, fake=fake)
    assert not failed and out["interfaces"][0]["interface"] == A and fake.calls
    assert out["ansible_facts"]["gpufabric_roce_qos"]["waiting_for_activation"] is False
    # outside check mode the words change nothing: the host is read (and B is not there)
    failed, out, fake = run({"interfaces": [A, B], "driver_action": "install"}, None, fake=fake)
    assert failed and B in out["msg"]
