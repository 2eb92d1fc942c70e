# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""nvued: the REST API over HTTPS (basic auth) and the same API over a unix socket for the nv CLI (no auth)."""
import argparse
import base64
import binascii
import hmac
import json
import os
import socketserver
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from . import labnet, model
from .engine import ApiError, Engine
from .store import SimError, state_dir

NGINX_502 = ("<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway"
             "</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n")
PASSWORD_MESSAGE = ("The password of the cumulus user must be changed before the NVUE REST API can be used "
                    "(Cumulus Linux 5.6 and later).")      # [invented] wording


# NVUESIM_REQUEST_LOG=FILE: every REST request and its answer appended to FILE as one JSON line (method, path,
# query, body, status, response) - what tests/unit/nvue/test_spec_walk.py judges against the specification.
REQUEST_LOG = os.environ.get("NVUESIM_REQUEST_LOG")
_LOG_LOCK = threading.Lock()


def record(method, path, query, body, status, response):
    line = json.dumps({"method": method, "path": path, "query": query, "body": body, "status": status,
                       "response": response}, sort_keys=True)
    with _LOG_LOCK, open(REQUEST_LOG, "a", encoding="utf-8") as log:
        log.write(line + "\n")


class Handler(BaseHTTPRequestHandler):
    server_version = "nginx"
    sys_version = ""
    client = "rest"

    def log_message(self, fmt, *args):   # quiet; the event log is the record
        pass

    def version_string(self):
        return "nginx"

    def _send(self, status, body, content_type="application/json", headers=()):
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _user(self, state):
        """The authenticated user, or None after answering 401/403."""
        auth = self.headers.get("Authorization", "")
        user = None
        if auth.startswith("Basic "):
            try:
                name, _sep, password = base64.b64decode(auth[6:], validate=True).decode().partition(":")
            except (binascii.Error, UnicodeDecodeError):
                name, password = "", ""
            if (hmac.compare_digest(name, state["user"]["name"])
                    and hmac.compare_digest(password.encode(), state["user"]["password"].encode())):
                user = name
        engine = self.server.engine
        if user is None:
            with engine.store.transaction() as tx:
                tx.event("auth_fail", self.client, status=401, path=self.path)
            self._send(401, {"message": "Authentication required"},
                       headers=[("WWW-Authenticate", 'Basic realm="nvue"')])
            return None
        if model.password_unchanged(state):
            with engine.store.transaction() as tx:
                tx.event("auth_fail", self.client, status=403, path=self.path)
            self._send(403, {"message": PASSWORD_MESSAGE})
            return None
        return user

    def _handle(self, method):
        engine = self.server.engine
        try:
            state = engine.store.load()
        except SimError as exc:
            self._send(500, {"message": str(exc)})
            return
        if "nvued_down" in state["faults"]:
            self._send(502, NGINX_502, "text/html")
            return
        if self.client == "cli":
            user = self.headers.get("X-Nvuesim-User") or "cumulus"
        else:
            user = self._user(state)
            if user is None:
                return
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw.strip() else None
        except ValueError:
            self._send(400, {"message": "the body is not JSON"})
            return
        if body is None and method in ("POST", "PATCH"):
            body = {}
        path, _sep, query = self.path.partition("?")
        try:
            status, out = engine.handle(method, path, query, body, self.client, user)
        except ApiError as exc:
            status, out = exc.status, exc.body
        if self.client == "rest" and REQUEST_LOG:
            record(method, path, query, body, status, out)
        self._send(status, out)

    def do_GET(self):
        self._handle("GET")

    def do_POST(self):
        self._handle("POST")

    def do_PATCH(self):
        self._handle("PATCH")

    def do_DELETE(self):
        self._handle("DELETE")

    def do_PUT(self):
        self._handle("PUT")


class CliHandler(Handler):
    client = "cli"

    def address_string(self):
        return "unix"


class TLSServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address, engine, context):
        self.engine = engine
        self.context = context
        super().__init__(address, Handler)

    def get_request(self):
        sock, addr = super().get_request()
        return self.context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr

    def finish_request(self, request, client_address):
        try:
            request.do_handshake()
        except (ssl.SSLError, OSError):
            return
        super().finish_request(request, client_address)


class UnixServer(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True

    def __init__(self, path, engine):
        self.engine = engine
        if os.path.exists(path):
            os.unlink(path)
        super().__init__(path, CliHandler)


class Nvued:
    """The listeners of one nvued process; a reboot closes them, boots, and opens them again."""

    poll_interval = 0.05  # how often an idle listener looks for a shutdown (a reboot)

    def __init__(self, directory, host, port, socket_path):
        self.engine = Engine(directory, on_reboot=self.reboot)
        self.host, self.port = host, port
        self.socket_path = socket_path
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(self.engine.store.cert, self.engine.store.key)
        self.servers = []
        self.lock = threading.Lock()

    def start_lab(self):
        """The lab provider: listen for LLDP on the ports, carry applied to the interfaces now and after every
        apply and boot."""
        state = self.engine.store.load()
        if state.get("provider") != "lab":
            return None
        self.engine.on_applied = self.sync_links
        self.sync_links()
        return labnet.LldpListener(sorted(state.get("ports", {}))).start()

    def sync_links(self):
        try:
            labnet.sync_links(self.engine.store)
        except (OSError, ValueError, SimError) as exc:
            print("nvued: carrying the applied config to the interfaces failed: %s" % exc, file=sys.stderr,
                  flush=True)

    def open(self):
        tls = TLSServer((self.host, self.port), self.engine, self.context)
        self.port = tls.server_address[1]
        servers = [tls]
        if self.socket_path:
            servers.append(UnixServer(self.socket_path, self.engine))
        for srv in servers:
            threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": self.poll_interval}, daemon=True).start()
        self.servers = servers

    def close(self):
        for srv in self.servers:
            srv.shutdown()
            srv.server_close()
        self.servers = []
        if self.socket_path and os.path.exists(self.socket_path):
            os.unlink(self.socket_path)

    def reboot(self, seconds):
        with self.lock:
            time.sleep(0.1)          # let the @reboot answer leave first
            self.close()
            time.sleep(seconds)
            self.engine.complete_boot()
            self.open()


def _fleet(directory, host, port, pidfile):
    """One process serving many switches (the fleet twin, tests/twin): each its own engine and port."""
    daemons = {}
    try:
        for name in sorted(os.listdir(directory)):
            path = os.path.join(directory, name)
            if not os.path.isfile(os.path.join(path, "state.json")):
                continue
            daemon = Nvued(path, host, port + len(daemons) if port else 0, None)
            daemon.poll_interval = 0.5  # hundreds of idle listeners in one process
            daemon.engine.store.load()
            daemon.engine.resume()
            daemon.open()
            daemons[name] = daemon
        ports = os.path.join(directory, "ports.json")
        with open(ports + ".tmp", "w") as fh:
            json.dump({name: d.port for name, d in daemons.items()}, fh, sort_keys=True)
        os.replace(ports + ".tmp", ports)
        if pidfile:
            with open(pidfile, "w") as fh:
                fh.write("%d\n" % os.getpid())
    except (SimError, OSError, ssl.SSLError) as exc:
        print("nvued: %s" % exc, file=sys.stderr)
        return 1
    print("nvued: %d switches listening on %s (%s)" % (len(daemons), host, ports), flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        for daemon in daemons.values():
            daemon.close()
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="nvued", description="NVUE emulator daemon (REST + unix socket)")
    parser.add_argument("--state", help="state directory (default $NVUESIM_STATE or /var/lib/nvuesim)")
    parser.add_argument("--listen", default="127.0.0.1:8765", help="HOST:PORT of the REST API (port 0: any)")
    parser.add_argument("--socket", help="unix socket of the CLI (default <state>/nvued.sock)")
    parser.add_argument("--no-socket", action="store_true", help="no unix socket (a second nvued on one state)")
    parser.add_argument("--pidfile", help="write the process id here once listening")
    parser.add_argument("--fleet", metavar="DIR",
                        help="serve every switch whose state is a directory of DIR (the fleet twin: one process, a "
                             "port each, from the port of --listen up, or any with port 0; no CLI socket); their "
                             "ports are written to DIR/ports.json")
    args = parser.parse_args(argv)
    host, sep, port = args.listen.rpartition(":")
    if not sep or not port.isdigit() or not host:
        parser.error("--listen %r: expected HOST:PORT" % args.listen)
    if args.fleet:
        return _fleet(args.fleet, host, int(port), args.pidfile)
    directory = state_dir(args.state)
    try:
        daemon = Nvued(directory, host, int(port),
                       None if args.no_socket else (args.socket or os.path.join(os.path.abspath(directory),
                                                                                "nvued.sock")))
        daemon.engine.store.load()
        daemon.engine.resume()
        daemon.open()
        daemon.start_lab()
        if args.pidfile:
            with open(args.pidfile, "w") as fh:
                fh.write("%d\n" % os.getpid())
    except (SimError, OSError, ssl.SSLError) as exc:
        print("nvued: %s" % exc, file=sys.stderr)
        return 1
    print("nvued: listening on https://%s:%d" % (host, daemon.port), flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        daemon.close()
    return 0
