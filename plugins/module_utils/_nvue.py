# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVUE (NVIDIA Cumulus Linux 5.x) configuration through revisions: one core for every transport.

The core decides; a transport carries. ``configure()`` and ``gather()`` speak to a switch only through the
operations of :class:`Switch` (new revision, stage, read, diff, apply, poll, save), which :class:`RestSwitch` carries
over the NVUE REST API (``/nvue_v1``, the ``gpufabric.mlnx.nvue`` httpapi plugin) and :class:`_nvue_cli.CliSwitch`
over ``nv`` commands on the switch's shell (SSH). What NVUE answers is judged here, once:

- what a change would do is predicted from the applied configuration (NVUE's documented merge): nothing to do ends
  there, without a revision, and check mode reports the prediction without a revision - the NVUE API documents no
  way to discard one (no DELETE on ``/revision/<id>`` in the OpenAPI document, tests/nvue/spec), so a revision is
  made only to be applied;
- a run that applies stages ONE revision; the switch's copy of it, compared with the applied configuration, is what
  is applied and reported, and the switch's own ``?diff=`` answer must agree;
- apply waits for a terminal state within a timeout and fails on ``invalid``, ``ays_fail``, ``failed`` and
  ``error`` with the switch's own issue message and location; ``applied_and_saved`` (auto-save) is success, as is
  ``applied`` on a switch without auto-save (then the configuration is saved unless told not to); on an auto-save
  switch ``applied`` is a step, waited out;
- a poll without an answer is read again (bounded), and a timeout names the revision to watch (ApplyUnfinished);
- the applied configuration is read back to prove the revision took (no difference left between the two);
- every answer the core does not recognise (a diff, a state, an apply, a save) fails, naming the switch and the
  request - never "no change" (fail closed);
- secrets (SECRET_KEYS) are masked in everything returned.

Trees are NVUE's JSON: objects keyed by id (``{"interface": {"swp1": {"link": {"mtu": 9216}}}}``), ``{}`` a
present empty object (``"state": {"up": {}}``), ``null`` in a staged tree unsets the key.
"""

from __future__ import annotations

import copy
import json
import re
import time
from typing import Any, Callable
from urllib.parse import quote

from ansible.module_utils.connection import Connection
from ansible.module_utils.connection import ConnectionError as AnsibleConnectionError

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._nvue_keys import flag
from ansible_collections.gpufabric.mlnx.plugins.module_utils._nvue_phy import (
    check_ports, parse_phy, phy_path, port_order, unavailable_reason)

PREFIX = "/nvue_v1"
APPLIED = ("applied", "applied_and_saved")
FAILED = ("invalid", "ays_fail", "failed", "error")
# The states a revision passes through after PATCH {"state": "apply"} before it ends (docs/leaves.md, "What the
# collection relies on"). Any state that is neither one of these nor an end above is an answer the core does not
# know: the task fails naming it, it never waits it out or reads it as success.
APPLYING = ("apply", "applying", "ays", "ays_yes", "ignore_fail")
NO_DIFF = "config apply executed with no config diff"
CONFIG_REVS = ("applied", "startup", "pending", "operational")
# How often a poll that gets no answer (connection refused or timed out, HTTP 502 while nvued restarts) is read again
# before the task gives up on an apply the switch may still be carrying out.
UNANSWERED_RETRIES = 3

REVISION_ID_RE = re.compile(r"[0-9]{1,12}|[A-Za-z0-9_.:+-]{1,64}(/[A-Za-z0-9_.:+-]{1,64}){0,4}", re.ASCII)
SAVE_STATES = ("save", "saving", "saved")
# A POST that makes a revision or starts an action: the specification answers 201 (createRevision, the action job
# ids); 200 is taken too (the same body, validated all the same).
CREATED = (200, 201)
AUTO_SAVE = ("system", "config", "auto-save")

# One segment of an NVUE path or one key of a tree: interface names, ids, addresses (a key may hold a prefix such
# as 198.18.0.0/31; a path segment may not: give it in the tree). Never starts with "@" (actions).
KEY_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/+-]{0,254}", re.ASCII)
SEGMENT_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:+-]{0,254}", re.ASCII)
TEXT_RE = re.compile(r"[\x20-\x7e]{0,1024}", re.ASCII)
MAX_DEPTH = 32


class NvueError(MlnxError):
    """What the switch refused or could not do, in a sentence naming the switch's answer."""


class SwitchUnreachable(NvueError):
    """The switch did not answer at all (connection refused, reset or timed out): a transport turns its own
    "cannot connect" into this one class, so the core can tell a rebooting switch from a refusing one."""


class ApplyUnfinished(NvueError):
    """An apply whose end the task could not see: the revision is still applying when the timeout ran out, or the
    switch stopped answering while it applied. ``revision`` is the one to watch, ``state`` the last one read."""

    def __init__(self, msg: str, *, revision: str, state: str | None, **kwargs):
        super().__init__(msg, **kwargs)
        self.revision = revision
        self.state = state

    def fail_kwargs(self) -> dict:
        out = super().fail_kwargs()
        out.update(revision=self.revision, state=self.state)
        return out


def unanswered(err: BaseException) -> bool:
    """Whether ``err`` says the switch gave no answer of its own: unreachable, or nginx's 502 while nvued is down."""
    return isinstance(err, SwitchUnreachable) or (isinstance(err, NvueError) and err.rc == 502)


def shown(data: Any, limit: int = 300) -> str:
    """What a switch answered, for a message: its JSON, cut to ``limit`` characters."""
    try:
        text = json.dumps(data, sort_keys=True)
    except (TypeError, ValueError):
        text = repr(data)
    return text if len(text) <= limit else text[:limit] + "... (%d characters)" % len(text)


def check_diff(data: Any, where: str) -> list:
    """The diff a switch answered (``where``: the switch and the request) as ``[{"set": tree}, {"unset": tree}]``;
    NvueError for any shape it does not know. Two shapes are known: the specification's (``GET /?rev=A&diff=B``
    answers the root configuration schema - a tree of what differs, ``{}`` for nothing), read as ``[{"set": tree}]``;
    and the list ``nv config diff -o json`` prints (an empty list for nothing). No answer at all is no difference.
    Anything else - an element other than ``set``/``unset``, a ``set`` that is not a tree, text, a number - is not
    read as "no change": the task fails."""
    if data is None or data == [] or data == {}:
        return []
    if isinstance(data, dict) and all(isinstance(key, str) for key in data):
        return [{"set": data}]
    if isinstance(data, list):
        for part in data:
            if not (isinstance(part, dict) and part and set(part) <= {"set", "unset"}
                    and all(isinstance(tree, dict) for tree in part.values())):
                break
        else:
            return data
    raise NvueError("%s answered %s: not a diff the collection knows (a configuration tree, or a list of "
                    "{\"set\": tree} and {\"unset\": tree} objects): refused rather than read as no change"
                    % (where, shown(data)))


def check_state(data: Any, rev: str, where: str) -> dict:
    """A revision's state as a switch answered it (flat ``{"state": ...}`` or keyed by the revision's id), checked:
    NvueError unless ``state`` is one the core knows (APPLIED, FAILED, APPLYING, ``pending``)."""
    if isinstance(data, dict) and "state" not in data and len(data) == 1 and str(next(iter(data))) == str(rev):
        data = next(iter(data.values()))
    if not isinstance(data, dict) or not isinstance(data.get("state"), str):
        raise NvueError("%s answered %s: not a revision state (an object with a state)" % (where, shown(data)))
    known = APPLIED + FAILED + APPLYING + ("pending",)
    if data["state"] not in known:
        raise NvueError("%s answered state %r for revision %s: not a state the collection knows (%s); the apply's "
                        "outcome is unknown - see nv config history %s on the switch"
                        % (where, data["state"], rev, ", ".join(known), rev))
    transition = data.get("transition")
    if transition is not None and not isinstance(transition, dict):
        raise NvueError("%s answered a transition %s: not an object" % (where, shown(transition)))
    return data


# ---------------------------------------------------------------- trees

def check_path(path: Any, parameter: str) -> list[str]:
    """The segments of an NVUE path such as ``/qos/roce`` (``/`` is the root: []), or NvueError naming it."""
    if not isinstance(path, str) or not path.startswith("/"):
        raise NvueError("%s: %r is not an NVUE path (allowed: '/' or '/' followed by segments such as /qos/roce)"
                        % (parameter, path), parameter=parameter)
    segments = [s for s in path.split("/") if s != ""]
    for segment in segments:
        if not SEGMENT_RE.fullmatch(segment):
            raise NvueError("%s: segment %r of %r is not allowed (allowed: letters, digits and _ . : + -, not "
                            "starting with one of those signs; an address goes in the tree, not in the path)"
                            % (parameter, segment, path), parameter=parameter)
    return segments


def check_tree(tree: Any, parameter: str, *, nulls: bool = False) -> None:
    """NvueError naming the first bad key or value of ``tree`` (objects keyed by id, scalars, ``{}``)."""
    stack = [(tree, parameter, 0)]
    while stack:
        node, where, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise NvueError("%s: nested deeper than %d levels" % (where, MAX_DEPTH), parameter=parameter)
        if isinstance(node, dict):
            for key, value in node.items():
                if not isinstance(key, str) or not KEY_RE.fullmatch(key):
                    raise NvueError("%s: key %r is not an NVUE key (allowed: 1-255 letters, digits and _ . : / + -, "
                                    "starting with a letter or digit)" % (where, key), parameter=parameter)
                stack.append((value, "%s.%s" % (where, key), depth + 1))
        elif isinstance(node, list):
            raise NvueError("%s: is a list; NVUE collections are objects keyed by id (e.g. {\"swp1\": {...}})"
                            % where, parameter=parameter)
        elif node is None:
            if not nulls:
                raise NvueError("%s: is null (allowed: a value or an object; to unset a key name its path in unset)"
                                % where, parameter=parameter)
        elif isinstance(node, bool) or isinstance(node, (int, float)):
            continue
        elif isinstance(node, str):
            if not TEXT_RE.fullmatch(node):
                raise NvueError("%s: %r has characters NVUE values may not hold (allowed: printable ASCII, at most "
                                "1024)" % (where, node), parameter=parameter)
        else:
            raise NvueError("%s: is a %s (allowed: an object, text, a number or a boolean)" % (
                where, type(node).__name__), parameter=parameter)


def at(tree: Any, segments: list[str]) -> Any:
    """The subtree of ``tree`` at ``segments`` (None when absent)."""
    node = tree
    for segment in segments:
        if not isinstance(node, dict) or segment not in node:
            return None
        node = node[segment]
    return node


def nest(segments: list[str], value: Any) -> Any:
    """``value`` placed at ``segments`` in an otherwise empty tree."""
    for segment in reversed(segments):
        value = {segment: value}
    return value


def merge(base: Any, patch: Any) -> Any:
    """``patch`` deep-merged into a copy of ``base`` as NVUE does it: objects merge, ``None`` removes the key,
    anything else replaces."""
    if not isinstance(patch, dict) or not isinstance(base, dict):
        return copy.deepcopy(patch)
    out = dict(base)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def covers(have: Any, want: Any) -> list[str]:
    """The dotted paths where ``have`` does not hold ``want`` (every key of ``want``; ``None`` = must be absent)."""
    missing = []
    stack = [(have, want, "")]
    while stack:
        h, w, where = stack.pop()
        if isinstance(w, dict):
            if not isinstance(h, dict):
                missing.append(where or ".")
                continue
            for key, value in w.items():
                path = "%s.%s" % (where, key) if where else key
                if value is None:
                    if key in h:
                        missing.append(path)
                elif key not in h:
                    missing.append(path)
                else:
                    stack.append((h[key], value, path))
        elif h != w and str(h) != str(w):
            missing.append(where or ".")
    return sorted(missing)


def shape(tree: Any) -> Any:
    """The keys of ``tree`` down to its leaves (leaves become True): what to cut another tree to."""
    if isinstance(tree, dict) and tree:
        return {key: shape(value) for key, value in tree.items()}
    return True


def cut(tree: Any, pattern: Any) -> Any:
    """``tree`` restricted to the keys of ``pattern`` (from :func:`shape`); absent keys are left out."""
    if pattern is True or not isinstance(tree, dict):
        return copy.deepcopy(tree)
    out = {}
    for key, sub in pattern.items():
        if key in tree:
            out[key] = cut(tree[key], sub)
    return out


def union(a: Any, b: Any) -> Any:
    """Two :func:`shape` patterns joined."""
    if a is True or b is True:
        return True
    out = dict(a)
    for key, value in b.items():
        out[key] = union(out[key], value) if key in out else value
    return out


# Where NVUE trees hold secrets (docs/leaves.md, "Secrets"): keys whose value is one, and collections whose ids are
# one (an SNMP community is the id of its entry). What is found there is shown as MASK in every result, diff and
# report, as Ansible shows a no_log value, and the values given in a task are registered as no_log values.
SECRET_KEYS = frozenset(("password", "hashed-password", "secret", "md5-key", "auth-md5", "auth-sha",
                         "encrypt-aes", "encrypt-des", "community-password", "shared-secret", "psk"))
SECRET_ID_PARENTS = frozenset(("readonly-community", "readwrite-community", "community", "community-password"))
MASK = "********"


def mask(tree: Any) -> Any:
    """A copy of ``tree`` (a tree, or a diff's list of trees) with every secret shown as MASK."""
    if isinstance(tree, list):
        return [mask(part) for part in tree]
    if not isinstance(tree, dict):
        return copy.deepcopy(tree)
    out = {}
    for key, value in tree.items():
        if key in SECRET_ID_PARENTS and isinstance(value, dict):
            out[key] = {("%s%d" % (MASK, n) if n else MASK): _masked_leaves(v) for n, v in enumerate(value.values())}
        elif key in SECRET_KEYS:
            out[key] = _masked_leaves(value)
        else:
            out[key] = mask(value)
    return out


def _masked_leaves(value):
    if isinstance(value, dict):
        return {key: _masked_leaves(sub) for key, sub in value.items()} if value else {}
    return None if value is None else MASK


def secrets_in(tree: Any) -> set[str]:
    """The secrets ``tree`` holds (values at SECRET_KEYS, ids under SECRET_ID_PARENTS), as text: what a module
    registers as no_log values so that Ansible masks them wherever they would appear."""
    found: set[str] = set()
    stack = [(tree, False)]
    while stack:
        node, secret = stack.pop()
        if isinstance(node, list):
            stack.extend((part, secret) for part in node)
        elif isinstance(node, dict):
            for key, value in node.items():
                if key in SECRET_ID_PARENTS and isinstance(value, dict):
                    found.update(str(k) for k in value)
                stack.append((value, secret or key in SECRET_KEYS))
        elif secret and node not in (None, "") and not isinstance(node, bool):
            found.add(str(node))
    return found


def diff_shape(diff: Any) -> Any:
    """The pattern of the keys an NVUE diff (``[{"set": tree}, {"unset": tree}]``) touches; None when empty."""
    pattern = None
    for part in diff or ():
        if not isinstance(part, dict):
            continue
        for kind in ("set", "unset"):
            tree = part.get(kind)
            if isinstance(tree, dict) and tree:
                pattern = shape(tree) if pattern is None else union(pattern, shape(tree))
    return pattern


def diff_is_empty(diff: Any) -> bool:
    return diff_shape(diff) is None


# ---------------------------------------------------------------- the switch's operations

class Switch:
    """The operations the core needs of a switch. A transport implements them; all the judging is in the core."""

    name = "the switch"

    def new_revision(self) -> str:
        raise NotImplementedError

    def stage(self, rev: str, tree: dict) -> None:
        """Deep-merge ``tree`` (``None`` unsets) into revision ``rev``."""
        raise NotImplementedError

    def clear(self, rev: str, segments: list[str]) -> None:
        """Unset the subtree at ``segments`` in revision ``rev``."""
        raise NotImplementedError

    def staged_id(self, rev: str) -> str:
        """The id the switch gave revision ``rev`` once something was staged in it: the ``nv`` CLI names its session's
        revision at the first change (``created [rev_id: N]``); a REST revision has its id from the start."""
        return rev

    def get(self, segments: list[str], rev: str = "applied", filled: bool = False) -> Any:
        raise NotImplementedError

    def diff(self, rev: str, base: str = "applied") -> list:
        """What applying ``rev`` changes in ``base``: ``[{"set": tree}, {"unset": tree}]``."""
        raise NotImplementedError

    def apply(self, rev: str, assume_yes: bool) -> None:
        raise NotImplementedError

    def revision(self, rev: str) -> dict:
        """``{"state": ..., "transition": {"issue": {...}, "progress": ...}}``."""
        raise NotImplementedError

    def save(self) -> None:
        raise NotImplementedError

    def auto_save(self) -> bool:
        """Whether the switch saves an applied revision itself (``system config auto-save state``, applied): then
        a revision ends ``applied_and_saved``, and ``applied`` is a step on the way."""
        raise NotImplementedError

    def revisions(self) -> dict:
        """``{id: {"state": ...}}`` of every revision the switch keeps."""
        raise NotImplementedError

    # the image flow (nvue_image)
    def _operational(self, segments: list[str]) -> dict:
        """The operational object at ``segments`` (``{}`` when it is not an object)."""
        raise NotImplementedError

    def version(self) -> dict:
        """``nv show system version``: ``{"product-release", "image": {"build-id", ...}, ...}``."""
        return self._operational(["system", "version"])

    def image(self) -> dict:
        """``nv show system image``: ``{"current", "next", "partition1": {"release", "build-id"}, "partition2": ...}``."""
        return self._operational(["system", "image"])

    def image_files(self) -> dict:
        """``nv show system image files``: ``{file name: {"release", "sha256", ...}}`` of the fetched images."""
        return self._operational(["system", "image", "files"])

    def fetch(self, url: str) -> str:
        """``nv action fetch system image URL``; the action's id."""
        raise NotImplementedError

    def install(self, file: str, force: bool) -> str:
        """``nv action install system image files FILE [force]``; the action's id."""
        raise NotImplementedError

    def action(self, aid: str) -> dict:
        """``{"state": start|action_running|action_success|action_error|action_failed, "status", ...}``."""
        raise NotImplementedError

    def boot_next(self, partition: str) -> None:
        """``nv action boot-next system image PARTITION``."""
        raise NotImplementedError

    def reboot(self) -> None:
        """``nv action reboot system``: the switch stops answering until it has booted."""
        raise NotImplementedError


Request = Callable[[str, str, "dict | None", Any], "tuple[int, Any]"]

STATUS_TEXT = {
    401: "refused the credentials (HTTP 401 Unauthorized): check ansible_user and ansible_password of this switch",
    403: "answered HTTP 403 Forbidden: Cumulus Linux 5.6 and later refuse the NVUE REST API while the cumulus user "
         "still has its default password - change it on the switch (passwd, or nv set system aaa user cumulus "
         "password) and give the new one as ansible_password",
    404: "has no such object (HTTP 404)",
    409: "is busy (HTTP 409 Conflict): another client is applying a revision",
    502: "answered HTTP 502 Bad Gateway: nvued, the NVUE daemon behind the REST API, is not running "
         "(systemctl status nvued)",
}


class RestSwitch(Switch):
    """The operations over the NVUE REST API. ``request(method, path, params, body) -> (status, data)`` sends one
    HTTP request under ``/nvue_v1`` (the httpapi plugin's ``send_request``, or urllib in tests)."""

    def __init__(self, request: Request, name: str = "the switch"):
        self._request = request
        self.name = name

    def call(self, method: str, segments: list[str], params: dict | None = None, body: Any = None,
             ok: tuple = (200,), missing: bool = False) -> Any:
        """The body of a request the switch answered with a status in ``ok``; with ``missing``, None for a 404 (the
        object is absent), never the error body."""
        path = "/" + "/".join(quote(s, safe="") for s in segments)
        status, data = self._request(method, path, params, body)
        if missing and status == 404:
            return None
        if status not in ok:
            raise NvueError("%s %s %s%s: %s%s" % (
                self.name, method, PREFIX + path, _query(params), STATUS_TEXT.get(status, "answered HTTP %s" % status),
                _detail(data)), rc=status)
        return data

    def where(self, method: str, segments: list[str], params: dict | None = None) -> str:
        """``<switch> <METHOD> /nvue_v1/<path>?<query>``: the request, as a message names it."""
        return "%s %s %s/%s%s" % (self.name, method, PREFIX, "/".join(quote(s, safe="") for s in segments),
                                  _query(params))

    def new_revision(self) -> str:
        data = self.call("POST", ["revision"], body={}, ok=CREATED)
        if isinstance(data, dict) and len(data) == 1:
            key, value = next(iter(data.items()))
            if REVISION_ID_RE.fullmatch(str(key)) and isinstance(value, dict) and value.get("state") == "pending":
                return str(key)
        raise NvueError("%s answered %s, not a new revision ({\"<id>\": {\"state\": \"pending\", ...}})"
                        % (self.where("POST", ["revision"]), shown(data)))

    def stage(self, rev, tree):
        self.call("PATCH", [], {"rev": rev}, tree)

    def clear(self, rev, segments):
        # a root PATCH with null at the path: the one configuration call the specification extract holds (every
        # value is nullable; tests/nvue/spec), as staging is
        if segments:
            self.call("PATCH", [], {"rev": rev}, nest(segments[:-1], {segments[-1]: None}))
        else:
            self.call("DELETE", [], {"rev": rev})

    def get(self, segments, rev="applied", filled=False):
        params = {"rev": rev}
        if not filled:
            params["filled"] = "false"
        return self.call("GET", segments, params, missing=True) if segments else self.call("GET", [], params)

    def diff(self, rev, base="applied"):
        params = {"rev": base, "diff": rev}
        return check_diff(self.call("GET", [], params), self.where("GET", [], params))

    def apply(self, rev, assume_yes):
        body = {"state": "apply"}
        if assume_yes:
            body["auto-prompt"] = {"ays": "ays_yes"}
        data = self.call("PATCH", ["revision", rev], body=body)
        state = check_state(data, rev, self.where("PATCH", ["revision", rev]) + " (state apply)")
        if state["state"] == "pending":
            raise NvueError("%s answered state pending: the switch did not take the apply"
                            % self.where("PATCH", ["revision", rev]))

    def revision(self, rev):
        return check_state(self.call("GET", ["revision", rev]), rev, self.where("GET", ["revision", rev]))

    def save(self):
        data = self.call("PATCH", ["revision", "applied"], body={"state": "save", "auto-prompt": {"ays": "ays_yes"}})
        if not (isinstance(data, dict) and data.get("state") in SAVE_STATES):
            raise NvueError("%s (state save) answered %s, not a save (state %s)" % (
                self.where("PATCH", ["revision", "applied"]), shown(data), " or ".join(SAVE_STATES)))

    def auto_save(self):
        segments = ["system", "config", "auto-save"]
        data = self.call("GET", segments, {"rev": "applied"}, missing=True)
        return auto_save_of(data, self.where("GET", segments, {"rev": "applied"}))

    def revisions(self):
        data = self.call("GET", ["revision"])
        return data if isinstance(data, dict) else {}

    def _operational(self, segments):
        data = self.call("GET", segments)
        return data if isinstance(data, dict) else {}

    def _start(self, segments, name, parameters):
        data = self.call("POST", segments, body={name: {"state": "start", "parameters": parameters}}, ok=CREATED)
        if isinstance(data, dict) and len(data) == 1:  # id-keyed
            data = next(iter(data))
        if isinstance(data, bool) or not isinstance(data, (int, str)) or not str(data).strip().isdigit():
            raise NvueError("%s POST %s/%s %s answered %r, not an action id" % (
                self.name, PREFIX, "/".join(segments), name, data))
        return str(data).strip()

    def fetch(self, url):
        return self._start(["system", "image"], "@fetch", {"remote-url": url})

    def install(self, file, force):
        return self._start(["system", "image", "files", file], "@install", {"force": bool(force)})

    def action(self, aid):
        data = self.call("GET", ["action", aid])
        if isinstance(data, dict) and "state" not in data and len(data) == 1:
            data = next(iter(data.values()))
        return data if isinstance(data, dict) else {}

    def boot_next(self, partition):
        self.call("PATCH", ["system", "image"], body={"next": partition})

    def reboot(self):
        self._start(["system"], "@reboot", {})


def httpapi_request(connection: Any) -> Request:
    """``request`` over a module's ``ansible.netcommon.httpapi`` connection (:func:`module_connection`): the nvue
    httpapi plugin's ``send_request``."""
    def request(method, path, params, body):
        try:
            status, data = connection.send_request(body, method=method, path=path, params=params)
        except AnsibleConnectionError as err:
            raise SwitchUnreachable("the switch could not be reached over the NVUE REST API (%s %s%s): %s"
                                    % (method, PREFIX + path, _query(params), err)) from err
        return status, data
    return request


def connection_name(connection: Any) -> str:
    """``switch <address>`` of a module's connection (its ``host`` option, ansible_host), so that a message names the
    switch; ``the switch`` when the connection does not say."""
    try:
        host = connection.get_option("host")
    except AnsibleConnectionError:
        host = None
    return "switch %s" % host.strip() if isinstance(host, str) and host.strip() else "the switch"


def module_connection(module: Any) -> Any:
    """The connection a switch module talks through: the connection plugin the collection's action made in the worker
    (``gpufabric_connection``, plugin_utils/_nvue_action.py), else the persistent connection at the module's socket.
    Either answers the same calls and raises ansible.module_utils.connection's ConnectionError."""
    given = getattr(module, "gpufabric_connection", None)
    if given is not None:
        return given
    socket_path = getattr(module, "_socket_path", None)
    if not socket_path:
        raise NvueError("this module talks to a switch over ansible.netcommon.httpapi (the NVUE REST API) or "
                        "ansible.netcommon.network_cli (nv over SSH) with ansible_network_os gpufabric.mlnx.nvue; "
                        "the task's connection is neither", parameter="ansible_connection")
    return Connection(socket_path)


def httpapi_switch(connection: Any) -> RestSwitch:
    """A RestSwitch over a module's httpapi connection, named after the address it talks to."""
    return RestSwitch(httpapi_request(connection), name=connection_name(connection))


def auto_save_of(data: Any, where: str) -> bool:
    """Auto-save from the applied ``system/config/auto-save`` object, in either release's spelling (``enable
    on|off`` 5.4-5.9, ``state enabled|disabled`` from 5.10; _nvue_keys): absent (a release before auto-save, or the
    object not set) is off; any other answer is one the core does not know."""
    if data is None or data == {}:
        return False
    try:
        on = flag(data, AUTO_SAVE) if isinstance(data, dict) else None
    except MlnxError as err:
        raise NvueError("%s answered %s: %s" % (where, shown(data), err)) from None
    if on is None:
        raise NvueError("%s answered %s: not an auto-save setting (state enabled|disabled, or enable on|off before "
                        "Cumulus Linux 5.10)" % (where, shown(data)))
    return on


def _query(params):
    return ("?" + "&".join("%s=%s" % kv for kv in params.items())) if params else ""


def _detail(data):
    if isinstance(data, dict):
        for key in ("detail", "message", "title"):
            if isinstance(data.get(key), str) and data[key].strip():
                return " (the switch says: %s)" % data[key].strip()
    if isinstance(data, str) and data.strip() and len(data) < 300 and "<" not in data:
        return " (the switch says: %s)" % data.strip()
    return ""


# ---------------------------------------------------------------- what to do

def issues(state: dict) -> list[dict]:
    """The issues of a revision state, in order: ``[{"code", "message", "location", "reason", "severity"}]``."""
    transition = state.get("transition") if isinstance(state, dict) else None
    raw = transition.get("issue") if isinstance(transition, dict) else None
    items = raw.values() if isinstance(raw, dict) else (raw if isinstance(raw, list) else [])
    out = []
    for issue in items:
        if not isinstance(issue, dict):
            continue
        data = issue.get("data") if isinstance(issue.get("data"), dict) else {}
        out.append({"code": issue.get("code"), "message": issue.get("message"), "severity": issue.get("severity"),
                    "location": data.get("location"), "reason": data.get("reason")})
    return out


def _is_no_diff(state):
    return any(NO_DIFF in str(i.get("message") or "") for i in issues(state))


def _refusal(switch, rev, state):
    name = state.get("state")
    found = issues(state)
    words = "; ".join(
        (i["message"] or i["reason"] or i["code"] or "no message").strip()
        + (" (location %s)" % i["location"] if i["location"] and i["location"] not in str(i["message"]) else "")
        for i in found) or "no issue given"
    progress = ((state.get("transition") or {}).get("progress") or "").strip()
    hint = {
        "ays_fail": " - the apply raised a warning that needed a yes/no answer and got none (assume_yes=false); "
                    "nothing was applied",
        "invalid": " - nothing was applied",
    }.get(name, "")
    return NvueError("%s refused revision %s: state %s%s: %s%s" % (
        switch.name, rev, name, (" (%s)" % progress) if progress else "", words, hint),
        parameter=next((i["location"] for i in found if i["location"]), None))


def wait(switch: Switch, rev: str, timeout: float, interval: float, clock=time.monotonic, sleep=time.sleep, *,
         auto_save: bool = False, retries: int = UNANSWERED_RETRIES) -> dict:
    """Poll revision ``rev`` until it ends; its last state. The end is ``applied_and_saved``, ``applied`` (unless
    ``auto_save``: then ``applied`` is the step before ``applied_and_saved`` and is waited out), or a failure
    state (NvueError with the switch's words). A poll the switch does not answer is read again, ``retries`` times
    in a row at most; then, or when ``timeout`` seconds are over, :class:`ApplyUnfinished` names the revision to
    watch and the last state read: the switch may still be applying it."""
    deadline = clock() + timeout
    missed, last, state = 0, None, None
    while True:
        try:
            state = switch.revision(rev)
            missed, last = 0, state.get("state")
        except NvueError as err:
            if not unanswered(err):
                raise
            missed += 1
            if missed > retries:
                raise ApplyUnfinished(
                    "%s stopped answering while applying revision %s (%d polls in a row without an answer; last "
                    "state read: %s): the switch may still apply it - watch revision %s (nv config history, GET "
                    "%s/revision/%s); the last error: %s" % (switch.name, rev, missed, last or "none", rev, rev,
                                                             PREFIX, err), revision=rev, state=last) from err
        else:
            if last == "applied_and_saved" or (last == "applied" and not auto_save):
                return state
            if last in FAILED:
                if _is_no_diff(state):
                    return state
                raise _refusal(switch, rev, state)
        if clock() >= deadline:
            if last == "applied" and auto_save:
                raise ApplyUnfinished(
                    "%s applied revision %s, but its auto-save had not saved it after %g s (state applied, not "
                    "applied_and_saved): the configuration is applied, not yet the startup configuration - watch "
                    "revision %s, or nv config save" % (switch.name, rev, timeout, rev),
                    revision=rev, state=last, parameter="timeout")
            raise ApplyUnfinished(
                "%s: revision %s is still in state %r after %g s: the apply did not finish within the timeout and the "
                "switch may still complete it - watch revision %s (nv config history, GET %s/revision/%s), or raise "
                "timeout" % (switch.name, rev, last, timeout, rev, PREFIX, rev),
                revision=rev, state=last, parameter="timeout")
        sleep(interval)


def plan_tree(config: Any, replace: list[str], unset: list[str]) -> tuple[dict, list[list[str]], list[list[str]]]:
    """Check the desired state before anything is sent: ``(config, replace segments, unset segments)``."""
    if config is None:
        config = {}
    if not isinstance(config, dict):
        raise NvueError("config: must be an NVUE tree from the root (an object such as {\"qos\": {\"roce\": ...}}), "
                        "not %s" % type(config).__name__, parameter="config")
    check_tree(config, "config")
    replaced = [check_path(p, "replace") for p in replace or []]
    unsets = [check_path(p, "unset") for p in unset or []]
    for segments in replaced:
        if not segments:
            raise NvueError("replace: '/' would replace the whole configuration (the management interface "
                            "included); name the subtrees to replace", parameter="replace")
        if at(config, segments) is None:
            raise NvueError("replace: %s is not in config: a replaced subtree becomes exactly what config holds there"
                            % ("/" + "/".join(segments)), parameter="replace")
    for segments in unsets:
        if not segments:
            raise NvueError("unset: '/' would unset the whole configuration; name the subtrees", parameter="unset")
        if at(config, segments) is not None:
            raise NvueError("unset: %s is also set in config" % ("/" + "/".join(segments)), parameter="unset")
    if not config and not unsets:
        raise NvueError("config: nothing to configure (config is empty and unset names nothing)", parameter="config")
    return config, replaced, unsets


def tree_diff(old: Any, new: Any) -> list:
    """What turns configuration ``old`` into ``new``, as ``[{"set": tree}, {"unset": tree}]`` (each only when not
    empty; an unset key is ``None``): the diff of two trees the switch gave, compared key by key."""
    sets, unsets = _tree_changes(old, new)
    return ([{"set": sets}] if sets else []) + ([{"unset": unsets}] if unsets else [])


def _tree_changes(old, new):
    sets, unsets = {}, {}
    old = old if isinstance(old, dict) else {}
    for key, value in new.items():
        if isinstance(value, dict) and isinstance(old.get(key), dict):
            sub_set, sub_unset = _tree_changes(old[key], value)
            if sub_set:
                sets[key] = sub_set
            if sub_unset:
                unsets[key] = sub_unset
        elif key not in old or old[key] != value:
            sets[key] = copy.deepcopy(value)
    for key in old:
        if key not in new:
            unsets[key] = None
    return sets, unsets


def predict(applied: dict, config: dict, replaced: list[list[str]], unsets: list[list[str]]) -> dict:
    """The configuration a revision would hold: ``applied`` with the replaced and unset subtrees cleared and
    ``config`` merged in - NVUE's documented PATCH (objects merge, a value replaces) and unset (DELETE)."""
    out = copy.deepcopy(applied)
    for segments in list(replaced) + list(unsets):
        parent = at(out, segments[:-1]) if len(segments) > 1 else out
        if isinstance(parent, dict):
            parent.pop(segments[-1], None)
    return merge(out, config)


def configure(switch: Switch, config: Any, *, replace: list[str] | None = None, unset: list[str] | None = None,
              check_mode: bool = False, assume_yes: bool = True, save: bool = True, timeout: float = 120.0,
              interval: float = 1.0, sleep=time.sleep, clock=time.monotonic) -> dict:
    """Bring the switch to ``config`` in one revision; see the module docstring for the rules. The result:
    ``changed``, ``revision`` (None when none was made), ``state``, ``saved``, ``nvue_diff`` (applied -> revision),
    ``before``/``after`` (the applied configuration and the revision, cut to what the diff touches).

    The NVUE API documents no way to discard a revision (no DELETE on /revision/<id>; docs/leaves.md): so a revision
    is made only to be applied. What it would change is first predicted from the applied configuration (one read):
    nothing - a compliant switch - ends there, and check mode reports the prediction without a revision. A run that
    applies stages the revision, and the switch's own copy of it decides: compared with the applied configuration,
    and the switch's ``?diff=`` answer must agree (an answer of an unknown shape, or one that disagrees, fails the
    task). A revision the switch holds identical to the applied configuration is applied all the same, so that it
    ends (NVUE: "config apply executed with no config diff") instead of staying pending."""
    config, replaced, unsets = plan_tree(config, replace or [], unset or [])
    applied = _config(switch, "applied")
    wanted = predict(applied, config, replaced, unsets)
    predicted = tree_diff(applied, wanted)
    result = {"changed": bool(predicted), "revision": None, "nvue_diff": mask(predicted), "state": None,
              "saved": False, "before": {}, "after": {}}
    if not predicted:
        return result
    pattern = diff_shape(predicted)
    result["before"] = mask(cut(applied, pattern))
    result["after"] = mask(cut(wanted, pattern))
    if check_mode:
        return result
    rev = switch.new_revision()
    try:
        for segments in replaced:
            switch.clear(rev, segments)
        for segments in unsets:
            switch.clear(rev, segments)
        if config:
            switch.stage(rev, config)
    except NvueError as err:
        err.msg = "%s (revision %s is left pending and is not applied)" % (err.msg, switch.staged_id(rev))
        raise
    rev = switch.staged_id(rev)
    result["revision"] = rev
    staged = _config(switch, rev)
    applied = _config(switch, "applied")  # again: the revision's base is the applied configuration of now
    change = tree_diff(applied, staged)
    said = switch.diff(rev)
    if diff_is_empty(said) != (not change):
        raise NvueError("%s: revision %s and the applied configuration differ in %s, but the switch's diff of them "
                        "says %s: the switch's answers disagree, nothing was applied (revision %s is left pending)"
                        % (switch.name, rev, shown(mask(change)) if change else "nothing",
                           shown(mask(said)) if said else "no difference", rev))
    pattern = diff_shape(change)
    result.update(changed=bool(change), nvue_diff=mask(change),
                  before=mask(cut(applied, pattern)) if change else {},
                  after=mask(cut(staged, pattern)) if change else {})
    auto_save = switch.auto_save()
    _apply_when_free(switch, rev, assume_yes, clock() + timeout, interval, clock, sleep)
    state = wait(switch, rev, timeout, interval, clock=clock, sleep=sleep, auto_save=auto_save)
    result["state"] = state.get("state")
    if state.get("state") in FAILED or not change:
        # the no-diff apply: the switch held the revision identical to applied (another client made the change)
        result["changed"] = False
        return result
    if result["state"] == "applied_and_saved":
        result["saved"] = True
    elif save:
        switch.save()
        result["saved"] = True
    # what this revision changes must hold in the applied configuration (another client's change to other keys,
    # applied meanwhile, is not this task's to judge)
    left = tree_diff(cut(_config(switch, "applied"), pattern), cut(staged, pattern))
    if left:
        raise NvueError("%s applied revision %s, but the applied configuration still differs from it: %s"
                        % (switch.name, rev, shown(mask(left))))
    return result


def _apply_when_free(switch, rev, assume_yes, deadline, interval, clock, sleep):
    """Ask the switch to apply ``rev``; while it answers 409 (another client's revision is applying) ask again
    until ``deadline``: a revision told busy would otherwise stay pending, as no call discards it."""
    while True:
        try:
            switch.apply(rev, assume_yes)
            return
        except NvueError as err:
            if err.rc != 409:
                raise   # what the switch made of the apply is in its words; nothing is assumed
            if clock() >= deadline:
                err.msg = "%s (revision %s is left pending and is not applied)" % (err.msg, rev)
                raise
        sleep(interval)


def _config(switch: Switch, rev: str) -> dict:
    """The whole configuration of revision ``rev`` as set; NvueError when the switch answers anything but an object."""
    data = switch.get([], rev)
    if not isinstance(data, dict):
        raise NvueError("%s answered %s for the configuration of revision %s: not an NVUE tree (an object)"
                        % (switch.name, shown(data), rev))
    return data


# ---------------------------------------------------------------- reading a switch (nvue_info)

GATHER = ("system", "image", "interfaces", "qos", "revisions", "config", "phy")
# What nvue_info reads unless told: everything but the whole configuration (config), which only a snapshot needs, and
# the ports' PHY counters (phy, one request per port), which only the validation gate's bit-error-rate check needs.
DEFAULT_GATHER = ("system", "image", "interfaces", "qos", "revisions")


def _text(value):
    return None if value is None else str(value)


def _int_or_none(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _state_word(state):
    """``{"up": {}}`` -> ``up``; a plain word stays."""
    if isinstance(state, dict) and len(state) == 1:
        return next(iter(state))
    return _text(state)


def _lldp(node):
    out = []
    neighbors = ((node.get("lldp") or {}).get("neighbor") if isinstance(node.get("lldp"), dict) else None) or {}
    for key, entry in sorted(neighbors.items()) if isinstance(neighbors, dict) else ():
        entry = entry if isinstance(entry, dict) else {}
        chassis = entry.get("chassis") if isinstance(entry.get("chassis"), dict) else {}
        port = entry.get("port") if isinstance(entry.get("port"), dict) else {}
        out.append({"system_name": _text(chassis.get("system-name") or key),
                    "chassis_id": _text(chassis.get("chassis-id")),
                    "port": _text(port.get("name") or port.get("id")), "description": _text(port.get("description"))})
    return out


def interfaces_view(tree: Any) -> dict:
    """The swp ports of an operational ``/interface`` tree: state, speed, MTU, protodown, LLDP neighbours."""
    out = {}
    for name, node in sorted((tree or {}).items()) if isinstance(tree, dict) else ():
        if not isinstance(node, dict) or (node.get("type") not in (None, "swp") and not name.startswith("swp")):
            continue
        if node.get("type") not in ("swp", None):
            continue
        link = node.get("link") if isinstance(node.get("link"), dict) else {}
        protodown = link.get("protodown")
        out[name] = {
            "admin_status": _text(link.get("admin-status") or _state_word(link.get("state"))),
            "oper_status": _text(link.get("oper-status")),
            "speed": _text(link.get("speed")),
            "mtu": _int_or_none(link.get("mtu")),
            "protodown": protodown in ("enabled", True, "on"),
            "protodown_reason": _text(link.get("protodown-reason")),
            "description": _text(node.get("description")),
            "lldp": _lldp(node),
        }
    return out


def gather(switch: Switch, subsets: Any = DEFAULT_GATHER, ports: Any = None) -> dict:
    """What the leaf gate and the reports read of a switch, one request per subset (two for revisions and config;
    for phy, one per port plus the release and the port list, each shared with system and interfaces when those
    are gathered too). ``ports`` (phy only): the swp ports whose PHY counters to read, default every one."""
    subsets = list(subsets)
    unknown = [s for s in subsets if s not in GATHER]
    if unknown:
        raise NvueError("gather: %s not known (allowed: %s)" % (", ".join(map(str, unknown)), ", ".join(GATHER)),
                        parameter="gather")
    if ports is not None and "phy" not in subsets:
        raise NvueError("%s: ports names the ports whose PHY counters gather phy reads; gather has no phy (%s)"
                        % (switch.name, ", ".join(subsets) or "nothing"), parameter="ports")
    ports = check_ports(ports, switch.name)   # before any request
    out = {}
    version = None
    if "system" in subsets or "phy" in subsets:
        version = switch.get(["system", "version"], "operational", filled=True)
        version = version if isinstance(version, dict) else {}
    if "system" in subsets:
        image = version.get("image") if isinstance(version.get("image"), dict) else {}
        out["system"] = {"release": _text(version.get("product-release")), "build_id": _text(image.get("build-id")),
                         "build_date": _text(image.get("build-date")), "kernel": _text(version.get("kernel"))}
    if "image" in subsets:
        image = switch.get(["system", "image"], "operational", filled=True) or {}
        partitions = {}
        for key, value in sorted(image.items()):
            match = re.fullmatch(r"partition(\d)", key)
            if match and isinstance(value, dict):
                partitions[match.group(1)] = {"release": _text(value.get("release")),
                                              "build_id": _text(value.get("build-id"))}
        out["image"] = {"current": _text(image.get("current")), "next": _text(image.get("next")),
                        "partitions": partitions, "files": sorted((image.get("files") or {}).keys())
                        if isinstance(image.get("files"), dict) else []}
    interfaces = None
    if "interfaces" in subsets or "phy" in subsets:
        interfaces = interfaces_view(switch.get(["interface"], "operational", filled=True))
    if "interfaces" in subsets:
        out["interfaces"] = interfaces
    if "qos" in subsets:
        roce = switch.get(["qos", "roce"], "operational", filled=True) or {}
        try:  # enable on|off before Cumulus Linux 5.15, state enabled|disabled from it (_nvue_keys)
            enabled = flag(roce, ("qos", "roce"), default=False)
        except MlnxError as err:
            raise NvueError("%s: the operational qos roce answer %s: %s" % (switch.name, shown(roce), err)) from None
        out["qos"] = {"roce": roce, "applied": switch.get(["qos"], "applied", filled=True) or {},
                      "enabled": enabled, "mode": _text(roce.get("mode")) if enabled else None}
    if "revisions" in subsets:
        revisions = switch.revisions()
        pending = sorted((str(k) for k, v in revisions.items() if isinstance(v, dict) and v.get("state") == "pending"),
                         key=lambda k: (len(k), k))
        unsaved = switch.diff("applied", base="startup")
        out["revisions"] = {"pending": pending, "unsaved": not diff_is_empty(unsaved), "unsaved_diff": mask(unsaved)}
    if "config" in subsets:
        # the whole configuration as set (defaults not filled), applied and startup: what a snapshot keeps
        out["config"] = {rev: mask(switch.get([], rev) or {}) for rev in ("applied", "startup")}
    if "phy" in subsets:
        out.update(phy(switch, _text(version.get("product-release")), sorted(interfaces, key=port_order), ports))
    return out


def phy(switch: Switch, release: Any, swp_ports: list[str], ports: list[str] | None = None) -> dict:
    """``{"phy": {port: counters | None}, "phy_unavailable": {port: reason}}``: the PHY counters of ``ports`` (default
    ``swp_ports``, the switch's swp ports) read one request per port at the release's path (``_nvue_phy``), each
    answer parsed by ``_nvue_phy.parse_phy`` (an answer it does not recognise fails naming the switch, the port, the
    field and the value). A port the switch has no counters for (404, an empty answer: Spectrum-1, before 5.10) is
    None with its reason in ``phy_unavailable``; a port the switch does not have is an error naming it."""
    if ports is not None:
        absent = [p for p in ports if p not in swp_ports]
        if absent:
            raise NvueError("%s: ports: %s %s not a swp port of the switch (its swp ports: %s)" % (
                switch.name, ", ".join(absent), "is" if len(absent) == 1 else "are",
                ", ".join(swp_ports) or "none"), parameter="ports", allowed=list(swp_ports))
    path = phy_path(release, switch.name)
    counters, unavailable = {}, {}
    for port in swp_ports if ports is None else ports:
        found = parse_phy(switch.get(["interface", port] + list(path), "operational", filled=True),
                          switch=switch.name, port=port)
        counters[port] = found
        if found is None:
            unavailable[port] = unavailable_reason(release, path)
    return {"phy": counters, "phy_unavailable": unavailable}
