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
    assert out["diff"]["before"] == out["diff"]["after"]


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
    assert out["diff"]["before"][A]["ecn_np"] == {"3": 0} and out["diff"]["after"][A]["ecn_np"] == {"3": 1}
    assert out["diff"]["after"][B]["traffic_class"] == 106 and out["diff"]["before"][B]["traffic_class"] is None
    fake.writes.clear()
    failed, again, _fake = run({"interfaces": [A, B]}, None, fake=fake)
    assert not failed and again["changed"] is False and fake.writes == []


def test_check_mode_predicts_and_writes_nothing(run):
    ports = {A: Port("mlx5_0")}
    failed, out, fake = run({"interfaces": [A]}, ports, check=True)
    assert not failed and out["changed"] and out["msg"].startswith("would change %s: " % A)
    assert fake.writes == [] and ports[A].trust == "pcp" and ports[A].tos == 0
    assert out["diff"]["after"][A]["trust"] == "dscp"


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
