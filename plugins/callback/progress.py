# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The progress callback: a line per rollout batch (start, end with an estimate of the time left) and a summary."""

from __future__ import annotations

DOCUMENTATION = r"""
name: progress
type: aggregate
short_description: One line per rollout batch, the time left, and a summary of the run
version_added: 0.1.0
author:
  - gpufabric.mlnx contributors (@gpufabric)
description:
  - Prints, beside the normal stdout callback, one line when a batch of a play with C(serial) starts, one when it
    ends, and a summary at the end of the run - meant for long rollouts of C(playbooks/site.yml), whose play
    "The rollout, batch by batch" runs the servers in batches (docs/leaves.md, "The rollout").
  - 'A batch starts, for example: "[progress] batch 2 of 5 (rack r02): 8 servers, 2 leaves - started 00:03:12 into
    the run" (from the second batch on, with ", estimate 00:09:40 left").'
  - 'A batch ends, for example: "[progress] batch 2 of 5 done in 00:01:40: 40/200 servers done, 1 held,
    2 quarantined, 2 failed; elapsed 00:04:52, estimate 00:12:10 left (mean batch time x batches left)".'
  - 'The run ends, for example: "[progress] run done in 00:14:02: 5 of 5 batches, 200/200 servers done, 3 held,
    2 quarantined, 4 failed; recap 212 hosts: 208 ok, 4 failed, 0 unreachable".'
  - The batches are the ones ansible-core makes from the play's C(serial) (it starts the play once per batch). When
    the planning play of site.yml has set C(gpufabric_rollout) (the C(gpufabric.mlnx.rollout_batches) filter) and
    its batches are the play's, each batch is named as the plan names it (C(rack r02), C(SU 1), C(servers 1-8)) and
    its servers and leaves are counted apart; otherwise every host of the batch counts as a host.
  - The counts at the end of a batch are of the hosts (servers) of the batches finished so far in that play -
    C(done) their number, C(held) those with a non-empty C(gpufabric_held) fact (a leaf that was not ready held
    the server), C(quarantined) those named in C(gpufabric_gate_results.quarantine) (the validation gate),
    C(failed) the hosts (servers and leaves) whose failure was not ignored nor rescued, and C(unreachable) (shown
    when not 0).
  - The estimate is the mean duration of the finished batches of the play times the batches left; there is none
    before the first batch ends. When the run stops before the last batch (the batch gate of site.yml, or every
    host of a batch failed), the end line and the summary say how many batches did not run.
  - The summary also counts the hosts of the play recap (ok - no failure, failed, unreachable).
  - Ansible's timing callback P(ansible.posix.profile_tasks#callback) (per task) goes well with it, to find slow
    steps.
requirements:
  - Enabled in the configuration, C(callbacks_enabled) in ansible.cfg or C(ANSIBLE_CALLBACKS_ENABLED) (for
    example C(ANSIBLE_CALLBACKS_ENABLED=gpufabric.mlnx.progress)); it runs beside the stdout callback.
options:
  output:
    description:
      - Where the lines go.
      - V(stdout) prints them through Ansible's display (beside the stdout callback's output); the JSON lines go
        to O(path) too when it is set.
      - V(file) prints nothing and writes only the JSON lines to O(path) (for CI); without O(path) it warns and
        prints the lines.
    type: str
    choices: [stdout, file]
    default: stdout
    env:
      - name: GPUFABRIC_PROGRESS_OUTPUT
    ini:
      - section: callback_gpufabric_progress
        key: output
  path:
    description:
      - A file to append JSON lines to, one per event (for CI); not set, no file is written.
      - 'Each line is an object with C(event): V(batch_start) (C(play), C(batch), C(batches), C(name), C(hosts),
        C(servers), C(leaves), C(estimate_left)), V(batch_end) (also C(duration), C(done), C(total), C(held),
        C(quarantined), C(failed), C(unreachable) - lists of host names, of the batches finished so far -, C(batch_held),
        C(batch_quarantined), C(batch_failed), C(batch_unreachable) - of this batch -, C(batches_left),
        C(estimate_left), C(stopped)) or V(summary) (C(batches_run), C(batches), C(done), C(total), C(held),
        C(quarantined), C(failed), C(unreachable), C(recap) - C(ok), C(failed), C(unreachable) lists of the play
        recap -, C(stopped)); and in every line C(time) (UTC, ISO 8601) and C(elapsed) (seconds since the run
        started). Durations are in seconds; C(estimate_left) is null before the first batch ends.'
      - The file is appended to, never truncated; its directory must exist.
    type: path
    env:
      - name: GPUFABRIC_PROGRESS_PATH
    ini:
      - section: callback_gpufabric_progress
        key: path
notes:
  - Pure Python, no dependency beyond ansible-core.
  - A host that fails and then runs a later task of the same play (a C(rescue), C(ignore_unreachable)) is not
    counted as failed.
  - C(gpufabric_held) and C(gpufabric_gate_results) are read from the results of the tasks that set them
    (C(ansible.builtin.set_fact)); the batch gate of site.yml fails the hosts of a batch it stops after, and they
    count as failed, as in the play recap.
seealso:
  - plugin: ansible.posix.profile_tasks
    plugin_type: callback
    description: The time of every task, to find the slow steps of a run.
"""

EXAMPLES = r"""
# On the command line, with the per-task timing of ansible.posix:
#   ANSIBLE_CALLBACKS_ENABLED=gpufabric.mlnx.progress,ansible.posix.profile_tasks \
#     ansible-playbook -i inventory/site playbooks/site.yml
# In ansible.cfg, with the JSON lines for CI:
#   [defaults]
#   callbacks_enabled = gpufabric.mlnx.progress
#
#   [callback_gpufabric_progress]
#   path = reports/progress.jsonl
"""

import datetime
import json
import time
from collections.abc import Mapping, Sequence

from ansible.playbook.handler import Handler
from ansible.plugins.callback import CallbackBase
from ansible.utils.helpers import pct_to_int

PREFIX = "[progress] "


def clock(seconds):
    """``HH:MM:SS`` (hours past 24 go on counting)."""
    seconds = max(0, int(round(seconds)))
    return "%02d:%02d:%02d" % (seconds // 3600, seconds // 60 % 60, seconds % 60)


PLURALS = {"leaf": "leaves", "batch": "batches"}


def plural(count, word):
    """``1 server``, ``2 servers``, ``2 leaves``, ``0 batches``."""
    return "%d %s" % (count, word if count == 1 else PLURALS.get(word, word + "s"))


def serial_batches(serial, hosts):
    """The batches ansible-core makes of ``hosts`` with ``serial`` (executor/playbook_executor.py,
    ``_get_serialized_batches``: a percentage of all the play's hosts, the last size repeated, 0 or less: the rest)."""
    sizes = list(serial) or [-1]
    left, out, index = list(hosts), [], 0
    while left:
        size = pct_to_int(sizes[index], len(hosts))
        if size <= 0:
            out.append(left)
            break
        out.append(left[:size])
        left = left[size:]
        index = min(index + 1, len(sizes) - 1)
    return out


def _names(value):
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        return []
    return [v for v in value if isinstance(v, str)]


def plan_batches(value):
    """The batches of a ``gpufabric_rollout`` fact (``[{"name", "servers", "leaves"}]``), or None."""
    if not isinstance(value, Mapping) or not isinstance(value.get("batches"), Sequence):
        return None
    out = []
    for batch in value["batches"]:
        if not isinstance(batch, Mapping):
            return None
        out.append({"name": str(batch.get("name", "")), "servers": _names(batch.get("servers")),
                    "leaves": _names(batch.get("leaves"))})
    return out


def _host(result):
    """The inventory name of a result's host (``result.host`` since ansible-core 2.19, ``_host`` before)."""
    return (getattr(result, "host", None) or getattr(result, "_host")).get_name()


class _Play:
    """A play with ``serial`` as it runs batch by batch."""

    def __init__(self, uuid, name, hosts_all, batches, plan):
        self.uuid, self.name = uuid, name
        self.hosts_all = list(hosts_all)
        self.batches = batches  # [[host]] as ansible-core makes them
        # the rollout plan, when its batches are exactly this play's: names, servers apart from leaves
        self.plan = None
        if plan is not None and len(plan) == len(batches) and all(
                set(p["servers"]) | set(p["leaves"]) == set(b) for p, b in zip(plan, batches)):
            self.plan = plan
        self.servers = ({h for p in self.plan for h in p["servers"]} if self.plan is not None
                        else set(self.hosts_all))
        self.noun = "server" if self.plan is not None else "host"
        self.number = 0  # the batch running (1-based)
        self.durations = []  # of the finished batches
        self.done = []  # the hosts of the finished batches

    def estimate(self):
        """Mean duration of the finished batches x batches left; None before the first batch ends."""
        if not self.durations:
            return None
        return sum(self.durations) / len(self.durations) * (len(self.batches) - len(self.durations))


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "gpufabric.mlnx.progress"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, display=None):
        super().__init__(display=display)
        self._now = time.monotonic
        self._start = self._now()
        self._output = "stdout"
        self._path = None
        self._plan = None  # the batches of the last gpufabric_rollout fact seen
        self._plays = []  # every _Play run, in order
        self._play = None  # the _Play whose batch is open
        self._batch = None  # {"number", "hosts", "started"} of the open batch
        self._held = set()
        self._quarantined = {}  # host -> failures
        self._failed = set()
        self._unreachable = set()
        self._file_error = False

    def set_options(self, task_keys=None, var_options=None, direct=None):
        super().set_options(task_keys=task_keys, var_options=var_options, direct=direct)
        self._output = self.get_option("output") or "stdout"
        self._path = self.get_option("path") or None
        if self._output == "file" and not self._path:
            self._display.warning("gpufabric.mlnx.progress: output=file needs a path (GPUFABRIC_PROGRESS_PATH); "
                                  "printing the progress lines instead")
            self._output = "stdout"

    # ------------------------------------------------------------------ output

    def _emit(self, line, event):
        if self._output == "stdout":
            self._display.display(PREFIX + line)
        if self._path and not self._file_error:
            event = dict(event, time=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                         elapsed=round(self._now() - self._start, 3))
            try:
                with open(self._path, "a", encoding="utf-8") as stream:
                    stream.write(json.dumps(event, sort_keys=True, default=str) + "\n")
            except OSError as err:
                self._file_error = True
                self._display.warning("gpufabric.mlnx.progress: cannot append to %s (%s); no more JSON lines"
                                      % (self._path, err))

    # ------------------------------------------------------------------ batches

    def _batch_counts(self, play, hosts):
        """(servers, leaves) of the hosts of a batch: with the rollout plan, its servers apart; else all hosts."""
        servers = [h for h in hosts if h in play.servers]
        return servers, [h for h in hosts if h not in play.servers]

    def _open_batch(self, play, hosts):
        play.number += 1
        number, total = play.number, len(play.batches)
        elapsed = self._now() - self._start
        self._play, self._batch = play, {"number": number, "hosts": list(hosts), "started": self._now()}
        servers, leaves = self._batch_counts(play, hosts)
        name = play.plan[number - 1]["name"] if play.plan is not None else None
        if play.plan is not None:
            what = "%s, %s" % (plural(len(servers), "server"), plural(len(leaves), "leaf"))
        else:
            what = plural(len(hosts), "host")
        estimate = play.estimate()
        line = "batch %d of %d%s: %s - started %s into the run%s" % (
            number, total, " (%s)" % name if name else "", what, clock(elapsed),
            "" if estimate is None else ", estimate %s left" % clock(estimate))
        self._emit(line, {"event": "batch_start", "play": play.name, "batch": number, "batches": total,
                          "name": name, "hosts": list(hosts), "servers": len(servers), "leaves": len(leaves),
                          "estimate_left": None if estimate is None else round(estimate, 3)})

    def _close_batch(self, stopped=False):
        """End the open batch; ``stopped``: no more batch of its play starts (the run or the play ended)."""
        play, batch = self._play, self._batch
        if batch is None:
            return
        self._play = self._batch = None
        duration = self._now() - batch["started"]
        play.durations.append(duration)
        play.done.extend(batch["hosts"])
        number, total = batch["number"], len(play.batches)
        left = total - number
        stopped = stopped and left > 0
        done = [h for h in play.done if h in play.servers]
        counts = self._counts(play.done)
        here = self._counts(batch["hosts"])
        estimate = None if stopped else play.estimate()
        if stopped:
            tail = "stopped: %s not run (%s)" % (plural(left, "batch"),
                                                 plural(self._left_servers(play), play.noun))
        elif left:
            tail = "estimate %s left (mean batch time x batches left)" % clock(estimate)
        else:
            tail = "no batch left"
        line = "batch %d of %d done in %s: %d/%d %ss done, %s; elapsed %s, %s" % (
            number, total, clock(duration), len(done), len(play.servers), play.noun, self._count_text(counts),
            clock(self._now() - self._start), tail)
        event = {"event": "batch_end", "play": play.name, "batch": number, "batches": total,
                 "name": play.plan[number - 1]["name"] if play.plan is not None else None,
                 "duration": round(duration, 3), "done": len(done), "total": len(play.servers),
                 "batches_left": left, "estimate_left": None if estimate is None else round(estimate, 3),
                 "stopped": stopped}
        event.update(counts)
        event.update(("batch_" + key, value) for key, value in here.items())
        self._emit(line, event)

    def _left_servers(self, play):
        return len([h for b in play.batches[play.number:] for h in b if h in play.servers])

    def _counts(self, hosts):
        """The held, quarantined, failed and unreachable hosts among ``hosts`` (lists of names)."""
        return {"held": [h for h in hosts if h in self._held],
                "quarantined": [h for h in hosts if h in self._quarantined],
                "failed": [h for h in hosts if h in self._failed],
                "unreachable": [h for h in hosts if h in self._unreachable]}

    @staticmethod
    def _count_text(counts):
        text = "%d held, %d quarantined, %d failed" % (len(counts["held"]), len(counts["quarantined"]),
                                                       len(counts["failed"]))
        if counts["unreachable"]:
            text += ", %d unreachable" % len(counts["unreachable"])
        return text

    # ------------------------------------------------------------------ ansible's events

    def v2_playbook_on_play_start(self, play):
        # ansible-core starts a play with serial once per batch (playbook_executor.py runs the task queue manager
        # per batch of _get_serialized_batches, and TaskQueueManager.run sends v2_playbook_on_play_start with a
        # copy of the play that keeps its uuid); so the same uuid again is the play's next batch, and another play
        # means no more batch of the open one (meta end_play) will start.
        uuid = getattr(play, "_uuid", None)
        self._close_batch(stopped=self._play is not None and self._play.uuid != uuid)
        serial = list(getattr(play, "serial", None) or [])
        if not serial:
            return
        current = self._plays[-1] if self._plays and self._plays[-1].uuid == uuid else None
        # the play's hosts (all, and this batch's) as its tasks see them; progress must never break the run
        try:
            magic = play.get_variable_manager().get_vars(play=play, include_hostvars=False)
            hosts_all = [str(h) for h in magic.get("ansible_play_hosts_all", [])]
            batch = [str(h) for h in magic.get("ansible_play_batch", [])]
        except Exception as err:  # pylint: disable=broad-except
            self._display.warning("gpufabric.mlnx.progress: cannot read the hosts of the play %s: %s"
                                  % (play.get_name(), err))
            return
        if current is None:
            try:
                batches = serial_batches(serial, hosts_all)
            except (TypeError, ValueError):
                return
            if not batches:
                return
            current = _Play(uuid, play.get_name(), hosts_all, batches, self._plan)
            self._plays.append(current)
        if current.number >= len(current.batches):
            return
        self._open_batch(current, batch or current.batches[current.number])

    @staticmethod
    def _facts(result):
        """The facts a set_fact result sets (its items' too). Only set_fact: reading a result costs a copy of it."""
        task = getattr(result, "task", None) or getattr(result, "_task", None)
        if str(getattr(task, "action", "")).rsplit(".", 1)[-1] != "set_fact":
            return []
        data = getattr(result, "result", None)
        if data is None:
            data = getattr(result, "_result", None)
        if not isinstance(data, Mapping):
            return []
        out = [data.get("ansible_facts")]
        items = data.get("results")
        if isinstance(items, Sequence) and not isinstance(items, (str, bytes)):
            out.extend(item.get("ansible_facts") for item in items if isinstance(item, Mapping))
        return [facts for facts in out if isinstance(facts, Mapping)]

    def _ran(self, result):
        """A result of a host: facts read; a later task (not a handler) of a host that failed: it was rescued."""
        host = _host(result)
        if not isinstance(getattr(result, "task", None) or getattr(result, "_task", None), Handler):
            # a host that failed runs no later task of the play unless it was rescued (or ignore_unreachable)
            self._failed.discard(host)
            self._unreachable.discard(host)
        for facts in self._facts(result):
            if "gpufabric_rollout" in facts:
                plan = plan_batches(facts["gpufabric_rollout"])
                if plan is not None:
                    self._plan = plan
            held = facts.get("gpufabric_held")
            if isinstance(held, Sequence) and not isinstance(held, (str, bytes)):
                if held:
                    self._held.add(host)
                else:
                    self._held.discard(host)
            gate = facts.get("gpufabric_gate_results")
            if isinstance(gate, Mapping) and isinstance(gate.get("quarantine"), Sequence):
                for entry in gate["quarantine"]:
                    if isinstance(entry, Mapping) and isinstance(entry.get("host"), str):
                        self._quarantined[entry["host"]] = entry.get("failures")

    def v2_runner_on_ok(self, result):
        self._ran(result)

    def v2_runner_on_skipped(self, result):
        self._ran(result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        if ignore_errors:
            self._ran(result)
        else:
            self._failed.add(_host(result))

    def v2_runner_on_unreachable(self, result):
        self._unreachable.add(_host(result))

    def v2_playbook_on_stats(self, stats):
        self._close_batch(stopped=True)
        recap = {"ok": [], "failed": [], "unreachable": []}
        for host in sorted(stats.processed):
            summary = stats.summarize(host)
            key = "unreachable" if summary.get("unreachable") else "failed" if summary.get("failures") else "ok"
            recap[key].append(host)
        total = sum(len(p.batches) for p in self._plays)
        run = sum(p.number for p in self._plays)
        hosts = [h for p in self._plays for h in p.done]
        servers = sum(len(p.servers) for p in self._plays)
        done = sum(len([h for h in p.done if h in p.servers]) for p in self._plays)
        noun = "server" if any(p.plan is not None for p in self._plays) else "host"
        counts = self._counts(list(dict.fromkeys(hosts)))
        stopped = run < total
        if self._plays:
            batches = "%d of %d batches, %d/%d %ss done, %s" % (run, total, done, servers, noun,
                                                                self._count_text(counts))
            if stopped:
                batches += " (stopped: %s not run)" % plural(total - run, "batch")
        else:
            batches = "no play ran in batches (serial)"
        line = "run done in %s: %s; recap %s: %d ok, %d failed, %d unreachable" % (
            clock(self._now() - self._start), batches, plural(len(stats.processed), "host"), len(recap["ok"]),
            len(recap["failed"]), len(recap["unreachable"]))
        event = {"event": "summary", "batches_run": run, "batches": total, "done": done,
                 "total": servers, "recap": recap, "stopped": stopped}
        event.update(counts)
        self._emit(line, event)
