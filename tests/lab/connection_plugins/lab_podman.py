# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab's connection to its podman containers: containers.podman.podman with pipelining, through nsenter.

containers.podman.podman runs every task as four podman processes: ``podman mount`` (each task opens a new
connection), ``podman exec mkdir`` of a remote temporary directory, the module copied there, ``podman exec
python3 <module>``, and the removal. This one attaches stdin so that Ansible can pipe the module into the
interpreter - one process per module task - and does not use ``podman exec`` for it when it can: a ``podman exec``
costs about 0.12 CPU-seconds on this machine (the podman command, conmon, runc), more than most modules do, and a
site.yml run makes thousands. It enters the container's namespaces instead (``nsenter --target <its init>`` with
mount, UTS, IPC, network and PID namespaces, its root and working directory), keeps only the container's
capabilities (``setpriv --bounding-set``), and runs the command with the container's environment (``env -i`` and
its init's variables) - what ``podman exec`` gives a command, without the cgroup and seccomp filter a real host
does not have either. The init's PID comes from ``podman inspect`` once and is cached per container name, checked
by the process's start time (a restarted container has another). A user other than root, a container that is not
running or a host without nsenter: ``podman exec -i``. Files are copied through the same way (``cat``). Test
harness only (molecule, the demo lab): not part of the collection."""

from __future__ import annotations

DOCUMENTATION = """
    name: lab_podman
    short_description: The lab's podman containers, with pipelining
    description:
      - containers.podman.podman, with stdin attached to C(podman exec) so that Ansible pipelines modules,
        and the container's filesystem mounted only when a file is copied.
    options:
      remote_addr:
        description: The name or ID of the container.
        default: inventory_hostname
        vars:
          - name: ansible_host
          - name: inventory_hostname
          - name: ansible_podman_host
      remote_user:
        description: The user that runs commands in the container.
        ini:
          - section: defaults
            key: remote_user
        env:
          - name: ANSIBLE_REMOTE_USER
        vars:
          - name: ansible_user
      podman_extra_args:
        description: Extra arguments of the podman command line.
        default: ''
        vars:
          - name: ansible_podman_extra_args
        env:
          - name: ANSIBLE_PODMAN_EXTRA_ARGS
      podman_executable:
        description: The podman executable.
        default: podman
        vars:
          - name: ansible_podman_executable
        env:
          - name: ANSIBLE_PODMAN_EXECUTABLE
      pipelining:
        description: Pipe modules into the interpreter instead of copying them into the container.
        type: boolean
        default: true
        vars:
          - name: ansible_pipelining
"""

import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile

from ansible.errors import AnsibleError
from ansible.module_utils.common.text.converters import to_bytes, to_native
from ansible.plugins.connection import ConnectionBase
from ansible_collections.containers.podman.plugins.connection.podman import Connection as PodmanConnection


# capability numbers (linux/capability.h) -> setpriv's names
CAPS = ("chown", "dac_override", "dac_read_search", "fowner", "fsetid", "kill", "setgid", "setuid", "setpcap",
        "linux_immutable", "net_bind_service", "net_broadcast", "net_admin", "net_raw", "ipc_lock", "ipc_owner",
        "sys_module", "sys_rawio", "sys_chroot", "sys_ptrace", "sys_pacct", "sys_admin", "sys_boot", "sys_nice",
        "sys_resource", "sys_time", "sys_tty_config", "mknod", "lease", "audit_write", "audit_control", "setfcap",
        "mac_override", "mac_admin", "syslog", "wake_alarm", "block_suspend", "audit_read", "perfmon", "bpf",
        "checkpoint_restore")
CACHE = os.path.join(tempfile.gettempdir(), "gpufabric-lab-nsenter")
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}", re.ASCII)


def _start_time(pid):
    """The process's start time (/proc/PID/stat field 22), or None when there is no such process."""
    try:
        with open("/proc/%d/stat" % pid, encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _caps(mask):
    bits = int(mask, 16)
    return ",".join(["-all"] + ["+" + name for i, name in enumerate(CAPS) if bits >> i & 1])


class Connection(PodmanConnection):
    """containers.podman.podman with pipelining through nsenter (``podman exec -i`` when it cannot) and a lazy
    ``podman mount``."""

    transport = "lab_podman"
    has_pipelining = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._mounted = False

    def _connect(self):
        ConnectionBase._connect(self)  # pylint: disable=protected-access
        self._connected = True
        return self

    def _mount(self):
        if not self._mounted:
            PodmanConnection._connect(self)  # pylint: disable=protected-access
            self._mounted = True

    def _target(self):
        """The container's init as nsenter needs it ({"pid", "start", "env", "caps"}), or None."""
        name = to_native(self._container_id)                  # what podman exec would be given
        if self.user not in (None, "", "root") or not NAME.fullmatch(name) or not shutil.which("nsenter"):
            return None
        path = os.path.join(CACHE, name)
        try:
            with open(path, encoding="utf-8") as fh:
                cached = json.load(fh)
            if _start_time(cached["pid"]) == cached["start"]:
                return cached
        except (OSError, ValueError, KeyError, TypeError):
            pass
        try:
            proc = subprocess.run([self.get_option("podman_executable"), "inspect", "--type", "container",
                                   "--format", "{{.State.Pid}}", name], capture_output=True, check=False)
        except OSError:
            return None
        pid = int(proc.stdout or 0) if proc.returncode == 0 and proc.stdout.strip().isdigit() else 0
        start = _start_time(pid) if pid > 0 else None
        if start is None:
            return None
        try:
            with open("/proc/%d/environ" % pid, "rb") as fh:
                env = [to_native(v) for v in fh.read().split(b"\0") if b"=" in v]
            with open("/proc/%d/status" % pid, encoding="ascii") as fh:
                caps = _caps(re.search(r"^CapBnd:\s*([0-9a-f]+)$", fh.read(), re.M).group(1))
        except (OSError, AttributeError):
            return None
        if not any(v.startswith("HOME=") for v in env):
            env.append("HOME=/root")                            # as podman exec sets it for root
        target = {"pid": pid, "start": start, "env": env, "caps": caps}
        os.makedirs(CACHE, mode=0o700, exist_ok=True)
        tmp = "%s.%d" % (path, os.getpid())
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(target, fh)
        os.replace(tmp, path)
        return target

    def _nsenter(self, target, argv, in_data=None):
        full = ["nsenter", "--target", str(target["pid"]), "--mount", "--uts", "--ipc", "--net", "--pid", "--root",
                "--wd", "--", "/usr/bin/setpriv", "--bounding-set", target["caps"], "--",
                "/usr/bin/env", "-i"] + target["env"] + argv
        proc = subprocess.run(full, input=in_data, stdin=None if in_data is not None else subprocess.DEVNULL,
                              capture_output=True, check=False)
        return proc.returncode, proc.stdout, proc.stderr

    def exec_command(self, cmd, in_data=None, sudoable=False):
        ConnectionBase.exec_command(self, cmd, in_data=in_data, sudoable=sudoable)
        argv = shlex.split(to_native(cmd, errors="surrogate_or_strict"))
        target = self._target()
        if target is not None:
            return self._nsenter(target, argv, in_data)
        podman = ["exec"] + (["-i"] if in_data is not None else []) + (["--user", self.user] if self.user else [])
        return self._podman(podman, argv, in_data)

    def put_file(self, in_path, out_path):
        target = self._target()
        if target is None:
            self._mount()
            return super().put_file(in_path, out_path)
        ConnectionBase.put_file(self, in_path, out_path)
        with open(to_bytes(in_path, errors="surrogate_or_strict"), "rb") as fh:
            rc, _out, err = self._nsenter(target, ["/bin/sh", "-c", 'cat > "$1"', "put", out_path], fh.read())
        if rc != 0:
            raise AnsibleError("Failed to copy %s to %s in container %s: %s" % (
                in_path, out_path, self._container_id, to_native(err)))
        return None

    def fetch_file(self, in_path, out_path):
        target = self._target()
        if target is None:
            self._mount()
            return super().fetch_file(in_path, out_path)
        ConnectionBase.fetch_file(self, in_path, out_path)
        rc, out, err = self._nsenter(target, ["/bin/cat", in_path])
        if rc != 0:
            raise AnsibleError("Failed to fetch %s from container %s: %s" % (
                in_path, self._container_id, to_native(err)))
        with open(to_bytes(out_path, errors="surrogate_or_strict"), "wb") as fh:
            fh.write(out)
        return None
