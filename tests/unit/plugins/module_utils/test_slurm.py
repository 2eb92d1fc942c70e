"""Slurm's drain and resume (module_utils/_slurm.py) against a small model of slurmctld that answers as Debian 12's
slurm 22.05.8 did when tried by hand: sinfo's extended states (draining while a job runs, drained after it), an
unknown node printing nothing with rc 0, RESUME of a node in service refused ("slurm_update error: Invalid node
state specified", rc 1), a later drain's reason replacing the earlier one. The real thing runs in molecule/fabric."""
import pytest

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidParameter, ToolFailed
from ansible_collections.gpufabric.mlnx.plugins.module_utils._slurm import (
    Slurm,
    SlurmError,
    drain,
    parse_state,
    query,
    resume,
    summary,
)


class Ctld:
    """Nodes: {name: {"base": idle|allocated|down, "drain": bool, "reason": str|None, "jobs": [ids],
    "ends": {job: time}}}; a clock the waits advance."""

    def __init__(self, **nodes):
        self.nodes = nodes
        self.now = 0.0
        self.calls = []

    def state(self, n):
        jobs = [j for j in n["jobs"] if n["ends"].get(j, 1e9) > self.now]
        n["jobs"] = jobs
        if n["base"] == "down":
            return "down*"
        if n["drain"]:
            return "draining" if jobs else "drained"
        return "allocated" if jobs else "idle"

    def run(self, argv):
        self.calls.append(argv)
        if argv[0] == "sinfo":
            names = argv[3].split("=", 1)[1].split(",")
            lines = ["%s|%s|%s" % (name, self.state(self.nodes[name]), self.nodes[name]["reason"] or "none")
                     for name in names if name in self.nodes]
            return 0, "".join(line + "\n" for line in lines), ""
        if argv[0] == "squeue":
            name = argv[2].split("=", 1)[1]
            self.state(self.nodes[name])
            return 0, "".join(j + "\n" for j in self.nodes[name]["jobs"]), ""
        if argv[:2] == ["scontrol", "update"]:
            names = argv[2].split("=", 1)[1].split(",")
            state = argv[3].split("=", 1)[1]
            if any(name not in self.nodes for name in names):
                return 1, "", "slurm_update error: Invalid node name specified\n"
            for name in names:
                n = self.nodes[name]
                if state == "DRAIN":
                    n["drain"], n["reason"] = True, argv[4].split("=", 1)[1]
                elif state == "RESUME":
                    if not n["drain"]:
                        return 1, "", "slurm_update error: Invalid node state specified\n"
                    n["drain"], n["reason"] = False, None
            return 0, "", ""
        raise AssertionError(argv)

    def slurm(self):
        def sleep(seconds):
            self.now += seconds
        return Slurm(self.run, sleep=sleep, clock=lambda: self.now)


def node(base="idle", drain=False, reason=None, jobs=(), ends=None):
    return {"base": base, "drain": drain, "reason": reason, "jobs": list(jobs), "ends": dict(ends or {})}


def updates(ctld):
    return [c for c in ctld.calls if c[0] == "scontrol"]


def test_drain_waits_for_a_job_that_ends_in_time_and_never_cancels_it():
    ctld = Ctld(a=node(), b=node("allocated", jobs=["41"], ends={"41": 25}))
    out = drain(ctld.slurm(), ["a", "b"], "gpufabric", "batch rack r01", wait_timeout=30, poll=10)
    assert updates(ctld) == [["scontrol", "update", "NodeName=a,b", "State=DRAIN",
                              "Reason=gpufabric: batch rack r01"]]
    assert not any(c[0] == "scancel" for c in ctld.calls)
    assert out["busy"] == {}
    assert [(n["node"], n["action"], n["ours"], n["ready"], n["after"]["state"]) for n in out["nodes"]] == [
        ("a", "drain", True, True, "drained"), ("b", "drain", True, True, "drained")]
    assert ctld.now == 30   # polled at 10, 20, 30: the job ended at 25


def test_a_job_longer_than_the_wait_is_named_and_left_running_on_a_draining_node():
    ctld = Ctld(b=node("allocated", jobs=["41", "42"], ends={"41": 5}))
    out = drain(ctld.slurm(), ["b"], "gpufabric", "batch 2", wait_timeout=20, poll=10)
    assert out["busy"] == {"b": ["42"]}
    assert out["nodes"][0]["ready"] is False and out["nodes"][0]["after"]["state"] == "draining"
    assert ctld.nodes["b"]["jobs"] == ["42"]
    assert summary(out, "drained") == "drained b; still running jobs: b: job 42"


def test_no_wait_reads_once():
    ctld = Ctld(b=node("allocated", jobs=["7"]))
    out = drain(ctld.slurm(), ["b"], "gpufabric", "x", wait_timeout=0)
    assert out["busy"] == {"b": ["7"]} and ctld.now == 0


def test_an_administrators_drain_is_kept_waited_for_and_never_resumed():
    ctld = Ctld(a=node(drain=True, reason="bad dimm, ticket 1234"), d=node("down", reason="Not responding"))
    out = drain(ctld.slurm(), ["a", "d"], "gpufabric", "batch 1")
    assert updates(ctld) == []
    assert [(n["action"], n["ours"]) for n in out["nodes"]] == [("none", False), ("none", False)]
    assert ctld.nodes["a"]["reason"] == "bad dimm, ticket 1234"
    assert summary(out, "drained") == ("no node to drain; left as they are (out of service for another reason): "
                                       "a (drained: bad dimm, ticket 1234), d (down*: Not responding)")
    back = resume(ctld.slurm(), ["a", "d"], "gpufabric")
    assert back["changed"] is False and updates(ctld) == []
    assert summary(back, "resumed").startswith("no node to resume; ")
    assert "left drained by their own reason: a (bad dimm, ticket 1234), d (Not responding)" in summary(back, "resumed")


def test_a_drain_left_by_an_earlier_run_is_ours_to_take_over_and_resume():
    ctld = Ctld(a=node(drain=True, reason="gpufabric: batch rack r01"))
    out = drain(ctld.slurm(), ["a"], "gpufabric", "batch rack r01")
    assert out["changed"] is False and updates(ctld) == []          # the same reason: nothing to update
    out = drain(ctld.slurm(), ["a"], "gpufabric", "batch rack r02")
    assert out["nodes"][0]["action"] == "reason"
    assert ctld.nodes["a"]["reason"] == "gpufabric: batch rack r02"
    back = resume(ctld.slurm(), ["a"], "gpufabric")
    assert back["nodes"][0]["action"] == "resume" and ctld.nodes["a"]["drain"] is False


@pytest.mark.parametrize("reason, ours", [
    ("gpufabric", True), ("gpufabric: x", True),
    ("gpufabricX: x", False), ("gpufabric x", False), ("Gpufabric: x", False), ("x gpufabric:", False)])
def test_whose_drain_it_is(reason, ours):
    ctld = Ctld(a=node(drain=True, reason=reason))
    assert resume(ctld.slurm(), ["a"], "gpufabric")["nodes"][0]["action"] == ("resume" if ours else "none")


def test_resume_twice_changes_nothing_the_second_time():
    ctld = Ctld(a=node(drain=True, reason="gpufabric: b"))
    assert resume(ctld.slurm(), ["a"], "gpufabric")["changed"] is True
    again = resume(ctld.slurm(), ["a"], "gpufabric")
    assert again["changed"] is False and len(updates(ctld)) == 1


def test_check_mode_reads_only():
    ctld = Ctld(a=node(), b=node("allocated", jobs=["9"]))
    out = drain(ctld.slurm(), ["a", "b"], "gpufabric", "x", wait_timeout=600, check_mode=True)
    assert updates(ctld) == [] and ctld.now == 0
    assert out["changed"] is True and out["nodes"][0]["after"] is None
    assert summary(out, "drained", check_mode=True) == "would drain a, b; still running jobs: b: job 9"


def test_a_node_slurm_does_not_know_is_an_error_before_any_change():
    ctld = Ctld(a=node())
    with pytest.raises(SlurmError, match=r"Slurm does not know node srv-9 \(sinfo --nodes printed nothing for it\)"):
        drain(ctld.slurm(), ["a", "srv-9"], "gpufabric", "x")
    assert updates(ctld) == []


@pytest.mark.parametrize("word, busy, out, responding", [
    ("idle", False, False, True), ("idle*", False, False, False), ("idle~", False, False, True),
    ("mixed", True, False, True), ("allocated", True, False, True), ("completing", True, False, True),
    ("draining", True, True, True), ("drained", False, True, True), ("down*", False, True, False),
    ("fail", False, True, True), ("failing", True, True, True), ("mixed+drain", True, True, True),
    ("idle+drain", False, True, True), ("reserved", False, False, True), ("planned", False, False, True)])
def test_states(word, busy, out, responding):
    assert parse_state("n1", word) == {"state": word, "busy": busy, "out": out, "responding": responding}


@pytest.mark.parametrize("word", ["", "sleeping", "idle?", "drained+weird", "IDLE!!"])
def test_a_state_word_not_known_fails_closed_naming_the_node(word):
    with pytest.raises(SlurmError, match="node n1 in state"):
        parse_state("n1", word)


def test_a_line_not_in_the_asked_form_fails_closed():
    def run(argv):
        return 0, "a idle none\n", ""
    with pytest.raises(SlurmError, match="sinfo printed a line gpufabric cannot read for nodes a"):
        Slurm(run).read(["a"])


def test_a_node_in_two_partitions_is_one_node():
    def run(argv):
        return 0, "a|idle|none\na|idle|none\n", ""
    assert Slurm(run).read(["a"]) == {"a": {"state": "idle", "busy": False, "out": False, "responding": True,
                                            "reason": None}}


def test_scontrol_refusing_names_the_nodes_and_its_words():
    def run(argv):
        if argv[0] == "sinfo":
            return 0, "a|idle|none\n", ""
        return 1, "", "slurm_update error: Access/permission denied\n"
    with pytest.raises(ToolFailed, match=r"scontrol update failed for a \(rc=1\): slurm_update error: "
                                         r"Access/permission denied"):
        drain(Slurm(run), ["a"], "gpufabric", "x")


@pytest.mark.parametrize("nodes, word", [
    ([], "non-empty list"), (["gpu[01-04]"], "'gpu[01-04]' is not a Slurm node name"),
    (["a,b"], "'a,b' is not"), (["a b"], "'a b' is not"), ([7], "7 is not"), ("a", "non-empty list"),
    (["-a"], "'-a' is not"), (["a" * 65], "is not")])
def test_node_names_are_refused_by_a_strict_grammar(nodes, word):
    ctld = Ctld(a=node())
    with pytest.raises(InvalidParameter, match=word.replace("[", r"\[").replace("]", r"\]")):
        drain(ctld.slurm(), nodes, "gpufabric", "x")
    assert ctld.calls == []


def test_a_64_character_name_is_accepted_65_is_not():
    name = "a" * 64
    ctld = Ctld(**{name: node()})
    assert drain(ctld.slurm(), [name], "gpufabric", "x")["nodes"][0]["action"] == "drain"


@pytest.mark.parametrize("owner, reason, parameter", [
    ("gp fab", "x", "owner"), ("", "x", "owner"), ("g" * 33, "x", "owner"), ("gpufabric", "a\nb", "reason"),
    ("gpufabric", "", "reason"), ("gpufabric", "x" * 201, "reason"), ("gpufabric", "caf\u00e9", "reason")])
def test_owner_and_reason_grammar(owner, reason, parameter):
    ctld = Ctld(a=node())
    with pytest.raises(InvalidParameter) as err:
        drain(ctld.slurm(), ["a"], owner, reason)
    assert err.value.parameter == parameter and ctld.calls == []


def test_limits_of_owner_and_reason_are_accepted():
    ctld = Ctld(a=node())
    drain(ctld.slurm(), ["a"], "g" * 32, "x" * 200)
    assert ctld.nodes["a"]["reason"] == "g" * 32 + ": " + "x" * 200


def test_query_reads_only_and_names_the_nodes_out_of_service():
    ctld = Ctld(a=node(), b=node("allocated", jobs=["3"]), c=node(drain=True, reason="admin: psu"))
    out = query(ctld.slurm(), ["a", "b", "c"], "gpufabric")
    assert ctld.calls == [["sinfo", "--noheader", "--Node", "--nodes=a,b,c", "--format=%N|%T|%E"]]
    assert out["changed"] is False and [n["before"]["state"] for n in out["nodes"]] == ["idle", "allocated", "drained"]
    assert summary(out, "query") == "3 nodes known to Slurm; out of service: c (drained: admin: psu)"
    with pytest.raises(SlurmError, match="Slurm does not know node d"):
        query(ctld.slurm(), ["a", "d"], "gpufabric")
