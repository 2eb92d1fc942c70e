# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A rollout as an AWX workflow whose jobs follow the site's scalable units (docs/scale.md, docs/examples/awx).

AWX's job slicing cuts an inventory as a stride over the sorted host names (every slice gets one host of every rack,
the leaves land anywhere, slices share nothing), so it cannot carry the switch-first order or rack batches. The
workflow does it with one node per unit instead:

    leaves (all leaves and the plan, not sliced)
      -> chains of unit nodes, ``parallel`` chains side by side (unit i in chain i mod parallel), each unit a job of
         site.yml on an inventory of that unit's servers, its leaves and the spines (an AWX constructed inventory
         with a limit): nothing outside the unit is in it, so no play can need another unit's hosts
      -> validate (validate.yml on the whole site, when every chain succeeded)
      -> reports (workflow_report.yml: the units' rollout reports and the gate's results, passed on as workflow
         artifacts with set_stats, merged into one rollout report and one hand-over report)

- ``spec(units, ...)``: the workflow as data - the constructed inventories, the job templates and the workflow's
  nodes in the form of ``awx.awx.workflow_job_template``'s ``workflow_nodes`` - which the example playbook gives to
  the awx.awx modules and tests/awx runs with ansible-runner's remote-job protocol.
- ``parts(variables)``: the artifacts a node received, ``{"rollout": {node: report}, "gate": {node: results}}``.
- ``PART_RE``: the names of those artifacts (``gpufabric_rollout_part_<node>``, ``gpufabric_gate_part_<node>``): AWX
  merges the artifacts of a node's parents key by key (``dict.update``), so each node passes its own key.

Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidValue
from ansible_collections.gpufabric.mlnx.plugins.module_utils._validate import kind_of

NODE_RE = re.compile(r"[a-z0-9][a-z0-9_]{0,39}", re.ASCII)
PART_RE = re.compile(r"gpufabric_(rollout|gate)_part_([a-z0-9][a-z0-9_]{0,39})", re.ASCII)
NODE_WHAT = "1-40 of a-z 0-9 _, starting with a letter or digit"
# A limit of AWX (an Ansible host pattern): group and host names joined by ':' - no '!' or '&' (a unit is a union
# of groups), nothing a shell or YAML would read otherwise.
LIMIT_RE = re.compile(r"[A-Za-z0-9_.\-]+(:[A-Za-z0-9_.\-]+)*", re.ASCII)
MAX_PARALLEL = 100
FIXED = ("leaves", "validate", "reports")
PLAYBOOKS = {"leaves": "playbooks/site.yml", "unit": "playbooks/site.yml", "validate": "playbooks/validate.yml",
             "reports": "playbooks/workflow_report.yml"}


def node_name(value: Any, parameter: str) -> str:
    """``value`` when it is a node name (NODE_RE), else InvalidValue naming ``parameter``."""
    if not isinstance(value, str) or not NODE_RE.fullmatch(value):
        raise InvalidValue("%s: %r is not a workflow node name (allowed: %s)" % (parameter, value, NODE_WHAT),
                           parameter=parameter)
    return value


def _units(units):
    if not isinstance(units, Mapping) or not units:
        raise InvalidValue("awx_workflow: the units must be a non-empty mapping of node name to its host pattern "
                           "(e.g. {su01: 'servers_su01:leaves_su01:spines'}), not %s"
                           % ("an empty mapping" if isinstance(units, Mapping) else kind_of(units)),
                           parameter="_input")
    out = []
    for name, limit in units.items():
        node_name(name, "awx_workflow: units")
        if name in FIXED:
            raise InvalidValue("awx_workflow: units: %s is the name of a node of its own (%s)" % (name, ", ".join(FIXED)),
                               parameter="_input")
        if not isinstance(limit, str) or not LIMIT_RE.fullmatch(limit):
            raise InvalidValue("awx_workflow: units.%s: %r is not a host pattern of group and host names joined by ':' "
                               "(allowed: A-Z a-z 0-9 _ . - and ':')" % (name, limit), parameter="_input")
        out.append((name, limit))
    return out


def spec(units: Any, parallel: Any = 4, name: str = "gpufabric", inventory: str = "gpufabric site",
         organization: str = "Default", project: str = "gpufabric site") -> dict:
    """The workflow of ``units`` (``{node: host pattern}``, in rollout order), ``parallel`` unit jobs at a time:
    ``{"inventories": [...], "job_templates": [...], "workflow": {"name", "nodes": [...]}}`` (module docs: the
    awx_workflow filter)."""
    order = _units(units)
    if isinstance(parallel, bool) or not isinstance(parallel, int) or not 1 <= parallel <= MAX_PARALLEL:
        raise InvalidValue("awx_workflow: parallel: %r is not a whole number of unit jobs at a time (allowed: 1-%d)"
                           % (parallel, MAX_PARALLEL), parameter="parallel")
    for key, value in (("name", name), ("inventory", inventory), ("organization", organization),
                       ("project", project)):
        if not isinstance(value, str) or not value.strip():
            raise InvalidValue("awx_workflow: %s must be a non-empty name, not %s" % (key, kind_of(value)),
                               parameter=key)
    org = {"name": organization}
    templates = {kind: "%s %s" % (name, what) for kind, what in (
        ("leaves", "leaves and plan"), ("unit", "servers of a unit"), ("validate", "validation gate"),
        ("reports", "reports"))}
    inventories = [{"name": "%s %s" % (inventory, unit), "kind": "constructed", "organization": organization,
                    "input_inventories": [inventory], "limit": limit, "unit": unit} for unit, limit in order]
    job_templates = [{"name": templates[kind], "playbook": PLAYBOOKS[kind], "project": project,
                      "organization": organization, "inventory": inventory, "ask_variables_on_launch": True,
                      "ask_inventory_on_launch": kind == "unit", "ask_limit_on_launch": kind == "leaves",
                      "job_slice_count": 1, "kind": kind} for kind in ("leaves", "unit", "validate", "reports")]
    chains = [order[start::parallel] for start in range(min(parallel, len(order)))]
    nodes = [_node("leaves", templates["leaves"], org, {"gpufabric_workflow_node": "leaves"}, limit="leaves",
                   success=[chain[0][0] for chain in chains])]
    for chain in chains:
        for place, (unit, _limit) in enumerate(chain):
            after = [chain[place + 1][0]] if place + 1 < len(chain) else ["validate"]
            nodes.append(_node(unit, templates["unit"], org, {"gpufabric_workflow_node": unit},
                               inventory={"name": "%s %s" % (inventory, unit), "organization": org}, success=after))
    nodes.append(_node("validate", templates["validate"], org, {"gpufabric_workflow_node": "validate"},
                       success=["reports"], converge=True))
    nodes.append(_node("reports", templates["reports"], org, {}, success=[]))
    return {"inventories": inventories, "job_templates": job_templates,
            "workflow": {"name": "%s rollout" % name, "organization": organization, "nodes": nodes,
                         "parallel": len(chains)}}


def _node(identifier, template, org, extra, limit=None, inventory=None, success=(), converge=False):
    node = {"identifier": identifier,
            "unified_job_template": {"name": template, "type": "job_template", "organization": org},
            "extra_data": extra, "all_parents_must_converge": converge,
            "related": {"success_nodes": [{"identifier": s} for s in success]}}
    if limit is not None:
        node["limit"] = limit
    if inventory is not None:
        node["inventory"] = inventory
    return node


def parts(variables: Mapping) -> dict:
    """``{"rollout": {node: report}, "gate": {node: results}}`` of the artifacts in ``variables`` (a node's extra
    variables), each a mapping; InvalidValue naming the first that is not."""
    out: dict[str, dict] = {"rollout": {}, "gate": {}}
    for key in sorted(variables) if isinstance(variables, Mapping) else ():
        match = PART_RE.fullmatch(key) if isinstance(key, str) else None
        if match is None:
            continue
        value = variables[key]
        if not isinstance(value, Mapping):
            raise InvalidValue("%s: a workflow artifact must be the mapping a node passed on (set_stats), not %s"
                               % (key, kind_of(value)), parameter=key)
        out[match.group(1)][match.group(2)] = dict(value)
    return out
