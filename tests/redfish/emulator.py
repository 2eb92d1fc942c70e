# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Start and stop a Redfish BMC emulator (sushy_bios.py: sushy-emulator with pending BIOS settings) on
127.0.0.1, over HTTPS (a self-signed certificate made for it, usable as the CA) with HTTP basic auth.

As a library (the pytest fixtures)::

    bmc = Emulator(tmp_path / "bmc", systems=[{"name": "srv-a", "model": "PowerEdge XE9680"}]).start()
    bmc.baseuri, bmc.user, bmc.password, bmc.ca_path     # what community.general.redfish_* need
    bmc.get(bmc.system_uri() + "/BIOS")                    # (status, body) - the emulator's state
    bmc.writes()                                           # every PATCH/POST/PUT/DELETE it answered
    bmc.stop()

As a command (the state directory keeps the certificate, credentials, log and pid)::

    python tests/redfish/emulator.py start --state /tmp/bmc [--port 8443] [--model "PowerEdge XE9680"]
    python tests/redfish/emulator.py stop --state /tmp/bmc

``start`` prints the connection details as JSON. Needs sushy-tools (requirements-dev.txt) in the python
that runs it.
"""

import argparse
import base64
import datetime
import ipaddress
import json
import os
import re
import secrets
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

SERVER = Path(__file__).resolve().with_name("sushy_bios.py")
HOST = "127.0.0.1"
USER = "admin"
DEFAULT_MODEL = "PowerEdge XE9680"
# werkzeug's request log line: "PATCH /redfish/v1/Systems/x/BIOS/Settings HTTP/1.1" 204 -
REQUEST_RE = re.compile(r'"(?P<method>[A-Z]+) (?P<path>\S+) HTTP/[\d.]+" (?P<status>\d{3})')
ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")  # werkzeug colours the method
WRITES = ("PATCH", "POST", "PUT", "DELETE")


class EmulatorError(RuntimeError):
    pass


def free_port():
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def system_uuid(name):
    """A stable UUID per system name (the emulator's system Id)."""
    return str(uuid.uuid5(uuid.NAMESPACE_DNS, "%s.bmc.gpufabric.test" % name))


def make_certificate(cert_path, key_path):
    """A self-signed certificate for 127.0.0.1 and localhost that is also its own CA (a client's ca_path)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "gpufabric test BMC")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(HOST)),
                                                        x509.DNSName("localhost")]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                         crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    Path(key_path).write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                 serialization.NoEncryption()))
    os.chmod(key_path, 0o600)
    Path(cert_path).write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def make_htpasswd(path, user, password):
    """An Apache-style user file with a bcrypt digest (the only kind sushy-emulator's basic auth reads)."""
    import bcrypt

    digest = bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode()  # the cheapest cost: tests only
    Path(path).write_text("%s:%s\n" % (user, digest))
    os.chmod(path, 0o600)


class Emulator:
    """One emulated BMC: a sushy_bios.py process on 127.0.0.1:``port`` serving ``systems``
    (``[{"name": ..., "model": ..., "bios_attributes": {...}}]``; ``model`` is a key of bios_models.json)."""

    def __init__(self, state_dir, port=0, systems=None, user=USER, password=None):
        self.state = Path(state_dir)
        self.port = port or free_port()
        self.systems = systems or [{"name": "system-1", "model": DEFAULT_MODEL}]
        self.user = user
        self.password = password or secrets.token_urlsafe(12)
        self.ca_path = self.state / "bmc.crt"
        self.log_path = self.state / "emulator.log"
        self.pid_path = self.state / "emulator.pid"
        self.process = None

    # ------------------------------------------------------------ life cycle

    @property
    def baseuri(self):
        return "%s:%d" % (HOST, self.port)

    def _write_config(self):
        self.state.mkdir(parents=True, exist_ok=True)
        make_certificate(self.ca_path, self.state / "bmc.key")
        make_htpasswd(self.state / "htpasswd", self.user, self.password)
        systems = [{"uuid": system_uuid(system["name"]), "name": system["name"], "power_state": "On", "nics": [],
                    "external_notifier": False, "model": system["model"],
                    "bios_attributes": system.get("bios_attributes", {})} for system in self.systems]
        config = {
            "SUSHY_EMULATOR_LISTEN_IP": HOST, "SUSHY_EMULATOR_LISTEN_PORT": self.port,
            "SUSHY_EMULATOR_SSL_CERT": str(self.ca_path), "SUSHY_EMULATOR_SSL_KEY": str(self.state / "bmc.key"),
            "SUSHY_EMULATOR_AUTH_FILE": str(self.state / "htpasswd"), "SUSHY_EMULATOR_FAKE_DRIVER": True,
            "SUSHY_EMULATOR_FAKE_SYSTEMS": systems, "SUSHY_EMULATOR_STATE_DIR": str(self.state / "db"),
        }
        path = self.state / "sushy.conf"
        path.write_text("".join("%s = %r\n" % item for item in config.items()))
        (self.state / "connection.json").write_text(json.dumps(self.connection(), indent=2))
        return path

    def connection(self):
        return {"baseuri": self.baseuri, "user": self.user, "password": self.password, "ca_path": str(self.ca_path),
                "systems": {system["name"]: self.system_uri(system["name"]) for system in self.systems},
                "log": str(self.log_path), "pid": self.pid_path.name}

    def start(self, timeout=60, detach=False):
        config = self._write_config()
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen([sys.executable, str(SERVER), "--config", str(config)], stdout=log,
                                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=detach, cwd=str(self.state))
        self.pid_path.write_text("%d\n" % self.process.pid)
        try:
            self._wait_ready(timeout)
        except Exception:
            self.stop()
            raise
        return self

    def _wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise EmulatorError("the emulator exited with %s before answering:\n%s" % (
                    self.process.returncode, self.log_tail()))
            try:
                status, _body = self.request("GET", "/redfish/v1", auth=False)
                if status == 200:
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise EmulatorError("the emulator did not answer on https://%s/redfish/v1 within %ss:\n%s" % (
                    self.baseuri, timeout, self.log_tail()))
            time.sleep(0.2)

    def stop(self, timeout=15):
        """Stop the process this object (or, from the command line, the state directory's pid file) started."""
        pid = self.process.pid if self.process else int(self.pid_path.read_text())
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        else:
            deadline = time.monotonic() + timeout
            while _alive(pid, self.process) and time.monotonic() < deadline:
                time.sleep(0.1)
            if _alive(pid, self.process):
                os.kill(pid, signal.SIGKILL)
                _alive(pid, self.process, wait=True)
        self.pid_path.unlink(missing_ok=True)
        self.process = None

    def log_tail(self, lines=40):
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    # ------------------------------------------------------------ talking to it

    def request(self, method, path, body=None, auth=True):
        """``(status, parsed JSON body or None)``; certificate checked against the emulator's own."""
        context = ssl.create_default_context(cafile=str(self.ca_path))
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request("https://%s%s" % (self.baseuri, path), data=data, method=method)
        req.add_header("Content-Type", "application/json")
        if auth:
            token = base64.b64encode(("%s:%s" % (self.user, self.password)).encode()).decode()
            req.add_header("Authorization", "Basic " + token)
        try:
            with urllib.request.urlopen(req, context=context, timeout=30) as resp:
                status, raw = resp.status, resp.read()
        except urllib.error.HTTPError as err:
            status, raw = err.code, err.read()
        return status, (json.loads(raw) if raw.strip() else None)

    def get(self, path):
        return self.request("GET", path)

    def system_uri(self, name=None):
        return "/redfish/v1/Systems/%s" % system_uuid(name or self.systems[0]["name"])

    def bios(self, name=None):
        """The current BIOS attributes of a system (GET Bios)."""
        return self._attributes(self.system_uri(name) + "/BIOS")

    def pending(self, name=None):
        """What GET Bios/Settings lists (all attributes on a model with ``settings: full``)."""
        return self._attributes(self.system_uri(name) + "/BIOS/Settings")

    def _attributes(self, path):
        status, body = self.get(path)
        if status != 200:
            raise EmulatorError("GET %s: HTTP %s %s" % (path, status, body))
        return body["Attributes"]

    def reset(self, name=None, reset_type="ForceRestart"):
        path = self.system_uri(name) + "/Actions/ComputerSystem.Reset"
        return self.request("POST", path, {"ResetType": reset_type})

    def requests(self):
        """``[(method, path, status)]`` of every request the emulator answered, from its log."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return []
        return [(m["method"], m["path"], int(m["status"])) for m in REQUEST_RE.finditer(ANSI_RE.sub("", text))]

    def writes(self):
        return [request for request in self.requests() if request[0] in WRITES]


def _alive(pid, process, wait=False):
    if process is not None:
        if wait:
            process.wait()
        return process.poll() is None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=("start", "stop"))
    parser.add_argument("--state", required=True, help="directory for the certificate, credentials, log and pid")
    parser.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (default: a free one)")
    parser.add_argument("--model", action="append", default=[],
                        help="one system of this model per use (a key of bios_models.json; default: %s)" % DEFAULT_MODEL)
    args = parser.parse_args(argv)
    if args.action == "stop":
        Emulator(args.state).stop()
        return 0
    models = args.model or [DEFAULT_MODEL]
    systems = [{"name": "system-%d" % index, "model": model} for index, model in enumerate(models, 1)]
    bmc = Emulator(args.state, port=args.port, systems=systems).start(detach=True)
    print(json.dumps(bmc.connection(), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
