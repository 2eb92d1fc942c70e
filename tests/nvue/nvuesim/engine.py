# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NVUE API without HTTP: routing of (method, path, query, body) to the revision engine, the views and
the image actions. The REST server and the unix socket server (the CLI's) both call ``Engine.handle``."""
import copy
import os
import threading
import time
from urllib.parse import parse_qs

from . import images, model, operational, schema, tree
from .store import Store

TERMINAL = ("applied", "applied_and_saved", "invalid", "ays_fail", "failed")
REV_NAMES = ("applied", "startup", "pending", "operational")


class ApiError(Exception):
    def __init__(self, status, message, **extra):
        super().__init__(message)
        self.status = status
        # The specification's error (schema-shared-error, tests/nvue/spec): {"message": string}; the HTTP status
        # says the rest. What else a real switch adds is not documented, so nothing else is sent.
        self.body = {"message": message}
        self.body.update(extra)


def public(rev):
    return {"state": rev["state"], "transition": {"issue": copy.deepcopy(rev.get("issue", {})),
                                                  "progress": rev.get("progress", "")}}


def _issue(code, message, location=None, reason=None):
    data = {"location": location, "reason": reason} if location else {}
    return {"0": {"code": code, "data": data, "message": message, "severity": "error"}}


class Engine:
    def __init__(self, state_dir, on_reboot=None):
        self.store = Store(state_dir)
        self.on_reboot = on_reboot          # callable(seconds) from the server: close the port, boot, reopen
        self.on_applied = None              # callable() after applied changed (an apply, a boot): the lab provider
        self._threads = []

    # ------------------------------------------------------------------ dispatch
    def handle(self, method, raw_path, raw_query, body, client, user=None):
        """-> (status, json body). Raises ApiError for 4xx."""
        query = {k: v[-1] for k, v in parse_qs(raw_query or "", keep_blank_values=True).items()}
        path = raw_path.split("?", 1)[0]
        if path.startswith("/_nvuesim/"):
            if client != "cli":
                raise ApiError(404, "no such path %s" % path)
            return self._private(method, tree.split_path(path)[1:], query, body, user)
        if not (path == "/nvue_v1" or path.startswith("/nvue_v1/")):
            raise ApiError(404, "no such path %s (the API is under /nvue_v1)" % path)
        keys = tree.split_path(path[len("/nvue_v1"):])
        if keys[:1] == ["revision"]:
            return self._revision(method, keys[1:], query, body, client, user)
        if keys[:1] == ["action"] and method == "GET" and len(keys) == 2:
            return self._action_get(keys[1], client)
        if method == "GET":
            return 200, self.read(keys, query, client, user)
        if method == "PATCH" and "rev" not in query and keys == ["system", "image"]:
            return self.boot_next(body, client)
        if method in ("PATCH", "DELETE"):
            return 200, self.stage(method, keys, query, body, client)
        if method == "POST":
            return self.action(keys, body, client)
        raise ApiError(405, "method %s is not supported on %s" % (method, path))

    # ------------------------------------------------------------------ reads
    def _config_of(self, state, rev, user=None, client="rest"):
        if rev == "applied":
            return state["applied"]
        if rev == "startup":
            return state["startup"]
        if rev == "pending":
            rid = self._pending_id(state, user, client)
            return state["revisions"][rid]["config"] if rid else state["applied"]
        if rev in state["revisions"]:
            return state["revisions"][rev]["config"]
        raise ApiError(404, "revision %r does not exist (use applied, startup, pending, operational or an id)" % rev)

    @staticmethod
    def _pending_id(state, user, client):
        """rev=pending: the CLI user's session revision; for REST the newest pending revision (invented)."""
        if client == "cli":
            rid = state["cli_sessions"].get(user or "cumulus")
            return rid if rid in state["revisions"] and state["revisions"][rid]["state"] == "pending" else None
        pending = [int(r) for r, v in state["revisions"].items() if v["state"] == "pending" and r.isdigit()]
        return str(max(pending)) if pending else None

    def read(self, keys, query, client, user=None):
        rev = query.get("rev", "operational") or "operational"
        filled = query.get("filled", "true").lower() != "false"
        with self.store.transaction() as tx:
            state = tx.state
            tx.event("read", client, path="/" + "/".join(keys), rev=rev,
                     **({"diff": query["diff"]} if "diff" in query else {}))
            if "diff" in query:
                if rev == "operational" or query["diff"] == "operational":
                    raise ApiError(400, "diff: compare two configuration revisions, not operational")
                old = tree.get(self._config_of(state, rev, user, client), keys, {})
                new = tree.get(self._config_of(state, query["diff"], user, client), keys, {})
                if client == "cli":
                    return tree.diff_list(old, new)   # nv config diff -o json: the list NVUE-CLI.md shows
                return tree.diff_tree(old, new)       # the specification: the root configuration schema
            if rev == "operational" and len(keys) > 3 and keys[0] == "interface" \
                    and tuple(keys[2:]) in operational.PHY_PATHS:
                # a port's PHY counters: answered alone, not part of the interface's tree (the samples of
                # nv show interface <swp> show no phy-detail under link) [invented]
                doc = operational.phy_answer(state, keys[1], keys[2:])
                if doc is None:
                    raise ApiError(404, "The requested object /%s does not exist in rev %s" % ("/".join(keys), rev))
                return doc
            if rev == "operational":
                doc = operational.view(state)
            else:
                config = self._config_of(state, rev, user, client)
                doc = (model.filled(config, state if rev == "applied" else None, model.running(state)["release"])
                       if filled else config)
            try:
                return copy.deepcopy(tree.get(doc, keys))
            except KeyError:
                raise ApiError(404, "The requested object /%s does not exist in rev %s" % ("/".join(keys), rev))

    # ------------------------------------------------------------------ staging
    def stage(self, method, keys, query, body, client):
        rid = query.get("rev")
        if not rid:
            raise ApiError(400, "%s /%s needs ?rev=<pending revision id>" % (method, "/".join(keys)))
        with self.store.transaction() as tx:
            rev = tx.state["revisions"].get(rid)
            if rev is None:
                raise ApiError(404, "revision %s does not exist" % rid)
            if rev["state"] != "pending":
                raise ApiError(400, "revision %s is %s: only a pending revision takes changes" % (rid, rev["state"]))
            release = model.running(tx.state)["release"]
            staged = copy.deepcopy(rev["config"])
            try:
                if method == "PATCH":
                    result = tree.patch_at(staged, keys, body)
                else:
                    tree.delete_at(staged, keys)
                    result = {}
            except ValueError as exc:
                raise ApiError(400, str(exc)) from None
            problem = model.staged_problem(staged, release)
            if problem:   # the schema refuses it when staged; the revision keeps what it had [invented wording]
                raise ApiError(400, problem)
            objections = schema.problems(keys, body, release) if method == "PATCH" else []
            if objections:   # the specification's schema (tests/nvue/spec) judges the body [invented wording]
                raise ApiError(400, "Invalid config: " + "; ".join(objections[:3]))
            rev["config"] = staged
            tx.event("stage", client, op=method.lower(), path="/" + "/".join(keys), rev=rid)
            return copy.deepcopy(result) if result is not None else {}

    # ------------------------------------------------------------------ revisions
    def _revision(self, method, keys, query, body, client, user):
        if not keys:
            if method == "POST":   # the specification: 201, the new revision keyed by its id
                return 201, self.create_revision(query.get("base_rev", "applied"), client, user)
            if method == "GET":
                with self.store.transaction() as tx:
                    tx.event("read", client, path="/revision", rev="")
                    return 200, {r: public(v) for r, v in tx.state["revisions"].items()}
            raise ApiError(405, "method %s is not supported on /revision" % method)
        rid = keys[0]
        if method == "GET":
            with self.store.transaction() as tx:
                tx.event("read", client, path="/revision/" + rid, rev=rid)
                rev = tx.state["revisions"].get(rid)
                if rev is None:
                    raise ApiError(404, "revision %s does not exist" % rid)
                return 200, public(rev)
        if method == "PATCH":
            body = body if isinstance(body, dict) else {}
            wanted = body.get("state")
            ays = (body.get("auto-prompt") or {}).get("ays") == "ays_yes"
            if rid == "applied" and wanted == "save":
                return 200, self.save(client)
            if wanted == "apply":
                return 200, self.apply(rid, ays, client)
            raise ApiError(400, "revision %s: state %r is not supported (apply; save on applied)" % (rid, wanted))
        raise ApiError(405, "method %s is not supported on /revision/%s" % (method, rid))

    def create_revision(self, base, client, user=None):
        with self.store.transaction() as tx:
            st = tx.state
            if base in ("applied", "startup"):
                config = st[base]
            elif base in st["revisions"]:
                config = st["revisions"][base]["config"]
            else:
                raise ApiError(400, "base_rev %r: applied, startup or an existing revision id" % base)
            rid = str(st["next_rev"])
            st["next_rev"] += 1
            st["revisions"][rid] = {"state": "pending", "issue": {}, "progress": "", "base": base,
                                    "base_serial": st["counters"]["applied"], "config": copy.deepcopy(config),
                                    "base_config": copy.deepcopy(config), "client": client, "user": user,
                                    "created": time.time()}
            tx.event("revision", client, created=rid, base=base)
            return {rid: public(st["revisions"][rid])}

    def discard(self, rid, client):
        """``nv config detach`` (the CLI, over the private socket): drop the session's pending revision. The REST
        API has no such call: /revision/<id> takes GET and PATCH only (tests/nvue/spec)."""
        with self.store.transaction() as tx:
            rev = tx.state["revisions"].get(rid)
            if rev is None:
                raise ApiError(404, "revision %s does not exist" % rid)
            if rev["state"] != "pending":
                raise ApiError(400, "revision %s is %s: only a pending revision can be discarded" % (rid, rev["state"]))
            del tx.state["revisions"][rid]
            for u, r in list(tx.state["cli_sessions"].items()):
                if r == rid:
                    del tx.state["cli_sessions"][u]
            tx.event("discard", client, rev=rid)
            return {}

    def save(self, client):
        with self.store.transaction() as tx:
            tx.state["startup"] = copy.deepcopy(tx.state["applied"])
            tx.event("save", client)
            return {"state": "save", "transition": {"issue": {}, "progress": ""}}

    def apply(self, rid, ays, client):
        with self.store.transaction() as tx:
            st = tx.state
            rev = st["revisions"].get(rid)
            if rev is None:
                raise ApiError(404, "revision %s does not exist" % rid)
            busy = [r for r, v in st["revisions"].items() if v["state"] == "apply"]
            if busy:
                raise ApiError(409, "revision %s is being applied; apply %s again when it has finished"
                               % (busy[0], rid), applying=busy[0])
            if rev["state"] != "pending":
                raise ApiError(400, "revision %s is %s: only a pending revision can be applied" % (rid, rev["state"]))
            rev.update(state="apply", ays=ays, progress="", issue={}, client=client)
            st["counters"]["applies"] += 1
            tx.event("apply", client, rev=rid, requested=True, ays=ays)
            seconds = float(st["settings"]["apply_seconds"])
            slow = float(st["faults"].get("slow_apply", 0))
        self._spawn(self._finish_apply, rid, seconds, slow)
        return public(rev)

    def resume(self):
        """At nvued start: finish what a stopped nvued left (an apply in flight, a reboot)."""
        state = self.store.load()
        for rid, rev in state["revisions"].items():
            if rev["state"] == "apply":
                self._spawn(self._finish_apply, rid, 0)
        if state["boot"].get("rebooting"):
            self.complete_boot()

    def _spawn(self, fn, *args):
        t = threading.Thread(target=fn, args=args, daemon=True)
        t.start()
        self._threads.append(t)

    def _finish_apply(self, rid, seconds, slow=0.0):
        time.sleep(seconds)
        # the fault's extra time, cut short when the fault is cleared (`nvuesim fault clear slow_apply`): a test holds
        # an apply in flight for as long as it needs, not for a guess of how long its run takes to reach the switch
        end = time.monotonic() + slow
        while time.monotonic() < end and "slow_apply" in self.store.load()["faults"]:
            time.sleep(min(0.25, max(0.0, end - time.monotonic())))
        with self.store.transaction() as tx:
            st = tx.state
            rev = st["revisions"].get(rid)
            if rev is None or rev["state"] != "apply":
                return
            client = rev.get("client", "rest")
            if rev["base"] == "applied" and rev["base_serial"] != st["counters"]["applied"]:
                new = tree.replay(st["applied"], rev["base_config"], rev["config"])   # [invented] stale base
                rev["config"] = new
            else:
                new = rev["config"]
            if new == st["applied"]:
                rev.update(state="failed", progress="",
                           issue=_issue("apply_failed", "config apply executed with no config diff"))
            else:
                problem = model.validate(new, st["faults"], model.running(st)["release"])
                warns = model.warnings(st, new)
                if problem:
                    loc, reason = problem
                    rev.update(state="invalid", progress="Invalid config",
                               issue=_issue("config_invalid", "Config invalid at %s: %s" % (loc, reason), loc, reason))
                elif warns and not rev.get("ays"):
                    rev.update(state="ays_fail", progress="Aborted apply after warnings",
                               issue=_issue("client_timeout", "Timeout while waiting for client response"),
                               warnings=warns)
                else:
                    st["applied"] = copy.deepcopy(new)
                    st["applied_rev"] = rid
                    st["first_apply_done"] = True
                    st["counters"]["applied"] += 1
                    saved = model.auto_save_on(st)
                    if saved:
                        st["startup"] = copy.deepcopy(new)
                    rev.update(state="applied_and_saved" if saved else "applied", progress="", issue={})
            for u, r in list(st["cli_sessions"].items()):
                if r == rid:
                    del st["cli_sessions"][u]
            rev["finished"] = time.time()
            details = {"rev": rid}
            if rev["issue"]:
                details["issue"] = rev["issue"]["0"]["message"]
                loc = rev["issue"]["0"]["data"].get("location")
                if loc:
                    details["location"] = loc
            tx.event(rev["state"], client, **details)
        if rev["state"] in ("applied", "applied_and_saved") and self.on_applied:
            self.on_applied()

    def wait(self):
        for t in list(self._threads):
            t.join()

    # ------------------------------------------------------------------ actions
    def _new_action(self, st, kind, **extra):
        aid = st["next_action"]
        st["next_action"] += 1
        st["actions"][str(aid)] = {"state": "start", "status": "", "percentage": 0, "kind": kind, **extra}
        return aid

    def _set_action(self, aid, **fields):
        with self.store.transaction() as tx:
            tx.state["actions"][str(aid)].update(fields)
            tx.touch()

    def _action_get(self, aid, client):
        with self.store.transaction() as tx:
            tx.event("read", client, path="/action/" + aid, rev="")
            act = tx.state["actions"].get(aid)
            if act is None:
                raise ApiError(404, "action %s does not exist" % aid)
            return 200, {k: v for k, v in act.items() if k in ("state", "status", "percentage", "detail")}

    @staticmethod
    def _action_body(body, name):
        if not isinstance(body, dict) or set(body) != {name}:
            raise ApiError(400, "expected a body {%r: {\"state\": \"start\", \"parameters\": {...}}}" % name)
        spec = body[name] if isinstance(body[name], dict) else {}
        if spec.get("state") != "start":
            raise ApiError(400, "%s: state must be \"start\"" % name)
        return spec.get("parameters") or {}

    def action(self, keys, body, client):
        if keys == ["system", "image"]:
            params = self._action_body(body, "@fetch")
            url = params.get("remote-url")
            if not isinstance(url, str) or not url:
                raise ApiError(400, "@fetch: parameters.remote-url is required")
            try:
                images.file_name(url)
            except images.ImageError as exc:
                raise ApiError(400, str(exc)) from None
            with self.store.transaction() as tx:
                aid = self._new_action(tx.state, "fetch")
                tx.event("fetch", client, url=url, action=aid)
            self._spawn(self._do_fetch, aid, url)
            return 201, aid
        if keys[:3] == ["system", "image", "files"] and len(keys) == 4:
            params = self._action_body(body, "@install")
            with self.store.transaction() as tx:
                if keys[3] not in tx.state["image"]["files"]:
                    raise ApiError(404, "image file %s was not fetched (nv action fetch system image <url>)" % keys[3])
                aid = self._new_action(tx.state, "install")
                tx.event("install", client, file=keys[3], action=aid, force=bool(params.get("force")))
            self._spawn(self._do_install, aid, keys[3], bool(params.get("force")), client)
            return 201, aid
        if keys == ["system"]:
            self._action_body(body, "@reboot")
            with self.store.transaction() as tx:
                st = tx.state
                aid = self._new_action(st, "reboot", state="running", status="Rebooting")
                seconds = float(st["settings"]["reboot_seconds"]) + float(st["faults"].get("reboot_slow", 0))
                st["boot"]["rebooting"] = {"since": time.time(), "action": aid}
                st["counters"]["reboots"] += 1
                tx.event("reboot", client, action=aid, next=st["image"]["next"])
            self._spawn(self._reboot, seconds)
            return 201, aid
        if keys[-1:] == ["counter"] or (body and isinstance(body, dict) and "@clear" in body):
            self._action_body(body, "@clear")
            with self.store.transaction() as tx:
                aid = self._new_action(tx.state, "clear", state="action_success", status="Cleared", percentage=100)
                tx.touch()
            return 201, aid
        raise ApiError(400, "POST /%s: no action here (POST /revision, @fetch, @install, @reboot)" % "/".join(keys))

    def _do_fetch(self, aid, url):
        self._set_action(aid, state="running", status="Fetching %s" % url, percentage=10)
        try:
            if self.store.load()["faults"].get("fetch_fail"):  # the repository is down, from this switch
                raise images.ImageError("fetch %s failed: [Errno 111] Connection refused" % url)
            name, path, size = images.download(url, self.store.images)
        except images.ImageError as exc:
            self._set_action(aid, state="action_error", status=str(exc), percentage=100)
            return
        try:
            header = images.parse(path)
        except images.ImageError:
            header = {}
        with self.store.transaction() as tx:
            tx.state["image"]["files"][name] = {"size": size, "release": header.get("release"),
                                                "build-id": header.get("build-id"),
                                                "build-date": header.get("build-date"), "url": url,
                                                "sha256": images.sha256_of(path)}
            tx.state["actions"][str(aid)].update(state="action_success", status="Fetched %s" % name, percentage=100)
            tx.touch()

    def _do_install(self, aid, name, force, client):
        self._set_action(aid, state="running", status="Installing %s" % name, percentage=10)
        time.sleep(float(self.store.load()["settings"].get("action_seconds", 0.05)))
        try:
            header = images.parse(os.path.join(self.store.images, name))
        except images.ImageError as exc:
            self._set_action(aid, state="action_error", status=str(exc), percentage=100)
            return
        with self.store.transaction() as tx:
            st = tx.state
            img = st["image"]
            other = "2" if img["current"] == "1" else "1"
            if header["release"] == model.running(st)["release"] and not force:
                st["actions"][str(aid)].update(state="action_error", percentage=100,
                                               status="image %s: release %s is already running (use force)"
                                               % (name, header["release"]))
                tx.touch()
                return
            img["partition" + other] = model.partition_for(header["release"], header["build-id"],
                                                           header.get("build-date"))
            img["next"] = other
            st["counters"]["installs"] += 1
            st["actions"][str(aid)].update(state="action_success", percentage=100,
                                           status="Installed %s %s into partition %s (next boot)"
                                           % (name, header["release"], other))
            tx.event("installed", client, file=name, release=header["release"], partition=other)

    def boot_next(self, body, client):
        nxt = body.get("next") if isinstance(body, dict) else None
        with self.store.transaction() as tx:
            img = tx.state["image"]
            if nxt == "other":
                nxt = "2" if img["current"] == "1" else "1"
            if nxt not in ("1", "2"):
                raise ApiError(400, "system image next: \"1\", \"2\" or \"other\", got %r" % (nxt,))
            if not img["partition" + nxt].get("release"):
                raise ApiError(400, "system image next: partition %s holds no image" % nxt)
            img["next"] = nxt
            tx.event("boot-next", client, next=nxt)
            return 200, {"next": nxt}

    def _reboot(self, seconds):
        if self.on_reboot:
            self.on_reboot(seconds)
        else:
            time.sleep(seconds)
            self.complete_boot()

    def complete_boot(self):
        with self.store.transaction() as tx:
            st = tx.state
            reb = st["boot"].pop("rebooting", None) or {}
            st["image"]["current"] = st["image"]["next"]
            st["applied"] = copy.deepcopy(st["startup"])
            st["revisions"] = {r: v for r, v in st["revisions"].items() if v["state"] in TERMINAL}
            st["cli_sessions"] = {}
            st["boot"]["booted_at"] = time.time()
            st["boot"]["count"] = st["boot"].get("count", 0) + 1
            if reb.get("action") is not None and str(reb["action"]) in st["actions"]:
                st["actions"][str(reb["action"])].update(state="action_success", status="Rebooted", percentage=100)
            tx.event("booted", "admin", release=model.running(st)["release"], partition=st["image"]["current"])
        if self.on_applied:
            self.on_applied()

    # ------------------------------------------------------------------ the CLI's private endpoints [invented]
    def _private(self, method, keys, query, body, user):
        user = user or "cumulus"
        if keys == ["session"] and method == "GET":
            st = self.store.load()
            return 200, {"rev": self._pending_id(st, user, "cli")}
        if keys == ["session"] and method == "PUT":
            with self.store.transaction() as tx:
                if body.get("rev") is None:
                    tx.state["cli_sessions"].pop(user, None)
                else:
                    tx.state["cli_sessions"][user] = str(body["rev"])
                tx.touch()
            return 200, {}
        if len(keys) == 2 and keys[0] == "revision" and method == "DELETE":
            return 200, self.discard(keys[1], "cli")
        if len(keys) == 2 and keys[0] == "warnings" and method == "GET":
            st = self.store.load()
            rev = st["revisions"].get(keys[1])
            if rev is None:
                raise ApiError(404, "revision %s does not exist" % keys[1])
            return 200, {"warnings": model.warnings(st, rev["config"])}
        raise ApiError(404, "no such private path")
