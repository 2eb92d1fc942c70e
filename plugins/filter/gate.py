# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The validation gate's filters gate_plan, gate_jobs, gate_results, gate_state, gate_ssh_ring and handover_report
(docs in the .yml files beside; logic in plugins/plugin_utils/_gate.py and _handover_report.py)."""

from __future__ import annotations

import functools

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidValue
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._filters import filter_errors, lazy

_gate = lazy("plugin_utils._gate")
_report = lazy("plugin_utils._handover_report")
WHAT = {"gate_plan": "the rail plan, the batch's servers and their fabric_test facts",
        "gate_jobs": "the plan of gate_plan, a host, a round and forward/reverse",
        "gate_results": "the plan of gate_plan and what the gate's fabric_test steps returned",
        "gate_state": "the results document of gate_results",
        "gate_ssh_ring": "a rail plan (or inventory_problems' plan) and the servers",
        "handover_report": "the results document of gate_results and a format"}


def _shaped(func):
    """Input of the wrong shape deep inside (these filters take the gate's own data) is a sentence naming the filter
    and what it takes, not a Python exception."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except (TypeError, KeyError, AttributeError, ValueError, IndexError) as exc:
            raise InvalidValue("%s: its input is not what it takes (%s): %s: %s" % (
                func.__name__, WHAT[func.__name__], type(exc).__name__, exc), parameter="_input") from exc
    return wrapper


@filter_errors()
@_shaped
def gate_plan(plan, hosts, facts, previous=None, retest=None, matrix=None, thresholds=None, tos=None, mgmt=None,
              networks=None, launcher="mpirun", bind_to="numa", slurm_nodes=None):
    return _gate.plan_run(plan, list(hosts or []), facts, previous, retest, matrix, thresholds, tos, mgmt=mgmt,
                          networks=networks, launcher=launcher, bind_to=bind_to, slurm_nodes=slurm_nodes)


@filter_errors()
@_shaped
def gate_jobs(gate, host, round_no, direction, port_base=18515):
    return _gate.jobs((gate or {}).get("pairs"), host, round_no, direction, port_base=port_base)


@filter_errors()
@_shaped
def gate_results(gate, plan, measured, facts_before, facts_after, leaves=None, nccl=None, versions=None, run=None,
                 wanted_mtu=None, previous=None, hosts_info=None, nics=None, leaf_phy=None):
    gate = gate or {}
    raw = nccl or {}
    reports = _gate.nccl_reports(gate, raw)
    hosts = list(gate.get("tested") or [])
    found = _gate.versions_of(hosts, raw.get("version"), versions, run)
    info = {}
    plan_hosts, plan_leaves = (plan or {}).get("hosts") or {}, (plan or {}).get("leaves") or {}
    for host, values in (hosts_info or {}).items():
        delivery = (values or {}).get("gpufabric_delivery_check_result") or {}
        first = (plan_hosts.get(host) or [{}])[0]
        rows = _gate.nic_rows((nics or {}).get(host), (run or {}).get("firmware_expected"))
        info[host] = {"rack": (values or {}).get("rack"), "su": (plan_leaves.get(first.get("leaf")) or {}).get("su"),
                      "delivery": rows or (delivery.get("devices") if isinstance(delivery, dict) else None)}
    return _gate.evaluate(plan, gate.get("pairs"), hosts, gate.get("not_retested") or [], measured, facts_before,
                          facts_after, leaves, reports, found, gate.get("limits"), run, wanted_mtu, previous,
                          gate.get("fingerprints"), info, leaf_phy)


@filter_errors()
@_shaped
def gate_state(results, previous=None):
    return _gate.state(results, previous)


@filter_errors()
@_shaped
def gate_ssh_ring(plan, hosts):
    return _gate.ssh_ring(plan, list(hosts or []))


@filter_errors()
@_shaped
def handover_report(results, fmt="html"):
    return _report.render(results, formats=(fmt,))[fmt]


class FilterModule:
    def filters(self):
        return {"gate_plan": gate_plan, "gate_jobs": gate_jobs, "gate_results": gate_results, "gate_state": gate_state,
                "gate_ssh_ring": gate_ssh_ring, "handover_report": handover_report}
