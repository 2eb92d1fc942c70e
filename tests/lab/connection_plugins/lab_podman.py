# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab's connection to its podman containers: containers.podman.podman with pipelining.

containers.podman.podman runs every task as four podman processes: ``podman mount`` (each task opens a new
connection), ``podman exec mkdir`` of a remote temporary directory, the module copied there, ``podman exec
python3 <module>``, and the removal. This one attaches stdin (``podman exec -i``) so that Ansible can pipe
the module into the interpreter - one ``podman exec`` per module task - and mounts the container only when a
file is copied. Test harness only (molecule, the demo lab): not part of the collection."""

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

import shlex

from ansible.module_utils.common.text.converters import to_native
from ansible.plugins.connection import ConnectionBase
from ansible_collections.containers.podman.plugins.connection.podman import Connection as PodmanConnection


class Connection(PodmanConnection):
    """containers.podman.podman with ``podman exec -i`` (pipelining) and a lazy ``podman mount``."""

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

    def exec_command(self, cmd, in_data=None, sudoable=False):
        ConnectionBase.exec_command(self, cmd, in_data=in_data, sudoable=sudoable)
        argv = ["exec"] + (["-i"] if in_data is not None else []) + (["--user", self.user] if self.user else [])
        return self._podman(argv, shlex.split(to_native(cmd, errors="surrogate_or_strict")), in_data)

    def put_file(self, in_path, out_path):
        self._mount()
        return super().put_file(in_path, out_path)

    def fetch_file(self, in_path, out_path):
        self._mount()
        return super().fetch_file(in_path, out_path)
