"""``--check`` on a new DGX H100 whose ConnectX-7 compute NICs still run InfiniBand (their netdevs are ibp24s0 ...):
the nic_config role would set LINK_TYPE_P1=ETH, the activate role would reset the cards, and only then do the rail
plan's interfaces (enp24s0np0 ...) exist. The rails and roce_qos roles must report what they will do after that
activation, named by the rail plan's interfaces, instead of failing on interfaces that are not there yet; without an
activation coming they read the host (and fail, truthfully, on a missing interface). Simulated host, tests/_roleplay.py."""
import yaml

from _paths import REPO
from _roleplay import play, run, sim_vars, simulated

HOST = "srv-r01-01"
FABRIC = yaml.safe_load((REPO / "inventory/example-1250/group_vars/all/rails.yml").read_text())["gpufabric_fabric"]
RAILS = FABRIC["interface_names"]
ROCE = {"roce_compute": {"LINK_TYPE_P1": "ETH"}}
ASSIGN = [{"profile": "roce_compute", "part_numbers": ["MCX75310AAS-NEAT"]}]
RAILS_TASK = "Rails on the running system, no network restart (in check mode, the drift)"
QOS_TASK = "RoCE QoS of the compute rails (in check mode, the drift)"


def check_run(tmp_path, roles, **extra):
    sim = simulated(tmp_path, HOST, "dgx-h100")
    host = sim_vars(sim, rack="r01", position=1, gpufabric_fabric=FABRIC, gpufabric_nic_config_profiles=ROCE,
                    gpufabric_nic_config_assignments=ASSIGN, gpufabric_activate_allow_reboot=True, **extra)
    return run(tmp_path, {HOST: host}, play(*roles), check=True)


def test_check_run_reports_rails_and_qos_after_the_pending_link_type_activation(tmp_path):
    ran = check_run(tmp_path, ["nic_config", "activate", "rails", "roce_qos"])
    assert ran.ok, ran
    activation = ran.task("Activate everything pending with ONE firmware reset or ONE reboot (reads every card itself)",
                          HOST, role="activate")["ansible_facts"]["gpufabric_activation"]
    assert activation["method"] == "fwreset"

    rails = ran.task(RAILS_TASK, HOST, role="rails")
    assert rails["changed"] and "the activation (fwreset)" in rails["msg"]
    for name in RAILS:
        assert name in rails["msg"]
    assert "enp24s0np0 198.18.0.2/26 table 100" in rails["msg"]
    assert rails["msg"].startswith(HOST + ": enp24s0np0, ")
    # nothing read, nothing written: the module waited
    assert rails["waiting"]["for"] == "activation" and rails["steps"] == [] and rails["files"] == []

    qos = ran.task(QOS_TASK, HOST, role="roce_qos")
    assert qos["ansible_facts"]["gpufabric_roce_qos"] == {
        "changed": True, "interfaces": RAILS, "drift": RAILS, "waiting_for_driver": False,
        "waiting_for_activation": True}
    assert qos["msg"].endswith("not on the host before the activation (fwreset) of this run: RoCE QoS of %s would "
                               "be set after it" % ", ".join(RAILS))


def test_without_an_activation_coming_the_roles_read_the_host_and_fail_on_the_missing_rail(tmp_path):
    """No activation in this run (the activate role did not run): the rails are not waiting for anything, so the
    module reads the host and names what it finds instead of predicting."""
    ran = check_run(tmp_path, ["roce_qos"])
    assert not ran.ok
    failed = ran.task(QOS_TASK, HOST, role="roce_qos")
    assert failed["failed"] and "enp24s0np0" in failed["msg"]
