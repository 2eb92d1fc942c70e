# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: nvue
short_description: Cliconf plugin for the nv CLI of NVIDIA Cumulus Linux 5.x over SSH
version_added: 0.2.0
description:
  - Carries the commands of the collection's switch modules (M(gpufabric.mlnx.nvue_config),
    M(gpufabric.mlnx.nvue_info), M(gpufabric.mlnx.nvue_image)) to the switch's shell over
    C(ansible.netcommon.network_cli), and their output, exit status and error output back. The modules' core reads
    the outputs of C(nv) and says what they mean.
  - A command travels base64-encoded (in lines of at most 1024 characters kept in a shell variable), is run by a
    non-interactive C(bash) with its standard input from C(/dev/null) - so C(nv config apply) never waits for an
    answer - and its output comes back base64-encoded on one line with the exit status. Nothing of a command or of
    its output is seen by the terminal as text, so there is no history expansion, no line length limit, and no
    prompt or error pattern is matched inside data.
  - "C(get) sends a command as typed (for C(ansible.netcommon.cli_command)); the terminal plugin
    C(gpufabric.mlnx.nvue) fails it on C(Invalid Command:) or C(Error: ...)."
  - "Use it with C(ansible_connection: ansible.netcommon.network_cli), C(ansible_network_os: gpufabric.mlnx.nvue),
    C(ansible_network_cli_ssh_type: paramiko) (paramiko on the controller), C(ansible_user) with the right to run
    C(nv) (C(cumulus)). An apply waits inside one command: give C(ansible_command_timeout) at least the modules'
    O(gpufabric.mlnx.nvue_config#module:timeout)."
author:
  - gpufabric.mlnx contributors (@gpufabric)
"""

import base64
import json
import re

from ansible.errors import AnsibleConnectionFailure
from ansible.module_utils.common.text.converters import to_text

from ansible_collections.ansible.netcommon.plugins.plugin_utils.cliconf_base import CliconfBase

CHUNK = 1024
FRAME_RE = re.compile(r"GPUFABRIC_RC=([0-9]{1,3}) GPUFABRIC_OUT=([A-Za-z0-9+/=]*) GPUFABRIC_ERR=([A-Za-z0-9+/=]*)",
                      re.ASCII)
# Decode the command into a private directory, run it with no terminal and no input, print one frame line.
RUNNER = ('gpufabric_d=$(mktemp -d) && printf %s "$GPUFABRIC_B" | base64 -d > "$gpufabric_d/c" && '
          'bash "$gpufabric_d/c" > "$gpufabric_d/o" 2> "$gpufabric_d/e" < /dev/null; gpufabric_rc=$?; '
          'echo "GPUFABRIC_RC=$gpufabric_rc GPUFABRIC_OUT=$(base64 -w0 < "$gpufabric_d/o") '
          'GPUFABRIC_ERR=$(base64 -w0 < "$gpufabric_d/e")"; rm -rf -- "$gpufabric_d"; '
          'unset GPUFABRIC_B gpufabric_d gpufabric_rc')


class Cliconf(CliconfBase):
    def nvue_transport(self):
        """The transport the collection's nvue modules find on this connection (``_nvue_cli.switch_for``)."""
        return "cli"

    def nvue_run(self, command):
        """``{"rc", "stdout", "stderr"}`` of one shell text run on the switch (see DOCUMENTATION)."""
        data = base64.b64encode(to_text(command, errors="surrogate_or_strict").encode("utf-8")).decode("ascii")
        self.send_command("GPUFABRIC_B=")
        for start in range(0, len(data), CHUNK):
            self.send_command("GPUFABRIC_B+=" + data[start:start + CHUNK])
        response = to_text(self.send_command(RUNNER), errors="surrogate_or_replace")
        match = FRAME_RE.search(response)
        if not match:
            raise AnsibleConnectionFailure("the switch's shell did not run the command (no exit status came back; it "
                                           "answered %r)" % response[-500:])
        return {"rc": int(match.group(1)),
                "stdout": base64.b64decode(match.group(2)).decode("utf-8", "replace"),
                "stderr": base64.b64decode(match.group(3)).decode("utf-8", "replace")}

    def get_device_info(self):
        return {"network_os": "nvue"}

    def get(self, command=None, prompt=None, answer=None, sendonly=False, newline=True, output=None,
            check_all=False):
        if output:
            raise AnsibleConnectionFailure("output=%s is not supported by gpufabric.mlnx.nvue (nv show ... -o json "
                                           "prints JSON)" % output)
        return self.send_command(command=command, prompt=prompt, answer=answer, sendonly=sendonly, newline=newline,
                                 check_all=check_all)

    def get_config(self, source="running", flags=None, format=None):
        if source not in ("running", "startup"):
            raise AnsibleConnectionFailure("get_config: source %r (allowed: running, startup)" % source)
        return self.send_command("nv config show -o json%s" % (" --startup" if source == "startup" else ""))

    def edit_config(self, candidate=None, commit=True, replace=None, diff=False, comment=None):
        raise AnsibleConnectionFailure("edit_config is not supported by gpufabric.mlnx.nvue: configure the switch "
                                       "with gpufabric.mlnx.nvue_config")

    def get_capabilities(self):
        result = super().get_capabilities()
        result["device_operations"] = {"supports_commit": False, "supports_rollback": False,
                                       "supports_onbox_diff": True, "supports_replace": False}
        return json.dumps(result)
