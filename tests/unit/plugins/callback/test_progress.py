"""The progress callback (plugins/callback/progress.py) on real ansible-playbook runs: five local hosts in batches
(``serial``), a held host, a quarantined one, failed ones; the lines it prints, its JSON lines, its documentation."""
import json
import re
import subprocess
import sys

import pytest
import yaml

from _ansible import env, tool
from _paths import REPO

from ansible_collections.gpufabric.mlnx.plugins.callback import progress

LOCAL = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
HOSTS = ["h1", "h2", "h3", "h4", "h5"]
CLOCK = r"\d\d:\d\d:\d\d"


def run(tmp_path, plays, **extra_env):
    """ansible-playbook of ``plays`` on HOSTS with the progress callback enabled; (proc, [progress lines])."""
    inventory = {"all": {"hosts": {name: dict(LOCAL) for name in HOSTS}}}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    (tmp_path / "play.yml").write_text(yaml.safe_dump(plays, sort_keys=False))
    extra_env.setdefault("ANSIBLE_CALLBACKS_ENABLED", "gpufabric.mlnx.progress")
    proc = subprocess.run([str(tool("ansible-playbook")), "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml")],
                          env=env(tmp_path, **extra_env), capture_output=True, text=True, timeout=300, check=False,
                          cwd=str(tmp_path))
    return proc, [line for line in proc.stdout.splitlines() if line.startswith("[progress] ")]


def events(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


HELD = {"leaf": "leaf-1", "port": "swp1", "reason": "leaf-1 is not ready"}
TASKS = [
    {"name": "The leaf gate holds h1", "ansible.builtin.set_fact": {
        "gpufabric_held": "{{ [%s] if inventory_hostname == 'h1' else [] }}" % json.dumps(HELD)}},
    {"name": "A held server ends its play", "ansible.builtin.meta": "end_host",
     "when": "gpufabric_held | length > 0"},
    {"name": "h3 fails and is rescued", "block": [
        {"name": "Fails on h3", "ansible.builtin.fail": {"msg": "rescued"}, "when": "inventory_hostname == 'h3'"}],
     "rescue": [{"name": "Rescue", "ansible.builtin.debug": {"msg": "rescued"}}]},
    {"name": "h2 fails, ignored", "ansible.builtin.fail": {"msg": "ignored"}, "ignore_errors": True,
     "when": "inventory_hostname == 'h2'"},
    {"name": "h5 fails", "ansible.builtin.fail": {"msg": "planted failure"}, "when": "inventory_hostname == 'h5'"},
    {"name": "The validation gate quarantines h4", "run_once": True, "ansible.builtin.set_fact": {
        "gpufabric_gate_results": {
            "quarantine": "{{ [{'host': 'h4', 'failures': ['pcie: 16 GT/s x8']}] if 'h4' in ansible_play_batch "
                          "else [] }}",
            "handover": "{{ ansible_play_batch | difference(['h4']) }}"}}},
]


@pytest.fixture(scope="module")
def counted(tmp_path_factory):
    """serial [2, 3] over h1..h5, no rollout plan: h1 held (batch 1), h4 quarantined and h5 failed (batch 2)."""
    tmp_path = tmp_path_factory.mktemp("progress")
    path = tmp_path / "progress.jsonl"
    play = {"name": "Rollout", "hosts": "all", "gather_facts": False, "serial": [2, 3], "tasks": TASKS}
    proc, lines = run(tmp_path, [play], GPUFABRIC_PROGRESS_PATH=str(path))
    return proc, lines, events(path) if path.exists() else []


def test_a_line_per_batch_start_and_end_and_a_summary(counted):
    proc, lines, _events = counted
    assert proc.returncode == 2, proc.stdout[-3000:] + proc.stderr[-3000:]  # h5 failed
    assert len(lines) == 5, lines
    assert re.fullmatch(r"\[progress\] batch 1 of 2: 2 hosts - started %s into the run" % CLOCK, lines[0])
    assert re.fullmatch(r"\[progress\] batch 1 of 2 done in %s: 2/5 hosts done, 1 held, 0 quarantined, 0 failed; "
                        r"elapsed %s, estimate %s left \(mean batch time x batches left\)" % (CLOCK, CLOCK, CLOCK),
                        lines[1])
    assert re.fullmatch(r"\[progress\] batch 2 of 2: 3 hosts - started %s into the run, estimate %s left"
                        % (CLOCK, CLOCK), lines[2])
    assert re.fullmatch(r"\[progress\] batch 2 of 2 done in %s: 5/5 hosts done, 1 held, 1 quarantined, 1 failed; "
                        r"elapsed %s, no batch left" % (CLOCK, CLOCK), lines[3])
    assert re.fullmatch(r"\[progress\] run done in %s: 2 of 2 batches, 5/5 hosts done, 1 held, 1 quarantined, "
                        r"1 failed; recap 5 hosts: 4 ok, 1 failed, 0 unreachable" % CLOCK, lines[4])


def test_the_lines_come_beside_the_stdout_callback(counted):
    proc, _lines, _events = counted
    out = proc.stdout
    assert "PLAY RECAP" in out and "planted failure" in out
    assert out.index("batch 1 of 2: 2 hosts") < out.index("TASK [The leaf gate holds h1]")


def test_the_json_lines(counted):
    _proc, _lines, got = counted
    assert [(e["event"], e.get("batch")) for e in got] == [
        ("batch_start", 1), ("batch_end", 1), ("batch_start", 2), ("batch_end", 2), ("summary", None)]
    start1, end1, start2, end2, summary = got
    assert start1["hosts"] == ["h1", "h2"] and start2["hosts"] == ["h3", "h4", "h5"]
    assert (start1["batches"], start1["servers"], start1["leaves"], start1["name"]) == (2, 2, 0, None)
    assert start1["estimate_left"] is None  # none before the first batch ends
    # one batch left after the first: the estimate is the first batch's time
    assert end1["estimate_left"] == pytest.approx(end1["duration"], abs=0.002)
    assert start2["estimate_left"] == end1["estimate_left"]
    assert (end1["done"], end1["total"], end1["batches_left"], end1["stopped"]) == (2, 5, 1, False)
    assert (end1["held"], end1["quarantined"], end1["failed"]) == (["h1"], [], [])
    assert (end2["held"], end2["quarantined"], end2["failed"], end2["unreachable"]) == (["h1"], ["h4"], ["h5"], [])
    assert (end2["batch_held"], end2["batch_quarantined"], end2["batch_failed"]) == ([], ["h4"], ["h5"])
    assert (end2["done"], end2["batches_left"], end2["estimate_left"]) == (5, 0, 0.0)
    assert summary["recap"] == {"ok": ["h1", "h2", "h3", "h4"], "failed": ["h5"], "unreachable": []}
    assert (summary["batches_run"], summary["batches"], summary["stopped"]) == (2, 2, False)
    assert all(e["elapsed"] >= 0 and e["time"].endswith("+00:00") for e in got)
    assert end2["elapsed"] >= end1["elapsed"] >= start1["elapsed"]


PLAN = {"batches": [{"name": "rack r01", "servers": ["h1", "h2"], "leaves": []},
                    {"name": "rack r02", "servers": ["h4"], "leaves": ["h3"]},
                    {"name": "rack r03", "servers": ["h5"], "leaves": []}],
        "order": HOSTS, "sizes": [2, 2, 1]}


@pytest.fixture(scope="module")
def planned(tmp_path_factory):
    """site.yml's shape: a planning play sets gpufabric_rollout on localhost, the rollout play's serial is its sizes;
    every host of batch 2 (the leaf h3 and the server h4) fails, so ansible-core stops before batch 3."""
    tmp_path = tmp_path_factory.mktemp("progress_plan")
    path = tmp_path / "progress.jsonl"
    plays = [
        {"name": "Plan", "hosts": "localhost", "gather_facts": False,
         "tasks": [{"ansible.builtin.set_fact": {"gpufabric_rollout": PLAN}}]},
        {"name": "Rollout", "hosts": "all", "gather_facts": False, "order": "inventory",
         "serial": "{{ hostvars['localhost'].gpufabric_rollout.sizes }}",
         "tasks": [{"name": "Batch 2 fails", "ansible.builtin.fail": {"msg": "down"},
                    "when": "inventory_hostname in ['h3', 'h4']"}]},
    ]
    proc, lines = run(tmp_path, plays, GPUFABRIC_PROGRESS_PATH=str(path))
    return proc, lines, events(path) if path.exists() else []


def test_the_batches_of_the_rollout_plan_are_named_and_count_servers_and_leaves(planned):
    proc, lines, _events = planned
    assert proc.returncode == 2, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert len(lines) == 5, lines
    assert re.fullmatch(r"\[progress\] batch 1 of 3 \(rack r01\): 2 servers, 0 leaves - started %s into the run"
                        % CLOCK, lines[0])
    assert re.fullmatch(r"\[progress\] batch 1 of 3 done in %s: 2/4 servers done, 0 held, 0 quarantined, 0 failed; "
                        r"elapsed %s, estimate %s left \(mean batch time x batches left\)" % (CLOCK, CLOCK, CLOCK),
                        lines[1])
    assert re.fullmatch(r"\[progress\] batch 2 of 3 \(rack r02\): 1 server, 1 leaf - started %s into the run, "
                        r"estimate %s left" % (CLOCK, CLOCK), lines[2])
    # the leaf h3 counts as failed, not as a server done
    assert re.fullmatch(r"\[progress\] batch 2 of 3 done in %s: 3/4 servers done, 0 held, 0 quarantined, 2 failed; "
                        r"elapsed %s, stopped: 1 batch not run \(1 server\)" % (CLOCK, CLOCK), lines[3])
    assert re.fullmatch(r"\[progress\] run done in %s: 2 of 3 batches, 3/4 servers done, 0 held, 0 quarantined, "
                        r"2 failed \(stopped: 1 batch not run\); recap 5 hosts: 3 ok, 2 failed, 0 unreachable"
                        % CLOCK, lines[4])


def test_the_json_lines_of_a_stopped_rollout(planned):
    _proc, _lines, got = planned
    assert [(e["event"], e.get("name")) for e in got] == [
        ("batch_start", "rack r01"), ("batch_end", "rack r01"), ("batch_start", "rack r02"), ("batch_end", "rack r02"),
        ("summary", None)]
    end2, summary = got[3], got[4]
    assert (end2["stopped"], end2["estimate_left"], end2["failed"], end2["batch_failed"]) == (
        True, None, ["h3", "h4"], ["h3", "h4"])
    assert (summary["batches_run"], summary["batches"], summary["done"], summary["total"], summary["stopped"]) == (
        2, 3, 3, 4, True)
    # h5 never ran: the recap has only the hosts that ran
    assert summary["recap"] == {"ok": ["h1", "h2", "localhost"], "failed": ["h3", "h4"], "unreachable": []}


def test_output_file_from_ansible_cfg_and_a_play_ended_early(tmp_path):
    """The ini entries: output=file and path in [callback_gpufabric_progress] - nothing printed, the JSON lines
    written. A play with serial that meta end_play ends in its first batch is stopped when the next play starts."""
    path = tmp_path / "ci" / "progress.jsonl"
    path.parent.mkdir()
    cfg = tmp_path / "ansible.cfg"
    cfg.write_text((REPO / "ansible.cfg").read_text().replace("./", str(REPO) + "/")
                   + "\n[callback_gpufabric_progress]\noutput = file\npath = %s\n" % path)
    plays = [{"name": "Ended", "hosts": "h1:h2", "gather_facts": False, "serial": 1,
              "tasks": [{"ansible.builtin.meta": "end_play"}]},
             {"name": "No batches", "hosts": "h1", "gather_facts": False,
              "tasks": [{"ansible.builtin.debug": {"msg": "hello"}}]}]
    proc, lines = run(tmp_path, plays, ANSIBLE_CONFIG=str(cfg))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert lines == [] and "hello" in proc.stdout
    got = events(path)
    assert [(e["event"], e.get("batch")) for e in got] == [("batch_start", 1), ("batch_end", 1), ("summary", None)]
    assert (got[1]["batches"], got[1]["batches_left"], got[1]["stopped"], got[1]["estimate_left"]) == (2, 1, True, None)
    assert (got[2]["batches_run"], got[2]["batches"], got[2]["stopped"], got[2]["recap"]["ok"]) == (1, 2, True, ["h1"])


def test_ansible_doc_shows_the_callback(tmp_path):
    proc = subprocess.run([str(tool("ansible-doc")), "-t", "callback", "--json", "gpufabric.mlnx.progress"],
                          env=env(tmp_path), capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)["gpufabric.mlnx.progress"]["doc"]
    assert (doc["name"], doc["type"]) == ("progress", "aggregate")
    assert set(doc["options"]) == {"output", "path"}
    assert doc["options"]["output"]["choices"] == ["stdout", "file"]
    assert doc["options"]["output"]["ini"] == [{"section": "callback_gpufabric_progress", "key": "output"}]
    assert doc["options"]["path"]["env"] == [{"name": "GPUFABRIC_PROGRESS_PATH"}]
    text = subprocess.run([str(tool("ansible-doc")), "-t", "callback", "gpufabric.mlnx.progress"],
                          env=env(tmp_path), capture_output=True, text=True, timeout=300, check=False)
    assert text.returncode == 0, text.stderr
    shown = " ".join(text.stdout.split())  # ansible-doc wraps the lines
    assert "(mean batch time x batches left)" in shown and "GPUFABRIC_PROGRESS_OUTPUT" in shown


@pytest.mark.parametrize("serial, count, sizes", [
    ([2, 3], 5, [2, 3]),
    ([1, "50%"], 5, [1, 2, 2]),  # a percentage of all the play's hosts, the last size repeated
    (["30%"], 10, [3, 3, 3, 1]),
    ([0], 4, [4]),
    ([], 3, [3]),
    ([10], 3, [3]),
])
def test_serial_batches_as_ansible_core_makes_them(serial, count, sizes):
    hosts = ["h%d" % i for i in range(count)]
    batches = progress.serial_batches(serial, hosts)
    assert [len(b) for b in batches] == sizes and sum(batches, []) == hosts


def test_clock_and_plural():
    assert [progress.clock(s) for s in (0, 59.6, 3600 + 61, 90061)] == ["00:00:00", "00:01:00", "01:01:01", "25:01:01"]
    assert [progress.plural(n, w) for n, w in ((1, "leaf"), (2, "leaf"), (0, "batch"), (1, "server"))] == [
        "1 leaf", "2 leaves", "0 batches", "1 server"]
