"""Run the collection's roles with ansible-playbook on this machine, on simulated hosts (tests/sim), in seconds.

A simulated host is a SimHost (tests/_simhost.py) in the inventory (``sim_vars``), reached by the fleet twin's
connection (tests/twin/plugins/connection/twin.py): each module, pipelined, runs in a fork of the task's worker with
that host's simulator environment, and the simulated tools it runs run in that process - no interpreter start and
no imports per module or tool - so one play can hold several simulated hosts. Its transport is not ``local``, so the
activate role's ``ansible.builtin.reboot`` runs for real - with ``mlxsim reboot`` as its reboot command and
``mlxsim boot-id`` as the boot time, as the molecule lab does it. A host without a simulator (plain host variables)
is a local connection. (A module here finds the collection's module_utils through the worker's collection loader;
that its AnsiballZ payload carries all it imports is proven where it runs in an interpreter of its own: the
molecule scenarios' containers.)

    sim = simulated(tmp_path, "srv-r01-01", "cx6dx-roce")
    ran = run(tmp_path, {"srv-r01-01": sim_vars(sim, gpufabric_activate_allow_reboot=True)}, play("activate"))
    activation = ran.task("Activate everything pending with ONE firmware reset or ONE reboot (reads every card itself)")
    assert ran.ok and activation["ansible_facts"]["gpufabric_activation"]["method"] == "none"
"""
import hashlib
import json
import os
import shlex
import subprocess
import sys

import pytest
import yaml

from _ansible import env, tool
from _paths import REPO, SIM_BIN
from _simhost import SimHost, sim_ready

# ANSIBLE_CONNECTION_PLUGINS of a run with simulated hosts: the twin's connection
CONNECTIONS = str(REPO / "tests" / "twin" / "plugins" / "connection")
LOCAL = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
ROLE_PREFIX = "gpufabric.mlnx."
CALLBACK_LINES = ("[drift] ", "[progress] ")


def play(*roles, hosts="servers"):
    """One play of the roles ``roles`` (short names: ``activate`` is gpufabric.mlnx.activate) on ``hosts``."""
    return yaml.safe_dump([{"hosts": hosts, "gather_facts": False, "roles": [ROLE_PREFIX + r for r in roles]}])


def matrix(name, firmware, driver="24.10-2.1.8.0"):
    """A consistent ``gpufabric_matrix`` named ``name`` pinning ``firmware`` ({PSID: {version, image, sha256,
    part_numbers}}), with a DOCA-OFED tarball ``driver`` qualified with every pinned firmware version."""
    return {"name": name,
            "driver": {"flavour": "doca-ofed", "version": driver, "dkms": True,
                       "source": {"type": "tarball", "path": "/srv/ofed/doca-ofed.tgz",
                                  "sha256": hashlib.sha256(b"doca-ofed").hexdigest()}},
            "firmware": firmware,
            "compatibility": {"firmware_drivers": {pin["version"]: [driver] for pin in firmware.values()}}}


def simulated(tmp_path, host, profile):
    """A new SimHost named ``host`` of ``profile`` in ``tmp_path / host`` (the test is skipped without the
    simulator)."""
    if not sim_ready():
        pytest.skip("the simulator (tests/sim/bin) is not present")
    return SimHost(tmp_path / host, profile, hostname=host)


def controller(tmp_path):
    """The controller's simulated tools: a SimHost in ``tmp_path / "controller"`` whose ``env`` (PATH with
    tests/sim/bin, its own MLXSIM_STATE) is given to ansible-playbook itself (``run(..., environ=ctl.env)``), so a
    task delegated to localhost - the firmware images read on the controller - runs the simulated flint, and
    ``ctl.mkimage`` makes the images it reads."""
    return simulated(tmp_path, "controller", "cx6dx-roce")


def sim_root(sim):
    """The simulated host's sysfs/configfs/boot tree (MLXSIM_ROOT: ``root`` beside its state file)."""
    return os.path.join(os.path.dirname(sim.env["MLXSIM_STATE"]), "root")


def sim_vars(sim, **extra):
    """The inventory variables of the simulated host ``sim``, with ``extra`` (the roles' variables) over them.

    Written when called: set ``sim.env`` (e.g. MLXSIM_UDEV_RULES) first."""
    words = " ".join(shlex.quote("%s=%s" % item) for item in sorted(sim.env.items()))
    python = os.path.join(os.path.dirname(sim.env["MLXSIM_STATE"]), "python-with-mlxsim-env")
    with open(python, "w", encoding="utf-8") as out:
        out.write('#!/bin/sh\nexec /usr/bin/env %s %s "$@"\n' % (words, shlex.quote(sys.executable)))
    os.chmod(python, 0o755)
    mlxsim = "/usr/bin/env %s %s" % (words, shlex.quote(str(SIM_BIN / "mlxsim")))
    return dict({"ansible_connection": "twin", "ansible_pipelining": True, "ansible_python_interpreter": python,
                 "gpufabric_twin_env": dict(sim.env), "gpufabric_twin_sim": str(SIM_BIN),
                 "gpufabric_sysfs_root": sim_root(sim),
                 "gpufabric_activate_reboot_command": mlxsim + " reboot",
                 "gpufabric_activate_boot_time_command": mlxsim + " boot-id",
                 "gpufabric_activate_reboot_timeout": 120}, **extra)


class Run:
    """One ansible-playbook run: ``proc`` (its CompletedProcess) and ``data`` (the ansible.posix.json output)."""

    def __init__(self, proc):
        self.proc = proc
        # an aggregate callback of the collection (drift, progress) prints its lines beside the JSON
        stdout = "\n".join(line for line in proc.stdout.splitlines() if not line.startswith(CALLBACK_LINES))
        try:
            self.data = json.loads(stdout)
        except ValueError:
            raise AssertionError("ansible-playbook printed no JSON (rc %s):\n%s\n%s"
                                 % (proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:])) from None

    def __repr__(self):
        return "rc=%s stats=%s failures=%s" % (self.proc.returncode, self.data["stats"], self.failures())

    @property
    def ok(self):
        return self.proc.returncode == 0

    def stats(self, host):
        return self.data["stats"][host]

    def results(self, host, prefix=""):
        """``{task name: result on host}`` of every task that ran on ``host`` (the first run of each name) whose
        name starts with ``prefix`` (a role's tasks are named ``gpufabric.mlnx.ROLE : ...``)."""
        out = {}
        for p in self.data["plays"]:
            for t in p["tasks"]:
                if t["task"]["name"].startswith(prefix) and host in t["hosts"]:
                    out.setdefault(t["task"]["name"], t["hosts"][host])
        return out

    def task(self, name, host, role=None):
        """The result on ``host`` of the first task named ``name``: a play's task, or a role's (``gpufabric.mlnx.ROLE
        : name``; with ``role``, that role's only)."""
        for p in self.data["plays"]:
            for t in p["tasks"]:
                full = t["task"]["name"]
                if host in t["hosts"] and (full == name or full == "%s%s : %s" % (ROLE_PREFIX, role, name)
                                           or (role is None and full.split(" : ")[-1] == name)):
                    return t["hosts"][host]
        raise AssertionError("task %r did not run on %s" % (name, host))

    def failures(self):
        """``{host: msg}`` of the failed tasks (the last failure of each host)."""
        return {host: result.get("msg") for p in self.data["plays"] for t in p["tasks"]
                for host, result in t["hosts"].items() if result.get("failed") and "censored" not in result}


def run(tmp_path, hosts, playbook, check=False, group_vars=None, environ=None, args=(), groups=None, group="servers"):
    """ansible-playbook of ``playbook`` (YAML text, or the path of a playbook) on ``hosts`` ({name: host variables},
    the group ``group`` - ``servers`` unless told - with ``group_vars``) -> Run. ``environ``: more environment for
    ansible-playbook itself; ``args``: more arguments (``["--tags", "rails"]``); ``groups``: more groups of the
    inventory beside that one ({group: {host: variables}}, e.g. the leaves)."""
    inventory = {name: dict(LOCAL, **host_vars) for name, host_vars in hosts.items()}
    servers = {"hosts": inventory}
    if group_vars:
        servers["vars"] = group_vars
    children = {group: servers}
    children.update({name: {"hosts": members} for name, members in (groups or {}).items()})
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": children}}))
    if isinstance(playbook, str):
        (tmp_path / "play.yml").write_text(playbook)
        playbook = tmp_path / "play.yml"
    argv = [str(tool("ansible-playbook")), "-i", str(tmp_path / "hosts.yml"), str(playbook)] + list(args)
    proc = subprocess.run(argv + (["--check"] if check else []),
                          env=env(tmp_path, ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
                                  ANSIBLE_CONNECTION_PLUGINS=CONNECTIONS, **(environ or {})),
                          capture_output=True, text=True, timeout=600, check=False, cwd=str(tmp_path))
    return Run(proc)
