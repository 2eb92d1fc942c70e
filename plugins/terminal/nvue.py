# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: nvue
short_description: Terminal plugin for the bash login shell of an NVIDIA Cumulus Linux 5.x switch (the nv CLI)
version_added: 0.2.0
description:
  - Tells C(ansible.netcommon.network_cli) where a command's output ends and when it failed, on the shell a Cumulus
    Linux switch gives an SSH login (bash, with a prompt such as C(cumulus@leaf01:mgmt:~$ ) - the management VRF
    in it - or C(root@leaf01:~# )).
  - "A command failed when the output holds C(Invalid Command:) (the nv CLI's bad syntax), a line starting with
    C(Error: ) (C(Error: Could not connect to nvued.), C(Error: Config invalid at ...)) or C(command not found)."
  - On opening the shell it turns off the session's history (C(set +o history +H)) and bash's bracketed paste, so
    nothing a task sends is expanded by the history or echoed inside escape codes.
  - "Use it with C(ansible_connection: ansible.netcommon.network_cli), C(ansible_network_os: gpufabric.mlnx.nvue)
    and C(ansible_network_cli_ssh_type: paramiko)."
author:
  - gpufabric.mlnx contributors (@gpufabric)
"""

import re

from ansible.errors import AnsibleConnectionFailure

from ansible_collections.ansible.netcommon.plugins.plugin_utils.terminal_base import TerminalBase


class TerminalModule(TerminalBase):
    # user@host, then :vrf (Cumulus shows the management VRF) and :path, then $ or # and one space
    terminal_stdout_re = [
        re.compile(rb"(?:^|[\r\n])[\w.-]{1,64}@[\w.-]{1,253}(?::[\w.-]{1,64})*:[^\s$#]*[$#] ?$", re.ASCII),
    ]

    terminal_stderr_re = [
        re.compile(rb"Invalid Command:"),
        re.compile(rb"(?:^|[\r\n])Error: "),
        re.compile(rb"command not found"),
    ]

    ansi_re = TerminalBase.ansi_re + [
        re.compile(rb"\x1b\[\?2004[hl]"),              # bracketed paste on/off around each prompt (bash 5.1+)
        re.compile(rb"\x1b\[[0-9;]*[A-Za-z]"),          # colours and cursor moves
        re.compile(rb"\x1b\][^\x07]*\x07"),             # a window title
    ]

    def on_open_shell(self):
        try:
            self._exec_cli_command(b"set +o history +H; bind 'set enable-bracketed-paste off' 2>/dev/null; true")
        except AnsibleConnectionFailure as err:
            raise AnsibleConnectionFailure("unable to set up the switch's shell: %s" % err) from err
