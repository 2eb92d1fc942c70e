# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""nv: the NVUE CLI. It talks HTTP (no auth) to nvued over <state>/nvued.sock, as the real one does."""
import getpass
import http.client
import json
import os
import re
import socket
import sys
import time
from urllib.parse import quote

from . import model
from .store import state_dir

NOT_CONNECTED = "Error: Could not connect to nvued."
KEY_RE = re.compile(r"^[A-Za-z0-9_.:/@+,-]{1,200}\Z", re.ASCII)
VALUE_RE = re.compile(r"^[^\x00-\x1f\x7f]{1,1024}\Z")
INT_RE = re.compile(r"^-?\d{1,12}\Z", re.ASCII)
TOP_LEVEL = ("acl", "bridge", "evpn", "interface", "maintenance", "mlag", "nve", "platform", "qos", "router",
             "service", "system", "vrf")
SYSTEM_KEYS = ("aaa", "api", "config", "control-plane", "dns", "forwarding", "global", "hostname", "message",
               "ntp", "port-mirror", "reboot", "snmp-server", "ssh-server", "syslog", "timezone", "wjh")
# The value word becomes an id key {value: {}} at these paths (README: the word rule); else it is a leaf.
COLLECTIONS = [re.compile(p, re.ASCII) for p in (
    r"^interface\.[^.]+\.link\.state\Z",
    r"^(interface|vrf)\Z",
    r"^.*\.ip\.address\Z",
    r"^.*\.ip\.vrr\.address\Z",
    r"^qos\.pfc\.[^.]+\.switch-priority\Z",
    r"^qos\.traffic-pool\.[^.]+\.switch-priority\Z",
    r"^interface\.[^.]+\.bridge\.domain\Z",
)]
REV_FLAGS = {"--applied": "applied", "--pending": "pending", "--startup": "startup", "--operational": "operational"}


class CliError(Exception):
    pass


class NotConnected(Exception):
    pass


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=30):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self.unix_path)
        self.sock = sock


class Client:
    def __init__(self, socket_path, user):
        self.socket_path = socket_path
        self.user = user

    def call(self, method, path, body=None):
        conn = UnixConnection(self.socket_path)
        try:
            data = json.dumps(body).encode() if body is not None else None
            headers = {"X-Nvuesim-User": self.user}
            if data is not None:
                headers["Content-Type"] = "application/json"
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            raw = resp.read()
        except (OSError, http.client.HTTPException):
            raise NotConnected() from None
        finally:
            conn.close()
        if resp.status == 502:
            raise NotConnected()
        try:
            out = json.loads(raw) if raw else None
        except ValueError:
            out = raw.decode("utf-8", "replace")
        if resp.status >= 400:
            detail = out.get("message") if isinstance(out, dict) else out
            raise CliError("Error: %s" % detail)
        return out


def word_tree(words, command, release="5.9.1"):
    """nv set words -> a nested dict (root patch body); `nv set qos roce` spelled for ``release``."""
    if len(words) < 2 and words != ["qos"]:
        raise CliError("Invalid Command: %s" % command)
    _check_keys(words[:-1], command)
    if words == ["qos", "roce"]:
        key, on, _off = model.words_at(("qos", "roce"), release)
        keys, value = ["qos", "roce"], {key: on, "mode": "lossless"}
    else:
        keys, raw = words[:-1], words[-1]
        if not VALUE_RE.match(raw):
            raise CliError("Invalid Command: %s" % command)
        dotted = ".".join(keys)
        if any(p.match(dotted) for p in COLLECTIONS):
            if not KEY_RE.match(raw):
                raise CliError("Invalid Command: %s" % command)
            value = {raw: {}}
        elif INT_RE.match(raw):
            value = int(raw)
        else:
            value = raw
    out = value
    for key in reversed(keys):
        out = {key: out}
    return out


def _check_keys(keys, command):
    if not keys or keys[0] not in TOP_LEVEL or not all(KEY_RE.match(k) for k in keys):
        raise CliError("Invalid Command: %s" % command)
    if keys[0] == "system" and len(keys) > 1 and keys[1] not in SYSTEM_KEYS:
        raise CliError("Invalid Command: %s" % command)


def _output(args, command):
    """``[-o json|yaml]`` and nothing else -> the format (None: text)."""
    if not args:
        return None
    if len(args) == 2 and args[0] in ("-o", "--output") and args[1] in ("json", "yaml"):
        return args[1]
    raise CliError("Invalid Command: %s" % command)


def _nulls(tree):
    """An ``unset`` element's tree: every leaf (and every empty object) becomes null."""
    return {k: (_nulls(v) if isinstance(v, dict) and v else None) for k, v in tree.items()}


def url(keys):
    return "/nvue_v1/" + "/".join(quote(k, safe="") for k in keys)


def to_text(value, indent=0):
    """An indented key/value text of a JSON body (nv show without -o)."""
    lines = []
    if isinstance(value, dict):
        width = max([len(str(k)) for k in value] + [1]) + 2
        for key, val in value.items():
            if isinstance(val, dict) and val:
                lines.append(" " * indent + str(key))
                lines.extend(to_text(val, indent + 2))
            elif isinstance(val, dict):
                lines.append(" " * indent + str(key))
            else:
                lines.append(" " * indent + str(key).ljust(width) + _scalar(val))
    elif isinstance(value, list):
        for item in value:
            lines.extend(to_text(item, indent))
    else:
        lines.append(" " * indent + _scalar(value))
    return lines


def _scalar(val):
    return "" if val is None else str(val)


def to_yaml(value, indent=0):
    lines = []
    for key, val in value.items():
        pad = " " * indent
        if isinstance(val, dict) and val:
            lines.append("%s%s:" % (pad, key))
            lines.extend(to_yaml(val, indent + 2))
        elif isinstance(val, dict):
            lines.append("%s%s: {}" % (pad, key))
        elif val is None:
            lines.append("%s%s: null" % (pad, key))
        else:
            lines.append("%s%s: %s" % (pad, key, json.dumps(val) if isinstance(val, str) and not val else val))
    return lines


def diff_yaml(changes):
    lines = []
    for change in changes:
        for op, body in change.items():
            lines.append("- %s:" % op)
            lines.extend(to_yaml(body, 4))
    return "\n".join(lines)


class Cli:
    def __init__(self, client, out=sys.stdout, err=sys.stderr, stdin=sys.stdin):
        self.c = client
        self.out, self.err, self.stdin = out, err, stdin

    def say(self, text):
        print(text, file=self.out)

    def release(self):
        """The running release (nv show system version), for the words whose spelling changed."""
        return self.c.call("GET", "/nvue_v1/system/version")["product-release"]

    def session(self):
        return self.c.call("GET", "/_nvuesim/session")["rev"]

    def ensure_session(self):
        rid = self.session()
        if rid is None:
            created = self.c.call("POST", "/nvue_v1/revision", {})
            rid = next(iter(created))
            self.c.call("PUT", "/_nvuesim/session", {"rev": rid})
            self.say("created [rev_id: %s]" % rid)
        return rid

    def run(self, argv):
        command = " ".join(argv)
        if not argv:
            raise CliError("Invalid Command: %s" % command)
        verb, rest = argv[0], argv[1:]
        if verb == "set":
            body = word_tree(rest, command, self.release())
            rid = self.ensure_session()
            self.c.call("PATCH", "/nvue_v1/?rev=%s" % quote(rid, safe=""), body)
            return 0
        if verb == "unset":
            _check_keys(rest, command)
            rid = self.ensure_session()
            self.c.call("DELETE", url(rest) + "?rev=%s" % quote(rid, safe=""))
            return 0
        if verb == "config" and rest:
            return self.config(rest[0], rest[1:], command)
        if verb == "show":
            return self.show(rest, command)
        if verb == "action":
            return self.action(rest, command)
        raise CliError("Invalid Command: %s" % command)

    # -------------------------------------------------------------- nv config
    def config(self, sub, args, command):
        if sub == "apply":
            yes = any(a in ("-y", "--assume-yes") for a in args)
            no = "--assume-no" in args
            pos = [a for a in args if not a.startswith("-")]
            if len(pos) > 1 or any(a.startswith("-") and a not in ("-y", "--assume-yes", "--assume-no")
                                   for a in args):
                raise CliError("Invalid Command: %s" % command)
            return self.apply(pos[0] if pos else None, yes, no)
        if sub == "diff":
            fmt = None
            pos = []
            it = iter(args)
            for a in it:
                if a == "-o":
                    fmt = next(it, None)
                    if fmt not in ("json", "yaml"):
                        raise CliError("Invalid Command: %s" % command)
                else:
                    pos.append(a)
            if len(pos) == 2:
                a, b = pos
            elif len(pos) == 1:
                a, b = "applied", pos[0]
            elif not pos:
                a, b = "applied", self.session() or "applied"
            else:
                raise CliError("Invalid Command: %s" % command)
            changes = self.c.call("GET", "/nvue_v1/?rev=%s&diff=%s" % (quote(a, safe=""), quote(b, safe="")))
            if fmt == "json":
                self.say(json.dumps(changes, indent=2))
            elif changes:
                self.say(diff_yaml(changes))
            return 0
        if sub == "save" and not args:
            self.c.call("PATCH", "/nvue_v1/revision/applied", {"state": "save", "auto-prompt": {"ays": "ays_yes"}})
            self.say("saved")
            return 0
        if sub == "detach" and not args:
            rid = self.session()
            if rid is not None:
                self.c.call("DELETE", "/_nvuesim/revision/%s" % quote(rid, safe=""))
            return 0
        if sub == "history" and not args:
            revs = self.c.call("GET", "/nvue_v1/revision")
            self.say("%-8s %s" % ("rev_id", "state"))
            for rid in sorted(revs, key=lambda r: (len(r), r)):
                self.say("%-8s %s" % (rid, revs[rid]["state"]))
            return 0
        if sub == "show":
            return self.config_show(args, command)
        if sub == "patch" and len(args) == 1:
            return self.patch(args[0])
        if sub == "revision":
            fmt = _output(args, command)
            revs = self.c.call("GET", "/nvue_v1/revision")
            if fmt == "json":
                self.say(json.dumps(revs, indent=2))
            else:
                self.say("%-8s %s" % ("rev_id", "state"))
                for rid in sorted(revs, key=lambda r: (len(r), r)):
                    self.say("%-8s %s" % (rid, revs[rid]["state"]))
            return 0
        raise CliError("Invalid Command: %s" % command)

    def config_show(self, args, command):
        """nv config show [-o json|yaml] [--applied|--startup|--pending|--rev N]: a revision's configuration as set
        (defaults not filled); applied unless told. The rev flags are [invented] for nv config show."""
        rev, rest = "applied", []
        it = iter(args)
        for a in it:
            if a in REV_FLAGS and a != "--operational":
                rev = REV_FLAGS[a]
            elif a == "--rev":
                rev = next(it, None)
                if not rev or not KEY_RE.match(rev):
                    raise CliError("Invalid Command: %s" % command)
            else:
                rest.append(a)
        fmt = _output(rest, command)
        if rev == "pending":
            rev = self.session() or "applied"
        body = self.c.call("GET", "/nvue_v1/?rev=%s&filled=false" % quote(rev, safe=""))
        if fmt == "json":
            self.say(json.dumps([{"set": body}], indent=2))
        else:
            self.say(("- set:\n" + "\n".join(to_yaml(body, 4))) if body else "- set: {}")
        return 0

    def patch(self, path):
        """nv config patch FILE: merge a file in the shape nv config show prints ([{"set": tree}, {"unset": tree}],
        or a bare tree [invented]) into the session's revision. The emulator reads the JSON subset of YAML only
        [invented]; the messages of a missing or unreadable file are [invented]."""
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        except OSError as exc:
            raise CliError("Error: %s: %s" % (path, exc.strerror or exc)) from None
        try:
            doc = json.loads(text)
        except ValueError as exc:
            raise CliError("Error: %s is not valid YAML: %s" % (path, exc)) from None
        parts = doc if isinstance(doc, list) else [{"set": doc}]
        bodies = []
        for part in parts:
            if not isinstance(part, dict) or not part or not set(part) <= {"header", "set", "unset"}:
                raise CliError("Error: %s: each element is one of header, set, unset" % path)
            for op in ("set", "unset"):
                tree = part.get(op)
                if tree is None:
                    continue
                if not isinstance(tree, dict):
                    raise CliError("Error: %s: %s must be an object" % (path, op))
                bodies.append(tree if op == "set" else _nulls(tree))
        rid = self.ensure_session()
        for body in bodies:
            self.c.call("PATCH", "/nvue_v1/?rev=%s" % quote(rid, safe=""), body)
        return 0

    def apply(self, rid, yes, no):
        rid = rid or self.session()
        if rid is None:
            self.say("Warning: There are no configuration changes to apply.")   # [invented]
            return 0
        if not yes:
            warns = self.c.call("GET", "/_nvuesim/warnings/%s" % quote(rid, safe=""))["warnings"]
            if warns:
                for w in warns:
                    self.say("Warning: %s" % w)
                self.say("")
                print("Are you sure? [y/N] ", end="", file=self.out, flush=True)
                answer = "" if no else (self.stdin.readline() or "")
                if answer.strip().lower() not in ("y", "yes"):
                    self.say("")
                    return 1
        self.c.call("PATCH", "/nvue_v1/revision/%s" % quote(rid, safe=""),
                    {"state": "apply", "auto-prompt": {"ays": "ays_yes", "ignore_fail": "ignore_fail_yes"}})
        deadline = time.time() + 3600
        while True:
            rev = self.c.call("GET", "/nvue_v1/revision/%s" % quote(rid, safe=""))
            if rev["state"] not in ("apply", "pending") or time.time() > deadline:
                break
            time.sleep(0.05)
        if rev["state"] in ("applied", "applied_and_saved"):
            self.say("%s [rev_id: %s]" % (rev["state"], rid))
            return 0
        for issue in rev["transition"]["issue"].values():
            print("Error: %s" % issue["message"].rstrip("\n"), file=self.err)
        return 1

    # -------------------------------------------------------------- nv show
    def show(self, args, command):
        rev, fmt, words = None, None, []
        it = iter(args)
        for a in it:
            if a in REV_FLAGS:
                rev = REV_FLAGS[a]
            elif a == "--rev":
                rev = next(it, None)
                if not rev:
                    raise CliError("Invalid Command: %s" % command)
            elif a == "-o" or a == "--output":
                fmt = next(it, None)
                if fmt not in ("json", "yaml", "auto"):
                    raise CliError("Invalid Command: %s" % command)
            elif a.startswith("-") or not KEY_RE.match(a):
                raise CliError("Invalid Command: %s" % command)
            else:
                words.append(a)
        if words and words[0] not in TOP_LEVEL:
            raise CliError("Invalid Command: %s" % command)
        if rev == "pending":
            rev = self.session() or "applied"
        path = url(words) + ("?rev=%s" % quote(rev, safe="") if rev else "")
        body = self.c.call("GET", path)
        if fmt == "json":
            self.say(json.dumps(body, indent=2))
        elif fmt == "yaml" and isinstance(body, dict):
            self.say("\n".join(to_yaml(body)))
        else:
            self.say("\n".join(to_text(body)))
        return 0

    # -------------------------------------------------------------- nv action
    def action(self, args, command):
        if len(args) == 4 and args[:3] == ["fetch", "system", "image"]:
            aid = self.c.call("POST", "/nvue_v1/system/image",
                              {"@fetch": {"state": "start", "parameters": {"remote-url": args[3]}}})
            return self.wait_action(aid)
        if len(args) in (5, 6) and args[:4] == ["install", "system", "image", "files"]:
            if len(args) == 6 and args[5] != "force":
                raise CliError("Invalid Command: %s" % command)
            aid = self.c.call("POST", url(["system", "image", "files", args[4]]),
                              {"@install": {"state": "start", "parameters": {"force": len(args) == 6}}})
            return self.wait_action(aid)
        if len(args) == 4 and args[:3] == ["boot-next", "system", "image"] and args[3] in ("other", "1", "2"):
            out = self.c.call("PATCH", "/nvue_v1/system/image", {"next": args[3]})
            self.say("next boot: partition %s" % out["next"])             # [invented]
            return 0
        if args == ["reboot", "system"]:
            self.c.call("POST", "/nvue_v1/system", {"@reboot": {"state": "start", "parameters": {}}})
            self.say("Rebooting the system")                             # [invented]
            return 0
        raise CliError("Invalid Command: %s" % command)

    def wait_action(self, aid):
        while True:
            act = self.c.call("GET", "/nvue_v1/action/%s" % aid)
            if act["state"] in ("action_success", "action_error", "action_failed"):
                break
            time.sleep(0.05)
        if act["state"] == "action_success":
            self.say("Action succeeded: %s" % act.get("status", ""))      # [invented]
            return 0
        print("Error: Action failed: %s" % act.get("status", ""), file=self.err)
        return 1


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    directory = None
    if argv[:1] == ["--state"] and len(argv) > 1:
        directory, argv = argv[1], argv[2:]
    sock = os.environ.get("NVUESIM_SOCKET") or os.path.join(state_dir(directory), "nvued.sock")
    user = os.environ.get("NVUESIM_USER") or getpass.getuser()
    cli = Cli(Client(sock, user))
    try:
        return cli.run(argv)
    except NotConnected:
        print(NOT_CONNECTED, file=sys.stderr)
        return 1
    except CliError as exc:
        print(str(exc), file=sys.stderr)
        return 1
