"""The one way the unit tests run a module: set its arguments, run its ``main()`` as Ansible would, and read what
it returned through ``exit_json`` or ``fail_json``."""
import contextlib
import io
import json

import pytest
from ansible.module_utils.testing import patch_module_args


def run_module(module, args, check=False, diff=False):
    """Run ``module.main()`` with the task arguments ``args``, in check and/or diff mode on request.

    Returns ``(failed, result)``: whether the module failed (``fail_json``, a non-zero exit) and the result it
    printed, read back from JSON after AnsibleModule's own formatting (``invocation``, ``warnings``, no_log).
    A module that returns without exit_json/fail_json fails the test.
    """
    args = dict(args)
    if check:
        args["_ansible_check_mode"] = True
    if diff:
        args["_ansible_diff"] = True
    printed = io.StringIO()
    with patch_module_args(args), contextlib.redirect_stdout(printed), pytest.raises(SystemExit) as exc:
        module.main()
    return exc.value.code != 0, json.loads(printed.getvalue())
