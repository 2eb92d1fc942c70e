#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: nvue_config
short_description: Bring an NVIDIA Cumulus Linux switch to the wanted NVUE configuration, in one revision
version_added: 0.2.0
description:
  - Reads the switch's applied configuration and predicts what the wanted NVUE subtrees change in it (NVUE's merge;
    O(replace) and O(unset) as the switch applies them). A compliant switch ends there - no revision is made, so a
    rerun changes nothing and leaves nothing pending (the NVUE REST API has no call that discards a revision).
  - In check mode the prediction is the result and the diff; no revision is made and nothing is sent but the read.
  - Otherwise the subtrees are staged in ONE new revision; the switch's own copy of the revision, compared with the
    applied configuration, is what the task reports and applies, and the switch's diff of the two must agree (an
    answer the module does not recognise fails the task naming the switch and the request, never "no change").
  - Apply answers the switch's prompts with yes (O(assume_yes)), polls the revision until it reaches a terminal state
    within O(timeout) and fails on V(invalid), V(ays_fail), V(failed) or V(error) with the switch's own issue message
    and its location (for example C(Config invalid at interface.swp3.link.mtu)). V(applied_and_saved) is success; so
    is V(applied) on a switch without auto-save (C(system config auto-save)), after which the configuration is saved
    (C(nv config save)) unless O(save=false); on an auto-save switch V(applied) is a step, waited out, and no second
    save is sent. A poll the switch does not answer (refused, timed out, HTTP 502) is read again, three times in a row
    at most; when the switch stops answering or the timeout runs out, the task fails naming the revision still
    applying and its last state (RV(revision), RV(state)). A revision told busy (HTTP 409, another client applying)
    is applied again until the timeout. What the revision changes is then read back from the applied configuration.
  - Secrets in the configuration (C(password), C(hashed-password), C(secret), SNMP community ids, ...) are shown as
    C(********) in the result and the diff, and the values given in O(config) are no_log values.
  - Keys the task does not name are left as they are (a deep merge), unless their subtree is named in O(replace).
  - Bad input (a key or value NVUE cannot hold, a list where NVUE wants an object keyed by id, a path that is not an
    NVUE path) fails the task before a revision is made.
  - Runs over C(ansible.netcommon.httpapi) (the NVUE REST API) or C(ansible.netcommon.network_cli) (the C(nv) CLI
    over SSH), both with C(ansible_network_os=gpufabric.mlnx.nvue); see the notes.
notes:
  - "Two transports, one behaviour. Over C(ansible.netcommon.httpapi) (C(ansible_network_os: gpufabric.mlnx.nvue),
    port 8765, HTTPS) the module speaks the NVUE REST API. Over C(ansible.netcommon.network_cli)
    (C(ansible_network_os: gpufabric.mlnx.nvue), C(ansible_network_cli_ssh_type: paramiko), an SSH user that may run
    C(nv)) it runs C(nv) commands on the switch: the tree is written to a temporary file by a quoted here-document and
    merged with C(nv config patch), unsets are C(nv unset), the diff is C(nv config diff -o json), the apply
    C(nv config apply -y), a stale session revision is dropped with C(nv config detach). Check mode, the compliance
    rule and the refusals are the same on both."
  - "Over C(ansible.netcommon.network_cli) the apply waits inside one command, so C(ansible_command_timeout) must be
    at least O(timeout); the revision in the result is the one C(nv) named (C(created [rev_id: N]))."
author:
  - gpufabric.mlnx contributors (@gpufabric)
extends_documentation_fragment:
  - gpufabric.mlnx._attributes
  - gpufabric.mlnx._attributes.full
attributes:
  check_mode:
    details: Reads the applied configuration and predicts the change from it; makes no revision, never applies.
options:
  config:
    description:
      - >-
        The wanted configuration as an NVUE tree from the root, as C(nv show -o json) prints it and the REST API takes
        it, for example V({"interface": {"swp1": {"link": {"mtu": 9216, "state": {"up": {}}}}}}).
      - Collections are objects keyed by id; V({}) is a present empty object.
    type: dict
    default: {}
  replace:
    description:
      - Paths (such as V(/qos/roce)) whose subtree becomes exactly what O(config) holds there; keys under them that
        O(config) does not name are unset. Each must be in O(config). V(/) is refused.
    type: list
    elements: str
    default: []
  unset:
    description: Paths to unset (V(/interface/swp9/link/mtu)); absent ones are no change. V(/) is refused.
    type: list
    elements: str
    default: []
  assume_yes:
    description: Answer yes to the warnings an apply raises (C(auto-prompt ays_yes), C(nv config apply -y)).
    type: bool
    default: true
  save:
    description: Save the applied configuration as the startup configuration when the switch did not (auto-save off).
    type: bool
    default: true
  timeout:
    description: Seconds to wait for the apply to reach a terminal state, 1-86400.
    type: int
    default: 120
  poll_interval:
    description: Seconds between two reads of the revision's state, more than 0 and at most 60.
    type: float
    default: 1.0
"""

EXAMPLES = r"""
- name: Lossless RoCE and jumbo frames on the server-facing ports
  gpufabric.mlnx.nvue_config:
    config:
      qos:
        roce: {enable: "on", mode: lossless}
      interface:
        swp1: {link: {mtu: 9216, state: {up: {}}}, description: "srv-r01-01:enp24s0np0 -> su01-leaf-rail0:swp1"}
"""

RETURN = r"""
revision:
  description: The id of the revision the task made and applied; null when none was made (nothing to change, or
    check mode). On a failure the revision to watch when the switch may still apply it.
  returned: always
  type: str
  sample: "7"
state:
  description: The revision's terminal state, V(applied) or V(applied_and_saved); null when nothing was applied. On a
    failure the last state read.
  returned: always
  type: str
saved:
  description: Whether the applied configuration is the startup configuration now (auto-save or a save).
  returned: always
  type: bool
nvue_diff:
  description: What the revision changes in the applied configuration (the prediction in check mode), secrets
    masked.
  returned: always
  type: list
  elements: dict
  sample: [{"set": {"interface": {"swp1": {"link": {"mtu": 9216}}}}}]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._module import ansible_module
from ansible_collections.gpufabric.mlnx.plugins.module_utils._nvue import configure, mask, secrets_in
from ansible_collections.gpufabric.mlnx.plugins.module_utils._nvue_cli import switch_for

ARGUMENT_SPEC = dict(
    config=dict(type="dict", default={}),
    replace=dict(type="list", elements="str", default=[]),
    unset=dict(type="list", elements="str", default=[]),
    assume_yes=dict(type="bool", default=True),
    save=dict(type="bool", default=True),
    timeout=dict(type="int", default=120),
    poll_interval=dict(type="float", default=1.0),
)


def main():
    module = ansible_module(AnsibleModule, argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    params = module.params
    # Secrets (values at secret keys, SNMP community ids): no_log values wherever Ansible masks them, and the
    # invocation's config masked here too - Ansible masks values, not the keys a community id is.
    module.no_log_values.update(secrets_in(params["config"]))
    invocation = {"module_args": dict(params, config=mask(params["config"]))}
    if not 1 <= params["timeout"] <= 86400:
        module.fail_json(msg="timeout is %s (allowed: 1 to 86400 seconds)" % params["timeout"], parameter="timeout",
                         invocation=invocation)
    if not 0 < params["poll_interval"] <= 60:  # also refuses nan and inf
        module.fail_json(msg="poll_interval is %s (allowed: more than 0, at most 60 seconds)" % params["poll_interval"],
                         parameter="poll_interval", invocation=invocation)
    try:
        switch = switch_for(module)
        result = configure(switch, params["config"], replace=params["replace"], unset=params["unset"],
                           check_mode=module.check_mode, assume_yes=params["assume_yes"], save=params["save"],
                           timeout=params["timeout"], interval=params["poll_interval"])
    except MlnxError as err:
        module.fail_json(invocation=invocation, **err.fail_kwargs())
    module.exit_json(
        invocation=invocation, changed=result["changed"], revision=result["revision"], state=result["state"],
        saved=result["saved"], nvue_diff=result["nvue_diff"],
        diff=dict(before=result["before"], after=result["after"], before_header="applied",
                  after_header="revision %s" % result["revision"] if result["revision"] else "predicted"))


if __name__ == "__main__":
    main()
