# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How every module of the collection makes its ``AnsibleModule``.

ansible-core's own conversion of an ``int`` option lets one error out uncaught: ``check_type_int`` turns
``"INF"``, ``"-Infinity"`` or an infinite float into ``float('inf')`` and ``int()`` of that raises
OverflowError ("cannot convert Infinity to integer"), which escapes ``AnsibleModule()`` as a traceback
(MODULE FAILURE) instead of the argument error every other bad value gets. ``ansible_module`` makes the
module as usual; on that error it makes it again with those options taken as they are (``raw``) and fails
through ``fail_json``, naming every such option and what is allowed.
"""

from __future__ import annotations

import copy

from ansible.module_utils.common.validation import check_type_int


def ansible_module(module_class, argument_spec, **kwargs):
    """``module_class(argument_spec=argument_spec, **kwargs)``; an infinite value of an ``int`` option
    (anywhere: suboptions, list elements) is the module's failure naming the option, not a traceback."""
    try:
        return module_class(argument_spec=argument_spec, **kwargs)
    except OverflowError:
        module = module_class(argument_spec=_ints_as_raw(argument_spec), **kwargs)
        found = list(_infinite_ints(argument_spec, module.params, ""))
        module.fail_json(msg="; ".join(
            "argument '%s' is %r, an infinite number (allowed: a whole number)" % (path, value)
            for path, value in found) or "an int option is an infinite number (allowed: a whole number)")
        raise  # fail_json exits; not reached


def _ints_as_raw(spec):
    """A copy of the argument spec ``spec`` in which every ``int`` option and ``int`` list element is ``raw``."""
    out = {}
    for name, option in spec.items():
        option = copy.copy(option)
        if option.get("type") == "int":
            option["type"] = "raw"
        if option.get("elements") == "int":
            option["elements"] = "raw"
        if isinstance(option.get("options"), dict):
            option["options"] = _ints_as_raw(option["options"])
        out[name] = option
    return out


def _overflows(value):
    try:
        check_type_int(value)
    except OverflowError:
        return True
    except (TypeError, ValueError):
        return False
    return False


def _infinite_ints(spec, params, prefix):
    """(path, value) of every value of an ``int`` option in ``params`` (as the raw spec read them) that
    ansible-core's int check cannot convert because it is infinite."""
    if not isinstance(params, dict):
        return
    for name, option in spec.items():
        value, path = params.get(name), prefix + name
        if value is None:
            continue
        if option.get("type") == "int" and _overflows(value):
            yield path, value
        if option.get("type") == "list" and isinstance(value, list):
            for index, item in enumerate(value):
                if option.get("elements") == "int" and _overflows(item):
                    yield "%s[%d]" % (path, index), item
                elif isinstance(option.get("options"), dict):
                    yield from _infinite_ints(option["options"], item, "%s[%d]." % (path, index))
        elif isinstance(option.get("options"), dict):
            yield from _infinite_ints(option["options"], value, path + ".")
