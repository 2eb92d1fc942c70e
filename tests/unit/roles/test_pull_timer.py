"""The pull role's timer (tasks_from timer): gpufabric-pull.service and .timer written from the inventory's values,
accepted by ``systemd-analyze verify``; the service's command under ``flock -n`` refuses a second run while the lock
is held (ansible-pull never starts) and starts ansible-pull once it is free; a value outside its grammar fails naming
the host and the variable, and nothing is written."""
import fcntl
import re
import shutil
import subprocess

import pytest
import yaml

from _ansible import tool
from _roleplay import run

HOST = "srv-r01-01"


def timer(tmp_path, **values):
    units = tmp_path / "units"
    units.mkdir(exist_ok=True)
    role_vars = dict({"gpufabric_pull_url": "file://%s" % (tmp_path / "missing.git"), "gpufabric_pull_ref": "v1",
                      "gpufabric_pull_directory": str(tmp_path / "checkout"), "gpufabric_pull_unit_dir": str(units),
                      "gpufabric_pull_command": str(tool("ansible-pull")), "gpufabric_pull_lock": str(tmp_path / "lock"),
                      "gpufabric_pull_on_calendar": "*-*-* 03:00:00", "gpufabric_pull_randomized_delay": "15min",
                      "gpufabric_pull_timer_start": False}, **values)
    playbook = yaml.safe_dump([{"hosts": "servers", "gather_facts": False, "tasks": [
        {"name": "The timer", "ansible.builtin.include_role": {"name": "gpufabric.mlnx.pull", "tasks_from": "timer"}}]}])
    return run(tmp_path, {HOST: role_vars}, playbook), units


def exec_start(service):
    """The ExecStart words, unquoted by systemd's rules as pull_units quotes them."""
    line = re.search(r"^ExecStart=(.*)$", service, re.M).group(1)
    words = re.findall(r'"((?:[^"\\]|\\.)*)"', line)
    assert " ".join('"%s"' % w for w in words) == line           # every word quoted, nothing else on the line
    return [re.sub(r"\\(.)", r"\1", w).replace("%%", "%").replace("$$", "$") for w in words]


def test_the_units_verify_and_the_lock_refuses_a_second_run(tmp_path):
    if not shutil.which("systemd-analyze"):
        pytest.skip("systemd-analyze is not installed")
    ran, units = timer(tmp_path, gpufabric_pull_ref="release/2026.11")
    assert ran.ok, ran
    assert sorted(p.name for p in units.iterdir()) == ["gpufabric-pull.service", "gpufabric-pull.timer"]
    verify = subprocess.run(["systemd-analyze", "verify", str(units / "gpufabric-pull.service"),
                             str(units / "gpufabric-pull.timer")], capture_output=True, text=True, check=False)
    assert verify.returncode == 0 and "gpufabric-pull" not in verify.stdout + verify.stderr, verify
    timer_text = (units / "gpufabric-pull.timer").read_text()
    assert "\nOnCalendar=*-*-* 03:00:00\nRandomizedDelaySec=15min\nPersistent=true\n" in timer_text

    argv = exec_start((units / "gpufabric-pull.service").read_text())
    assert argv == ["/usr/bin/flock", "-n", str(tmp_path / "lock"), str(tool("ansible-pull")),
                    "-U", "file://%s" % (tmp_path / "missing.git"), "-C", "release/2026.11", "--only-if-changed",
                    "-d", str(tmp_path / "checkout"), "-i", str(tmp_path / "checkout" / "inventory/site"),
                    "-l", HOST, "pull.yml"]
    with open(tmp_path / "lock", "w") as held:                  # a run in progress holds the lock
        fcntl.flock(held, fcntl.LOCK_EX)
        second = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False, cwd=str(tmp_path))
    assert second.returncode == 1 and "Starting Ansible Pull" not in second.stdout, second
    free = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False, cwd=str(tmp_path))
    assert "Starting Ansible Pull" in free.stdout, free            # the lock free: ansible-pull runs (the repo is missing)


def test_a_unit_file_systemd_refuses_is_found_by_verify(tmp_path):
    """The oracle sees a fault: a calendar systemd cannot parse, written by hand into the rendered timer."""
    if not shutil.which("systemd-analyze"):
        pytest.skip("systemd-analyze is not installed")
    ran, units = timer(tmp_path)
    assert ran.ok, ran
    path = units / "gpufabric-pull.timer"
    path.write_text(path.read_text().replace("OnCalendar=*-*-* 03:00:00", "OnCalendar=every full moon"))
    verify = subprocess.run(["systemd-analyze", "verify", str(path)], capture_output=True, text=True, check=False)
    assert verify.returncode != 0, verify


@pytest.mark.parametrize("name, value, allowed", [
    ("gpufabric_pull_url", "https://git.example/site.git; reboot", "the site repository's URL for git"),
    ("gpufabric_pull_url", "https://user:secret@git.example/site.git", "the site repository's URL for git"),
    ("gpufabric_pull_url", "ext::sh -c touch% /tmp/x", "the site repository's URL for git"),
    ("gpufabric_pull_ref", "v1 --force", "a branch or tag name"),
    ("gpufabric_pull_ref", "../main", "a branch or tag name"),
    ("gpufabric_pull_inventory", "../etc/hosts", "a path inside the checkout"),
    ("gpufabric_pull_playbook", "pull.yml\nExecStartPre=/bin/sh", "a playbook inside the checkout"),
    ("gpufabric_pull_command", "ansible-pull", "the absolute path of ansible-pull"),
    ("gpufabric_pull_on_calendar", "hourly\n[Service]", "a systemd calendar event"),
    ("gpufabric_pull_on_calendar", "%H:00", "a systemd calendar event"),
    ("gpufabric_pull_randomized_delay", "$DELAY", "a systemd time span"),
    ("gpufabric_pull_limit", "srv-r01-01,all", "this server's inventory name"),
])
def test_a_value_outside_its_grammar_fails_naming_host_and_variable_and_nothing_is_written(
        tmp_path, name, value, allowed):
    ran, units = timer(tmp_path, **{name: value})
    assert not ran.ok
    msg = ran.failures()[HOST]
    assert "%s: %s is " % (HOST, name) in msg and "allowed is " + allowed in msg, msg
    assert list(units.iterdir()) == []
