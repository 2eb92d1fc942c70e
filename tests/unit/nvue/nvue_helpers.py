# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A switch of the NVUE emulator for tests: init, nvued as a subprocess, HTTPS calls, the CLIs, the events."""
import base64
import contextlib
import io
import json
import os
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from http.client import HTTPException
from pathlib import Path
from urllib.parse import urlencode

NVUE = Path(__file__).resolve().parent.parent.parent / "nvue"
BIN = NVUE / "bin"
TERMINAL = ("applied", "applied_and_saved", "invalid", "ays_fail", "failed")
PASSWORD = "Nvue-Test-1"
sys.path.insert(0, str(NVUE))
from nvuesim import admin as nvuesim_admin  # noqa: E402  (after the path)

from ansible_collections.gpufabric.mlnx.plugins.module_utils._nvue import RestSwitch, SwitchUnreachable  # noqa: E402

_CERT = {}


def cert_pair(directory):
    """One certificate for every switch of a test run (made once with openssl, as init does)."""
    if not _CERT:
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=nvuesim-test",
                        "-days", "3650", "-keyout", str(d / "key.pem"), "-out", str(d / "cert.pem")],
                       check=True, capture_output=True)
        _CERT.update(cert=str(d / "cert.pem"), key=str(d / "key.pem"))
    return _CERT


def unverified():
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


class Switch:
    def __init__(self, directory, hostname, release="5.9.1", ports="swp1-4", password=PASSWORD,
                 apply_seconds=0.05, reboot_seconds=0.5, extra=()):
        self.dir = Path(directory)
        self.hostname = hostname
        self.password = password
        self.proc = None
        self.port = None
        args = ["init", "--state", str(self.dir), "--hostname", hostname, "--release", release,
                "--apply-seconds", str(apply_seconds), "--reboot-seconds", str(reboot_seconds)]
        if ports:
            args += ["--ports", ports]
        if password is not None:
            args += ["--password", password]
        pair = cert_pair(self.dir.parent / "cert")
        self.admin(*args, "--cert", pair["cert"], "--key", pair["key"], *extra, inproc=True)

    # ---------------------------------------------------------------- processes
    def env(self):
        env = dict(os.environ, NVUESIM_STATE=str(self.dir), NVUESIM_USER="cumulus")
        return env

    def start(self, *extra, port=None):
        """Start nvued (the first one is this switch's; another one: pass port=0)."""
        port = self.port or 0 if port is None else port
        proc = subprocess.Popen([sys.executable, str(BIN / "nvued"), "--state", str(self.dir),
                                 "--listen", "127.0.0.1:%d" % port, *extra],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env())
        line = proc.stdout.readline()
        if "listening" not in line:
            proc.kill()
            raise RuntimeError("nvued did not start: %s %s" % (line, proc.stderr.read()))
        port = int(line.rsplit(":", 1)[1])
        if self.proc is None:
            self.proc, self.port = proc, port
        return proc, port

    def stop(self):
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(10)
            self.proc.stdout.close()
            self.proc.stderr.close()
            self.proc = None

    def admin(self, *args, check=True, inproc=True):
        """nvuesim ARGS -> CompletedProcess-like; in this process (fast) unless inproc=False."""
        if inproc:
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    rc = nvuesim_admin.main(["--state", str(self.dir), *args])
                except SystemExit as exc:
                    rc = exc.code
            res = subprocess.CompletedProcess(args, rc, out.getvalue(), err.getvalue())
            if check and rc != 0:
                raise AssertionError("nvuesim %s: rc %s %s" % (" ".join(args), rc, res.stderr))
            return res
        res = subprocess.run([sys.executable, str(BIN / "nvuesim"), *args], capture_output=True, text=True,
                             env=dict(os.environ, NVUESIM_STATE=str(self.dir)), check=False)
        if check and res.returncode != 0:
            raise AssertionError("nvuesim %s: rc %d %s" % (" ".join(args), res.returncode, res.stderr))
        return res

    def httpapi_vars(self, password=None, **extra):
        """The inventory variables of this emulator as a leaf over ansible.netcommon.httpapi on 127.0.0.1, with
        ``extra`` on top."""
        return dict({"ansible_host": "127.0.0.1", "ansible_connection": "ansible.netcommon.httpapi",
                     "ansible_network_os": "gpufabric.mlnx.nvue", "ansible_httpapi_port": self.port,
                     "ansible_port": self.port, "ansible_httpapi_use_ssl": True, "ansible_httpapi_validate_certs": False,
                     "ansible_user": "cumulus", "ansible_password": password or self.password or PASSWORD}, **extra)

    def nv(self, *args, stdin=""):
        return subprocess.run([sys.executable, str(BIN / "nv"), *args], capture_output=True, text=True,
                              input=stdin, env=self.env(), check=False)

    # ---------------------------------------------------------------- REST
    def call(self, method, path, body=None, auth=True, port=None, password=None, user="cumulus"):
        """-> (status, parsed body, headers)."""
        url = "https://127.0.0.1:%d/nvue_v1%s" % (port or self.port, path)
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if auth:
            token = base64.b64encode(("%s:%s" % (user, password or self.password)).encode()).decode()
            req.add_header("Authorization", "Basic " + token)
        try:
            with urllib.request.urlopen(req, context=unverified(), timeout=10) as resp:
                raw, status, headers = resp.read(), resp.status, resp.headers
        except urllib.error.HTTPError as exc:
            raw, status, headers = exc.read(), exc.code, exc.headers
        try:
            out = json.loads(raw) if raw else None
        except ValueError:
            out = raw.decode()
        return status, out, headers

    def get(self, path, **kw):
        status, out, _h = self.call("GET", path, **kw)
        assert status == 200, (path, status, out)
        return out

    def ok(self, method, path, body=None):
        """The body of a successful call: 200, or 201 for a POST (a new revision or action: the specification)."""
        status, out, _h = self.call(method, path, body)
        assert status == (201 if method == "POST" else 200), (method, path, status, out)
        return out

    def new_rev(self, base=None):
        out = self.ok("POST", "/revision" + ("?base_rev=%s" % base if base else ""), {})
        return next(iter(out))

    def apply(self, rid, ays=True):
        body = {"state": "apply"}
        if ays:
            body["auto-prompt"] = {"ays": "ays_yes", "ignore_fail": "ignore_fail_yes"}
        self.ok("PATCH", "/revision/%s" % rid, body)
        return self.wait_rev(rid)

    def wait_rev(self, rid, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            rev = self.get("/revision/%s" % rid)
            if rev["state"] in TERMINAL:
                return rev
            time.sleep(0.02)
        raise AssertionError("revision %s did not finish: %s" % (rid, rev))

    def change(self, path, body, ays=True):
        """One revision with one PATCH, applied -> the final revision body."""
        rid = self.new_rev()
        self.ok("PATCH", "%s?rev=%s" % (path, rid), body)
        return rid, self.apply(rid, ays)

    def wait_action(self, aid, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            act = self.get("/action/%s" % aid)
            if act["state"] in ("action_success", "action_error", "action_failed"):
                return act
            time.sleep(0.02)
        raise AssertionError("action %s did not finish" % aid)

    # ---------------------------------------------------------------- state and events
    def state(self):
        return json.loads((self.dir / "state.json").read_text())

    def events(self, name=None):
        path = self.dir / "events.jsonl"
        out = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        return [e for e in out if name is None or e["event"] == name]

    def mark(self):
        """The seq of the last event: count events after it with since()."""
        events = self.events()
        return events[-1]["seq"] if events else 0

    def since(self, mark, name=None):
        return [e for e in self.events(name) if e["seq"] > mark]


def rest(sw, password=None, timeout=10):
    """The core's ``request`` over urllib (what the httpapi plugin does inside a module), as a RestSwitch named after
    the switch; a switch that does not answer (refused, reset, timed out) is the core's SwitchUnreachable, as
    ``httpapi_request`` makes of ansible's ConnectionError."""
    def request(method, path, params, body):
        url = "https://127.0.0.1:%d/nvue_v1%s%s" % (sw.port, path, ("?" + urlencode(params)) if params else "")
        req = urllib.request.Request(url, data=json.dumps(body).encode() if body is not None else None, method=method)
        req.add_header("Content-Type", "application/json")
        req.add_header("Authorization", "Basic " + base64.b64encode(
            ("cumulus:%s" % (password or PASSWORD)).encode()).decode())
        try:
            with urllib.request.urlopen(req, context=unverified(), timeout=timeout) as resp:
                raw, status = resp.read(), resp.status
        except urllib.error.HTTPError as exc:
            raw, status = exc.read(), exc.code
        except (urllib.error.URLError, OSError, HTTPException) as exc:
            raise SwitchUnreachable("%s could not be reached (%s %s): %s" % (
                sw.hostname, method, url, getattr(exc, "reason", None) or exc)) from exc
        try:
            return status, (json.loads(raw) if raw else None)
        except ValueError:
            return status, raw.decode()
    return RestSwitch(request, name=sw.hostname)
