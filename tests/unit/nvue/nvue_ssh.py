# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An SSH login to an emulated switch for tests: OpenSSH's sshd on 127.0.0.1:<ephemeral> with a generated host key,
one authorized key, and a bash login whose prompt is a Cumulus one (``cumulus@leaf01:mgmt:~$ ``) and whose PATH and
NVUESIM_STATE find the emulator's ``nv`` - what ansible.netcommon.network_cli meets on a leaf."""
import getpass
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from nvue_helpers import BIN

SSHD = "/usr/sbin/sshd"
PRIVSEP = Path("/run/sshd")   # sshd's privilege separation directory (compiled in)


def sshd_or_skip():
    """Skip the test (with the reason) when OpenSSH's server is not installed."""
    if not os.path.exists(SSHD) or not shutil.which("ssh-keygen"):
        pytest.skip("OpenSSH's sshd (%s) or ssh-keygen is not installed (Debian: apt-get install openssh-server)"
                    % SSHD)
    if not PRIVSEP.is_dir():
        try:
            PRIVSEP.mkdir(mode=0o755, parents=True)
        except OSError as exc:
            pytest.skip("sshd needs its privilege separation directory %s: %s" % (PRIVSEP, exc))


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class SshLogin:
    """sshd for one emulated switch ``sw`` (nvue_helpers.Switch); ``vars()`` are a network_cli host's variables."""

    def __init__(self, directory, sw, hostname="leaf01"):
        sshd_or_skip()
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.sw = sw
        self.user = getpass.getuser()
        self.key = self.dir / "client_key"
        for key in (self.dir / "host_key", self.key):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True,
                           capture_output=True)
        (self.dir / "authorized_keys").write_text((self.dir / "client_key.pub").read_text())
        rc = self.dir / "bashrc"
        rc.write_text("PS1='cumulus@%s:mgmt:~$ '\nexport PATH=%s:/usr/local/bin:/usr/bin:/bin\n"
                      "export NVUESIM_STATE=%s NVUESIM_USER=cumulus\n" % (hostname, BIN, sw.dir))
        self.proc = None
        self.port = None
        self.log = self.dir / "sshd.log"

    def config(self, port):
        path = self.dir / "sshd_config"
        path.write_text("\n".join([
            "ListenAddress 127.0.0.1", "Port %d" % port, "HostKey %s" % (self.dir / "host_key"),
            "PidFile %s" % (self.dir / "sshd.pid"), "AuthorizedKeysFile %s" % (self.dir / "authorized_keys"),
            "AllowUsers %s" % self.user, "PasswordAuthentication no", "KbdInteractiveAuthentication no",
            "UsePAM no", "StrictModes no", "PermitRootLogin prohibit-password", "LogLevel VERBOSE",
            # the login shell: bash with the rc above (the prompt, the emulator's nv on PATH), not the machine's
            "ForceCommand exec /bin/bash --noprofile --rcfile %s -i" % (self.dir / "bashrc"), ""]))
        return path

    def start(self):
        for _attempt in range(5):
            port = free_port()
            with open(self.log, "wb") as log:
                proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(self.config(port))], stdout=log, stderr=log)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and proc.poll() is None:
                if b"Server listening on 127.0.0.1 port %d" % port in self.log.read_bytes():
                    self.proc, self.port = proc, port
                    return self
                time.sleep(0.05)
            if proc.poll() is None:
                proc.kill()
            proc.wait(10)
        raise AssertionError("sshd did not start: %s" % self.log.read_text(errors="replace"))

    def stop(self):
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(10)
            self.proc = None

    def vars(self, **extra):
        return dict({"ansible_host": "127.0.0.1", "ansible_port": self.port,
                     "ansible_connection": "ansible.netcommon.network_cli",
                     "ansible_network_os": "gpufabric.mlnx.nvue", "ansible_network_cli_ssh_type": "paramiko",
                     "ansible_user": self.user, "ansible_ssh_private_key_file": str(self.key),
                     "ansible_host_key_checking": False, "ansible_command_timeout": 60}, **extra)


# paramiko's options that have no inventory variable: never write the controller's known_hosts, never try ~/.ssh keys
ENVIRON = {"ANSIBLE_PARAMIKO_RECORD_HOST_KEYS": "False", "ANSIBLE_PARAMIKO_LOOK_FOR_KEYS": "False",
           "ANSIBLE_HOST_KEY_CHECKING": "False"}
