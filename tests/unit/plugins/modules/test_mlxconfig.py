"""The mlxconfig module end to end against the simulated tools: check, apply, apply again,
bad input, both tool families; the simulator's call log proves what was (not) written."""
from _modules import run_module
from ansible_collections.gpufabric.mlnx.plugins.modules import mlxconfig

COMPUTE = ["MCX75310AAS-NEAT"]
PROFILE = {"LINK_TYPE_P1": "ETH", "SRIOV_EN": False, "ADVANCED_PCI_SETTINGS": True}


def sets(host):
    return [c["argv"] for c in host.calls() if "set" in c["argv"]]


def test_check_apply_idempotent(sim_host):
    host = sim_host("dgx-h100")
    args = {"part_number": COMPUTE, "params": PROFILE}

    failed, out = run_module(mlxconfig, args, check=True)
    assert not failed and out["changed"] and len(out["devices"]) == 8
    assert all(d["set"] == {"LINK_TYPE_P1": "ETH", "SRIOV_EN": "False", "ADVANCED_PCI_SETTINGS": "True"}
               or d["set"] for d in out["devices"])
    predicted = {d["device"]: d["set"] for d in out["devices"]}
    assert sets(host) == [], "check mode wrote something"

    host.clear_calls()
    failed, out = run_module(mlxconfig, args)
    assert not failed and out["changed"]
    assert {d["device"]: d["set"] for d in out["devices"]} == predicted
    assert len(sets(host)) == 8
    assert all(d["pending_reset"] for d in out["devices"])
    assert all(d["after"]["LINK_TYPE_P1"] == "ETH(2)" for d in out["devices"])
    # One discovery, one query and one set per device, and one re-read of the named params.
    tools = [c["tool"] for c in host.calls()]
    assert tools.count("lspci") == 1 and tools.count("mlxconfig") == 8 * 3

    host.clear_calls()
    failed, out = run_module(mlxconfig, args)
    assert not failed and not out["changed"] and sets(host) == []
    assert [c["tool"] for c in host.calls()].count("mlxconfig") == 8
    assert all(d["pending_reset"] for d in out["devices"])

    host.mlxsim("reboot")
    failed, out = run_module(mlxconfig, args)
    assert not failed and not out["changed"] and not any(d["pending_reset"] for d in out["devices"])


def test_unknown_parameter_names_it_and_suggests_and_writes_nothing(sim_host):
    host = sim_host("dgx-h100")
    failed, out = run_module(mlxconfig, {"device": ["all"], "params": {"SRIOV_ENABLE": True, "NUM_OF_VFS": 4}})
    assert failed and "SRIOV_ENABLE" in out["msg"] and "SRIOV_EN" in out["msg"]
    assert sets(host) == []


def test_value_outside_type(sim_host):
    host = sim_host("cx6dx-roce")
    failed, out = run_module(mlxconfig, {"device": ["all"], "params": {"SRIOV_EN": "maybe"}})
    assert failed and out["parameter"] == "SRIOV_EN" and "True, False, 1 or 0" in out["msg"]
    assert sets(host) == []


def test_enum_value_rejected_by_tool_lists_allowed(sim_host):
    host = sim_host("dgx-h100")
    failed, out = run_module(mlxconfig, {"part_number": COMPUTE[:1], "params": {"LINK_TYPE_P1": "FIBRECHANNEL"}})
    assert failed and "FIBRECHANNEL" in out["msg"]
    assert "ETH" in out["allowed"] and "IB" in out["allowed"], out
    assert [c for c in host.calls() if "set" in c["argv"] and c["rc"] == 0] == []


def test_port_parameter_a_card_lacks(sim_host):
    """Ethernet-only ConnectX-6 Dx has no LINK_TYPE_P1: InfiniBand asked of it is named, with what it has that is
    close; Ethernet asked of it holds (its ports are Ethernet): not applicable, with the rule, nothing written."""
    host = sim_host("cx6dx-roce")
    failed, out = run_module(mlxconfig, {"device": ["all"], "params": {"LINK_TYPE_P1": "IB"}})
    assert failed and out["parameter"] == "LINK_TYPE_P1" and "0000:" in out["msg"]
    failed, out = run_module(mlxconfig, {"device": ["all"], "params": {"LINK_TYPE_P1": "ETH"}})
    assert not failed and not out["changed"], out
    assert {d["device"]: d["not_applicable"] for d in out["devices"]} == {
        dev: {"LINK_TYPE_P1": "n/a: Ethernet-only card has no LINK_TYPE (its ports are Ethernet)"}
        for dev in ("0000:3b:00.0", "0000:d8:00.0")}
    assert [c for c in host.calls() if "set" in c["argv"]] == []


def test_device_not_found_lists_present(sim_host):
    sim_host("cx6dx-roce")
    failed, out = run_module(mlxconfig, {"part_number": ["MCX75310AAS-NEAT"], "params": {"SRIOV_EN": False}})
    assert failed and "MCX75310AAS-NEAT" in out["msg"] and "MCX623106AN-CDAT" in out["msg"]


def test_mstflint_family(sim_host):
    host = sim_host("cx6dx-roce")
    failed, out = run_module(mlxconfig, {"device": ["all"], "tool": "mstflint", "params": {"SRIOV_EN": True, "NUM_OF_VFS": 8}})
    assert not failed, out
    assert {c["tool"] for c in host.calls()} <= {"lspci", "mstconfig"}
    failed, out = run_module(mlxconfig, {"device": ["all"], "tool": "mstflint", "params": {"SRIOV_EN": True, "NUM_OF_VFS": 8}})
    assert not failed and not out["changed"]


STORAGE = {"LINK_TYPE_P1": "ETH", "LINK_TYPE_P2": "ETH", "SRIOV_EN": True}
HEAT = ["0000:29:00.0", "0000:aa:00.0"]


def test_configs_every_profile_in_one_task(sim_host):
    """Two profiles at once: one discovery, each card read, written and re-read once with its own values."""
    host = sim_host("dgx-h100")
    args = {"configs": [{"name": "roce_compute", "part_number": COMPUTE, "params": PROFILE},
                        {"name": "storage", "device": HEAT, "params": STORAGE}]}
    failed, out = run_module(mlxconfig, args, check=True)
    assert not failed and sets(host) == [] and len(out["devices"]) == 10

    host.clear_calls()
    failed, out = run_module(mlxconfig, args)
    assert not failed and out["changed"], out
    by_dev = {d["device"]: d for d in out["devices"]}
    assert sorted(d for d in by_dev if by_dev[d]["config"] == "storage") == HEAT
    assert by_dev["0000:29:00.0"]["after"]["LINK_TYPE_P2"] == "ETH(2)"
    assert "LINK_TYPE_P2" not in by_dev["0000:18:00.0"]["after"]
    assert by_dev["0000:18:00.0"]["after"]["SRIOV_EN"] == "False(0)"
    tools = [c["tool"] for c in host.calls()]
    assert tools.count("lspci") == 1 and tools.count("mlxconfig") == 10 * 3

    failed, out = run_module(mlxconfig, args)
    assert not failed and not out["changed"]


def test_configs_device_in_two_is_refused_and_nothing_written(sim_host):
    host = sim_host("dgx-h100")
    args = {"configs": [{"name": "roce_compute", "part_number": COMPUTE, "params": PROFILE},
                        {"name": "storage", "device": ["0000:18:00.0"] + HEAT, "params": STORAGE}]}
    failed, out = run_module(mlxconfig, args)
    assert failed and "0000:18:00.0" in out["msg"] and "roce_compute" in out["msg"] and "storage" in out["msg"]
    assert out["parameter"] == "configs" and sets(host) == []


def test_configs_bad_value_in_one_profile_writes_no_device(sim_host):
    host = sim_host("dgx-h100")
    args = {"configs": [{"name": "roce_compute", "part_number": COMPUTE, "params": PROFILE},
                        {"name": "storage", "device": HEAT, "params": {"SRIOV_EN": "maybe"}}]}
    failed, out = run_module(mlxconfig, args)
    assert failed and out["parameter"] == "SRIOV_EN" and sets(host) == []


def test_configs_and_params_together_are_refused(sim_host):
    sim_host("dgx-h100")
    failed, out = run_module(mlxconfig, {"params": PROFILE, "configs": [{"device": ["all"], "params": PROFILE}]})
    assert failed and "mutually exclusive" in out["msg"]
    failed, out = run_module(mlxconfig, {"device": ["all"]})
    assert failed and "params" in out["msg"]


def test_set_the_firmware_ignores_fails_that_device_and_names_the_value(sim_host):
    """The tool says Done! and exits 0, the re-read shows the old next-boot value (simulator fault
    set_ignored): that device fails with the value it still has, the other card is configured."""
    host = sim_host("cx6dx-roce")
    host.mlxsim("fault", "add", "set_ignored", "--device", "3b:00.0", "param=SRIOV_EN")
    args = {"device": ["all"], "params": {"SRIOV_EN": True, "NUM_OF_VFS": 8}}
    failed, out = run_module(mlxconfig, args)
    assert failed, out
    assert out["failed_devices"] == {
        "0000:3b:00.0": "0000:3b:00.0: mlxconfig reported success but next-boot values are still SRIOV_EN=False(0)"}
    assert out["msg"].startswith("NV configuration failed on 1 of 2 devices: ")
    [done] = out["devices"]
    assert done["device"] == "0000:d8:00.0" and done["changed"]
    assert done["after"] == {"SRIOV_EN": "True(1)", "NUM_OF_VFS": "8"}
    assert len(sets(host)) == 2                           # the failing card was written, and re-read

    host.mlxsim("fault", "clear")
    host.clear_calls()
    failed, out = run_module(mlxconfig, args)
    assert not failed, out
    assert {d["device"]: d["set"] for d in out["devices"]} == {"0000:3b:00.0": {"SRIOV_EN": "True"},
                                                               "0000:d8:00.0": {}}


def test_profiles_assigned_to_the_cards_read_here_and_the_pending_facts(sim_host):
    """The nic_config role's one task: profiles and assignments, the cards read by the module (no nic_devices), the
    first matching assignment wins, and the facts say which cards wait for a reset."""
    host = sim_host("dgx-h100")
    args = {"profiles": {"roce": {"LINK_TYPE_P1": "ETH"}, "storage": {"SRIOV_EN": False}},
            "assignments": [{"profile": "storage", "pci": ["0000:29:00.0"]},
                            {"profile": "roce", "part_numbers": COMPUTE + ["MCX755106AS-HEAT"]}]}
    failed, out = run_module(mlxconfig, args, check=True)
    assert not failed, out
    assert [(c["name"], c["device"]) for c in out["configs"]] == [
        ("roce", ["0000:18:00.0", "0000:40:00.0", "0000:4f:00.0", "0000:5e:00.0", "0000:9a:00.0", "0000:aa:00.0",
                  "0000:c0:00.0", "0000:ce:00.0", "0000:dc:00.0"]), ("storage", ["0000:29:00.0"])]
    assert sets(host) == []
    failed, out = run_module(mlxconfig, args)
    assert not failed and out["changed"]
    pending = sorted(d["device"] for d in out["devices"] if d["pending_reset"])
    assert out["ansible_facts"] == {"gpufabric_nv_pending_devices": [d["device"] for d in out["devices"]
                                                                     if d["pending_reset"]],
                                    "gpufabric_nv_pending_reset": True}
    assert "0000:18:00.0" in pending


def test_profiles_without_a_matching_assignment_read_and_write_nothing(sim_host):
    host = sim_host("cx6dx-roce")
    failed, out = run_module(mlxconfig, {"profiles": {"x": {"SRIOV_EN": True}}, "assignments": [
        {"profile": "x", "part_numbers": ["MCX75310AAS-NEAT"]}], "nic_devices": [
        {"address": "0000:3b:00.0", "part_number": "MCX623106AN-CDAT"}]})
    assert not failed and not out["changed"] and out["devices"] == [] and out["configs"] == []
    assert out["ansible_facts"] == {"gpufabric_nv_pending_devices": [], "gpufabric_nv_pending_reset": False}
    assert host.calls() == []          # the cards given: nothing read


def test_profiles_with_an_unknown_profile_fail_naming_the_assignment(sim_host):
    host = sim_host("cx6dx-roce")
    failed, out = run_module(mlxconfig, {"profiles": {}, "assignments": [{"profile": "nope", "pci": ["0000:3b:00.0"]}],
                                         "nic_devices": []})
    assert failed and "assignment #1 names profile 'nope', which is not one of: (none defined)" in out["msg"]
    assert sets(host) == []


def test_profiles_and_configs_together_are_refused(sim_host):
    sim_host("cx6dx-roce")
    failed, out = run_module(mlxconfig, {"profiles": {}, "configs": [{"device": ["all"], "params": {"SRIOV_EN": 1}}]})
    assert failed and "mutually exclusive" in out["msg"]
