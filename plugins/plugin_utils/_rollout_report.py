# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rollout report of a run of site.yml: per server what was done and why, per batch the gate's result.

- ``rows(servers, values, batches)``: ``{"hosts": [...], "batches": [...]}`` from each server's facts of the run
  (``values``: per server the ``gpufabric_*`` facts the roles set - ``gpufabric_ofed_result``,
  ``gpufabric_firmware_pending_devices``, ``gpufabric_nv_pending_devices``, ``gpufabric_activation``,
  ``gpufabric_held``, ``gpufabric_gate_results``, ``gpufabric_failure`` - what the rescue of site.yml's rollout
  recorded of a failed host: its step, task and message) and the rollout's batches (``gpufabric_rollout.batches``).
- ``merge(parts)``: one report of the reports of an AWX workflow's nodes (``{node: report}``), each row with its node.
- ``render(report, fmt)``: ``md``, ``csv`` or ``json`` (with a ``node`` column for a merged report).

A server with no facts at all in its batch's steps did not get there: it failed earlier (``failed``) or was not in
the run (``not run``). Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidValue
from ansible_collections.gpufabric.mlnx.plugins.module_utils._validate import kind_of, natural_key
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._report import csv_table, markdown_table

HOST_COLUMNS = (("batch", "batch"), ("host", "host"), ("outcome", "outcome"), ("driver", "driver"),
                ("firmware_burned", "firmware burned"), ("nv_changed", "NV changed"), ("activation", "activation"),
                ("gate", "gate"), ("why", "why"))
BATCH_COLUMNS = (("number", "#"), ("batch", "batch"), ("servers", "servers"), ("leaves", "leaves"), ("held", "held"),
                 ("failed", "failed"), ("passed", "gate passed"), ("quarantined", "quarantined"),
                 ("not_retested", "not retested"))


def _m(value):
    return value if isinstance(value, Mapping) else {}


def _l(value):
    return list(value) if isinstance(value, (list, tuple)) else []


MESSAGE_LIMIT = 600  # characters of a failure's message kept in the record (a module's stdout can be megabytes)


def failure(task, result) -> dict:
    """The record of a failed task for the report - ``{"step", "task", "message"}`` - from ``ansible_failed_task``
    (its name and tags: the step is the site.yml tag that is not ``always``) and ``ansible_failed_result`` (``msg``;
    of a loop, the first failed item's ``msg`` after it; a task hidden by ``no_log`` only the words that say so;
    without ``msg``, the last line of ``stderr``, else of ``stdout``, with ``rc``). The message is cut at
    MESSAGE_LIMIT characters."""
    task, result = _m(task), _m(result)
    tags = [t for t in _l(task.get("tags")) if isinstance(t, str) and t != "always"]

    def words(res):
        res = _m(res)
        if res.get("censored"):
            return str(res["censored"])
        if res.get("msg"):
            return str(res["msg"]).strip()
        for stream in ("stderr", "stdout"):
            lines = [ln.strip() for ln in str(res.get(stream) or "").splitlines() if ln.strip()]
            if lines:
                return ("%s (rc %s)" % (lines[-1], res["rc"])) if res.get("rc") is not None else lines[-1]
        return ("rc %s" % res["rc"]) if res.get("rc") is not None else ""

    message = words(result)
    items = [words(r) for r in _l(result.get("results")) if _m(r).get("failed")]
    items = [w for w in items if w]
    if items and not result.get("censored"):
        message = "%s: %s" % (message, items[0]) if message else items[0]
    if len(message) > MESSAGE_LIMIT:
        message = message[:MESSAGE_LIMIT - 3] + "..."
    return {"step": tags[0] if tags else "", "task": str(task.get("name") or ""), "message": message or "no message"}


def _failure(record):
    """Why a server failed, from the record the rollout's rescue left (``gpufabric_failure``: step, task, message)."""
    record = _m(record)
    if not record.get("message") and not record.get("task"):
        return ("no cause recorded: unreachable, or failed outside the rollout's steps (the run's output has the "
                "message)")
    where = ("step %s, " % record["step"]) if record.get("step") else ""
    return "%s'%s': %s" % (where, record.get("task") or "?", record.get("message") or "no message")


def rows(servers, values, batches=None, failed=None) -> dict:
    """The report; ``failed``: the servers Ansible counted as failed or unreachable."""
    if not isinstance(servers, (list, tuple)) or not all(isinstance(s, str) for s in servers):
        raise InvalidValue("rollout_report: servers must be a list of host names", parameter="_input")
    values, failed = _m(values), {f for f in _l(failed) if isinstance(f, str)}
    batch_of = {}
    for batch in _l(batches):
        for host in _l(_m(batch).get("servers")):
            if isinstance(host, str):
                batch_of.setdefault(host, _m(batch).get("name"))
    hosts = []
    for host in servers:
        facts = _m(values.get(host))
        ofed = _m(facts.get("gpufabric_ofed_result"))
        activation = _m(facts.get("gpufabric_activation"))
        held = [_m(h) for h in _l(facts.get("gpufabric_held"))]
        gate = _m(_m(_m(facts.get("gpufabric_gate_results")).get("hosts")).get(host))
        why = []
        if held:
            outcome = "held"
            why = [("%s %s: %s" % (h.get("leaf"), h.get("port"), h.get("reason"))) if h.get("leaf")
                   else str(h.get("reason")) for h in held]
        elif host in failed:
            outcome = "failed"
            why = [_failure(facts.get("gpufabric_failure"))]
        elif gate.get("status") == "quarantined":
            outcome = "quarantined"
            why = [str(_m(f).get("message")) for f in _l(gate.get("failures"))]
        elif gate.get("status") in ("passed", "not_retested"):
            outcome = "handed over"
        elif not facts:
            outcome = "not run"
        else:
            outcome = "done"
        method = activation.get("method")
        hosts.append({
            "batch": batch_of.get(host), "host": host, "outcome": outcome,
            "driver": ofed.get("action") if ofed else None,
            "firmware_burned": len(_l(facts.get("gpufabric_firmware_pending_devices"))),
            "nv_changed": len(_l(facts.get("gpufabric_nv_pending_devices"))),
            "activation": ("%s level %s" % (method, activation["level"]) if activation.get("level") is not None
                           else method),
            "gate": gate.get("status"), "why": "; ".join(why)})
    out_batches, after = [], None
    by_host = {h["host"]: h for h in hosts}
    for batch in _l(batches):
        batch = _m(batch)
        if batch.get("after_end"):  # a batch after gpufabric_end_batch: not this run's, only the next wave's start
            after = after or batch
            continue
        names = dict.fromkeys(h for h in _l(batch.get("servers")) if isinstance(h, str))
        members = [by_host[name] for name in names if name in by_host]
        if names and not members:   # a batch of servers outside this report's scope (--limit): not this run's
            continue
        count = {k: sum(1 for h in members if h["outcome"] == k or h["gate"] == k)
                 for k in ("held", "failed", "passed", "quarantined", "not_retested")}
        out_batches.append(dict({"number": batch.get("number"), "batch": batch.get("name"), "servers": len(members),
                                 "leaves": len(_l(batch.get("leaves")))}, **count))
    return {"hosts": hosts, "batches": out_batches, "resume": _resume(out_batches, hosts, after)}


def _resume(batches, hosts, after=None):
    """The batch a stopped rollout resumes at: the first batch none of whose servers ran, after one that did -
    ``{"number", "batch", "option", "why"}`` (``why``: V(stopped)) - or, when every batch of the run ran and the run
    was a wave (``after``: the first batch after ``gpufabric_end_batch``), that batch (``why``: V(wave)); None when
    every batch ran (or none did)."""
    ran, of_batch = False, {}
    for host in hosts:
        of_batch.setdefault(host["batch"], []).append(host)
    for batch in batches:
        members = of_batch.get(batch["batch"], [])
        if members and all(h["outcome"] == "not run" for h in members):
            if ran and batch.get("number") is not None:
                return {"number": batch["number"], "batch": batch["batch"], "why": "stopped",
                        "option": "-e gpufabric_start_batch=%d" % batch["number"]}
        elif members:
            ran = True
    if ran and after and isinstance(after.get("number"), int):
        return {"number": after["number"], "batch": after.get("name"), "why": "wave",
                "option": "-e gpufabric_start_batch=%d" % after["number"]}
    return None


def merge(parts) -> dict:
    """One report of the reports of a workflow's nodes (``parts``: ``{node: report}``, each what :func:`rows` made
    for that node's run, passed on as a workflow artifact): every server and batch with its ``node``, in the nodes'
    natural order; a server in two parts is refused (two jobs rolled it out). ``resume``: the first node that stopped,
    with its node (rerun that node with the option)."""
    if not isinstance(parts, Mapping) or not parts:
        raise InvalidValue("rollout_merge: the parts must be a non-empty mapping of workflow node to its rollout report "
                           "(the gpufabric_rollout_part_<node> artifacts), not %s"
                           % ("an empty mapping" if isinstance(parts, Mapping) else kind_of(parts)),
                           parameter="_input")
    hosts, batches, resume, owner = [], [], None, {}
    for node in sorted(parts, key=_natural):
        part = parts[node]
        if not isinstance(part, Mapping) or not isinstance(part.get("hosts"), list) \
                or not isinstance(part.get("batches"), list):
            raise InvalidValue("rollout_merge: the part of node %s is not a rollout report (a mapping with hosts and "
                               "batches lists)" % node, parameter="_input")
        for row in part["hosts"]:
            host = _m(row).get("host")
            if host in owner:
                raise InvalidValue("rollout_merge: %s is in the reports of nodes %s and %s: two jobs of the workflow "
                                   "rolled it out (their inventories overlap)" % (host, owner[host], node),
                                   parameter="_input")
            owner[host] = node
            hosts.append(dict(_m(row), node=node))
        batches.extend(dict(_m(batch), node=node) for batch in part["batches"])
        if resume is None and _m(part.get("resume")):
            resume = dict(_m(part.get("resume")), node=node)
    return {"hosts": hosts, "batches": batches, "resume": resume, "nodes": sorted(parts, key=_natural)}


_natural = natural_key   # the sort key of names (module_utils/_validate.py)


def render(report, fmt="md") -> str:
    report = _m(report)
    nodes = "nodes" in report
    host_columns = ((("node", "node"),) + HOST_COLUMNS) if nodes else HOST_COLUMNS
    batch_columns = ((("node", "node"),) + BATCH_COLUMNS) if nodes else BATCH_COLUMNS
    if fmt == "json":
        return json.dumps(report, indent=2, sort_keys=True) + "\n"
    if fmt == "csv":
        return csv_table(_l(report.get("hosts")), columns=host_columns)
    if fmt == "md":
        resume = _m(report.get("resume"))
        if not resume:
            stopped = ""
        elif resume.get("node"):
            stopped = ("Node %s of the workflow stopped before its batch %s (%s). When the cause is fixed, relaunch "
                       "that node's job with `%s` (docs/scale.md).\n\n"
                       % (resume["node"], resume.get("number"), resume.get("batch"), resume.get("option")))
        elif resume.get("why") == "wave":
            stopped = ("This run was a wave: it ended before batch %s (%s), as gpufabric_end_batch asked. The next wave "
                       "begins there: `ansible-playbook ... playbooks/site.yml %s` (docs/gitops.md, \"Waves\").\n\n"
                       % (resume["number"], resume["batch"], resume["option"]))
        else:
            stopped = ("The rollout stopped before batch %s (%s). When the cause is fixed, resume there: "
                       "`ansible-playbook ... playbooks/site.yml %s` (docs/operations.md, \"Resume a stopped "
                       "rollout\").\n\n" % (resume["number"], resume["batch"], resume["option"]))
        title = ("# Rollout report of the workflow (%d nodes: %s)\n\n" % (len(report["nodes"]), ", ".join(
            report["nodes"])) if nodes else "# Rollout report\n\n")
        return ("%s%s## Batches\n\n%s\n\n## Servers\n\n%s\n" % (
            title, stopped, markdown_table(_l(report.get("batches")), columns=batch_columns),
            markdown_table(_l(report.get("hosts")), columns=host_columns)))
    raise InvalidValue("rollout_report: format %r is not one of md, csv, json" % (fmt,), parameter="fmt")
