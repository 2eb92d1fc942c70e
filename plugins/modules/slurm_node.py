#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: slurm_node
short_description: Drain Slurm nodes for a rollout batch, wait for their jobs to end, and resume them afterwards
version_added: 0.1.0
description:
  - Takes the servers of a rollout batch out of Slurm's service before they are touched and gives them back when
    they pass, with Slurm's own client commands on the host the task runs on (the slurmctld host or a login node -
    C(delegate_to) it, C(run_once)). All nodes at once - one C(sinfo), one C(scontrol update) - however many there
    are.
  - O(state=drained) drains every node that is in service (C(scontrol update NodeName=... State=DRAIN
    Reason=...)) and waits up to O(wait_timeout) seconds until no node runs a job. Jobs are never
    cancelled - a node still running one when the time is up is returned in RV(busy) with its job ids, and stays
    draining. A node that is already out of service for another reason (an administrator's drain, C(down)) keeps
    its state and its reason - it is waited for like the others, but it is not this owner's to resume.
  - O(state=resumed) resumes only the nodes whose reason is this owner's (C(State=RESUME)); a node drained by anyone
    else, and a node in service, is left as it is.
  - O(state=query) reads only - every node's state and reason; the preflight's proof before the first batch that the
    host reaches slurmctld and that every server is one of its nodes.
  - A node Slurm does not know, and a node state this module does not know, fail the task naming the node (nothing
    is changed on any node).
author:
  - gpufabric.mlnx contributors (@gpufabric)
extends_documentation_fragment:
  - gpufabric.mlnx._attributes
  - gpufabric.mlnx._attributes.no_diff
attributes:
  check_mode:
    details: Reads the nodes and their jobs and says which would be drained or resumed; changes and waits for nothing.
  idempotent:
    details: A node drained with the same reason is not updated again; a node in service is not resumed.
options:
  nodes:
    description: The Slurm node names (one name each, not a hostlist expression).
    type: list
    elements: str
    required: true
  state:
    description:
      - V(drained) takes the nodes out of service and waits for their jobs; V(resumed) gives back this owner's;
        V(query) reads them.
    type: str
    choices: [drained, resumed, query]
    required: true
  owner:
    description:
      - The word that starts every reason this module writes (the reason is the owner, a colon, a space and
        O(reason)); a drained node whose reason starts with it is this owner's to resume - also one a run before
        this one drained and did not resume.
    type: str
    default: gpufabric
  reason:
    description: Why the nodes are drained, after the owner (printable ASCII, one line). Required with O(state=drained).
    type: str
  wait_timeout:
    description: Seconds O(state=drained) waits for the nodes' jobs to end (V(0) reads once and does not wait).
    type: int
    default: 0
  poll:
    description: Seconds between two reads while waiting.
    type: int
    default: 10
  timeout:
    description: Seconds a single Slurm command may take.
    type: int
    default: 60
requirements:
  - Slurm's client commands (C(sinfo), C(squeue), C(scontrol); Debian's C(slurm-client)) on the host the task runs on,
    with the cluster's C(slurm.conf) and authentication (munge), as a user allowed to update nodes.
notes:
  - Tested against Debian 12's slurm 22.05.8 (a real slurmctld and slurmd per server in the lab, molecule/fabric).
seealso:
  - name: scontrol - Slurm's node update (State=DRAIN, State=RESUME, Reason)
    description: The command this module runs.
    link: https://slurm.schedmd.com/scontrol.html
"""

EXAMPLES = r"""
- name: Drain the batch's servers and wait up to an hour for their jobs
  gpufabric.mlnx.slurm_node:
    nodes: [gpu-r01-01, gpu-r01-02]
    state: drained
    reason: rollout batch rack r01
    wait_timeout: 3600
  delegate_to: slurm-head
  run_once: true
  register: drain

- name: Give back the servers that passed
  gpufabric.mlnx.slurm_node:
    nodes: [gpu-r01-01]
    state: resumed
  delegate_to: slurm-head
  run_once: true
"""

RETURN = r"""
nodes:
  description: One entry per node, in the order given.
  returned: always
  type: list
  elements: dict
  contains:
    node:
      description: The node.
      type: str
    before:
      description: Its state (sinfo's extended state) and reason (null when none) before the task.
      type: dict
      sample: {state: mixed, reason: null}
    action:
      description:
        - V(drain) taken out of service, V(reason) this owner's drain given the new reason, V(resume) given back,
          V(none) left as it was (always with O(state=query)).
      type: str
      choices: [drain, reason, resume, none]
    ours:
      description: The node is out of service by this owner (its reason starts with O(owner)).
      type: bool
    jobs:
      description: The jobs still running on the node when the wait ended (O(state=drained)).
      type: list
      elements: str
    ready:
      description: No job runs on the node (O(state=drained)).
      type: bool
    after:
      description: Its state and reason after the task; null in check mode.
      type: dict
busy:
  description: The nodes that still run jobs after the wait, with their job ids (O(state=drained)).
  returned: when state is drained
  type: dict
  sample: {gpu-r01-02: ["4242"]}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError, ToolNotFound
from ansible_collections.gpufabric.mlnx.plugins.module_utils._host import Host
from ansible_collections.gpufabric.mlnx.plugins.module_utils._module import ansible_module
from ansible_collections.gpufabric.mlnx.plugins.module_utils._slurm import (
    SLURM_CLIENT,
    Slurm,
    drain,
    query,
    resume,
    summary,
)

ARGUMENT_SPEC = {
    "nodes": {"type": "list", "elements": "str", "required": True},
    "state": {"type": "str", "choices": ["drained", "resumed", "query"], "required": True},
    "owner": {"type": "str", "default": "gpufabric"},
    "reason": {"type": "str"},
    "wait_timeout": {"type": "int", "default": 0},
    "poll": {"type": "int", "default": 10},
    "timeout": {"type": "int", "default": 60},
}


def main():
    module = ansible_module(AnsibleModule, argument_spec=ARGUMENT_SPEC, supports_check_mode=True,
                            required_if=[("state", "drained", ["reason"])])
    params = module.params
    for name in ("wait_timeout", "poll", "timeout"):
        low = 0 if name == "wait_timeout" else 1
        if not low <= params[name] <= 7 * 86400:
            module.fail_json(msg="%s is %d (allowed: %d to 604800 seconds)" % (name, params[name], low),
                             parameter=name)
    host = Host(timeout=params["timeout"])
    slurm = Slurm(lambda argv: host.run(argv, check=False))
    try:
        if params["state"] == "drained":
            result = drain(slurm, params["nodes"], params["owner"], params["reason"],
                           wait_timeout=params["wait_timeout"], poll=params["poll"], check_mode=module.check_mode)
        elif params["state"] == "resumed":
            result = resume(slurm, params["nodes"], params["owner"], check_mode=module.check_mode)
        else:
            result = query(slurm, params["nodes"], params["owner"])
    except ToolNotFound as err:
        module.fail_json(msg="%s: it is provided by %s" % (err.msg, SLURM_CLIENT))
    except MlnxError as err:
        module.fail_json(**err.fail_kwargs())
    module.exit_json(msg=summary(result, params["state"], check_mode=module.check_mode), **result)


if __name__ == "__main__":
    main()
