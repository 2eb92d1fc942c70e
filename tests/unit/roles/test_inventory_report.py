"""playbooks/inventory_report.yml on a simulated host (tests/_roleplay.py) whose inventory has only a production
matrix (no lab ``gpufabric_nv_profiles``): the NV profile and drift columns are those of what the nic_config role
applies - the matrix's nv_profiles - and a profile parameter an Ethernet-only card does not have (LINK_TYPE_P1 on a
ConnectX-6 Dx) is not applicable, with its rule, instead of "missing"."""
import csv

from _paths import REPO
from _roleplay import matrix, run, sim_vars, simulated

HOST = "srv-r01-01"
NA = "LINK_TYPE_P1 n/a: Ethernet-only card has no LINK_TYPE (its ports are Ethernet)"


def report(tmp_path, **host_vars):
    sim = simulated(tmp_path, HOST, "cx6dx-roce")
    production = dict(matrix("2026.11-a", {}),
                      nv_profiles={"roce_compute": {"LINK_TYPE_P1": "ETH", "SRIOV_EN": False}},
                      nv_profile_assignments=[{"profile": "roce_compute", "part_numbers": ["MCX623106AN-CDAT"]}])
    playbook = ("- ansible.builtin.import_playbook: %s\n  vars:\n    gpufabric_report_dir: %s\n"
                % (REPO / "playbooks" / "inventory_report.yml", tmp_path / "reports"))
    ran = run(tmp_path, {HOST: sim_vars(sim, gpufabric_matrix=production, **host_vars)}, playbook)
    assert ran.ok, ran
    with open(tmp_path / "reports" / "inventory.csv", encoding="utf-8") as rows:
        return list(csv.DictReader(rows))


def test_nv_columns_come_from_the_matrix_profiles_nic_config_applies(tmp_path):
    rows = report(tmp_path)
    assert len(rows) == 4  # 2 dual-port ConnectX-6 Dx: 4 functions
    assert {row["profile"] for row in rows} == {"roce_compute"}
    for row in rows:
        assert row["nv_drift"].endswith("; " + NA), row
        assert "missing" not in row["nv_drift"]


def test_the_role_variables_override_the_matrix_as_for_nic_config(tmp_path):
    rows = report(tmp_path, gpufabric_nic_config_profiles={"other": {"SRIOV_EN": False}},
                  gpufabric_nic_config_assignments=[{"profile": "other", "device_types": ["ConnectX6DX"]}])
    assert {row["profile"] for row in rows} == {"other"}
    assert all(NA not in row["nv_drift"] for row in rows)
