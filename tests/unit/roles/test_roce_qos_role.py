"""The roce_qos role in a check run of a rollout that would change the driver (playbooks/site.yml runs the
ofed role first): the new driver's QoS tools and sysfs may not exist yet, so the role reads nothing and
reports every rail as to be configured; with the driver unchanged the module itself runs and reads."""
from _roleplay import run

PLAY = """
- hosts: servers
  gather_facts: false
  roles:
    - gpufabric.mlnx.roce_qos
"""


QOS = "RoCE QoS of the compute rails (in check mode, the drift)"


def check_run(tmp_path, **host_vars):
    """The role in check mode on one host with two interfaces and no sysfs tree."""
    return run(tmp_path, {"srv-r01-01": dict({"gpufabric_roce_qos_interfaces": ["enp24s0np0", "enp64s0np0"],
                                              "gpufabric_sysfs_root": str(tmp_path / "no-such-root")}, **host_vars)},
               PLAY, check=True)


def task(ran, name, host="srv-r01-01"):
    """The result on ``host`` of the first task named ``name`` (a role's tasks carry the role's prefix)."""
    return ran.task(name, host, role="roce_qos")


def test_check_run_before_a_driver_install_reports_every_rail(tmp_path):
    data = check_run(tmp_path, gpufabric_ofed_result={"action": "install"})
    assert data.ok, data
    result = task(data, QOS)
    assert result["changed"] and result["ansible_facts"]["gpufabric_roce_qos"] == {
        "changed": True, "interfaces": ["enp24s0np0", "enp64s0np0"], "drift": ["enp24s0np0", "enp64s0np0"],
        "waiting_for_driver": True, "waiting_for_activation": False}
    assert result["msg"] == ("the driver would change (install): RoCE QoS of enp24s0np0, enp64s0np0 would be set on "
                             "the new driver")
    assert result["interfaces"] == [] and result["files"] == []     # nothing read, nothing written
    assert data.stats("srv-r01-01")["failures"] == 0
    # the role's tasks that ran: its argument spec and the module (the rail plan's include is skipped: the interfaces
    # are given); no forecast tasks of their own
    assert list(data.results("srv-r01-01", "gpufabric.mlnx.roce_qos : ")) == [
        "gpufabric.mlnx.roce_qos : Validating arguments against arg spec 'main' - Host side of lossless RoCE on every "
        "compute rail, kept across reboot and driver reload",
        "gpufabric.mlnx.roce_qos : " + QOS]


def test_check_run_with_the_driver_unchanged_reads_the_host(tmp_path):
    """The same run with the driver as pinned: the module reads the host - which, like a host before its driver
    install, has no mlnx_qos (or, with one on PATH, no such interface)."""
    data = check_run(tmp_path, gpufabric_ofed_result={"action": "none"})
    assert not data.ok
    result = task(data, QOS)
    assert result["failed"]
    assert "mlnx_qos not found on PATH" in result["msg"] or "enp24s0np0" in result["msg"], result["msg"]


PROBLEMS_PLAY = """
- hosts: servers
  gather_facts: false
  tasks:
    - name: The preflight's check of the QoS settings
      ansible.builtin.include_role:
        name: gpufabric.mlnx.roce_qos
        tasks_from: problems
"""


def test_problems_entry_lists_every_bad_value_of_the_role_variables(tmp_path):
    """What the preflight role runs per host: the role's variables (over its defaults), checked without a host."""
    data = run(tmp_path, {
        "srv-r01-01": {"gpufabric_roce_qos_pfc_priorities": [3, 9], "gpufabric_roce_qos_cnp_dscp": 64},
        "srv-r01-02": {},
        "srv-r01-03": {"gpufabric_roce_qos_cnp_dscp": 64, "gpufabric_roce_qos_leave": ["cnp_dscp"]}}, PROBLEMS_PLAY)
    assert data.ok, data
    facts = {host: task(data, "Check this host's RoCE QoS settings (every bad value at once)", host)["ansible_facts"]
             ["gpufabric_roce_qos_problems"] for host in ("srv-r01-01", "srv-r01-02", "srv-r01-03")}
    assert facts == {
        "srv-r01-01": ["srv-r01-01: roce_qos: pfc_priorities[1]=9 is outside 0-7 (allowed: an integer 0-7).",
                       "srv-r01-01: roce_qos: cnp_dscp=64 is outside 0-63 (allowed: an integer 0-63)."],
        "srv-r01-02": [],
        "srv-r01-03": []}
