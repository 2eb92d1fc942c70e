# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drift callback (plugins/callback/drift.py) on real ansible-playbook runs in check and diff mode on local
hosts: what counts as drift (a changed result of a task in check mode, each loop item), what does not (a task that
runs for real, the implicit localhost, a skipped task), a no_log result by name only, failures, unreachable hosts,
and where it writes."""
import json
import subprocess
import sys

import yaml

from _ansible import env, tool

LOCAL = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
SECRET = "hunter2-not-in-any-report"


def run(tmp_path, tasks, hosts=("h1", "h2"), args=("--check", "--diff"), extra_hosts=None, **extra_env):
    inventory = {"all": {"hosts": dict({name: dict(LOCAL) for name in hosts}, **(extra_hosts or {}))}}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    plays = [{"name": "Steps", "hosts": "all", "gather_facts": False, "tasks": tasks}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(plays, sort_keys=False))
    extra_env.setdefault("ANSIBLE_CALLBACKS_ENABLED", "gpufabric.mlnx.drift")
    proc = subprocess.run([str(tool("ansible-playbook")), "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml"),
                           *args], env=env(tmp_path, **extra_env), capture_output=True, text=True, timeout=300,
                          check=False, cwd=str(tmp_path))
    path = tmp_path / extra_env.get("GPUFABRIC_DRIFT_DIR", "reports") / "drift.json"
    return proc, json.loads(path.read_text()) if path.exists() else None


def content(path, text, **more):
    return dict({"name": "Write %s" % path, "ansible.builtin.copy": {"dest": path, "content": text, "mode": "0644"}},
                **more)


def test_changed_results_in_check_mode_are_drift_each_named_the_rest_is_not(tmp_path):
    (tmp_path / "h1.conf").write_text("mtu 1500\n")
    (tmp_path / "h2.conf").write_text("mtu 9000\n")
    tasks = [
        content(str(tmp_path / "{{ inventory_hostname }}.conf"), "mtu 9000\n"),
        # runs for real in check mode: a controller-side report, not a prediction
        dict(content(str(tmp_path / "report-{{ inventory_hostname }}.txt"), "report\n"), check_mode=False),
        {"name": "A prediction without a diff", "ansible.builtin.debug": {"msg": "would reset 0000:3b:00.0"},
         "changed_when": "inventory_hostname == 'h2'"},
        {"name": "Each item", "ansible.builtin.copy": {"dest": str(tmp_path / "{{ item }}-{{ inventory_hostname }}"),
                                                       "content": "x\n", "mode": "0644"},
         "loop": ["a", "b"], "when": "inventory_hostname == 'h1'"},
        {"name": "A secret", "ansible.builtin.debug": {"msg": SECRET}, "changed_when": True, "no_log": True,
         "when": "inventory_hostname == 'h2'"},
        {"name": "Skipped", "ansible.builtin.debug": {"msg": "x"}, "changed_when": True, "when": False},
    ]
    proc, doc = run(tmp_path, tasks)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert doc["result"] == "drift" and doc["finished"]
    h1 = [(r["task"], r["setting"]) for r in doc["hosts"]["h1"]["settings"]]
    assert h1 == [("Write %s/h1.conf" % tmp_path, "%s/h1.conf" % tmp_path),
                  ("Each item", "%s/a-h1" % tmp_path), ("Each item", "%s/b-h1" % tmp_path)], h1
    assert "-mtu 1500" in doc["hosts"]["h1"]["settings"][0]["diff"]
    h2 = [(r["task"], r["expected"]) for r in doc["hosts"]["h2"]["settings"]]
    assert h2 == [("A prediction without a diff", "would reset 0000:3b:00.0"),
                  ("A secret", "(no_log: values not shown)")], h2
    assert (tmp_path / "report-h1.txt").exists()  # the check_mode: false task ran, and is not drift
    for name in ("drift.json", "drift.md"):
        assert SECRET not in (tmp_path / "reports" / name).read_text()
    assert "[drift] drift: 2 of 2 hosts would change (5 settings), 0 failed, 0 unreachable - " in proc.stdout


def test_a_compliant_run_reports_nothing(tmp_path):
    (tmp_path / "h1.conf").write_text("mtu 9000\n")
    (tmp_path / "h2.conf").write_text("mtu 9000\n")
    proc, doc = run(tmp_path, [content(str(tmp_path / "{{ inventory_hostname }}.conf"), "mtu 9000\n")],
                    GPUFABRIC_DRIFT_DIR="nightly")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert doc["result"] == "compliant" and doc["summary"] == {"hosts": 2, "drifted": [], "failed": [],
                                                               "unreachable": [], "settings": 0}
    assert "[drift] compliant: no drift on 2 hosts - %s/nightly/drift.md" % tmp_path in proc.stdout


def test_failed_and_unreachable_hosts_make_the_report_incomplete_an_ignored_failure_does_not(tmp_path):
    """h1 fails, h2 fails after an ignored failure, h3 cannot be reached."""
    tasks = [{"name": "Reach", "ansible.builtin.ping": {}},
             {"name": "Read the cards", "ansible.builtin.fail": {"msg": "mst: no device"},
              "when": "inventory_hostname == 'h1'"},
             {"name": "Ignored", "ansible.builtin.fail": {"msg": "ignored"}, "ignore_errors": True,
              "when": "inventory_hostname == 'h2'"},
             {"name": "An assert of many lines", "ansible.builtin.assert": {
                 "that": "false", "fail_msg": ["the inventory has 1 problem(s):", "rail1 overlaps rail0"]},
              "when": "inventory_hostname == 'h2'"}]
    gone = {"h3": {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 1,
                   "ansible_ssh_common_args": "-o ConnectTimeout=2"}}
    proc, doc = run(tmp_path, tasks, extra_hosts=gone)
    assert proc.returncode != 0
    assert doc["result"] == "incomplete"
    assert doc["summary"]["failed"] == ["h1", "h2"] and doc["summary"]["unreachable"] == ["h3"]
    assert doc["hosts"]["h1"]["failures"] == [{"task": "Read the cards", "msg": "mst: no device"}]
    # the ignored failure is not one; the assert's lines are one message
    assert doc["hosts"]["h2"]["failures"] == [{"task": "An assert of many lines",
                                               "msg": "the inventory has 1 problem(s):; rail1 overlaps rail0"}]


def test_the_implicit_localhost_is_not_a_host_of_the_report(tmp_path):
    (tmp_path / "play.yml").write_text(yaml.safe_dump([
        {"name": "Controller", "hosts": "localhost", "gather_facts": False,
         "tasks": [{"name": "Changes", "ansible.builtin.debug": {"msg": "x"}, "changed_when": True}]}]))
    proc = subprocess.run([str(tool("ansible-playbook")), "-i", "nohost,", str(tmp_path / "play.yml"), "--check"],
                          env=env(tmp_path, ANSIBLE_CALLBACKS_ENABLED="gpufabric.mlnx.drift",
                                  ANSIBLE_PYTHON_INTERPRETER=sys.executable),
                          capture_output=True, text=True, timeout=120, check=False, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads((tmp_path / "reports" / "drift.json").read_text())["hosts"] == {}


def test_an_unwritable_directory_is_a_warning_not_a_failure(tmp_path):
    (tmp_path / "file").write_text("")
    proc, _doc = run(tmp_path, [{"name": "x", "ansible.builtin.debug": {"msg": "x"}}],
                     GPUFABRIC_DRIFT_DIR=str(tmp_path / "file" / "sub"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "cannot write the drift report in %s/file/sub" % tmp_path in proc.stdout + proc.stderr


def test_a_run_that_is_not_in_check_mode_writes_and_prints_nothing(tmp_path):
    proc, doc = run(tmp_path, [content(str(tmp_path / "{{ inventory_hostname }}.conf"), "mtu 9000\n")], args=())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "h1.conf").read_text() == "mtu 9000\n"  # it ran for real
    assert doc is None and not (tmp_path / "reports").exists() and "[drift]" not in proc.stdout
