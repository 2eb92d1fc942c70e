# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of the rollout's drain (role gpufabric.mlnx.drain, docs/operations.md): which workload manager
node each server of a batch is, and - at the end of the batch - which of them go back into service and which stay
out, with the reason an operator reads in ``sinfo -R`` / ``kubectl describe node``.

- ``batch_nodes(servers, hostvars, batches, in_play)``: ``{"batch": name, "nodes": {server: node}, "resume": [node],
  "keep": [{"server", "node", "reason"}]}``. ``in_play`` None (the start of the batch): nothing to resume or keep.
  At the end: a server still in the play that the validation gate did not quarantine is resumed; a server held (by
  its leaves or its drain), failed or quarantined stays out of service - never resumed by the rollout.
- ``problems(servers, hostvars)``: what is wrong with the drain settings of the run, before any host is contacted.

Pure: no I/O but the hooks' existence on the controller (``problems``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidValue
from ansible_collections.gpufabric.mlnx.plugins.module_utils._slurm import NODE
from ansible_collections.gpufabric.mlnx.plugins.module_utils._validate import kind_of
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._roles import host_names, read_vars

DRAIN = ("none", "slurm", "kubernetes")
NODE_KEYS = {"slurm": "gpufabric_drain_slurm_node", "kubernetes": "gpufabric_drain_k8s_node"}
# A Kubernetes node name: an RFC 1123 subdomain.
K8S_NODE = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*", re.ASCII)
FACTS = ("gpufabric_drain", "gpufabric_drain_slurm_node", "gpufabric_drain_k8s_node", "gpufabric_held",
         "gpufabric_gate_results", "gpufabric_failure")
# The settings that must be the same for every server: read once per batch.
PLAY_SETTINGS = ("gpufabric_drain", "gpufabric_drain_slurm_host", "gpufabric_drain_timeout",
                 "gpufabric_batch_pre_tasks", "gpufabric_batch_post_tasks")


def _node_name(server: str, values: Mapping, kind: str) -> str:
    key = NODE_KEYS[kind]
    value = values.get(key, server.split(".")[0])
    grammar = NODE if kind == "slurm" else K8S_NODE
    if not isinstance(value, str) or not grammar.fullmatch(value) or (kind == "kubernetes" and len(value) > 253):
        raise InvalidValue("%s: %s=%s is not a %s node name (%s)" % (
            server, key, json.dumps(value, default=repr), "Slurm" if kind == "slurm" else "Kubernetes",
            "letters, digits, '.', '_', '-', one name, at most 64" if kind == "slurm"
            else "an RFC 1123 name: lower-case letters, digits, '-', '.'"), parameter=key)
    return value


def _batch_of(server, batches):
    for batch in batches if isinstance(batches, (list, tuple)) else ():
        if isinstance(batch, Mapping) and isinstance(batch.get("servers"), (list, tuple)) \
                and server in batch["servers"]:
            return batch
    return {}


def _quarantined(server, values):
    results = values.get("gpufabric_gate_results")
    hosts = results.get("hosts") if isinstance(results, Mapping) else None
    mine = hosts.get(server) if isinstance(hosts, Mapping) else None
    if isinstance(mine, Mapping) and mine.get("status") == "quarantined":
        words = [f.get("message") for f in mine.get("failures") or () if isinstance(f, Mapping) and f.get("message")]
        return "; ".join(str(w) for w in words) or "quarantined"
    return None


def _short(text, limit=160):
    text = re.sub(r"[^\x20-\x7e]", " ", str(text))
    return text if len(text) <= limit else text[:limit - 3] + "..."


def batch_nodes(servers, hostvars, batches=None, in_play=None, kind="slurm") -> dict:
    """See the module text. ``servers``: the servers of the batch; ``kind``: V(slurm) or V(kubernetes)."""
    if not isinstance(kind, str) or kind not in NODE_KEYS:
        raise InvalidValue("drain: gpufabric_drain=%s has no nodes (allowed: %s)"
                           % (json.dumps(kind, default=repr), ", ".join(NODE_KEYS)), parameter="gpufabric_drain")
    names = host_names(servers, "drain", "servers")
    values = read_vars(names, hostvars, FACTS, what="drain", parameter="servers")
    play = None if in_play is None else set(host_names(in_play, "drain", "in_play"))
    nodes = {server: _node_name(server, values[server], kind) for server in names}
    seen: dict = {}
    for server, node in nodes.items():
        if node in seen:
            raise InvalidValue("drain: %s and %s are both %s node %s (%s): each server is its own node"
                               % (seen[node], server, kind, node, NODE_KEYS[kind]), parameter=NODE_KEYS[kind])
        seen[node] = server
    batch = _batch_of(names[0], batches) if names else {}
    out = {"batch": batch.get("name"), "nodes": nodes, "resume": [], "keep": []}
    if play is None:
        return out
    for server in names:
        held = [h for h in values[server].get("gpufabric_held") or () if isinstance(h, Mapping)]
        quarantine = _quarantined(server, values[server])
        if held:
            why = "held: " + "; ".join(str(h.get("reason")) for h in held)
        elif server not in play:
            failure = values[server].get("gpufabric_failure")
            failure = failure if isinstance(failure, Mapping) else {}
            why = "failed in the rollout%s%s (see the rollout report)" % (
                (" in step %s" % failure["step"]) if failure.get("step") else "",
                (": %s" % failure["message"]) if failure.get("message") else "")
        elif quarantine:
            why = "quarantined by the validation gate: " + quarantine
        else:
            out["resume"].append(nodes[server])
            continue
        out["keep"].append({"server": server, "node": nodes[server], "reason": _short(why)})
    return out


def problems(servers, hostvars) -> list[str]:
    """Every problem of the drain settings of ``servers`` (the run's servers): a value that differs between servers
    (a play setting), slurm without the host its commands run on, a hook file that is not there."""
    names = host_names(servers, "drain_problems", "servers")
    keys = PLAY_SETTINGS + tuple(NODE_KEYS.values())
    values = read_vars(names, hostvars, keys, what="drain_problems", parameter="servers")
    out = []
    for key in PLAY_SETTINGS:
        seen = sorted({json.dumps(v.get(key), default=repr, sort_keys=True) for v in values.values()})
        if len(seen) > 1:
            out.append("%s differs between servers (%s): a play setting, read once per batch - set it in "
                       "group_vars/all or with -e" % (key, ", ".join(seen)))
    first = values[names[0]] if names else {}
    kind = first.get("gpufabric_drain", "none")
    if kind not in DRAIN:
        return out   # the argument spec names it
    if kind == "slurm" and not first.get("gpufabric_drain_slurm_host"):
        out.append("gpufabric_drain=slurm needs gpufabric_drain_slurm_host: the host where sinfo and scontrol "
                   "reach slurmctld (the controller or a login node), as a user allowed to update nodes")
    if kind in NODE_KEYS:
        for server in names:
            try:
                _node_name(server, values[server], kind)
            except InvalidValue as err:
                out.append(str(err))
    for key in ("gpufabric_batch_pre_tasks", "gpufabric_batch_post_tasks"):
        path = first.get(key)
        if path in (None, ""):
            continue
        if not isinstance(path, str):
            out.append("%s is %s: allowed is the path of a task file on the controller" % (key, kind_of(path)))
        elif not os.path.isabs(path):
            out.append("%s=%s is not an absolute path: name the task file as {{ inventory_dir }}/hooks/... or "
                       "{{ playbook_dir }}/..." % (key, json.dumps(path)))
        elif not os.path.isfile(path):
            out.append("%s=%s: no such file on the controller" % (key, json.dumps(path)))
    return out
