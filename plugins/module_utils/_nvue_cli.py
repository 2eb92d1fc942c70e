# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVUE over the ``nv`` CLI of the switch: the operations of :class:`_nvue.Switch` carried by ``nv`` commands.

:class:`CliSwitch` is the second transport of the one core (``_nvue.configure``, ``_nvue.gather``,
``_nvue_image.upgrade``): the core decides, this only carries and reads. Its commands go to a
``run(argv_or_text) -> (rc, stdout, stderr)`` callable: an argv list (one command, every word checked here) or, to
stage a tree, a shell text that writes the tree to a temporary file by a quoted here-document and patches it in
(``nv config patch FILE``). Over Ansible, ``run`` is the ``gpufabric.mlnx.nvue`` cliconf plugin's ``nvue_run`` on an
``ansible.netcommon.network_cli`` connection (:func:`cli_switch`); in tests, a subprocess.

How the CLI's revisions map to the core's operations (the core's judgement is unchanged):

- the CLI has one pending revision per session (per user): ``new_revision`` drops whatever the session held
  (``nv config detach``) and answers ``pending``; the first change prints ``created [rev_id: N]``, and from then on
  the revision is named N (:meth:`CliSwitch.staged_id`);
- ``stage`` writes ``[{"set": tree}]`` (JSON, which is YAML) to ``/tmp/gpufabric-nvue-<random>.json`` and runs
  ``nv config patch`` on it; a ``null`` in the tree, and ``clear``, are ``nv unset <words>``;
- ``diff`` is ``nv config diff BASE REV -o json``; ``get`` is ``nv config show -o json`` (the configuration as set)
  or, filled with defaults and operational, ``nv show <words> -o json``;
- ``apply`` is ``nv config apply -y`` (``--assume-no`` when the prompts must not be answered), which waits for the
  end: its output (``applied [rev_id: N]``, ``applied_and_saved [rev_id: N]``, ``Error: Config invalid at ...``)
  becomes the state :meth:`CliSwitch.revision` answers, as REST would have it;
- an output this does not know is an error quoting it; ``Error: Could not connect to nvued.`` is
  :class:`SwitchUnreachable` (nvued down, or the switch booting).
"""

from __future__ import annotations

import json
import re
import secrets
import shlex
from typing import Any, Callable

from ansible.module_utils.connection import ConnectionError as AnsibleConnectionError

from ansible_collections.gpufabric.mlnx.plugins.module_utils._nvue import (
    NO_DIFF, SEGMENT_RE, NvueError, Switch, SwitchUnreachable, auto_save_of, check_diff, connection_name,
    httpapi_switch, module_connection, shown)

Run = Callable[["list[str] | str"], "tuple[int, str, str]"]

CREATED_RE = re.compile(r"created \[rev_id: ([0-9]{1,12})\]", re.ASCII)
APPLIED_RE = re.compile(r"(applied|applied_and_saved) \[rev_id: ([0-9]{1,12})\]", re.ASCII)
SAVED_RE = re.compile(r"saved(?: \[rev_id: [A-Za-z0-9_]{1,32}\])?", re.ASCII)
INVALID_RE = re.compile(r"Config invalid at ([A-Za-z0-9_.:/+-]{1,512}): (.*)", re.ASCII | re.DOTALL)
NOT_CONNECTED = "Could not connect to nvued."
NO_CHANGES = "There are no configuration changes to apply."
ASK = "Are you sure? [y/N]"
REV_ID_RE = re.compile(r"[0-9]{1,12}", re.ASCII)
IMAGE_FILE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,254}", re.ASCII)
URL_WORD_RE = re.compile(r"[\x21-\x7e]{1,2048}", re.ASCII)
TMP_FILE = "/tmp/gpufabric-nvue-%s.json"
DELIMITER = "GPUFABRIC_EOF"
REV_FLAGS = {"applied": ["--applied"], "startup": ["--startup"], "pending": ["--pending"],
             "operational": ["--operational"]}
ACTION_OK_RE = re.compile(r"Action succeeded: ?(.*)", re.ASCII | re.DOTALL)
ACTION_FAILED_RE = re.compile(r"Error: Action failed: ?(.*)", re.ASCII | re.DOTALL)
BOOT_NEXT_RE = re.compile(r"next boot: partition [12]", re.ASCII)
PARTITIONS = ("other", "1", "2")


def command_text(command: "list[str] | str") -> str:
    """What a command is on the switch's shell: an argv list quoted word by word, a shell text as it is."""
    return command if isinstance(command, str) else shlex.join(command)


def _first_line(text: str) -> str:
    return text.splitlines()[0] if text else text


def heredoc(path: str, data: str) -> str:
    """A shell text writing ``data`` to ``path`` by a quoted here-document (nothing in it is expanded), with a
    delimiter that occurs nowhere in the data, then patching it into the session's revision and removing it."""
    if not re.fullmatch(r"/tmp/gpufabric-nvue-[0-9a-f]{16}\.json", path, re.ASCII):
        raise NvueError("the staging file %r is not one this transport makes" % (path,))
    if not re.fullmatch(r"[\x20-\x7e\n]*", data, re.ASCII):
        raise NvueError("the staged tree has characters a here-document may not carry (allowed: printable ASCII)")
    delimiter, count = DELIMITER, 0
    while delimiter in data:
        count += 1
        if count > 16:
            raise NvueError("the staged tree holds every here-document delimiter tried (%s...): refused" % DELIMITER)
        delimiter = "%s_%d" % (DELIMITER, count)
    quoted = shlex.quote(path)
    return ("(umask 077 && cat > %s <<'%s'\n%s\n%s\n) && nv config patch %s; rc=$?; rm -f -- %s; (exit \"$rc\")"
            % (quoted, delimiter, data, delimiter, quoted, quoted))


def config_tree(doc: Any, where: str = "nv config show -o json") -> dict:
    """The tree of ``nv config show -o json``: a list of ``{"header": ...}``/``{"set": tree}`` elements (the
    startup.yaml shape), or a bare tree; NvueError for anything else (an element of another kind is not skipped)."""
    if isinstance(doc, dict):
        return doc
    out: dict = {}
    if not isinstance(doc, list):
        raise NvueError("%s printed %s, not a configuration (a tree, or a list of header and set elements)"
                        % (where, shown(doc)))
    for part in doc:
        if isinstance(part, dict) and set(part) == {"set"} and isinstance(part["set"], dict):
            out = _merge(out, part["set"])
        elif not (isinstance(part, dict) and set(part) == {"header"}):
            raise NvueError("%s printed an element %s, not {\"header\": ...} or {\"set\": tree}"
                            % (where, shown(part)))
    return out


def _merge(base: dict, more: dict) -> dict:
    out = dict(base)
    for key, value in more.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def _split_nulls(tree: Any, where: list[str], nulls: list[list[str]]) -> Any:
    """``tree`` without its ``None`` leaves, whose paths go to ``nulls``."""
    if not isinstance(tree, dict):
        return tree
    out = {}
    for key, value in tree.items():
        if value is None:
            nulls.append(where + [key])
        else:
            out[key] = _split_nulls(value, where + [key], nulls)
    return out


class CliSwitch(Switch):
    """The operations over ``nv`` commands, given to ``run`` (see the module docstring)."""

    def __init__(self, run: Run, name: str = "the switch"):
        self._run = run
        self.name = name
        self._rev: str | None = None          # the session revision's id, once the switch named it
        self._states: dict[str, dict] = {}    # revision id -> the state its apply ended in
        self._actions: dict[str, dict] = {}   # our action id -> the action's end
        self._nonce = secrets.token_hex(8)

    # ---------------------------------------------------------------- running
    def nv(self, *words: str, ok: bool = False) -> tuple[int, str, str]:
        """``nv WORDS``: (rc, stdout, stderr); a non-zero rc is an error unless ``ok``."""
        argv = ["nv", *words]
        rc, out, err = self._run(argv)
        if rc != 0 and not ok:
            raise self.failure(argv, rc, out, err)
        return rc, out, err

    def failure(self, command: "list[str] | str", rc: int, out: str, err: str) -> NvueError:
        text = command_text(command)
        words = "\n".join(w for w in ((err or "").strip(), (out or "").strip()) if w) or "nothing"
        if NOT_CONNECTED in words:
            return SwitchUnreachable("%s `%s`: rc %s: the switch says %r: nvued, the NVUE daemon, is not running or "
                                     "not up yet (systemctl status nvued)" % (self.name, _first_line(text), rc, words),
                                     cmd=[text], rc=rc, stdout=out, stderr=err)
        return NvueError("%s `%s`: rc %s (the switch says: %s)" % (self.name, _first_line(text), rc, words),
                         cmd=[text], rc=rc, stdout=out, stderr=err)

    def unknown(self, command: "list[str] | str", out: str, err: str, what: str) -> NvueError:
        return NvueError("%s `%s` printed %r%s, not %s" % (
            self.name, _first_line(command_text(command)), out.strip(),
            (" (stderr %r)" % err.strip()) if err and err.strip() else "", what),
            cmd=[command_text(command)], stdout=out, stderr=err)

    def json_of(self, *words: str) -> Any:
        _rc, out, err = self.nv(*words)
        try:
            return json.loads(out)
        except ValueError:
            raise self.unknown(["nv", *words], out, err, "JSON") from None

    @staticmethod
    def words(segments: list[str], parameter: str = "path") -> list[str]:
        for segment in segments:
            if not isinstance(segment, str) or not SEGMENT_RE.fullmatch(segment):
                raise NvueError("%s: segment %r is not an NVUE word (allowed: letters, digits and _ . : + -, not "
                                "starting with a sign)" % (parameter, segment), parameter=parameter)
        return list(segments)

    def rev_flag(self, rev: str) -> list[str]:
        rev = self._rev if rev == "pending" and self._rev else rev
        if rev in REV_FLAGS:
            return REV_FLAGS[rev]
        if isinstance(rev, str) and REV_ID_RE.fullmatch(rev):
            return ["--rev", rev]
        raise NvueError("%s: revision %r is not one nv names (applied, startup, pending, operational or an id)"
                        % (self.name, rev))

    def _learn(self, command, out: str, err: str) -> None:
        """The outputs of a change: nothing, or ``created [rev_id: N]`` for the session's first one."""
        text = out.strip()
        if not text:
            return
        match = CREATED_RE.fullmatch(text)
        if not match:
            raise self.unknown(command, out, err, "nothing or created [rev_id: N]")
        self._rev = match.group(1)

    # ---------------------------------------------------------------- revisions
    def new_revision(self):
        self.detach()
        return "pending"

    def staged_id(self, rev):
        return self._rev if rev == "pending" and self._rev else rev

    def stage(self, rev, tree):
        nulls: list[list[str]] = []
        tree = _split_nulls(tree, [], nulls)
        if tree:
            data = json.dumps([{"set": tree}], indent=1, sort_keys=True, ensure_ascii=True)
            script = heredoc(TMP_FILE % self._nonce, data)
            rc, out, err = self._run(script)
            if rc != 0:
                raise self.failure("nv config patch %s" % (TMP_FILE % self._nonce), rc, out, err)
            self._learn("nv config patch", out, err)
        for segments in nulls:
            self.clear(rev, segments)

    def clear(self, rev, segments):
        if not segments:
            raise NvueError("%s: nv unset needs a path; the whole configuration is not unset this way" % self.name)
        words = self.words(segments)
        _rc, out, err = self.nv("unset", *words)
        self._learn(["nv", "unset", *words], out, err)

    def get(self, segments, rev="applied", filled=False):
        segments = self.words(segments)
        if not filled and rev != "operational":
            argv = ["config", "show", "-o", "json", *self.rev_flag(rev)]
            tree = config_tree(self.json_of(*argv), "%s `%s`" % (self.name, command_text(["nv", *argv])))
            for segment in segments:
                if not isinstance(tree, dict) or segment not in tree:
                    return None
                tree = tree[segment]
            return tree
        argv = ["show", *segments, "-o", "json", *self.rev_flag(rev)]
        rc, out, err = self.nv(*argv, ok=True)
        if rc != 0 and "does not exist" in (err or "") and segments:
            return None
        if rc != 0:
            raise self.failure(["nv", *argv], rc, out, err)
        try:
            return json.loads(out)
        except ValueError:
            raise self.unknown(["nv", *argv], out, err, "JSON") from None

    def diff(self, rev, base="applied"):
        names = []
        for one in (base, rev):
            one = self._rev if one == "pending" and self._rev else one
            if not (one in ("applied", "startup", "pending") or REV_ID_RE.fullmatch(str(one))):
                raise NvueError("%s: revision %r is not one nv config diff compares" % (self.name, one))
            names.append(one)
        argv = ["config", "diff", names[0], names[1], "-o", "json"]
        _rc, out, err = self.nv(*argv)
        if not out.strip():   # no difference: the emulator prints [], a real switch may print nothing [U]
            return []
        try:
            data = json.loads(out)
        except ValueError:
            raise self.unknown(["nv", *argv], out, err, "JSON") from None
        return check_diff(data, "%s `%s`" % (self.name, command_text(["nv", *argv])))

    def apply(self, rev, assume_yes):
        rev = self.staged_id(rev)
        argv = ["nv", "config", "apply", "-y" if assume_yes else "--assume-no"]
        rc, out, err = self._run(argv)
        lines = [line.strip() for line in (out or "").splitlines() if line.strip()]
        if rc == 0 and lines:
            match = APPLIED_RE.fullmatch(lines[-1])
            if match:
                if match.group(2) != rev and REV_ID_RE.fullmatch(rev):
                    raise NvueError("%s `nv config apply` applied revision %s, not the session's %s (%s)"
                                    % (self.name, match.group(2), rev, lines[-1]))
                self._states[rev] = {"state": match.group(1), "transition": {"issue": {}, "progress": ""}}
                return
            if lines[-1].endswith(NO_CHANGES):
                self._states[rev] = _state("failed", NO_DIFF, code="apply_failed")
                return
        if rc != 0 and NOT_CONNECTED in (err or "") + (out or ""):
            raise self.failure(argv, rc, out, err)
        if rc != 0 and ASK in (out or ""):
            warnings = "; ".join(line[len("Warning: "):] for line in lines if line.startswith("Warning: "))
            self._states[rev] = _state("ays_fail", "the apply raised warnings that needed a yes/no answer: %s"
                                       % (warnings or "(none printed)"), code="client_timeout",
                                       progress="Aborted apply after warnings")
            return
        errors = [line[len("Error: "):] for line in (err or "").splitlines() + (out or "").splitlines()
                  if line.startswith("Error: ")]
        if rc != 0 and errors:
            invalid = INVALID_RE.fullmatch(errors[0])
            if invalid:
                self._states[rev] = _state("invalid", errors[0], code="config_invalid", location=invalid.group(1),
                                           reason=invalid.group(2), progress="Invalid config")
            else:
                self._states[rev] = _state("failed", "; ".join(errors), code="apply_failed")
            return
        raise self.unknown(argv, out, err, "applied [rev_id: N], applied_and_saved [rev_id: N] or Error: ...")

    def revision(self, rev):
        rev = self.staged_id(rev)
        if rev not in self._states:
            raise NvueError("%s: revision %s was not applied through this CLI session: nv config apply prints a "
                            "revision's end, nothing else tells it" % (self.name, rev))
        return self._states[rev]

    def save(self):
        argv = ["config", "save"]
        _rc, out, err = self.nv(*argv)
        if not SAVED_RE.fullmatch(out.strip()):
            raise self.unknown(["nv", *argv], out, err, "saved")

    def auto_save(self):
        argv = ["show", "system", "config", "auto-save", "-o", "json", "--applied"]
        rc, out, err = self.nv(*argv, ok=True)
        if rc != 0 and "does not exist" in (err or ""):
            return False   # a release without auto-save
        if rc != 0:
            raise self.failure(["nv", *argv], rc, out, err)
        try:
            data = json.loads(out)
        except ValueError:
            raise self.unknown(["nv", *argv], out, err, "JSON") from None
        return auto_save_of(data, "%s `%s`" % (self.name, command_text(["nv", *argv])))

    def detach(self):
        """``nv config detach``: the session lets go of its pending revision (NVUE-CLI.md)."""
        _rc, out, err = self.nv("config", "detach")
        if out.strip():
            raise self.unknown(["nv", "config", "detach"], out, err, "nothing")
        self._rev = None

    def revisions(self):
        data = self.json_of("config", "revision", "-o", "json")
        return data if isinstance(data, dict) else {}

    # ---------------------------------------------------------------- the image flow
    def _operational(self, segments):
        data = self.json_of("show", *self.words(segments), "-o", "json")
        return data if isinstance(data, dict) else {}

    def _action(self, words: list[str]) -> str:
        """``nv action WORDS`` waits for the action's end: it is recorded under an id of ours for :meth:`action`."""
        argv = ["nv", "action", *words]
        rc, out, err = self._run(argv)
        aid = "cli-%d" % (len(self._actions) + 1)
        done = ACTION_OK_RE.fullmatch((out or "").strip()) if rc == 0 else None
        failed = ACTION_FAILED_RE.fullmatch((err or "").strip()) if rc != 0 else None
        if done:
            self._actions[aid] = {"state": "action_success", "status": done.group(1).strip()}
        elif failed:
            self._actions[aid] = {"state": "action_error", "status": failed.group(1).strip()}
        elif rc != 0:
            raise self.failure(argv, rc, out, err)
        else:
            raise self.unknown(argv, out, err, "Action succeeded: ...")
        return aid

    def fetch(self, url):
        if not isinstance(url, str) or not URL_WORD_RE.fullmatch(url):
            raise NvueError("url: %r is not one word of printable ASCII" % (url,), parameter="url")
        return self._action(["fetch", "system", "image", url])

    def install(self, file, force):
        if not isinstance(file, str) or not IMAGE_FILE_RE.fullmatch(file):
            raise NvueError("%s: image file %r is not a file name (allowed: letters, digits and . _ + -)"
                            % (self.name, file))
        return self._action(["install", "system", "image", "files", file] + (["force"] if force else []))

    def action(self, aid):
        if aid not in self._actions:
            raise NvueError("%s: action %s was not run through this CLI session" % (self.name, aid))
        return self._actions[aid]

    def boot_next(self, partition):
        if partition not in PARTITIONS:
            raise NvueError("%s: partition %r (allowed: %s)" % (self.name, partition, ", ".join(PARTITIONS)))
        argv = ["action", "boot-next", "system", "image", partition]
        _rc, out, err = self.nv(*argv)
        if not BOOT_NEXT_RE.fullmatch(out.strip()):
            raise self.unknown(["nv", *argv], out, err, "next boot: partition N")

    def reboot(self):
        self.nv("action", "reboot", "system")


def _state(name: str, message: str, *, code: str, location: str | None = None, reason: str | None = None,
           progress: str = "") -> dict:
    data = {"location": location, "reason": reason} if location else {}
    return {"state": name, "transition": {"issue": {"0": {"code": code, "data": data, "message": message,
                                                          "severity": "error"}}, "progress": progress}}


# ---------------------------------------------------------------- over Ansible

def connection_run(connection: Any) -> Run:
    """``run`` over a module's ``ansible.netcommon.network_cli`` connection (``module_connection``): the
    ``gpufabric.mlnx.nvue`` cliconf plugin's ``nvue_run`` (which carries the command to the switch's shell and back
    with its rc)."""

    def run(command):
        text = command_text(command)
        try:
            answer = connection.nvue_run(text)
        except AnsibleConnectionError as err:
            raise SwitchUnreachable("the switch could not be reached over SSH (`%s`): %s"
                                    % (_first_line(text), err)) from err
        if not isinstance(answer, dict) or not isinstance(answer.get("rc"), int):
            raise NvueError("the nvue cliconf plugin answered %r to `%s`, not {rc, stdout, stderr}"
                            % (answer, _first_line(text)))
        return answer["rc"], answer.get("stdout") or "", answer.get("stderr") or ""
    return run


def cli_switch(connection: Any) -> CliSwitch:
    """A CliSwitch over a module's network_cli connection, named after the address it talks to."""
    return CliSwitch(connection_run(connection), name=connection_name(connection))


def switch_for(module: Any) -> Switch:
    """The switch of a module's connection: :class:`RestSwitch` over ``ansible.netcommon.httpapi``, :class:`CliSwitch`
    over ``ansible.netcommon.network_cli`` (both with ``ansible_network_os: gpufabric.mlnx.nvue``)."""
    connection = module_connection(module)
    try:
        transport = connection.nvue_transport()
    except (AnsibleConnectionError, AttributeError) as err:
        raise NvueError("the task's connection has no gpufabric.mlnx.nvue plugin (set ansible_network_os to "
                        "gpufabric.mlnx.nvue with ansible.netcommon.httpapi or ansible.netcommon.network_cli): %s"
                        % err, parameter="ansible_network_os") from err
    if transport == "cli":
        return cli_switch(connection)
    if transport == "rest":
        return httpapi_switch(connection)
    raise NvueError("the gpufabric.mlnx.nvue connection plugin answered transport %r (allowed: rest, cli)"
                    % (transport,), parameter="ansible_network_os")
