"""The rollout report (plugin_utils/_rollout_report.py): per server its outcome and what each step did, per batch
the gate's counts, in Markdown, CSV and JSON; bad input named."""
import csv
import io
import json

import pytest

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils import _rollout_report as rr

GATE = {"hosts": {"s1": {"status": "passed", "failures": []},
                  "s2": {"status": "quarantined",
                         "failures": [{"measure": "pcie", "message": "s2 rail 1 (enp64s0np0): PCIe link at 16 GT/s x8"}]}}}
VALUES = {
    "s1": {"gpufabric_ofed_result": {"action": "install"}, "gpufabric_firmware_pending_devices": ["a", "b"],
           "gpufabric_nv_pending_devices": ["a"], "gpufabric_activation": {"method": "fwreset", "level": 3},
           "gpufabric_held": [], "gpufabric_gate_results": GATE},
    "s2": {"gpufabric_ofed_result": {"action": "none"}, "gpufabric_activation": {"method": "none", "level": None},
           "gpufabric_gate_results": GATE},
    "s3": {"gpufabric_held": [{"leaf": "r02-leaf-rail1", "port": "swp2", "reason": "protodown"}]},
}
BATCHES = [{"number": 1, "name": "rack r01", "servers": ["s1", "s2"], "leaves": ["l1", "l2"]},
           {"number": 2, "name": "rack r02", "servers": ["s3", "s4", "s5"], "leaves": ["l3"]}]


def report():
    return rr.rows(["s1", "s2", "s3", "s4", "s5"], VALUES, BATCHES, failed=["s4"])


def test_every_server_with_its_outcome_and_what_was_done():
    hosts = {h["host"]: h for h in report()["hosts"]}
    assert hosts["s1"] == {"batch": "rack r01", "host": "s1", "outcome": "handed over", "driver": "install",
                           "firmware_burned": 2, "nv_changed": 1, "activation": "fwreset level 3", "gate": "passed",
                           "why": ""}
    assert hosts["s2"]["outcome"] == "quarantined" and "PCIe link at 16 GT/s x8" in hosts["s2"]["why"]
    assert hosts["s3"]["outcome"] == "held" and hosts["s3"]["why"] == "r02-leaf-rail1 swp2: protodown"
    assert hosts["s4"]["outcome"] == "failed" and hosts["s5"]["outcome"] == "not run"


def test_a_hold_without_a_leaf_is_its_reason_alone():
    values = {"s9": {"gpufabric_held": [{"leaf": None, "port": None, "reason": "Slurm node s9 still runs job 42"}]}}
    assert rr.rows(["s9"], values)["hosts"][0]["why"] == "Slurm node s9 still runs job 42"


def test_a_failed_server_says_where_and_why():
    values = {"s4": {"gpufabric_failure": {"step": "firmware", "task": "Burn the pinned firmware",
                                           "message": "s4 0000:17:00.0: flint burn failed: -E- Burning FS4 image failed"}},
              "s5": {"gpufabric_failure": {"step": "", "task": "Drain the batch's servers", "message": ""}},
              "s6": {}}
    hosts = {h["host"]: h for h in rr.rows(["s4", "s5", "s6"], values, failed=["s4", "s5", "s6"])["hosts"]}
    assert hosts["s4"]["why"] == ("step firmware, 'Burn the pinned firmware': "
                                  "s4 0000:17:00.0: flint burn failed: -E- Burning FS4 image failed")
    # a task of a step run whatever the tags (drain, leaf gate) has no step; a record without its message says so
    assert hosts["s5"]["why"] == "'Drain the batch's servers': no message"
    # unreachable (a rescue does not catch it) or failed before the rollout play: nothing recorded
    assert hosts["s6"]["outcome"] == "failed" and hosts["s6"]["why"].startswith("no cause recorded: unreachable")
    # the record is a failed server's only: a server that did not fail keeps its own outcome
    assert rr.rows(["s4"], values)["hosts"][0]["outcome"] == "done"


def test_batches_count_the_gate():
    assert report()["batches"] == [
        {"number": 1, "batch": "rack r01", "servers": 2, "leaves": 2, "held": 0, "failed": 0, "passed": 1,
         "quarantined": 1, "not_retested": 0},
        {"number": 2, "batch": "rack r02", "servers": 3, "leaves": 1, "held": 1, "failed": 1, "passed": 0,
         "quarantined": 0, "not_retested": 0}]
    assert report()["resume"] is None   # both batches ran


def test_a_rollout_stopped_by_a_gate_names_the_batch_to_resume_at():
    batches = BATCHES + [{"number": 3, "name": "rack r03", "servers": ["s6"]},
                         {"number": 4, "name": "rack r04", "servers": ["s7"]}]
    out = rr.rows(["s1", "s2", "s3", "s4", "s5", "s6", "s7"], VALUES, batches, failed=["s4"])
    assert out["resume"] == {"number": 3, "batch": "rack r03", "option": "-e gpufabric_start_batch=3", "why": "stopped"}
    assert ("The rollout stopped before batch 3 (rack r03). When the cause is fixed, resume there: "
            "`ansible-playbook ... playbooks/site.yml -e gpufabric_start_batch=3`") in rr.render(out, "md")


def test_resume_needs_a_batch_that_ran_before_it():
    assert rr.rows(["s6"], {}, [{"number": 5, "name": "rack r05", "servers": ["s6"]}])["resume"] is None
    assert rr.rows(["s1", "s6"], VALUES, [{"number": 5, "name": "a", "servers": ["s1"]},
                                          {"number": 6, "name": "b", "servers": ["s6"]}])["resume"] == {
        "number": 6, "batch": "b", "option": "-e gpufabric_start_batch=6", "why": "stopped"}


def test_a_wave_that_ran_to_its_end_batch_names_the_next_wave_and_lists_only_its_own_batches():
    """gpufabric_end_batch=2: batches 3 and 4 are after the wave's end (site.yml marks them after_end)."""
    batches = BATCHES + [{"number": 3, "name": "rack r03", "servers": ["s6"], "after_end": True},
                         {"number": 4, "name": "rack r04", "servers": ["s7"], "after_end": True}]
    out = rr.rows(["s1", "s2", "s3", "s4", "s5", "s6", "s7"], VALUES, batches, failed=["s4"])
    assert [b["batch"] for b in out["batches"]] == ["rack r01", "rack r02"]
    assert out["resume"] == {"number": 3, "batch": "rack r03", "option": "-e gpufabric_start_batch=3", "why": "wave"}
    md = rr.render(out, "md")
    assert ("This run was a wave: it ended before batch 3 (rack r03), as gpufabric_end_batch asked. The next wave "
            "begins there: `ansible-playbook ... playbooks/site.yml -e gpufabric_start_batch=3`") in md
    assert "stopped" not in md


def test_a_wave_stopped_by_its_gate_says_stopped_not_wave():
    batches = BATCHES + [{"number": 3, "name": "rack r03", "servers": ["s6"]},
                         {"number": 4, "name": "rack r04", "servers": ["s7"], "after_end": True}]
    out = rr.rows(["s1", "s2", "s3", "s4", "s5", "s6", "s7"], VALUES, batches, failed=["s4"])
    assert out["resume"]["why"] == "stopped" and out["resume"]["number"] == 3


def test_formats():
    md = rr.render(report(), "md")
    assert "## Batches" in md and "| rack r01 | s2 | quarantined |" in md and "stopped" not in md
    rows = list(csv.DictReader(io.StringIO(rr.render(report(), "csv"))))
    assert [r["outcome"] for r in rows] == ["handed over", "quarantined", "held", "failed", "not run"]
    assert json.loads(rr.render(report(), "json"))["batches"][1]["held"] == 1
    with pytest.raises(MlnxError, match="format 'pdf' is not one of md, csv, json"):
        rr.render(report(), "pdf")
    with pytest.raises(MlnxError, match="servers must be a list of host names"):
        rr.rows("s1", {})


def test_the_record_of_a_failed_task():
    task = {"name": "Burn the pinned firmware", "tags": ["always", "firmware"]}
    assert rr.failure(task, {"failed": True, "msg": " s4 0000:17:00.0: Burning FS4 image failed \n"}) == {
        "step": "firmware", "task": "Burn the pinned firmware", "message": "s4 0000:17:00.0: Burning FS4 image failed"}
    # a loop: its summary, then the first failed item's words
    loop = {"msg": "One or more items failed",
            "results": [{"failed": False, "msg": "ok"}, {"failed": True, "msg": "rail 1: MTU 1500"},
                        {"failed": True, "msg": "rail 2: MTU 1500"}]}
    assert rr.failure(task, loop)["message"] == "One or more items failed: rail 1: MTU 1500"
    # no_log: only the words that say the output was hidden, never an item's
    hidden = {"censored": "the output has been hidden due to the fact that 'no_log: true' was specified for this result",
              "results": [{"failed": True, "msg": "password s3cret refused"}]}
    assert "s3cret" not in rr.failure(task, hidden)["message"]
    assert rr.failure(task, hidden)["message"].startswith("the output has been hidden")
    # failed_when on a command: no msg - the last line of stderr, else stdout, with the return code
    assert rr.failure({"name": "t"}, {"rc": 2, "stderr": "warn\n-E- Device not found\n\n", "stdout": "x"})[
        "message"] == "-E- Device not found (rc 2)"
    assert rr.failure({"name": "t"}, {"rc": 0, "stdout": "line1\nline2"})["message"] == "line2 (rc 0)"
    assert rr.failure({"name": "t"}, {"rc": 3})["message"] == "rc 3"
    assert rr.failure({"name": "t"}, {}) == {"step": "", "task": "t", "message": "no message"}
    assert rr.failure(None, None) == {"step": "", "task": "", "message": "no message"}
    # cut at the limit: exactly at it kept whole, one more cut to it with "..."
    assert rr.failure({}, {"msg": "x" * 600})["message"] == "x" * 600
    assert rr.failure({}, {"msg": "x" * 601})["message"] == "x" * 597 + "..."
