"""The activate role's decision on a simulated host (tests/_roleplay.py): what is pending -> a firmware reset, ONE
reboot, or nothing; a reboot that is not allowed leaves the host pending and failed. The reboot is the real
ansible.builtin.reboot, whose reboot command is the simulator's power cycle; ``mlxsim activity`` counts the
power cycles and the firmware resets each card had, so a role that rebooted (or reset) when it should not fails
here in seconds, not after a lab run."""
import json

import pytest

from _roleplay import play, run, sim_vars, simulated

HOST = "srv-r01-01"
A, B = "0000:3b:00.0", "0000:d8:00.0"   # the two ConnectX-6 Dx cards of the cx6dx-roce profile
# The role's one task (mlx_fwreset's action): the reset or the reboot, the reads after it, gpufabric_activation.
ACTIVATE = "Activate everything pending with ONE firmware reset or ONE reboot (reads every card itself)"


@pytest.fixture
def sim(tmp_path):
    return simulated(tmp_path, HOST, "cx6dx-roce")


def activate(tmp_path, sim, check=False, **role_vars):
    """The activate role on ``sim`` (reboots allowed unless ``role_vars`` say otherwise) -> (Run, activation)."""
    ran = run(tmp_path, {HOST: sim_vars(sim, **dict({"gpufabric_activate_allow_reboot": True}, **role_vars))},
              play("activate"), check=check)
    activation = ran.task(ACTIVATE, HOST, role="activate")["ansible_facts"]["gpufabric_activation"]
    return ran, activation


def done(ran):
    """The result of the role's one task."""
    return ran.task(ACTIVATE, HOST, role="activate")


def activity(sim):
    """(power cycles, {PCI address of a card: firmware resets}) of the simulated host so far."""
    data = json.loads(sim.mlxsim("activity"))
    return data["boots"], {card["pci"]: card["fwresets"] for card in data["cards"].values()}


def pend_nv(sim, device, value="1"):
    """A next-boot NV value on ``device`` that is not running yet (as the nic_config role leaves it)."""
    proc = sim.run("mlxconfig", "-d", device, "-y", "set", "SRIOV_EN=" + value)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_nothing_pending_is_neither_reset_nor_rebooted(tmp_path, sim):
    for check in (True, False):
        ran, activation = activate(tmp_path, sim, check=check)
        assert ran.ok, ran
        assert activation == {"method": "none", "level": None}
        assert done(ran)["rebooted"] is False and done(ran)["reset"]["devices"], ran
        assert ran.stats(HOST)["changed"] == 0, ran
        # the argument spec, the activation, and the report of a pending host (skipped)
        assert (ran.stats(HOST)["ok"], ran.stats(HOST)["skipped"]) == (2, 1), ran
    assert activity(sim) == (0, {A: 0, B: 0})


def test_nv_pending_on_a_card_that_can_be_reset_is_one_firmware_reset_of_that_card(tmp_path, sim):
    pend_nv(sim, A)
    ran, activation = activate(tmp_path, sim, check=True)   # the check run predicts it and resets nothing
    assert ran.ok, ran
    assert activation == {"method": "fwreset", "level": 3} and done(ran)["rebooted"] is False
    assert done(ran)["changed"] is True
    assert [(d["device"], d["action"]) for d in done(ran)["devices"]] == [(A, "reset"), (B, "none")]
    assert activity(sim) == (0, {A: 0, B: 0})

    ran, activation = activate(tmp_path, sim)
    assert ran.ok, ran
    assert activation == {"method": "fwreset", "level": 3}
    assert done(ran)["rebooted"] is False, ran
    assert activity(sim) == (0, {A: 1, B: 0})
    assert json.loads(sim.mlxsim("show", "--pending"))["cx6dx0"]["nv"] == []    # the value runs now


def test_a_card_that_only_a_reboot_activates_is_one_reboot_for_the_whole_host(tmp_path, sim):
    sim.mlxsim("fault", "add", "fwreset_unsupported", "--device", A)
    pend_nv(sim, A)
    pend_nv(sim, B)
    ran, activation = activate(tmp_path, sim)
    assert ran.ok, ran
    assert activation["method"] == "reboot"
    assert done(ran)["rebooted"] is True and done(ran)["changed"] is True
    assert activity(sim) == (1, {A: 0, B: 0})              # ONE power cycle, no firmware reset before it


@pytest.mark.parametrize("fact", ["gpufabric_ofed_reboot_required", "gpufabric_platform_reboot_required"])
def test_a_new_driver_or_kernel_setting_is_one_reboot_and_no_firmware_reset(tmp_path, sim, fact):
    pend_nv(sim, A)                                         # pending too: the reboot activates it as well
    ran, activation = activate(tmp_path, sim, **{fact: True})
    assert ran.ok, ran
    assert activation == {"method": "reboot", "level": None}
    assert done(ran)["reset"] is None and done(ran)["rebooted"] is True, ran
    assert activity(sim) == (1, {A: 0, B: 0})
    assert json.loads(sim.mlxsim("show", "--pending"))["cx6dx0"]["nv"] == []


def test_a_reboot_that_is_not_allowed_leaves_the_host_pending_and_failed(tmp_path, sim):
    ran, activation = activate(tmp_path, sim, gpufabric_activate_allow_reboot=False,
                               gpufabric_ofed_reboot_required=True)
    assert not ran.ok and activation["method"] == "pending"
    report = ran.task("Report a host that still waits for its activation", HOST, role="activate")
    assert report["failed"] and " ".join(report["msg"].split()) == (  # the role's folded YAML keeps a newline
        "srv-r01-01 is pending activation: a reboot is needed (new driver or kernel command line) and "
        "gpufabric_activate_allow_reboot is false")
    assert done(ran)["rebooted"] is False and done(ran)["reset"] is None

    sim.mlxsim("fault", "add", "fwreset_unsupported", "--device", A)
    pend_nv(sim, A)
    ran, activation = activate(tmp_path, sim, gpufabric_activate_allow_reboot=False)
    assert not ran.ok and activation["method"] == "pending"
    msg = ran.task("Report a host that still waits for its activation", HOST, role="activate")["msg"]
    assert msg.startswith("srv-r01-01 is pending activation: a reboot is needed (") and A in msg, msg
    assert activity(sim) == (0, {A: 0, B: 0})
