# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drift callback: what a check-mode run predicts it would change, per host and setting, as drift.json and
drift.md (the drift report of playbooks/drift.yml)."""

from __future__ import annotations

DOCUMENTATION = r"""
name: drift
type: aggregate
short_description: The drift report - every change a check-mode run predicts, per host or leaf and per setting
version_added: 0.1.0
author:
  - gpufabric.mlnx contributors (@gpufabric)
description:
  - Collects, beside the normal stdout callback, every task result that a run in check mode (C(--check --diff))
    reports as changed - what a real run would change - and writes the drift report, C(drift.json) and
    C(drift.md), in O(dir). C(playbooks/drift.yml) is the playbook made for it (site.yml in check mode,
    servers and leaves, the validation gate left out); any other playbook run with C(--check --diff) can use it too.
  - 'Per host or leaf, every setting that would change with its setting group (C(driver), C(firmware),
    C(nv_parameters), C(activation), C(bios), C(kernel_parameters), C(power_policy), C(pcie), C(rails), C(roce_qos),
    C(leaf_configuration), C(leaf_release)), the value the host has (C(actual)) and the one the inventory wants
    (C(expected)), and the task that predicted it. A diff of mappings (the modules of this collection return
    C(before)/C(after) mappings in one shape) gives a row per value that differs, named by its path
    (C(0000:18:00.0/LINK_TYPE_P1), C(interface/swp1/link/mtu)); a diff of texts (a file) a unified diff; a changed
    task without a diff a row with its message.'
  - A run without C(--check) is not a drift report - what it changes is not drift, it is the rollout - so the
    callback then writes and prints nothing, and can stay enabled for every job of a pipeline.
  - A result counts only when its task ran in check mode; a task that runs for real in check mode (C(check_mode)
    false - the reads, the controller's own report files) predicts nothing and is left out. A result of a task with
    C(no_log) is recorded by its task name only (Ansible hands the callback no value of it).
  - 'C(drift.json) (schema 1): C(result) - V(drift) when any host would change, else V(incomplete) when a host
    failed or was unreachable (what it has past the failure is not known), else V(compliant) -, C(summary)
    (C(hosts), C(drifted), C(failed), C(unreachable), C(settings)), and C(hosts) (per host C(kind) - V(leaf) for
    the members of the group C(leaves), else V(server) -, C(status), C(groups), C(settings), C(failures)).
    C(finished) is null until the run has ended.'
  - The report is written again at the start of every play and at the end of the run, so a play that comes after
    the rollout (the verdict of C(playbooks/drift.yml)) reads the report of everything before it, and a
    run that stops early still leaves its report.
  - The callback puts the absolute path of C(drift.json) in the environment variable C(GPUFABRIC_DRIFT_REPORT) of
    the run (its tasks inherit it), where the verdict of C(playbooks/drift.yml) reads it
    (C(lookup('ansible.builtin.env', 'GPUFABRIC_DRIFT_REPORT'))).
requirements:
  - Enabled in the configuration, C(callbacks_enabled) in ansible.cfg or C(ANSIBLE_CALLBACKS_ENABLED) (for
    example C(ANSIBLE_CALLBACKS_ENABLED=gpufabric.mlnx.drift)); it runs beside the stdout callback.
  - The run in check mode and diff mode (C(--check --diff)) - without C(--diff) the modules return no before and
    after values, only that they would change.
options:
  dir:
    description:
      - The directory of C(drift.json) and C(drift.md), made when missing; relative to the directory
        C(ansible-playbook) runs in. The default is the collection's report directory (C(gpufabric_report_dir)'s
        default).
    type: path
    default: reports
    env:
      - name: GPUFABRIC_DRIFT_DIR
    ini:
      - section: callback_gpufabric_drift
        key: dir
notes:
  - Pure Python, no dependency beyond ansible-core.
  - A callback cannot set the exit code of C(ansible-playbook); C(playbooks/drift.yml) ends with a play
    that reads the report and fails when it is not V(compliant), so a pipeline gets both a file and an exit code.
seealso:
  - plugin: gpufabric.mlnx.progress
    plugin_type: callback
    description: One line per rollout batch.
"""

EXAMPLES = r"""
# The drift report of a site, servers and leaves:
#   ANSIBLE_CALLBACKS_ENABLED=gpufabric.mlnx.drift \
#     ansible-playbook -i inventory/site gpufabric.mlnx.drift --check --diff
#   jq .result reports/drift.json          # compliant, drift or incomplete
# In ansible.cfg:
#   [defaults]
#   callbacks_enabled = gpufabric.mlnx.drift
#
#   [callback_gpufabric_drift]
#   dir = reports/nightly
"""

import datetime
import os

from ansible import context
from ansible.plugins.callback import CallbackBase

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils import _drift

PREFIX = "[drift] "
# The role of drift.yml's guard and verdict: they read the report, they are not part of it.
OWN_ROLE = "gpufabric.mlnx.drift"
REPORT_ENV = "GPUFABRIC_DRIFT_REPORT"


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _role(task):
    role = getattr(task, "_role", None)
    return role.get_name() if role is not None else None


def _message(result):
    """A failure's message as one text (an assert's list of lines joined), or None."""
    msg = result.result.get("msg")
    if isinstance(msg, list):
        msg = "; ".join(str(line) for line in msg)
    return msg if isinstance(msg, str) else None


def _task_file(task):
    path = task.get_path() if hasattr(task, "get_path") else ""
    return (path or "").rsplit(":", 1)[0]


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "gpufabric.mlnx.drift"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, display=None):
        super().__init__(display=display)
        self._hosts = {}
        self._leaves = set()
        self._playbook = None
        self._started = _now()
        self._dir = "reports"
        self._write_error = False
        self._active = True

    def set_options(self, task_keys=None, var_options=None, direct=None):
        super().set_options(task_keys=task_keys, var_options=var_options, direct=direct)
        self._dir = os.path.abspath(self.get_option("dir") or "reports")
        # the run's tasks (drift.yml's verdict) find the report here: they inherit this process's environment
        os.environ[REPORT_ENV] = os.path.join(self._dir, "drift.json")

    def _host(self, result):
        """The record of the result's host; None outside a check-mode run, for the implicit localhost and for the
        tasks of drift.yml's own guard and verdict (role gpufabric.mlnx.drift)."""
        if not self._active or getattr(result.host, "implicit", False) or _role(result.task) == OWN_ROLE:
            return None
        name = result.host.get_name()
        return self._hosts.setdefault(name, {"settings": [], "failures": [], "unreachable": False})

    def _write(self, finished=None):
        doc = _drift.document(self._hosts, self._leaves, self._playbook, self._started, finished)
        if self._write_error:
            return doc, None
        try:
            return doc, _drift.write(doc, self._dir)
        except OSError as err:
            self._write_error = True
            self._display.warning("gpufabric.mlnx.drift: cannot write the drift report in %s (%s)" % (self._dir, err))
            return doc, None

    # ------------------------------------------------------------------ ansible's events

    def v2_playbook_on_start(self, playbook):
        self._playbook = getattr(playbook, "_file_name", None)
        # a run that changes things (not --check) predicts nothing: no report, whatever it changed
        self._active = bool(context.CLIARGS.get("check"))

    def v2_playbook_on_play_start(self, play):
        if not self._active:
            return
        manager = play.get_variable_manager()
        inventory = getattr(manager, "_inventory", None)
        if inventory is not None:
            group = inventory.groups.get("leaves")
            if group is not None:
                self._leaves.update(h.get_name() for h in group.get_hosts())
        self._write()

    def v2_runner_on_ok(self, result):
        data, task = result.result, result.task
        host = self._host(result)
        # the task's own check_mode as the worker resolved it: False is a task that ran for real
        check_mode = result.task_fields.get("check_mode", task.check_mode)
        if host is None or not data.get("changed") or check_mode is False:
            return
        where = (result.task_name or task.action, task.resolved_action or task.action, _role(task), _task_file(task))
        if "censored" in data:
            # a no_log result: its task's name only, as a change without a diff
            host["settings"].extend(_drift.settings({"msg": "(no_log: values not shown)"}, *where))
            return
        items = data.get("results") if isinstance(data.get("results"), list) else [data]
        for item in items:
            if isinstance(item, dict) and item.get("changed"):
                host["settings"].extend(_drift.settings(item, *where))

    def v2_runner_on_failed(self, result, ignore_errors=False):
        host = self._host(result)
        if host is not None and not ignore_errors:
            host["failures"].append({"task": result.task_name, "msg": _message(result)})

    def v2_runner_on_unreachable(self, result):
        host = self._host(result)
        if host is not None:
            host["unreachable"] = True
            host["failures"].append({"task": result.task_name, "msg": _message(result)})

    def v2_runner_on_skipped(self, result):
        self._host(result)

    def v2_playbook_on_stats(self, stats):
        if not self._active:
            return
        doc, paths = self._write(finished=_now())
        summary = doc["summary"]
        where = " - %s, %s" % (paths["md"], paths["json"]) if paths else ""
        if doc["result"] == "compliant":
            line = "compliant: no drift on %d hosts%s" % (summary["hosts"], where)
        else:
            line = "%s: %d of %d hosts would change (%d settings), %d failed, %d unreachable%s" % (
                doc["result"], len(summary["drifted"]), summary["hosts"], summary["settings"],
                len(summary["failed"]), len(summary["unreachable"]), where)
        self._display.display(PREFIX + line)
