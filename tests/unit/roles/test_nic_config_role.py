"""The nic_config role's decision on a simulated host (tests/_roleplay.py): which card gets which NV profile (first
assignment that matches its part number; a card no assignment names is not touched), and which cards then wait
for an activation (a next-boot value that does not run yet) - in a check run (predicted, nothing written), a run,
a rerun before the activation, and after it. The ``mixed`` profile: a ConnectX-6, a ConnectX-7, a BlueField-3."""
import json

import pytest

from _roleplay import play, run, sim_vars, simulated

HOST = "srv-r01-01"
CX6, CX7, BF3 = "0000:17:00.0", "0000:65:00.0", "0000:ca:00.0"
PROFILES = {"sriov": {"SRIOV_EN": True, "NUM_OF_VFS": 8}, "vfs16": {"SRIOV_EN": True, "NUM_OF_VFS": 16}}
ASSIGNMENTS = [{"profile": "sriov", "part_numbers": ["MCX653105A-HDAT"]},
               {"profile": "vfs16", "part_numbers": ["MCX75310AAS-NEAT", "MCX653105A-HDAT"]}]  # CX6: first wins
# The role's one task: the profiles applied and the facts set (gpufabric.mlnx.mlxconfig with profiles).
APPLY = "Apply every NV profile in one task (all devices of the host read and written at the same time)"


@pytest.fixture
def sim(tmp_path):
    return simulated(tmp_path, HOST, "mixed")


def nic_config(tmp_path, sim, check=False, assignments=None, profiles=None):
    ran = run(tmp_path, {HOST: sim_vars(sim, gpufabric_nic_config_profiles=profiles or PROFILES,
                                        gpufabric_nic_config_assignments=ASSIGNMENTS if assignments is None
                                        else assignments)}, play("nic_config"), check=check)
    assert ran.ok, ran
    return ran


def recorded(ran):
    facts = ran.task(APPLY, HOST, role="nic_config")["ansible_facts"]
    return facts["gpufabric_nv_pending_reset"], sorted(facts["gpufabric_nv_pending_devices"])


def next_boot(sim):
    """{PCI address of a card: (SRIOV_EN, NUM_OF_VFS) next boot} as the simulated firmware holds them."""
    out = {}
    for card in json.loads(sim.mlxsim("show"))["cards"]:
        nv = dict(card["nv"], **card["functions"][0].get("nv", {}))
        out[card["functions"][0]["pci"]] = tuple(nv[name]["next"] if name in nv else None
                                                 for name in ("SRIOV_EN", "NUM_OF_VFS"))
    return out


def sets(sim):
    """The simulated cards an ``mlxconfig``/``mstconfig ... set`` named so far (by full or short PCI address)."""
    named = set()
    for argv in sim.argvs():
        if "set" in argv:
            named.update(card for card in (CX6, CX7, BF3) if card in argv or card[5:] in argv)
    return sorted(named)


def test_each_card_gets_its_profile_and_waits_for_the_activation(tmp_path, sim):
    before = next_boot(sim)
    ran = nic_config(tmp_path, sim, check=True)
    assert recorded(ran) == (True, [CX6, CX7])        # predicted
    assert sets(sim) == [] and next_boot(sim) == before

    ran = nic_config(tmp_path, sim)
    by_device = {d["device"]: d for d in ran.task(APPLY, HOST, role="nic_config")["devices"]}
    assert sorted(by_device) == [CX6, CX7]            # the BlueField-3 is not named by any assignment
    assert recorded(ran) == (True, [CX6, CX7])
    after = next_boot(sim)
    assert (after[CX6], after[CX7]) == ((1, 8), (1, 16))   # the CX6 took the first assignment that names it
    assert after[BF3] == before[BF3]
    assert sets(sim) == [CX6, CX7]

    sim.clear_calls()
    ran = nic_config(tmp_path, sim)                   # before the activation: still waiting, nothing set again
    assert recorded(ran) == (True, [CX6, CX7]) and not ran.task(APPLY, HOST, role="nic_config")["changed"]
    assert sets(sim) == []

    sim.mlxsim("reboot")                              # the activation
    ran = nic_config(tmp_path, sim)
    assert recorded(ran) == (False, [])
    assert not ran.task(APPLY, HOST, role="nic_config")["changed"] and sets(sim) == []


def test_no_assignment_that_matches_touches_nothing(tmp_path, sim):
    ran = nic_config(tmp_path, sim, assignments=[{"profile": "sriov", "part_numbers": ["MCX623106AN-CDAT"]}])
    applied = ran.task(APPLY, HOST, role="nic_config")
    assert not applied["changed"] and applied["devices"] == [] and applied["configs"] == []
    assert recorded(ran) == (False, [])
    assert ran.stats(HOST)["ok"] + ran.stats(HOST)["skipped"] == 2     # the argument spec and the one task
    assert sets(sim) == [] and sim.argvs("mlxconfig") + sim.argvs("mstconfig") == []


def test_a_parameter_taken_out_of_a_profile_is_given_back_by_naming_it_null(tmp_path, sim):
    """The roll back of an NV parameter (docs/operations.md): NUM_OF_VFS out of the profile is left as it is; named
    with null it returns to the firmware's default - predicted by --check, set once, then nothing."""
    only_cx7 = [{"profile": "vfs16", "part_numbers": ["MCX75310AAS-NEAT"]}]
    default = next_boot(sim)[CX7]
    nic_config(tmp_path, sim, assignments=only_cx7)
    assert next_boot(sim)[CX7] == (1, 16)
    nic_config(tmp_path, sim, assignments=only_cx7, profiles={"vfs16": {"SRIOV_EN": True}})
    assert next_boot(sim)[CX7] == (1, 16)              # out of the profile: not reset
    back = {"vfs16": {"SRIOV_EN": True, "NUM_OF_VFS": None}}
    sim.clear_calls()
    ran = nic_config(tmp_path, sim, check=True, assignments=only_cx7, profiles=back)
    assert ran.task(APPLY, HOST, role="nic_config")["changed"] and sets(sim) == []
    ran = nic_config(tmp_path, sim, assignments=only_cx7, profiles=back)
    assert next_boot(sim)[CX7] == (1, default[1]) and sets(sim) == [CX7]
    sim.clear_calls()
    ran = nic_config(tmp_path, sim, assignments=only_cx7, profiles=back)
    assert not ran.task(APPLY, HOST, role="nic_config")["changed"] and sets(sim) == []
