"""mlx_fwreset core: the pure decision (level, unsupported -> reboot), and the exact argv run.

The fake tools answer with real captures: mlxfwreset reset = mlxfwreset_reset_cx7_1.txt, flint q =
flint_query_cx7_1.txt (versions changed), mstconfig -e q = mstconfig_e_query_cx4lx_1.txt; the
mlxfwreset query is built from FORMAT_FACTS.md's row format (no real capture of it exists).
"""
import collections
import threading

import pytest

from ansible_collections.gpufabric.mlnx.plugins.module_utils import _devices as devices_
from ansible_collections.gpufabric.mlnx.plugins.module_utils import _fwreset as fr
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidValue, MlnxError, ToolFailed
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers import parse
from unit.plugins.module_utils.fake_fwreset import (
    NEW, OLD, RESET_OK, A, A1, B, C, Card, CardsHost, fwreset_query, make_runner, mgmt_host, nv_query)


def test_built_query_parses_as_format_facts_describe():
    parsed = parse("mlxfwreset", fwreset_query((0, 3, 4), 3))
    assert [(lv["level"], lv["supported"], lv["default"]) for lv in parsed["levels"]] == [
        (0, True, False), (1, False, False), (3, True, True), (4, True, False)]
    assert parsed["sync"][1]["supported"] is False
    assert parse("mlxfwreset_reset", RESET_OK)["ok"] is True


def test_nv_query_helper():
    from ansible_collections.gpufabric.mlnx.plugins.module_utils._mlxconfig import pending
    assert pending(parse("mstconfig", nv_query())[0]["params"]) == {}
    assert list(pending(parse("mstconfig", nv_query(True))[0]["params"])) == ["SRIOV_EN"]


# ---------------------------------------------------------------- the fake host

@pytest.fixture
def host(monkeypatch):
    """host(cards, **kw) -> CardsHost whose discover() stands in for lspci."""
    def make(cards, **kwargs):
        fake = CardsHost(cards, **kwargs)
        monkeypatch.setattr(devices_, "discover", fake.discover)
        return fake
    return make


def by_device(result):
    return {d["device"]: d for d in result["devices"]}


# ---------------------------------------------------------------- argv, table-driven

def _q(tool, dev):
    return ("/usr/bin/" + tool, "-d", dev, "q")


def _e(tool, dev):
    return ("/usr/bin/" + tool, "-d", dev, "-e", "q")


def _reset(tool, dev, level):
    return ("/usr/bin/" + tool, "-d", dev, "reset", "-l", str(level), "-y")


ARGV_CASES = {
    "firmware pending: query, reset at 3, re-read flint only": dict(
        cards={A: Card(burned=NEW, running=OLD)}, selected=[A], family="mstflint",
        calls={_q("mstfwreset", A): 1, _q("mstflint", A): 2, _e("mstconfig", A): 1, _reset("mstfwreset", A, 3): 1}),
    "NV pending: re-read -e q too": dict(
        cards={A: Card(nv_pending=[A])}, selected=[A], family="mstflint",
        calls={_q("mstfwreset", A): 1, _q("mstflint", A): 2, _e("mstconfig", A): 2, _reset("mstfwreset", A, 3): 1}),
    "nothing pending: no reset": dict(
        cards={A: Card(), B: Card()}, selected=[A, B], family="mstflint",
        calls={_q("mstfwreset", A): 1, _q("mstflint", A): 1, _e("mstconfig", A): 1,
               _q("mstfwreset", B): 1, _q("mstflint", B): 1, _e("mstconfig", B): 1}),
    "function 1 named: reset once through function 0, NV read on both": dict(
        cards={A: Card(nv_pending=[A1])}, selected=[A1], family="mstflint",
        calls={_q("mstfwreset", A): 1, _q("mstflint", A): 2, _e("mstconfig", A): 1, _e("mstconfig", A1): 2,
               _reset("mstfwreset", A, 3): 1}),
    "both functions named: one reset": dict(
        cards={A: Card(burned=NEW, running=OLD)}, selected=[A, A1], family="mstflint",
        calls={_q("mstfwreset", A): 1, _q("mstflint", A): 2, _e("mstconfig", A): 1, _e("mstconfig", A1): 1,
               _reset("mstfwreset", A, 3): 1}),
    "firmware only and every card live-patches: level 0": dict(
        cards={A: Card(burned=NEW, running=OLD, levels=(0, 3, 4)), B: Card(burned=NEW, running=OLD, levels=(0, 3, 4))},
        selected=[A, B], family="mstflint",
        calls={_q("mstfwreset", A): 1, _q("mstflint", A): 2, _e("mstconfig", A): 1, _reset("mstfwreset", A, 0): 1,
               _q("mstfwreset", B): 1, _q("mstflint", B): 2, _e("mstconfig", B): 1, _reset("mstfwreset", B, 0): 1}),
    "one card cannot live-patch: both at level 3": dict(
        cards={A: Card(burned=NEW, running=OLD, levels=(0, 3, 4)), B: Card(burned=NEW, running=OLD)},
        selected=[A, B], family="mstflint",
        calls={_q("mstfwreset", A): 1, _q("mstflint", A): 2, _e("mstconfig", A): 1, _reset("mstfwreset", A, 3): 1,
               _q("mstfwreset", B): 1, _q("mstflint", B): 2, _e("mstconfig", B): 1, _reset("mstfwreset", B, 3): 1}),
    "only the pending card is reset": dict(
        cards={A: Card(burned=NEW, running=OLD), B: Card()}, selected=[A, B], family="mstflint",
        calls={_q("mstfwreset", A): 1, _q("mstflint", A): 2, _e("mstconfig", A): 1, _reset("mstfwreset", A, 3): 1,
               _q("mstfwreset", B): 1, _q("mstflint", B): 1, _e("mstconfig", B): 1}),
    "MFT names": dict(
        cards={A: Card(burned=NEW, running=OLD)}, selected=[A], family="mft",
        calls={_q("mlxfwreset", A): 1, _q("flint", A): 2, _reset("mlxfwreset", A, 3): 1}),
}


@pytest.mark.parametrize("case", list(ARGV_CASES), ids=list(ARGV_CASES))
def test_argv(host, case):
    spec = ARGV_CASES[case]
    fake = host(spec["cards"])
    result = fr.converge(make_runner(fake, spec["family"]), spec["selected"])
    assert not result["failed"]
    calls = fake.count()
    if spec["family"] == "mft":   # the NV read goes to a temporary JSON file: compare the rest
        json_reads = [c for c in calls if c[0].endswith("mlxconfig")]
        assert all(c[1:4] == ("-d", A, "-e") and c[4] == "-j" and c[-1] == "q" for c in json_reads)
        calls = collections.Counter({c: n for c, n in calls.items() if not c[0].endswith("mlxconfig")})
    assert calls == collections.Counter(spec["calls"])
    assert result["changed"] == any("reset" in c for c in spec["calls"])


def test_reset_argv_is_the_real_syntax():
    # mlxfwreset -d /dev/mst/mt4129_pciconf0 reset -y (capture), with -l N named
    assert fr.reset_args("0000:18:00.0", 3) == ["-d", "0000:18:00.0", "reset", "-l", "3", "-y"]
    assert fr.query_args("0000:18:00.0") == ["-d", "0000:18:00.0", "q"]


# ---------------------------------------------------------------- the pure decision

def st(device, supported=(3, 4), firmware=False, nv=()):
    return {"device": device, "supported_levels": list(supported), "pending": {"firmware": firmware, "nv_config": list(nv)}}


def actions(plan):
    return {dev: act for dev, (act, _why) in plan["actions"].items()}


def test_auto_level_is_3_when_nv_config_is_pending():
    plan = fr.decide([st(A, (0, 3, 4), firmware=True), st(B, (0, 3, 4), nv=["SRIOV_EN"])])
    assert plan["level"] == 3 and plan["reset_supported"] and not plan["reboot_required"]
    assert actions(plan) == {A: "reset", B: "reset"}


def test_auto_level_is_0_only_when_every_card_to_reset_live_patches():
    assert fr.decide([st(A, (0, 3, 4), firmware=True), st(B, (0, 3, 4), firmware=True)])["level"] == 0
    assert fr.decide([st(A, (0, 3, 4), firmware=True), st(B, (3, 4), firmware=True)])["level"] == 3
    # a card that is not reset does not hold the level up
    assert fr.decide([st(A, (0, 3, 4), firmware=True), st(B, (3, 4))])["level"] == 0


def test_unsupported_level_means_reboot_and_no_reset_at_all():
    plan = fr.decide([st(A, (3, 4), firmware=True), st(B, (4,), nv=["SRIOV_EN"]), st(C)])
    assert plan["reset_supported"] is False and plan["reboot_required"] is True and plan["level"] == 3
    assert plan["unsupported"] == [{"device": B, "level": 3, "supported_levels": [4]}]
    assert actions(plan) == {A: "none", B: "unsupported", C: "none"}
    assert B in plan["actions"][A][1] and "reboot" in plan["actions"][A][1]
    assert plan["actions"][C][1] == "nothing pending"


def test_unsupported_even_on_a_card_that_does_not_support_any_reset():
    plan = fr.decide([st(A, (), firmware=True)])
    assert plan["reboot_required"] and plan["unsupported"] == [{"device": A, "level": 3, "supported_levels": []}]


def test_nothing_pending_nothing_to_do():
    plan = fr.decide([st(A), st(B, (4,))])
    assert plan["level"] is None and plan["reset_supported"] and not plan["reboot_required"]
    assert actions(plan) == {A: "none", B: "none"} and plan["unsupported"] == []


def test_forced_reset_of_cards_with_nothing_pending_is_a_full_one():
    plan = fr.decide([st(A, (0, 3, 4)), st(B)], only_if_pending=False)
    assert plan["level"] == 3 and actions(plan) == {A: "reset", B: "reset"}
    assert "only_if_pending" in plan["actions"][A][1]


def test_predicted_cards_of_a_check_run_are_planned_as_pending():
    """A check run: the firmware / nic_config steps would leave A pending (nothing written yet): A is planned as a
    reset, at the full level a card with nothing pending now gets; B, pending now, is reset too; C is left."""
    plan = fr.decide([st(A, (0, 3, 4)), st(B, (0, 3, 4), firmware=True), st(C)], predicted={A})
    assert plan["level"] == 0 and actions(plan) == {A: "reset", B: "reset", C: "none"}
    assert plan["actions"][A][1] == "activates what this run would leave pending (predicted_pending)"
    assert plan["actions"][B][1] == "activates the pending firmware"
    plan = fr.decide([st(A, (0, 3, 4)), st(C)], predicted={A})
    assert plan["level"] == 3 and actions(plan) == {A: "reset", C: "none"}
    # a predicted card that cannot be reset at that level: a reboot, no reset
    plan = fr.decide([st(A, (4,)), st(C)], predicted={A})
    assert plan["reboot_required"] and actions(plan) == {A: "unsupported", C: "none"}
    assert fr.decide([st(A), st(C)], predicted=set())["level"] is None


def test_after_reboot_every_device_back_and_nothing_pending():
    before = [{"address": A}, {"address": B}, {"address": B[:-1] + "1"}]
    fine = [dict(d, fw_pending=False, pending_nv={}) for d in before]
    assert fr.after_reboot_problem("srv-1", "reboot", before, fine) is None
    gone = [fine[0], dict(fine[2], fw_pending=True)]
    assert fr.after_reboot_problem("srv-1", "reboot", before, gone) == (
        "srv-1 after the reboot: 3 devices before, 2 after (missing: %s); firmware still pending on %s; NV config "
        "still pending on none" % (B, B[:-1] + "1"))
    left = [fine[0], fine[1], dict(fine[2], pending_nv={"SRIOV_EN": {"current": "0", "next": "1"}})]
    assert fr.after_reboot_problem("srv-1", "reboot", before, left) == (
        "srv-1 after the reboot: 3 devices before, 3 after (missing: none); firmware still pending on none; NV config "
        "still pending on %s" % (B[:-1] + "1"))


def test_explicit_level_must_activate_what_is_pending():
    with pytest.raises(InvalidValue) as err:
        fr.decide([st(A, (0, 3, 4), nv=["SRIOV_EN"]), st(B, (0, 3, 4), firmware=True)], level=0)
    assert err.value.device == [A] and err.value.parameter == "level" and err.value.allowed == ["auto", 3]
    assert "NV configuration" in err.value.msg and A in err.value.msg
    with pytest.raises(InvalidValue):
        fr.decide([st(A, (1, 3, 4), firmware=True)], level=1)


def test_explicit_level_1_for_a_forced_reset_with_nothing_pending():
    plan = fr.decide([st(A, (1, 3, 4))], level=1, only_if_pending=False)
    assert plan["level"] == 1 and actions(plan) == {A: "reset"}


def test_explicit_level_the_card_lacks_is_a_reboot():
    plan = fr.decide([st(A, (3, 4), firmware=True)], level=0)
    assert plan["reboot_required"] and plan["unsupported"][0]["level"] == 0


@pytest.mark.parametrize("value, level", [(None, "auto"), ("auto", "auto"), (" AUTO ", "auto"), (3, 3), ("3", 3),
                                          (0, 0), ("1", 1)])
def test_normalize_level(value, level):
    assert fr.normalize_level(value) == level


@pytest.mark.parametrize("value, words", [
    (4, "restarts the whole host"), ("5", "restarts the whole host"), (2, "not an mlxfwreset reset level"),
    ("three", "level must be auto"), (True, "level must be auto"), (3.0, "level must be auto")])
def test_bad_levels(value, words):
    with pytest.raises(InvalidValue) as err:
        fr.normalize_level(value)
    assert words in err.value.msg and err.value.parameter == "level" and err.value.allowed == ["auto", 0, 1, 3]


def test_units_group_functions_by_card():
    discovered = [{"address": a} for a in (A, A1, B, "0000:29:00.0", "0000:29:00.1")]
    assert fr.units([A1, B, "/dev/mst/mt4129_pciconf0"], discovered=discovered) == [
        {"device": A, "functions": [A, A1]}, {"device": B, "functions": [B]},
        {"device": "/dev/mst/mt4129_pciconf0", "functions": ["/dev/mst/mt4129_pciconf0"]}]
    assert fr.units(["18:00.1"]) == [{"device": A, "functions": [A, A1]}]


# ---------------------------------------------------------------- behaviour around the reset

def test_result_shape_after_a_reset(host):
    fake = host({A: Card(burned=NEW, running=OLD, nv_pending=[A]), B: Card()})
    result = fr.converge(make_runner(fake), [A, B])
    assert result["level"] == 3 and result["changed"] and result["reset_supported"] and not result["reboot_required"]
    a, b = by_device(result)[A], by_device(result)[B]
    assert a == {"device": A, "functions": [A], "supported_levels": [3, 4], "default_level": 3,
                 "firmware": {"burned": NEW, "running": OLD},
                 "pending": {"firmware": True, "nv_config": ["SRIOV_EN"]},
                 "action": "reset", "reason": "activates the pending firmware and NV configuration", "level": 3,
                 "after": {"firmware": {"burned": NEW, "running": NEW}, "pending": {"firmware": False, "nv_config": []}}}
    assert b["action"] == "none" and b["level"] is None and b["after"] == {
        "firmware": {"burned": OLD, "running": OLD}, "pending": {"firmware": False, "nv_config": []}}
    assert fr.summary(result) == "reset %s at level 3 (driver restart and PCI reset)" % A


def test_unsupported_resets_nothing(host):
    fake = host({A: Card(burned=NEW, running=OLD), B: Card(nv_pending=[B], levels=(4,), default=4)})
    result = fr.converge(make_runner(fake), [A, B])
    assert fake.resets() == [] and not result["changed"]
    assert result["reboot_required"] and not result["reset_supported"] and result["level"] == 3
    assert [d["action"] for d in result["devices"]] == ["none", "unsupported"]
    assert "reboot" in fr.summary(result) and B in fr.summary(result)


def test_check_mode_and_query_reset_nothing(host):
    fake = host({A: Card(burned=NEW, running=OLD)})
    result = fr.converge(make_runner(fake), [A], check_mode=True)
    assert fake.resets() == [] and result["changed"] is True and result["level"] == 3
    assert by_device(result)[A]["after"]["firmware"] == {"burned": NEW, "running": NEW}
    assert fr.summary(result, check_mode=True).startswith("would reset " + A)
    result = fr.converge(make_runner(fake), [A], state="query")
    assert fake.resets() == [] and result["changed"] is False and by_device(result)[A]["action"] == "reset"
    assert by_device(result)[A]["after"]["firmware"]["running"] == OLD


def test_check_mode_plans_the_predicted_cards_and_a_real_run_ignores_them(host):
    fake = host({A: Card(burned=OLD, running=OLD), B: Card(burned=OLD, running=OLD)})
    result = fr.converge(make_runner(fake), [A, B], check_mode=True, predicted=["%s" % B[:-1] + "1"])
    assert fake.resets() == [] and result["changed"] is True and result["level"] == 3
    assert [d["action"] for d in result["devices"]] == ["none", "reset"]
    result = fr.converge(make_runner(fake), [A, B])     # nothing pending on the cards: no reset, whatever was predicted
    assert fake.resets() == [] and result["changed"] is False and result["level"] is None


def test_a_card_that_cannot_be_read_stops_everything_before_any_reset(host):
    fake = host({A: Card(burned=NEW, running=OLD), B: Card(burned=NEW, running=OLD)}, unreadable=[B])
    with pytest.raises(ToolFailed) as err:
        fr.converge(make_runner(fake), [A, B])
    assert err.value.device == B and "Failed to open the device" in err.value.msg
    assert fake.resets() == []


def test_failed_reset_is_reported_and_the_others_finish(host):
    busy = (1, "-E- Failed to send Register MFRL: ME_ICMD_STATUS_SEMAPHORE_TO.\n", "")
    fake = host({A: Card(burned=NEW, running=OLD, reset_fail=busy), B: Card(burned=NEW, running=OLD)})
    result = fr.converge(make_runner(fake), [A, B])
    assert result["changed"] and list(result["failed"]) == [A]
    assert "Failed to send Register MFRL" in result["failed"][A] and A in result["failed"][A]
    assert by_device(result)[A]["after"] is None and by_device(result)[B]["after"]["pending"]["firmware"] is False


def test_card_missing_after_reset_is_named(host):
    fake = host({A: Card(burned=NEW, running=OLD), B: Card(burned=NEW, running=OLD, vanish=True)})
    result = fr.converge(make_runner(fake), [A, B])
    assert list(result["failed"]) == [B] and "disappeared after the level 3 reset" in result["failed"][B]
    # The bus and the cards are re-read at the same time: lspci's word wins over the card's own re-read.
    assert "does not answer" not in result["failed"][B]
    assert fake.count()[("/usr/bin/mstflint", "-d", B, "q")] == 2
    assert by_device(result)[A]["after"]["pending"]["firmware"] is False


def test_still_pending_after_reset_is_a_failure(host):
    fake = host({A: Card(burned=NEW, running=OLD, nv_pending=[A], stuck=True)})
    result = fr.converge(make_runner(fake), [A])
    assert result["changed"] and list(result["failed"]) == [A]
    assert "still pending after the level 3 reset" in result["failed"][A]
    assert "firmware %s burned but %s running" % (NEW, OLD) in result["failed"][A]
    assert "SRIOV_EN (current False(0), next True(1))" in result["failed"][A]


def test_unparseable_reset_output_is_an_error(host):
    fake = host({A: Card(burned=NEW, running=OLD, reset_fail=(0, "-I- Sending Reset Command To Fw   -Failed\n", ""))})
    result = fr.converge(make_runner(fake), [A])
    assert "did not complete" in result["failed"][A] and "Sending Reset Command To Fw failed" in result["failed"][A]


def test_query_without_levels_names_the_device():
    def fake(argv, env, timeout, data):
        return 0, "-E- Failed to identify device\n", ""
    with pytest.raises(MlnxError) as err:
        fr.read_levels(make_runner(CardsHost({}), execute=fake), A)
    assert err.value.device == A and "printed no reset levels" in err.value.msg


def test_the_reads_of_a_card_run_at_the_same_time(host):
    """mlxfwreset q, flint q and the -e q of each function wait for each other: one after the other they would
    time out on the barrier (and the card be unreadable); at the same time they all pass it."""
    fake = host({A: Card(burned=NEW, running=OLD, functions=2)})
    barrier = threading.Barrier(4, timeout=5)
    answer = fake.__call__

    def meeting(argv, env, timeout, data):
        if argv[-1] == "q":
            barrier.wait()
        return answer(argv, env, timeout, data)

    result = fr.converge(make_runner(fake, execute=meeting), [A, A1], state="query")
    assert by_device(result)[A]["pending"]["firmware"] is True
    assert sorted(by_device(result)[A]["functions"]) == [A, A1]


# ---------------------------------------------------------------- the management connection

def test_card_carrying_management_is_not_reset_the_host_needs_a_reboot():
    plan = fr.decide([st(A, (0, 3, 4), nv=["SRIOV_EN"]), st(B, (0, 3, 4), firmware=True), st(C)],
                     protected={B: ["enp64s0f0np0"]})
    assert plan["reboot_required"] and plan["level"] == 3
    assert plan["management"] == [{"device": B, "interfaces": ["enp64s0f0np0"]}]
    assert plan["actions"][B][0] == "management" and "enp64s0f0np0" in plan["actions"][B][1]
    assert plan["actions"][A][0] == "none" and "carries the management connection" in plan["actions"][A][1]
    assert plan["actions"][C] == ("none", "nothing pending")


def test_live_patch_keeps_the_link_so_a_management_card_is_patched():
    plan = fr.decide([st(B, (0, 3, 4), firmware=True)], protected={B: ["enp64s0f0np0"]})
    assert plan["level"] == 0 and not plan["reboot_required"] and plan["actions"][B][0] == "reset"


def test_management_card_with_nothing_pending_changes_nothing():
    plan = fr.decide([st(A, (3, 4), firmware=True), st(B, (3, 4))], protected={B: ["eth0"]})
    assert plan["level"] == 3 and not plan["reboot_required"] and plan["actions"][A][0] == "reset"


def test_converge_resets_no_card_when_one_carries_management(host):
    fake = host({A: Card(burned=NEW, running=OLD), B: Card(burned=NEW, running=OLD)})
    result = fr.converge(make_runner(fake), [A, B], protected={B: ["bond0 port enp64s0f0np0"]})
    assert fake.resets() == [] and not result["changed"] and result["reboot_required"]
    assert by_device(result)[B]["action"] == "management" and by_device(result)[B]["level"] == 3
    assert fr.summary(result).startswith("no reset: %s (bond0 port enp64s0f0np0) carries the management" % B)


def test_mgmt_cards_follows_the_bond_down_to_the_cards(tmp_path, monkeypatch):
    monkeypatch.delenv("SSH_CONNECTION", raising=False)
    fake = mgmt_host(tmp_path)
    cards, mgmt = fr.mgmt_cards(fake.host(), address="198.18.0.10")
    assert mgmt["interfaces"] == ["bond0"] and mgmt["on_mlx5"]
    assert cards == {A: ["enp24s0np0"], B: ["enp64s0np0"]}
    assert fake.commands("ibdev2netdev").count(["-v"]) == 1   # once, for the port sysfs gives no PCI function
    cards, _mgmt = fr.mgmt_cards(fake.host(), interface="eth9")
    assert cards == {}
