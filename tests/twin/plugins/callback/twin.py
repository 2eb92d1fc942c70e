"""The fleet twin's callback: imports, once in ansible-playbook's own process, what every module run on a twin
machine imports (ansible's module_utils, the collection's, the simulator), so each task's worker - a fork of that
process - has them already instead of compiling them from the module's zip every time."""
import gc
import importlib
import os
import pkgutil
import sys

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
    """Import what the twin's modules will import; returns the names imported."""
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
    done = preload_plugins()
    for name in names:
        try:
            importlib.import_module(name)
            done.append(name)
        except ImportError:
            continue
    return done


def preload_plugins():
    """Load, once, the plugins every task's worker would otherwise find and import itself: the action plugins
    (ansible-core's and the collection's), the connection, shell and become plugins, the filters and tests."""
    from ansible.plugins import loader
    done = []
    for plugins in (loader.action_loader, loader.filter_loader, loader.test_loader, loader.lookup_loader):
        done += [getattr(p, "_load_name", "?") for p in plugins.all(class_only=True)]
    for plugins, names in ((loader.connection_loader, ("twin", "local", "ansible.netcommon.httpapi")),
                           (loader.shell_loader, ("sh",)), (loader.become_loader, ("sudo",)),
                           (loader.httpapi_loader, ("gpufabric.mlnx.nvue",))):
        for name in names:
            if plugins.get(name, class_only=True) is not None:
                done.append(name)
    return done


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "twin"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        sim_bin = os.environ.get("GPUFABRIC_TWIN_SIM")
        preload(os.path.dirname(sim_bin) if sim_bin else None)
        gc.freeze()

    def v2_playbook_on_task_start(self, task, is_conditional):
        # Every object made so far moves to the permanent generation: a worker forked for this task does not
        # touch them in its garbage collections (which would copy every page of the controller's process).
        gc.freeze()

    v2_playbook_on_handler_task_start = v2_playbook_on_task_start
