# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side: the one way a filter plugin turns the collection's errors into Ansible's.

Every filter body calls core code that raises :class:`MlnxError` (and its subclasses, such as
the parsers' ``ParseError``) with a whole sentence; Ansible wants ``AnsibleFilterError``. Wrap
the filter function once instead of writing ``try``/``except`` in each::

    @filter_errors("fw_targets")          # message becomes "fw_targets: <sentence>"
    def fw_targets(devices, matrix): ...

    @filter_errors()                      # message stays the sentence as it is
    def rail_plan(hosts, fabric): ...

and the one way a filter file names its implementation: ``lazy("plugin_utils._rail_plan")``, imported at the first
use. ansible-core finds ONE collection filter by loading every file of the collection's plugins/filter, in every
worker process that templates one, compiling each from source (its collection loader keeps no bytecode); with the
implementations imported at the top of the filter files, a task using any filter of the collection paid for the
import of all of it (0.26 CPU-second here, per host and task). A filter file imports only this module at load time.
"""

from __future__ import annotations

import functools
import importlib

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError


def filter_errors(name: str | None = None):
    """Decorator: an ``MlnxError`` raised by the wrapped filter becomes ``AnsibleFilterError``.

    ``name``, when given, prefixes the message (``"<name>: <sentence>"``). The original
    exception is the cause (``raise ... from``, also ``orig_exc``): Ansible shows the sentence,
    and the core code's traceback only with -vvv. (``orig_exc`` without ``from`` makes
    ansible-core 2.19 warn on every failed filter.)
    """
    def wrap(func):
        @functools.wraps(func)
        def filter_(*args, **kwargs):
            try:
                return func(*args, **kwargs)
            except MlnxError as err:
                text = "%s: %s" % (name, err.msg) if name else err.msg
                raise AnsibleFilterError(text, orig_exc=err) from err
        return filter_
    return wrap


class _Lazy:
    """A module of the collection imported when one of its names is first used."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attribute):
        return getattr(importlib.import_module(self._name), attribute)


def lazy(name: str) -> _Lazy:
    """``name`` (``plugin_utils._leaf``, ``module_utils._matrix``) of this collection, imported at its first use."""
    return _Lazy("ansible_collections.gpufabric.mlnx.plugins." + name)
