# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Taking Slurm nodes out of service for a rollout batch and giving them back (module slurm_node, role drain).

Run where Slurm's client commands reach the controller (the slurmctld host or a login node), as a user Slurm lets
update nodes (root or SlurmUser). Every command is an argv list:

- read: ``sinfo --noheader --Node --nodes=A,B --format=%N|%T|%E`` - one line per node and partition: the name, the
  extended state (lower case, as slurm 22.05 prints it: ``idle``, ``allocated``, ``mixed``, ``draining``,
  ``drained``, ``down*``, ``idle~`` ...; a trailing flag character), the reason (``none`` when there is none). A node
  Slurm does not know prints nothing (rc 0): an error naming it here, never "nothing to do". A state word this table
  does not know is an error naming the node and the word (fail closed).
- drain: ``scontrol update NodeName=A,B State=DRAIN Reason=<owner>: <reason>`` - Slurm starts no new job on the
  node; running jobs go on (``draining``) until they end (``drained``). Nothing is ever cancelled.
- wait: the nodes are read again every ``poll`` seconds until none has a job, or ``wait_timeout`` has passed; the
  jobs still running on a node are named (``squeue --noheader --nodelist=A --format=%i``).
- resume: ``scontrol update NodeName=A,B State=RESUME`` - only the nodes whose reason is this owner's: a node an
  administrator drained (another reason), or that is down, is left as it is.

Observed with Debian 12's slurm 22.05.8 (slurmctld, slurmd, sinfo, scontrol, squeue). A drain's reason replaces
the one before it, so a node already out of service keeps its own reason and is not taken over. The tests run it
against a real slurmctld and slurmd in the lab (molecule/fabric).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidParameter, MlnxError, ToolFailed

# A Slurm node name as this module accepts it: one name (no hostlist expression, no comma, no space).
NODE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", re.ASCII)
# The owner: a word that starts every reason this collection writes.
OWNER = re.compile(r"[A-Za-z][A-Za-z0-9._-]{0,31}", re.ASCII)
# A reason: printable ASCII on one line (Slurm keeps it as text; it is one argv word, never a shell's).
REASON = re.compile(r"[\x20-\x7e]{1,200}", re.ASCII)

# sinfo's extended states (slurm 22.05; a "+" joins two). BUSY: a job may still run there.
BUSY = frozenset(("allocated", "mixed", "completing", "draining", "failing", "perfctrs", "unknown"))
FREE = frozenset(("idle", "drained", "down", "fail", "maint", "reserved", "planned", "future", "inval",
                  "powered_down", "power_down", "powering_down", "powering_up", "reboot_issued",
                  "reboot_requested", "blocked", "cloud", "drain"))
# Out of service: Slurm starts no job there.
OUT = frozenset(("draining", "drained", "drain", "down", "fail", "failing"))
# The one flag character sinfo may put after a state: * not responding, ~ powered off, # powering up, ! pending
# power down, % powering down, $ maintenance, @ pending reboot, ^ reboot issued, - planned.
FLAGS = "*~#!%$@^-"
SLURM_CLIENT = "slurm-client (Debian and Ubuntu; slurm on RHEL from the site's Slurm build)"


class SlurmError(MlnxError):
    """Slurm said something this module does not accept, or a node it was asked about is not Slurm's."""


def _word_list(value, name, pattern, what) -> list[str]:
    if not isinstance(value, (list, tuple)) or not value:
        raise InvalidParameter("%s must be a non-empty list of %s" % (name, what), parameter=name)
    bad = [v for v in value if not isinstance(v, str) or not pattern.fullmatch(v)]
    if bad:
        raise InvalidParameter("%s: %s %s not %s" % (name, ", ".join(repr(b) for b in bad[:5]),
                                                     "is" if len(bad) == 1 else "are", what), parameter=name)
    return list(dict.fromkeys(value))


def check_params(nodes, owner, reason=None) -> tuple[list[str], str, str | None]:
    """The nodes, owner and reason, or InvalidParameter naming the parameter and what is allowed."""
    nodes = _word_list(nodes, "nodes", NODE,
                       "a Slurm node name (letters, digits, '.', '_', '-'; one name, not a hostlist expression)")
    if not isinstance(owner, str) or not OWNER.fullmatch(owner):
        raise InvalidParameter("owner %r is not a word (a letter, then letters, digits, '.', '_', '-'; at most 32)"
                               % (owner,), parameter="owner")
    if reason is not None and (not isinstance(reason, str) or not REASON.fullmatch(reason)):
        raise InvalidParameter("reason %r must be printable ASCII on one line, 1-200 characters" % (reason,),
                               parameter="reason")
    return nodes, owner, reason


def parse_state(node: str, word: str) -> dict:
    """``"draining"`` -> ``{"state": "draining", "busy": True, "out": True, "responding": True}``; raises
    SlurmError naming the node for a state this module does not know."""
    text = word.strip().lower()
    flag = text[-1] if text and text[-1] in FLAGS else ""
    parts = (text[:-1] if flag else text).split("+")
    unknown = [p for p in parts if p not in BUSY and p not in FREE]
    if not text or unknown:
        raise SlurmError("Slurm reports node %s in state %r, which gpufabric does not know (known: %s): nothing "
                         "was changed on it" % (node, word, ", ".join(sorted(BUSY | FREE))), device=node)
    return {"state": text, "busy": any(p in BUSY for p in parts), "out": any(p in OUT for p in parts),
            "responding": flag != "*"}


def is_ours(reason: str | None, owner: str) -> bool:
    return isinstance(reason, str) and (reason == owner or reason.startswith(owner + ":"))


class Slurm:
    """Slurm's client commands through ``run(argv) -> (rc, stdout, stderr)`` (the host layer's ``Host.run`` with
    check=False); ``sleep`` and ``clock`` replaceable for tests."""

    def __init__(self, run: Callable, *, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic):
        self._run = run
        self.sleep = sleep
        self.clock = clock

    def _call(self, argv: Sequence[str], nodes: Sequence[str]) -> str:
        rc, out, err = self._run(list(argv))
        if rc != 0:
            words = (err or out or "").strip().splitlines()
            last = words[-1] if words else "no output"
            raise ToolFailed("%s failed for %s (rc=%d): %s" % (" ".join(argv[:2]), ", ".join(nodes), rc, last),
                             device=list(nodes), cmd=list(argv), rc=rc, stdout=out, stderr=err)
        return out or ""

    def read(self, nodes: Sequence[str]) -> dict:
        """``{node: {"state", "busy", "out", "responding", "reason"}}`` of every node; SlurmError for a node Slurm
        does not know or a line this module cannot read."""
        argv = ["sinfo", "--noheader", "--Node", "--nodes=" + ",".join(nodes), "--format=%N|%T|%E"]
        out = self._call(argv, nodes)
        seen: dict = {}
        for line in out.splitlines():
            if not line.strip():
                continue
            fields = line.split("|", 2)
            if len(fields) != 3 or fields[0] not in nodes:
                raise SlurmError("sinfo printed a line gpufabric cannot read for nodes %s: %r (expected "
                                 "NODE|STATE|REASON for one of the nodes asked)" % (", ".join(nodes), line),
                                 device=list(nodes), cmd=argv)
            name, word, reason = fields
            entry = parse_state(name, word)
            entry["reason"] = None if reason.strip() in ("", "none", "(null)") else reason.strip()
            if name in seen:   # a node in two partitions: one line each, the same node
                if seen[name] != entry:
                    entry["busy"] = entry["busy"] or seen[name]["busy"]
            seen[name] = entry
        missing = [n for n in nodes if n not in seen]
        if missing:
            raise SlurmError("Slurm does not know node%s %s (sinfo --nodes printed nothing for %s): set "
                             "gpufabric_drain_slurm_node to the server's Slurm node name"
                             % ("" if len(missing) == 1 else "s", ", ".join(missing),
                                "it" if len(missing) == 1 else "them"), device=missing, cmd=argv)
        return {n: seen[n] for n in nodes}

    def jobs(self, node: str) -> list[str]:
        out = self._call(["squeue", "--noheader", "--nodelist=" + node, "--format=%i"], [node])
        return [line.strip() for line in out.splitlines() if line.strip()]

    def update(self, nodes: Sequence[str], state: str, reason: str | None = None) -> None:
        argv = ["scontrol", "update", "NodeName=" + ",".join(nodes), "State=" + state]
        if reason is not None:
            argv.append("Reason=" + reason)
        self._call(argv, nodes)


def drain(slurm: Slurm, nodes, owner: str, reason: str, *, wait_timeout: int = 0, poll: int = 10,
          check_mode: bool = False) -> dict:
    """Drain ``nodes`` (those in service, and this owner's with another reason) and wait until none runs a job or
    ``wait_timeout`` seconds have passed. Returns ``{"changed", "nodes": [{"node", "before", "action", "ours",
    "jobs", "ready", "after"}], "busy": {node: [job ids]}}``: ``action`` drain (taken out of service), reason (this
    owner's drain with a new reason), none (out of service by someone else, or already so); ``ours``: the node is
    this owner's to resume; ``ready``: no job runs there (the batch may touch it)."""
    nodes, owner, reason = check_params(nodes, owner, reason)
    if reason is None:
        raise InvalidParameter("reason is required to drain", parameter="reason")
    text = "%s: %s" % (owner, reason)
    before = slurm.read(nodes)
    plan = {}
    for node, entry in before.items():
        if not entry["out"]:
            plan[node] = "drain"
        elif is_ours(entry["reason"], owner):
            plan[node] = "reason" if entry["reason"] != text else "none"
        else:
            plan[node] = "none"
    todo = [n for n in nodes if plan[n] != "none"]
    if todo and not check_mode:
        slurm.update(todo, "DRAIN", text)
    after = before
    if not check_mode:
        deadline = slurm.clock() + max(0, wait_timeout)
        after = slurm.read(nodes)
        while any(e["busy"] for e in after.values()) and slurm.clock() < deadline:
            slurm.sleep(max(1, min(poll, deadline - slurm.clock())))
            after = slurm.read(nodes)
    busy = {n: slurm.jobs(n) for n in nodes if after[n]["busy"]}
    out = []
    for node in nodes:
        ours = plan[node] != "none" or is_ours(before[node]["reason"], owner)
        out.append({"node": node, "before": _public(before[node]), "action": plan[node], "ours": ours,
                    "jobs": busy.get(node, []), "ready": node not in busy,
                    "after": _public(after[node]) if not check_mode else None})
    return {"changed": bool(todo), "nodes": out, "busy": busy}


def resume(slurm: Slurm, nodes, owner: str, *, check_mode: bool = False) -> dict:
    """Resume the ``nodes`` this owner drained (their reason is the owner's); every other node is left as it is.
    Returns ``{"changed", "nodes": [{"node", "before", "action" (resume | none), "ours", "after"}]}``."""
    nodes, owner = check_params(nodes, owner)[:2]
    before = slurm.read(nodes)
    todo = [n for n in nodes if before[n]["out"] and is_ours(before[n]["reason"], owner)]
    if todo and not check_mode:
        slurm.update(todo, "RESUME")
    after = slurm.read(nodes) if todo and not check_mode else before
    out = [{"node": n, "before": _public(before[n]), "action": "resume" if n in todo else "none",
            "ours": is_ours(before[n]["reason"], owner), "after": None if check_mode else _public(after[n])}
           for n in nodes]
    return {"changed": bool(todo), "nodes": out}


def query(slurm: Slurm, nodes, owner: str) -> dict:
    """Read only: every node's state and reason, SlurmError for a node Slurm does not know - the preflight's proof,
    before batch 1, that the drain host reaches slurmctld and that every server is a node of it."""
    nodes, owner = check_params(nodes, owner)[:2]
    before = slurm.read(nodes)
    return {"changed": False, "nodes": [{"node": n, "before": _public(before[n]), "action": "none",
                                         "ours": is_ours(before[n]["reason"], owner)} for n in nodes]}


def _public(entry: dict) -> dict:
    return {"state": entry["state"], "reason": entry["reason"]}


def summary(result: dict, state: str, check_mode: bool = False) -> str:
    """One sentence: what was (would be) done to which node, and which still run jobs."""
    if state == "query":
        out = [n for n in result["nodes"] if parse_state(n["node"], n["before"]["state"])["out"]]
        return "%d nodes known to Slurm%s" % (len(result["nodes"]), ("; out of service: %s" % ", ".join(
            "%s (%s: %s)" % (n["node"], n["before"]["state"], n["before"]["reason"]) for n in out)) if out else "")
    verb = {("drained", False): "drained", ("drained", True): "would drain",
            ("resumed", False): "resumed", ("resumed", True): "would resume"}[(state, bool(check_mode))]
    nodes = result["nodes"]
    moved = [n["node"] for n in nodes if n["action"] in ("drain", "resume")]
    words = ["%s %s" % (verb, ", ".join(moved)) if moved
             else "no node to %s" % {"drained": "drain", "resumed": "resume"}[state]]
    if state == "drained":
        kept = [n for n in nodes if n["action"] == "none" and not n["ours"]]
        if kept:
            words.append("left as they are (out of service for another reason): %s"
                         % ", ".join("%s (%s: %s)" % (n["node"], n["before"]["state"], n["before"]["reason"])
                                     for n in kept))
        if result["busy"]:
            words.append("still running jobs: %s" % "; ".join("%s: job %s" % (node, ", ".join(jobs))
                                                              for node, jobs in result["busy"].items()))
    else:
        kept = [n for n in nodes if n["action"] == "none" and n["before"]["reason"] and not n["ours"]]
        if kept:
            words.append("left drained by their own reason: %s" % ", ".join(
                "%s (%s)" % (n["node"], n["before"]["reason"]) for n in kept))
    return "; ".join(words)
