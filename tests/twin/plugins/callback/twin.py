"""The fleet twin's callback.

- It imports, once in ansible-playbook's own process, what every module run on a twin machine imports (ansible's
  module_utils, the collection's, the simulator) and loads the plugins every task uses, so each task's worker - a
  fork of that process - has them already instead of finding and compiling them every time.
- At the end of a run it writes the rehearsal's prediction (``GPUFABRIC_TWIN_REPORT``, a JSON file): the rollout
  report of site.yml (plugins/plugin_utils/_rollout_report.py) - per server what the run did or, in check mode,
  would do (firmware burned, NV changes, the activation, held by which leaf and why, failed) - which site.yml
  itself writes only outside check mode. A server counts as failed when a task of the rollout failed on it or it
  was unreachable; the closing play that fails the run because servers were held is not a failure of its own."""
import gc
import importlib
import json
import os
import pkgutil
import sys
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
    name: twin
    type: aggregate
    short_description: the fleet twin's imports, made once before the workers fork
    description:
        - Imports ansible.module_utils.basic, the AnsiballZ loader, the collection's module_utils and the simulator
          (tests/sim) in the controller's process; the twin connection's modules then find them imported.
    author: gpufabric.mlnx contributors
    requirements:
        - enabled (the fleet twin's run enables it)
"""

MODULE_UTILS = "ansible_collections.gpufabric.mlnx.plugins.module_utils"


def preload(sim_dir=None):
    """Import what the twin's modules will import (a name this Python lacks is passed over)."""
    names = ["ansible.module_utils.basic", "ansible.module_utils._internal._ansiballz._loader",
             "ansible.module_utils.common.text.converters", "ansible.module_utils.common.process",
             "ansible.module_utils.common.file", "ansible.module_utils.six.moves"]
    package = importlib.import_module(MODULE_UTILS)
    names += ["%s.%s" % (MODULE_UTILS, info.name) for info in pkgutil.iter_modules(package.__path__)
              if not info.ispkg]
    if sim_dir and os.path.isdir(sim_dir):
        if sim_dir not in sys.path:
            sys.path.insert(0, sim_dir)
        names.append("mlxsim.cli")
        tools = importlib.import_module("mlxsim.tools")
        names += ["mlxsim.tools.%s" % info.name for info in pkgutil.iter_modules(tools.__path__)]
    preload_plugins()
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError:
            continue


def preload_plugins():
    """Load, once, the plugins every task's worker would otherwise find and import itself: the action plugins
    (ansible-core's and the collection's), the connection, shell and become plugins, the filters and tests."""
    from ansible.plugins import loader
    for plugins in (loader.action_loader, loader.filter_loader, loader.test_loader, loader.lookup_loader):
        list(plugins.all(class_only=True))
    for plugins, names in ((loader.connection_loader, ("twin", "local", "ansible.netcommon.httpapi")),
                           (loader.shell_loader, ("sh",)), (loader.become_loader, ("sudo",)),
                           (loader.httpapi_loader, ("gpufabric.mlnx.nvue",))):
        for name in names:
            plugins.get(name, class_only=True)


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "twin"
    CALLBACK_NEEDS_ENABLED = True

    HELD_PLAY = "Held servers"  # site.yml's closing play: it fails the run when a leaf held servers

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._variables = None
        self._play = ""
        self._failed = set()
        self._started = time.time()
        self._plays = []   # [(name, seconds from the playbook's start)]: where the time goes (the planning, batches)
        sim_bin = os.environ.get("GPUFABRIC_TWIN_SIM")
        preload(os.path.dirname(sim_bin) if sim_bin else None)
        gc.freeze()

    def v2_playbook_on_task_start(self, task, is_conditional):
        # Every object made so far moves to the permanent generation: a worker forked for this task does not
        # touch them in its garbage collections (which would copy every page of the controller's process).
        gc.freeze()

    v2_playbook_on_handler_task_start = v2_playbook_on_task_start

    def v2_playbook_on_play_start(self, play):
        self._variables = play.get_variable_manager()
        self._play = play.get_name()
        self._plays.append((self._play, round(time.time() - self._started, 2)))

    def _failure(self, result, *_args, **kwargs):
        if not self._play.startswith(self.HELD_PLAY) and not kwargs.get("ignore_errors"):
            self._failed.add(result._host.get_name())

    v2_runner_on_failed = v2_runner_on_unreachable = _failure

    def v2_playbook_on_stats(self, stats):
        path = os.environ.get("GPUFABRIC_TWIN_REPORT")
        if not path or self._variables is None:
            return
        from ansible_collections.gpufabric.mlnx.plugins.filter.rollout_report import rollout_report
        inventory = self._variables._inventory
        # the servers of the run's scope (--limit), not the last play's restriction (a batch) nor the whole
        # inventory: the rehearsal of two racks of a 1,250-server site reports those two racks
        servers = [host.get_name() for host in inventory.get_hosts("servers", ignore_restrictions=True)] \
            if "servers" in inventory.groups else []
        hostvars = {name: self._variables.get_vars(host=inventory.get_host(name), include_hostvars=False)
                    for name in servers}
        local = inventory.get_host("localhost") or inventory.localhost
        rollout = self._variables.get_vars(host=local, include_hostvars=False).get("gpufabric_rollout") or {} \
            if local is not None else {}
        report = json.loads(rollout_report(servers, hostvars, rollout.get("batches") or [], sorted(self._failed),
                                           "json"))
        report["plays"] = [{"name": name, "started": at} for name, at in self._plays]
        report["seconds"] = round(time.time() - self._started, 2)
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w", encoding="utf-8") as out:
            json.dump(report, out, indent=1, sort_keys=True)
