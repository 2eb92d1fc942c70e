# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The action of the switch modules (nvue_config, nvue_info, nvue_image): the module and its connection in the worker.

Over ``ansible.netcommon.httpapi`` and ``network_cli`` ansible-core keeps a persistent connection per host in an
``ansible-connection`` process and, for every task, starts one more Python (the connection stub) only to find that
process again; the module itself is another Python. On a small controller these two interpreter starts per leaf and
task are most of what configuring many leaves at once costs (0.5 CPU-second each here; tests/bench/leaves.py). This
action does without both: it makes the host's connection plugin (the same plugin, from the same inventory variables)
inside the task's worker, and runs the module's ``main()`` there (as ansible.netcommon's direct execution does for
its own modules), handing it the connection. The module - its argument spec, check mode, results,
messages - is the same; only where it runs and how its requests travel change:

- REST (httpapi): the NVUE REST API is HTTP with basic authentication - every request stood alone in the persistent
  process too (no session), so nothing is lost;
- nv over SSH (network_cli): one SSH session per task instead of one per play (a login costs less than the stub).

A task with ``async`` is refused by ansible-core ("This action ... does not support async": the action does not
declare it). On any other connection the module runs as a process as usual (and fails, naming the connections it
needs).
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import io
import sys

from ansible import constants as C
from ansible.errors import AnsibleError
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_text
from ansible.module_utils.connection import ConnectionError as ModuleConnectionError
from ansible.plugins.action import ActionBase
from ansible.plugins.loader import connection_loader, get_plugin_class
from ansible.vars.clean import remove_internal_keys

# The connections this action makes itself (each by any of its names).
CONNECTIONS = {"httpapi": "ansible.netcommon.httpapi", "ansible.netcommon.httpapi": "ansible.netcommon.httpapi",
               "network_cli": "ansible.netcommon.network_cli",
               "ansible.netcommon.network_cli": "ansible.netcommon.network_cli"}


class InWorkerConnection:
    """A connection plugin made in the worker, as the module's code sees a persistent connection: its methods (and
    those of its httpapi or cliconf plugin) called directly, a failure raised as ``ConnectionError`` of
    ``ansible.module_utils.connection`` - what the same call over the persistent connection's socket raises."""

    def __init__(self, connection):
        self._connection = connection

    def __getattr__(self, name):
        attribute = getattr(self._connection, name)
        if not callable(attribute):
            return attribute

        def call(*args, **kwargs):
            try:
                return attribute(*args, **kwargs)
            except ModuleConnectionError:
                raise
            except (AnsibleError, OSError) as err:
                raise ModuleConnectionError(to_text(err)) from err
        return call


class NvueActionModule(ActionBase):
    """Runs a switch module in the task's worker with its host's connection made there (see the module docstring)."""

    _requires_connection = False  # ansible-core then starts no connection stub: this action makes the connection

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        result.update(self.run_on_switch(task_vars or {}))
        return result

    def run_on_switch(self, task_vars):
        """The task's result: its module with its arguments. An action that runs several switch modules in one task
        overrides this (and calls them through ``_switch_modules``)."""
        with self._switch_modules(task_vars) as call:
            return call(self._task.action, self._task.args)

    @contextlib.contextmanager
    def _switch_modules(self, task_vars):
        """A function ``call(module, args)`` that runs the switch module ``module`` (its FQCN) with ``args`` on this
        task's host and returns its result - in this worker over one connection made at the first call and closed at
        the end (httpapi, network_cli), else as a process. An action that runs several switch modules in one task
        (nvue_leaf, nvue_leaf_gate) runs them all over the same connection."""
        host_vars = self._host_vars(task_vars)
        name = CONNECTIONS.get(to_text(self._templar.template(host_vars.get("ansible_connection",
                                                                            self._task.connection))))
        if name is None:
            yield lambda module, args: self._execute_module(module_name=module, module_args=copy.deepcopy(dict(args)),
                                                            task_vars=task_vars)
            return
        made = []

        def call(module, args):
            if not made:
                made.append(self._connect(name, host_vars))
            return self._run_in_worker(InWorkerConnection(made[0]), task_vars, module=module, args=args)
        try:
            yield call
        finally:
            for connection in made:
                try:
                    connection.close()
                except (AnsibleError, OSError):
                    pass

    def _host_vars(self, task_vars):
        if self._task.delegate_to:
            return task_vars.get("ansible_delegated_vars", {}).get(self._task.delegate_to, task_vars)
        return task_vars

    def _connect(self, name, host_vars):
        """The host's connection plugin, its options (and its httpapi or cliconf plugin's, and network_cli's SSH
        plugin's) resolved from the host's variables the way ansible-core's task executor resolves them."""
        play_context = self._play_context.set_task_and_variable_override(
            task=self._task, variables=host_vars, templar=self._templar)
        connection = connection_loader.get(name, play_context, "/dev/null", task_uuid=self._task._uuid)
        task_keys = self._task.dump_attrs()
        task_keys["timeout"] = play_context.timeout
        if play_context.password:
            task_keys["password"] = play_context.password
        del task_keys["retries"]
        connection.set_options(task_keys=task_keys,
                               var_options=connection._resolve_option_variables(host_vars, self._templar))
        if getattr(connection, "_network_os", None) is None and hasattr(connection, "load_platform_plugins"):
            connection.load_platform_plugins()
        sub = getattr(connection, "_sub_plugin", None) or {}
        if sub.get("obj") is not None and sub.get("type") != "external":
            self._set_plugin_options(sub["obj"], get_plugin_class(sub["obj"]), host_vars, task_keys)
        if getattr(connection, "ssh_type_conn", None) is not None:
            self._set_plugin_options(connection.ssh_type_conn, "connection", host_vars, task_keys)
        return connection

    def _set_plugin_options(self, plugin, plugin_type, host_vars, task_keys):
        options = {var: self._templar.template(host_vars[var])
                   for var in C.config.get_plugin_vars(plugin_type, plugin._load_name) if var in host_vars}
        plugin.set_options(task_keys=task_keys, var_options=options)

    def _run_in_worker(self, connection, task_vars, module=None, args=None):
        """The ``main()`` of ``module`` (default: the task's) in this process with ``args`` (default: the task's
        arguments) and the connection; its result."""
        name = module or self._task.action
        context = self._shared_loader_obj.module_loader.find_plugin_with_context(
            name, collection_list=self._task.collections)
        module = importlib.import_module(context.plugin_resolved_name)
        args = copy.deepcopy(dict(self._task.args if args is None else args))
        self._update_module_args(name, args, task_vars)
        recorded = {}

        class WorkerModule(AnsibleModule):
            gpufabric_connection = connection

            def _load_params(self):
                self.params = copy.deepcopy(args)

            def _record_module_result(self, o):
                recorded.update(o)

        module.AnsibleModule = WorkerModule
        stdout, stderr = sys.stdout, sys.stderr
        captured = sys.stdout, sys.stderr = io.StringIO(), io.StringIO()
        try:
            module.main()
        except SystemExit:
            pass
        finally:
            sys.stdout, sys.stderr = stdout, stderr
        if not recorded:  # ansible-core before 2.19.1 has no _record_module_result: the result is on stdout
            recorded = self._parse_returned_data({"stdout": captured[0].getvalue(), "stderr": captured[1].getvalue()})
        remove_internal_keys(recorded)
        return recorded
