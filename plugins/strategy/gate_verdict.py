# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The validation gate's exit code: ansible.builtin.linear, then the play's result from the gate's verdict."""

from __future__ import annotations

DOCUMENTATION = r"""
name: gate_verdict
short_description: Linear, then the validation gate's exit code - 0 handed over, 1 quarantined, 2 a failure
version_added: 0.2.0
author:
  - gpufabric.mlnx contributors (@gpufabric)
description:
  - Runs the play exactly as P(ansible.builtin.linear#strategy) does. When the play is the last one of the run, its
    result is C(ansible-playbook)'s exit code, which this strategy sets from the validation gate's verdict (the fact
    C(gpufabric_gate_results) the gate sets on the play's hosts) - C(playbooks/validate.yml)'s gate play uses it when
    run with C(-e gpufabric_validate_exit_codes=true) (ansible-core 2.19 deprecates third-party strategies, so not
    by default).
  - 'C(0): nothing failed and every server is handed over (C(gpufabric_gate_results.status) V(handed_over)), or the
    gate gave no verdict (check mode measures nothing).'
  - 'C(1): nothing failed and some servers are quarantined (V(quarantined); C(gate.json) has the C(failures)).'
  - 'C(2): a host failed or was unreachable in the run - a check of C(validate.yml) refused its input, a
    prerequisite is missing (a tool, a rail plan, a reachable server) - whatever the verdict. C(ansible-playbook)
    itself would return 4 for an unreachable host; here it is 2.'
  - C(ansible-playbook)'s own codes for what happens before or outside any play stay its own (1 for an error it
    stops on, such as a playbook it cannot find; 4 for a playbook it cannot parse; 5 for bad options; 99 when
    interrupted; 250 for an unexpected error) - docs/validation.md says how a pipeline tells them apart.
notes:
  - Only the last play's result is C(ansible-playbook)'s exit code; an earlier play's failure reaches the last play
    as failed hosts (2).
  - ansible-core 2.19 deprecates strategy plugins outside ansible.builtin (a deprecation warning on every run that
    uses one, no removal version, "no alternative ... planned"); no other way lets a playbook end
    C(ansible-playbook) with exit code 1. When ansible-core removes them, C(gate.json)'s C(status) remains the
    verdict (docs/validation.md, "For a pipeline").
"""

from ansible.plugins.strategy.linear import StrategyModule as LinearStrategyModule

QUARANTINED = 1         # some servers quarantined, nothing failed
FAILED = 2              # a host failed or was unreachable: misuse or a prerequisite missing


class StrategyModule(LinearStrategyModule):
    """ansible.builtin.linear; then the exit code of the validation gate (DOCUMENTATION)."""

    def run(self, iterator, play_context):
        result = super().run(iterator, play_context)
        if result != self._tqm.RUN_OK:
            # failed or unreachable hosts (2, 4), with the bit that tells the playbook to stop kept
            return FAILED | (int(result) & self._tqm.RUN_FAILED_BREAK_PLAY)
        return QUARANTINED if self._status(iterator) == "quarantined" else self._tqm.RUN_OK

    def _status(self, iterator):
        """``gpufabric_gate_results.status`` of the first host of the play that has the gate's verdict (the gate
        sets it, run once, on every host of the play)."""
        for name in self._hosts_cache_all or []:
            host = self._inventory.get_host(name)
            if host is None:
                continue
            results = self._variable_manager.get_vars(play=iterator._play, host=host, include_hostvars=False,
                                                      _hosts=self._hosts_cache,
                                                      _hosts_all=self._hosts_cache_all).get("gpufabric_gate_results")
            if isinstance(results, dict):
                return results.get("status")
        return None
