"""The preflight role's decision on two simulated hosts in one play (tests/_roleplay.py): every host fits the matrix
-> "no problem" and each host keeps the devices it read for the firmware and nic_config roles; any problem
anywhere (a card the matrix does not pin, a card without a serial number, a bad RoCE QoS value) -> ONE failure
that lists every problem of every host, and the roles after it change nothing on any host."""
import json

import pytest

from _roleplay import matrix, play, run, sim_vars, simulated

CX6DX = {"MT_0000000359": {"version": "22.43.1014", "image": "fw-ConnectX6Dx-rel-22_43_1014-MCX623106AN-CDA_Ax.bin",
                           "sha256": "ab" * 32, "part_numbers": ["MCX623106AN-CDAT"]}}
MATRIX = matrix("unit-preflight", CX6DX)
CHECK = "Check the matrix and every host against it, the rail plan and the QoS settings (every problem at once)"


@pytest.fixture
def sims(tmp_path):
    return lambda **profiles: {host: simulated(tmp_path, host, profile) for host, profile in profiles.items()}


def preflight(tmp_path, sims, text=None, **host_vars):
    """The play (default: the preflight role) on every simulated host of ``sims``; ``host_vars``: {host: vars}."""
    return run(tmp_path, {host: sim_vars(sim, gpufabric_matrix=MATRIX, **host_vars.get(host, {}))
                          for host, sim in sims.items()}, text or play("preflight"))


def addresses(devices):
    return sorted(dev["address"] for dev in devices)


def test_hosts_that_fit_pass_and_keep_what_was_read(tmp_path, sims):
    hosts = sims(**{"srv-r01-01": "cx6dx-roce", "srv-r01-02": "cx6dx-roce"})
    ran = preflight(tmp_path, hosts)
    assert ran.ok, ran
    assert ran.task(CHECK, "srv-r01-01", role="preflight")["msg"] == "matrix unit-preflight and 2 hosts: no problem"
    for host in hosts:
        kept = ran.task("Keep the devices read for the rest of the rollout (the firmware and nic_config roles reuse "
                        "them)", host, role="preflight")["ansible_facts"]["gpufabric_nic_devices"]
        assert addresses(kept) == ["0000:3b:00.0", "0000:3b:00.1", "0000:d8:00.0", "0000:d8:00.1"]
        assert {dev["serial_number"] for dev in kept} != {None}


def test_every_problem_of_every_host_at_once_and_nothing_changed_after_it(tmp_path, sims):
    hosts = sims(**{"srv-r01-01": "cx6dx-roce", "srv-r01-02": "mixed"})
    hosts["srv-r01-01"].mlxsim("fault", "add", "vpd_missing_serial", "--device", "0000:d8:00.0")
    ran = preflight(tmp_path, hosts, play("preflight", "nic_config"), **{"srv-r01-01": {
        "gpufabric_roce_qos_interfaces": ["enp59s0f0np0"], "gpufabric_roce_qos_cnp_dscp": 64,
        "gpufabric_nic_config_profiles": {"sriov": {"SRIOV_EN": True}},
        "gpufabric_nic_config_assignments": [{"profile": "sriov", "part_numbers": ["MCX623106AN-CDAT"]}]}})
    assert not ran.ok
    msg = ran.task(CHECK, "srv-r01-01", role="preflight")["msg"]
    assert msg[0] == "preflight found 5 problem(s); no host was changed:", msg
    places = sorted(line.split(": ", 1)[0] for line in msg[1:])
    assert places == ["srv-r01-01", "srv-r01-01 0000:d8:00.0", "srv-r01-02 0000:17:00.0", "srv-r01-02 0000:65:00.0",
                      "srv-r01-02 0000:ca:00.0"], msg
    assert "srv-r01-01 0000:d8:00.0: the card has no serial number in its VPD ([SN])" in msg
    assert "srv-r01-01: roce_qos: cnp_dscp=64 is outside 0-63 (allowed: an integer 0-63)." in msg
    assert all("MT_0000000359" in line for line in msg if line.startswith("srv-r01-02 "))  # the PSIDs it covers
    for host, sim in hosts.items():                    # nic_config ran nowhere: no card was set
        assert not [argv for argv in sim.argvs() if "set" in argv], host
        assert not [name for name in ran.results(host) if name.startswith("gpufabric.mlnx.nic_config")], host
    assert json.loads(hosts["srv-r01-01"].mlxsim("activity"))["boots"] == 0
