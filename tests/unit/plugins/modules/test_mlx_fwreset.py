"""The mlx_fwreset module: arguments, results, check mode, failures - on fake tools and on the simulator.

Simulator tests run the module in-process with tests/sim/bin first on PATH (MLXSIM_TIME_SCALE=0) and
read the simulator's call log to count resets.
"""
import pytest
from _modules import run_module

from ansible_collections.gpufabric.mlnx.plugins.module_utils import _devices as devices_
from ansible_collections.gpufabric.mlnx.plugins.modules import mlx_fwreset
from unit.plugins.module_utils.fake_fwreset import MSTFLINT, NEW, OLD, Card, CardsHost, with_mgmt

A, A1, B = "0000:18:00.0", "0000:18:00.1", "0000:40:00.0"


@pytest.fixture
def run(monkeypatch, tmp_path):
    """run(args, cards, check=False) -> (failed?, result, fake) with fake mstflint tools; the management connection
    is on eth9, a virtual interface: no card carries it."""
    def _run(args, cards, check=False):
        fake = with_mgmt(CardsHost(cards, root=tmp_path), default_route="eth9")

        def runner(tool="auto", timeout=900):
            return fake.runner(tool, installed=MSTFLINT + ("ip", "ibdev2netdev"), timeout=timeout)

        monkeypatch.setattr(mlx_fwreset, "Runner", runner)
        monkeypatch.setattr(devices_, "discover", fake.discover)
        monkeypatch.delenv("SSH_CONNECTION", raising=False)
        failed, out = run_module(mlx_fwreset, args, check=check)
        return failed, out, fake
    return _run


# ---------------------------------------------------------------- fake tools

def test_compliant_host_is_not_reset(run):
    failed, out, fake = run({}, {A: Card(), B: Card()})
    assert not failed and out["changed"] is False and fake.resets() == []
    assert out["level"] is None and out["reset_supported"] and not out["reboot_required"]
    assert [d["device"] for d in out["devices"]] == [A, B] and out["msg"] == "nothing pending, no reset"


def test_pending_host_is_reset_once_per_card(run):
    failed, out, fake = run({"device": ["18:00.1", "18:00.0", "40:00.0"]},
                            {A: Card(burned=NEW, running=OLD, nv_pending=[A1], functions=2), B: Card()})
    assert not failed and out["changed"] and out["level"] == 3
    assert fake.resets() == [("/usr/bin/mstfwreset", "-d", A, "reset", "-l", "3", "-y")]
    dev = {d["device"]: d for d in out["devices"]}
    assert dev[A]["functions"] == [A, A1] and dev[A]["pending"] == {"firmware": True, "nv_config": ["SRIOV_EN"]}
    assert dev[A]["after"]["pending"] == {"firmware": False, "nv_config": []}


def test_unsupported_returns_reboot_required(run):
    failed, out, fake = run({}, {A: Card(burned=NEW, running=OLD, levels=(4,), default=4), B: Card()})
    assert not failed and not out["changed"] and fake.resets() == []
    assert out["reboot_required"] is True and out["reset_supported"] is False
    assert out["unsupported"] == [{"device": A, "level": 3, "supported_levels": [4]}]


def test_fail_if_unsupported(run):
    failed, out, fake = run({"fail_if_unsupported": True}, {A: Card(burned=NEW, running=OLD, levels=(4,))})
    assert failed and fake.resets() == [] and "fail_if_unsupported" in out["msg"] and A in out["msg"]
    assert out["reboot_required"] is True


def test_query_state_changes_nothing(run):
    failed, out, fake = run({"state": "query", "fail_if_unsupported": True},
                            {A: Card(burned=NEW, running=OLD), B: Card(levels=(0, 3, 4))})
    assert not failed and not out["changed"] and fake.resets() == []
    assert [d["supported_levels"] for d in out["devices"]] == [[3, 4], [0, 3, 4]]
    assert out["msg"] == "a reset would activate %s at level 3 (driver restart and PCI reset)" % A


def test_check_mode_predicts(run):
    failed, out, fake = run({}, {A: Card(burned=NEW, running=OLD)}, check=True)
    assert not failed and out["changed"] is True and fake.resets() == []
    assert out["msg"].startswith("would reset %s" % A)


def test_check_mode_plans_the_cards_an_earlier_step_would_leave_pending(run):
    failed, out, fake = run({"predicted_pending": [B]}, {A: Card(), B: Card()}, check=True)
    assert not failed and out["changed"] is True and out["level"] == 3 and fake.resets() == []
    assert [(d["device"], d["action"]) for d in out["devices"]] == [(A, "none"), (B, "reset")]


def test_a_real_run_resets_only_what_the_cards_say_is_pending(run):
    """predicted_pending is check mode's forecast: a real run reads the cards and resets none that is not pending."""
    failed, out, fake = run({"predicted_pending": [B]}, {A: Card(), B: Card()})
    assert not failed and out["changed"] is False and fake.resets() == []


def test_reboot_required_resets_nothing_and_reads_nothing(run):
    failed, out, fake = run({"reboot_required": True}, {A: Card(burned=NEW, running=OLD)})
    assert not failed and out["changed"] is False and out["reboot_required"] is True and fake.resets() == []
    assert out["msg"] == "no reset: the host waits for a reboot anyway (reboot_required)"


def test_a_predicted_card_that_is_not_a_device_name_fails_before_any_tool(run):
    failed, out, fake = run({"predicted_pending": ["18:00"]}, {A: Card(burned=NEW, running=OLD)}, check=True)
    assert failed and "predicted_pending[0]" in out["msg"] and fake.resets() == []


@pytest.mark.parametrize("level, words", [(4, "restarts the whole host"), ("x", "level must be auto"),
                                          (0, "does not activate the NV configuration")])
def test_bad_level_fails_before_any_reset(run, level, words):
    failed, out, fake = run({"level": level}, {A: Card(nv_pending=[A])})
    assert failed and words in out["msg"] and out["parameter"] == "level" and fake.resets() == []


def test_unknown_device_lists_what_is_present(run):
    failed, out, fake = run({"device": ["5e:00.0"]}, {A: Card()})
    assert failed and "5e:00.0 is not on this host" in out["msg"] and A in out["msg"] and fake.calls == []


def test_failure_after_reset_names_the_device(run):
    failed, out, _fake = run({}, {A: Card(burned=NEW, running=OLD), B: Card(burned=NEW, running=OLD, vanish=True)})
    assert failed and out["changed"] and list(out["failed_devices"]) == [B]
    assert "activation failed on 1 of 2 devices" in out["msg"] and B in out["msg"]


# ---------------------------------------------------------------- simulator, end to end

def burn(host, devices, version="28.43.1014", psid="MT_0000000838", device_id="4129"):
    image = host.mkimage(psid, version, device_id)["path"]
    for dev in devices:
        done = host.run("flint", "-d", dev, "-i", image, "-y", "burn")
        assert done.returncode == 0, done.stdout
    host.clear_calls()


def resets(host):
    return [argv for argv in host.argvs() if "reset" in argv]


def test_sim_burn_then_reset_then_nothing(sim_host):
    host = sim_host("dgx-h100")
    burn(host, ["18:00.0"])
    assert host.run("mlxconfig", "-d", "29:00.1", "-y", "set", "NUM_OF_VFS=4").returncode == 0
    host.clear_calls()
    args = {"device": ["18:00.0", "29:00.0", "4f:00.0"]}

    failed, out = run_module(mlx_fwreset, args)
    assert not failed, out["msg"]
    assert out["changed"] and out["level"] == 3 and out["reset_supported"] and not out["reboot_required"]
    assert sorted(resets(host)) == sorted(["mlxfwreset", "-d", dev, "reset", "-l", "3", "-y"]
                                          for dev in ("0000:18:00.0", "0000:29:00.0"))
    dev = {d["device"]: d for d in out["devices"]}
    assert dev["0000:18:00.0"]["pending"] == {"firmware": True, "nv_config": []}
    assert dev["0000:29:00.0"]["functions"] == ["0000:29:00.0", "0000:29:00.1"]
    assert dev["0000:29:00.0"]["pending"] == {"firmware": False, "nv_config": ["NUM_OF_VFS"]}
    assert dev["0000:4f:00.0"]["action"] == "none"
    assert dev["0000:18:00.0"]["after"]["firmware"] == {"burned": "28.43.1014", "running": "28.43.1014"}
    assert all(not d["after"]["pending"]["firmware"] and not d["after"]["pending"]["nv_config"] for d in dev.values())
    # the simulator agrees: running == burned, nothing pending
    assert all(c["fw"]["running"] == c["fw"]["burned"] for c in host.cards())

    host.clear_calls()
    failed, out = run_module(mlx_fwreset, args)
    assert not failed and out["changed"] is False and out["level"] is None
    assert resets(host) == [] and all(d["action"] == "none" for d in out["devices"])


def test_sim_check_mode_resets_nothing(sim_host):
    host = sim_host("dgx-h100")
    burn(host, ["18:00.0"])
    failed, out = run_module(mlx_fwreset, {"device": ["18:00.0"]}, check=True)
    assert not failed and out["changed"] and out["devices"][0]["action"] == "reset" and resets(host) == []
    assert any(c["fw"]["running"] != c["fw"]["burned"] for c in host.cards())


def test_sim_noreset_profile_needs_a_reboot(sim_host):
    host = sim_host("dgx-h100-noreset")
    burn(host, ["18:00.0"])
    failed, out = run_module(mlx_fwreset, {"device": ["18:00.0", "40:00.0"]})
    assert not failed and not out["changed"] and resets(host) == []
    assert out["reboot_required"] is True and out["reset_supported"] is False and out["level"] == 3
    assert out["unsupported"] == [{"device": "0000:18:00.0", "level": 3, "supported_levels": [4]}]
    assert [d["action"] for d in out["devices"]] == ["unsupported", "none"]

    failed, out = run_module(mlx_fwreset, {"device": ["18:00.0"], "fail_if_unsupported": True})
    assert failed and "0000:18:00.0" in out["msg"] and resets(host) == []


def test_sim_fwreset_unsupported_fault_on_one_card_stops_the_host(sim_host):
    host = sim_host("dgx-h100")
    burn(host, ["18:00.0", "40:00.0"])
    host.mlxsim("fault", "add", "fwreset_unsupported", "--device", "40:00.0")
    failed, out = run_module(mlx_fwreset, {"device": ["18:00.0", "40:00.0"]})
    assert not failed and out["reboot_required"] and resets(host) == []
    assert [u["device"] for u in out["unsupported"]] == ["0000:40:00.0"]
    assert {d["device"]: d["action"] for d in out["devices"]} == {"0000:18:00.0": "none", "0000:40:00.0": "unsupported"}


def test_sim_missing_after_reset_fails_naming_the_device(sim_host):
    host = sim_host("dgx-h100")
    burn(host, ["18:00.0", "40:00.0"])
    host.mlxsim("fault", "add", "missing_after_reset", "--device", "40:00.0")
    failed, out = run_module(mlx_fwreset, {"device": ["18:00.0", "40:00.0"]})
    assert failed and out["changed"] and list(out["failed_devices"]) == ["0000:40:00.0"]
    assert "0000:40:00.0: disappeared after the level 3 reset" in out["msg"]
    dev = {d["device"]: d for d in out["devices"]}
    assert dev["0000:40:00.0"]["after"] is None
    assert dev["0000:18:00.0"]["after"]["firmware"]["running"] == "28.43.1014"


def test_sim_mstflint_all_cards(sim_host):
    host = sim_host("cx6dx-roce")
    assert host.run("mstconfig", "-d", "d8:00.1", "-y", "set", "SRIOV_EN=1", "NUM_OF_VFS=8").returncode == 0
    host.clear_calls()
    failed, out = run_module(mlx_fwreset, {"tool": "mstflint"})
    assert not failed, out["msg"]
    assert resets(host) == [["mstfwreset", "-d", "0000:d8:00.0", "reset", "-l", "3", "-y"]]
    dev = {d["device"]: d for d in out["devices"]}
    assert dev["0000:d8:00.0"]["functions"] == ["0000:d8:00.0", "0000:d8:00.1"]
    assert set(dev["0000:d8:00.0"]["pending"]["nv_config"]) >= {"SRIOV_EN"}
    assert dev["0000:3b:00.0"]["action"] == "none"


def test_sim_card_carrying_management_is_not_reset(sim_host):
    """ibp24s0 (card 18:00, found through the simulated ibdev2netdev -v) carries the management connection: no card
    of the host is reset, the host needs a reboot; allowed explicitly, the cards are reset."""
    host = sim_host("dgx-h100")
    burn(host, ["18:00.0", "40:00.0"])
    failed, out = run_module(mlx_fwreset, {"mgmt_interface": "ibp24s0"})
    assert not failed and not out["changed"] and out["reboot_required"] and resets(host) == []
    assert out["management"] == [{"device": "0000:18:00.0", "interfaces": ["ibp24s0"]}]
    assert out["mgmt"]["on_mlx5"] and "ibp24s0" in out["msg"]
    failed, out = run_module(mlx_fwreset, {"mgmt_interface": "ibp24s0", "allow_mgmt_reset": True})
    assert not failed and out["changed"] and len(resets(host)) == 2 and "mgmt" not in out
