# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A staged change judged by NVIDIA's NVUE OpenAPI document, as a real nvued judges it when the change is staged.

The body of every PATCH of a pending revision is placed at its path in a root tree and validated against the root
PATCH request schema of the 5.3 document's extract (tests/nvue/spec/cl53.json, through tests/nvue/spec/walk.py):
an unknown key or a value outside the schema is refused with 400 and NVUE's error shape ``{"message"}``.

The emulator speaks releases after 5.3. What they changed is applied to the body before it is judged, each with its
source, and nothing else is waived:

- the keys renamed in 5.10/5.15 (``state enabled|disabled`` for ``enable on|off``, model.RENAMED) are judged in
  the 5.3 spelling (model.staged_problem has already refused the other release's spelling);
- ``qos roce mode`` values added after 5.3 (lossless-single-ipool 5.12, lossy-multi-tc 5.14: the RoCE pages of
  those releases) are judged as the 5.3 mode they refine (model.staged_problem has checked the release);
- ``system config auto-save`` (5.4+, NVUE-CLI.md) is not in 5.3 and is taken out before judging.

The wording of the message is invented (the specification defines only ``message``); it names the key path and
what the schema allows.
"""
import copy
import functools
import sys
from pathlib import Path

from . import model

SPEC_DIR = Path(__file__).resolve().parents[1] / "spec"
LATER_MODES = {"lossless-single-ipool": "lossless", "lossy-multi-tc": "lossy"}
LATER_KEYS = ((("system", "config"), "auto-save"),)


@functools.lru_cache(maxsize=None)
def _validator():
    """The jsonschema validator of the root PATCH body, built once. The emulator refuses to run without it."""
    if str(SPEC_DIR) not in sys.path:
        sys.path.insert(0, str(SPEC_DIR))
    import jsonschema  # pylint: disable=import-outside-toplevel
    import walk  # pylint: disable=import-outside-toplevel,import-error

    spec = walk.Spec()
    schema = spec._schema_of(spec.doc["paths"]["/"]["patch"]["requestBody"])  # pylint: disable=protected-access
    return jsonschema.Draft202012Validator(dict(spec.root, **schema), format_checker=walk.FORMATS)


def at_root(keys, body):
    """The PATCH body of path ``keys`` as the root tree it changes."""
    for key in reversed(keys):
        body = {key: body}
    return body


def in_53_spelling(config, release):
    """A copy of ``config`` spelt as NVUE 5.3 spells it (see the module's docstring)."""
    config = copy.deepcopy(config)
    stack = [((), config)]
    while stack:
        path, node = stack.pop()
        if not isinstance(node, dict):
            continue
        words = model.words_at(path, release)
        if words == model.NEW_WORDS and model.NEW_WORDS[0] in node:
            value = node.pop(model.NEW_WORDS[0])
            node[model.OLD_WORDS[0]] = dict(zip(model.NEW_WORDS[1:], model.OLD_WORDS[1:])).get(value, value)
        if path == ("qos", "roce") and node.get("mode") in LATER_MODES:
            node["mode"] = LATER_MODES[node["mode"]]
        for parent, key in LATER_KEYS:
            if path == parent:
                node.pop(key, None)
        stack.extend((path + (k,), v) for k, v in node.items())
    return config


def problems(keys, body, release):
    """The schema's objections to a PATCH of ``body`` at ``keys`` on ``release``: "where: what", the deepest first
    (an unknown key also makes each enclosing object report it as unevaluated)."""
    errors = sorted(_validator().iter_errors(in_53_spelling(at_root(keys, body), release)),
                    key=lambda e: (-len(e.absolute_path), list(map(str, e.absolute_path)), e.message))
    return ["%s: %s" % (".".join(map(str, e.absolute_path)) or "/", e.message.splitlines()[0][:300]) for e in errors]
