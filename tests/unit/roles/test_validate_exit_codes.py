"""playbooks/validate.yml's exit code for a pipeline (docs/validation.md, "For a pipeline"), with the real
ansible-playbook: 0 every server handed over, 1 some quarantined, 2 misuse or a prerequisite missing.

The gate play's strategy (plugins/strategy/gate_verdict.py) turns the gate's verdict into the play's result, the
exit code: here on a play that records a verdict as the gate does (``gpufabric_gate_results`` set once for the
play's hosts) - handed over, quarantined, quarantined with a failed host, quarantined with an unreachable one. The
misuse validate.yml refuses before it measures anything - no server, the gate off, a retest name that is not a
server, no fabric for the rail plan - each with its own message and exit code 2."""
import yaml

from _paths import REPO
from _roleplay import run

VALIDATE = REPO / "playbooks" / "validate.yml"
NOWHERE = {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 9,
           "ansible_ssh_common_args": "-o ConnectTimeout=5 -o StrictHostKeyChecking=no"}
FABRIC = {"rails": 2, "su_prefix": 26, "racks_per_su": 1, "addressing": "p2p31",
          "pools": {"rail0": "198.18.0.0/20", "rail1": "198.18.16.0/20"},
          "nics": {"pci": ["0000:18:00.0", "0000:40:00.0"]},
          "interface_names": ["enp24s0np0", "enp64s0np0"]}
SERVERS = {"srv-r01-01": {"rack": "r01", "position": 1}, "srv-r01-02": {"rack": "r01", "position": 2}}


def gate_like(fail=None):
    """A play of the gate's strategy that records the verdict ``status`` as the gate's verdict task does."""
    return yaml.safe_dump([{
        "name": "A verdict as the gate records it", "hosts": "servers", "gather_facts": False,
        "strategy": "gpufabric.mlnx.gate_verdict",
        "tasks": [{"name": "The verdict", "run_once": True,
                   "ansible.builtin.set_fact": {"gpufabric_gate_results": {"schema": 1, "status": "{{ status }}"}}},
                  {"name": "A server's step fails", "ansible.builtin.fail": {"msg": "a prerequisite is missing"},
                   "when": "inventory_hostname == %r" % (fail or "")}]}])


def test_every_server_handed_over_is_0(tmp_path):
    ran = run(tmp_path, dict(SERVERS), gate_like(), args=["-e", "status=handed_over"])
    assert ran.proc.returncode == 0, ran


def test_some_quarantined_is_1(tmp_path):
    ran = run(tmp_path, dict(SERVERS), gate_like(), args=["-e", "status=quarantined"])
    assert ran.proc.returncode == 1, ran
    assert ran.data["stats"]["srv-r01-01"]["failures"] == 0 and ran.data["stats"]["srv-r01-02"]["failures"] == 0


def test_a_failed_server_is_2_whatever_the_verdict(tmp_path):
    for status in ("quarantined", "handed_over"):
        ran = run(tmp_path, dict(SERVERS), gate_like(fail="srv-r01-02"), args=["-e", "status=" + status])
        assert ran.proc.returncode == 2, ran
        assert ran.failures() == {"srv-r01-02": "a prerequisite is missing"}


def test_an_unreachable_server_is_2_not_ansible_playbook_s_4(tmp_path):
    hosts = dict(SERVERS, **{"srv-r01-03": dict(NOWHERE, rack="r01", position=3)})
    play = yaml.safe_load(gate_like())
    play[0]["tasks"].insert(0, {"name": "Reach every server", "ansible.builtin.ping": {}})
    ran = run(tmp_path, hosts, yaml.safe_dump(play), args=["-e", "status=quarantined"])
    assert ran.proc.returncode == 2, ran
    assert ran.data["stats"]["srv-r01-03"]["unreachable"] == 1


def test_validate_yml_s_gate_play_is_the_last_and_uses_the_strategy_only_when_asked(tmp_path):
    """The strategy is a third-party one, which ansible-core 2.19 deprecates (a warning every run): validate.yml's
    gate play takes it only with -e gpufabric_validate_exit_codes=true - the same expression, on a play that records
    a quarantine as the gate does: 0 and no warning without it, 1 and ansible-core's warning with it."""
    plays = yaml.safe_load(VALIDATE.read_text())
    assert plays[-1]["roles"] == [{"role": "gpufabric.mlnx.validate"}]
    play = yaml.safe_load(gate_like())
    play[0]["strategy"] = plays[-1]["strategy"]
    (tmp_path / "off").mkdir()
    (tmp_path / "on").mkdir()
    ran = run(tmp_path / "off", dict(SERVERS), yaml.safe_dump(play), args=["-e", "status=quarantined"])
    assert ran.proc.returncode == 0 and "DEPRECATION" not in ran.proc.stderr, ran
    ran = run(tmp_path / "on", dict(SERVERS), yaml.safe_dump(play),
              args=["-e", "status=quarantined", "-e", "gpufabric_validate_exit_codes=true"])
    assert ran.proc.returncode == 1, ran
    assert "Use of strategy plugins not included in ansible.builtin are deprecated" in ran.proc.stderr
    assert all(play.get("any_errors_fatal") for play in plays[:-1])      # a refused input stops at once


def _validate(tmp_path, hosts=None, group_vars=None, args=(), group="servers"):
    group_vars = dict({"gpufabric_fabric": FABRIC, "gpufabric_report_dir": str(tmp_path / "reports")},
                      **(group_vars or {}))
    return run(tmp_path, dict(SERVERS) if hosts is None else hosts, VALIDATE, group_vars=group_vars, args=list(args),
               group=group)


def test_validate_yml_refuses_misuse_with_2_before_measuring(tmp_path):
    cases = [
        (dict(group="others"), "localhost", "validate.yml: the inventory has no host in group servers; the validation "
         "gate tests the servers of group servers (with their rack and position, gpufabric_fabric for the rail plan)."),
        (dict(hosts=dict(SERVERS, **{"srv-r01-02": dict(SERVERS["srv-r01-02"], gpufabric_validate_enabled=False)})),
         "localhost", "validate.yml runs the validation gate, but gpufabric_validate_enabled is false for srv-r01-02 "
         "(allowed: true, or leave those servers out with --limit)."),
        (dict(args=["-e", '{"gpufabric_gate_retest": ["srv-r01-01", "srv-r09-01"]}']), "localhost",
         "gpufabric_gate_retest: srv-r09-01 not in group servers (allowed: the servers of group servers)"),
        (dict(args=["-e", '{"gpufabric_gate_retest": "srv-r01-01"}']), "localhost",
         "gpufabric_gate_retest: must be a list of server names, got str"),
    ]
    for index, (how, host, message) in enumerate(cases):
        where = tmp_path / str(index)
        where.mkdir()
        ran = _validate(where, **how)
        assert ran.proc.returncode == 2, (message, ran)
        assert ran.failures() == {host: message}, ran.failures()
        assert not (where / "reports" / "gate.json").exists()


def test_validate_yml_without_a_fabric_is_2(tmp_path):
    ran = run(tmp_path, dict(SERVERS), VALIDATE, group_vars={"gpufabric_report_dir": str(tmp_path / "reports")})
    assert ran.proc.returncode == 2, ran
    assert [play["play"]["name"] for play in ran.data["plays"]][-1] == "The rail plan of every server and leaf"
    assert "gpufabric_fabric" in " ".join(str(m) for m in ran.failures().values())
