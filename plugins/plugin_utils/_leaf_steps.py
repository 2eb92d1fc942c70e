# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The leaf role's and the leaf gate's work on one leaf, each in one task (the actions nvue_leaf and nvue_leaf_gate):
the switch modules (nvue_info, nvue_image, nvue_config) run in order by ``call(module, args)`` - the action's, over
the leaf's connection - and the decisions between them are the collection's own (``_matrix.switch_os_target``,
``_leaf.leaf_config``, ``_leaf.readiness``).

- ``plan_problem(name, plan_leaves, group)``: why a leaf of the leaves group has no entry in the rail plan (or None).
- ``converge(name, entry, ...)``: the pinned switch OS (read the release and partitions, decide, upgrade with ONE
  reboot when behind; a refused target is a failure naming the leaf), then ONE revision from the rail plan entry
  written in the release's spelling; the result and ``gpufabric_leaf_status``.
- ``gate(name, entry, ...)``: read the leaf until it is ready for its servers or the attempts are used up; the gate
  (``gpufabric_leaf_gate``), or - the leaf could not be read - its status with the module's message.

A module that fails (or a refused target, or a value the decisions refuse) raises :class:`StepFailed` carrying the
failed result: the leaf role's rescue records it, and its servers are held. No Ansible object is used here: the
tests drive these functions with a fake ``call``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._matrix import switch_os_target
from ansible_collections.gpufabric.mlnx.plugins.module_utils._validate import kind_of
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._leaf import leaf_config, readiness

INFO = "gpufabric.mlnx.nvue_info"
IMAGE = "gpufabric.mlnx.nvue_image"
CONFIG = "gpufabric.mlnx.nvue_config"
GATE_GATHER = ["system", "interfaces", "qos", "revisions"]
# What a module's result carries that the action's own result does not repeat.
INTERNAL = ("invocation", "warnings", "deprecations", "failed", "msg", "changed", "_ansible_no_log")

Call = Callable[[str, Mapping], dict]


class StepFailed(Exception):
    """A step of a leaf failed: ``result`` is the failed result (``msg`` and what the module returned)."""

    def __init__(self, result: Mapping):
        super().__init__(result.get("msg"))
        self.result = dict(result, failed=True)


def _ran(result: Any, what: str) -> dict:
    """A module's result, or StepFailed with it when the module failed (a result that is not a mapping fails too)."""
    if not isinstance(result, Mapping):
        raise StepFailed({"msg": "%s answered %s, not a result" % (what, kind_of(result))})
    if result.get("failed"):
        raise StepFailed(dict(result, msg=result.get("msg") or "%s failed without a message" % what))
    return dict(result)


def _warnings(*results) -> list:
    return [w for r in results if isinstance(r, Mapping) for w in r.get("warnings") or ()]


def plan_problem(name: str, plan_leaves: Any, group: str) -> str | None:
    """Why leaf ``name`` of group ``group`` cannot be configured or gated from the rail plan, or None."""
    if isinstance(plan_leaves, Mapping) and name in plan_leaves:
        return None
    if not isinstance(plan_leaves, Mapping):
        return ("%s is in group %s but there is no rail plan (gpufabric_rail_plan, made from gpufabric_fabric): a leaf "
                "is configured and checked from it" % (name, group))
    return ("%s is in group %s but the rail plan cables nothing to it (its leaves are %s ...): check "
            "gpufabric_fabric.leaf_name." % (name, group, next(iter(plan_leaves), "none")))


# ---------------------------------------------------------------- the leaf role: pinned OS, then one revision

def converge(name: str, entry: Mapping, settings: Mapping, call: Call, *, matrix: Any = None, base_url: Any = None,
             apply_timeout: int = 300, save: bool = True, reboot_timeout: int = 900) -> dict:
    """Leaf ``name`` to its rail plan ``entry`` with ``settings`` (mtu, speed, vlan, qos - leaf_config's), after the
    pinned switch OS of ``matrix`` (when it pins one). The result: ``changed``, ``release`` (the release the
    configuration was written for), ``image`` (nvue_image's result; None when no image step ran), the configuration's
    ``revision``, ``state``, ``saved``, ``nvue_diff`` and ``diff``, ``warnings``, and ``status`` (the leaf's
    ``gpufabric_leaf_status``). Raises StepFailed."""
    pinned = isinstance(matrix, Mapping) and bool(matrix.get("switch_os"))
    info = _ran(call(INFO, {"gather": ["system", "image"] if pinned else ["system"]}), "nvue_info")
    release = (info.get("system") or {}).get("release")
    image = None
    if pinned:
        try:
            target = switch_os_target(release, info.get("image"), matrix, base_url)
        except MlnxError as err:
            raise StepFailed({"msg": "%s: %s" % (name, err.msg)}) from None
        if target["action"] == "refused":
            raise StepFailed({"msg": "%s: %s" % (name, target["reason"])})
        if target["action"] in ("upgrade", "boot"):
            args = {"release": target["release"], "sha256": target["sha256"],
                    "allow_downgrade": bool(target.get("allow_downgrade")), "reboot_timeout": reboot_timeout}
            if target.get("url"):  # none when the other partition holds it
                args["url"] = target["url"]
            image = _ran(call(IMAGE, args), "nvue_image")
            if image.get("release") is not None:
                release = image["release"]
    try:
        tree = leaf_config(name, entry, dict(settings, release=release))
    except MlnxError as err:
        raise StepFailed({"msg": err.msg}) from None
    try:
        config = _ran(call(CONFIG, {"config": tree, "timeout": apply_timeout, "save": save}), "nvue_config")
    except StepFailed as err:
        if image is not None:  # the release changed before the configuration failed: say so with the failure
            err.result["image"] = {k: v for k, v in image.items() if k not in INTERNAL}
        raise
    image_changed = bool(image and image.get("changed"))
    image_result = None
    if image is not None:
        image_result = dict({k: v for k, v in image.items() if k not in INTERNAL}, changed=image_changed)
    out = {"changed": image_changed or bool(config.get("changed")), "release": release, "image": image_result,
           "warnings": _warnings(info, image, config)}
    out.update({k: v for k, v in config.items() if k not in INTERNAL})
    out["status"] = {"failed": False, "changed": bool(config.get("changed")), "revision": config.get("revision"),
                     "state": config.get("state"), "release": image.get("release") if image else None,
                     "reboots": image.get("reboots", 0) if image else 0}
    return out


# ---------------------------------------------------------------- the leaf gate

def attempts_of(timeout: Any, interval: Any) -> int:
    """How many reads the gate makes in ``timeout`` seconds, ``interval`` apart: one, and one more per interval."""
    retries = int(timeout) // max(int(interval), 1)
    return retries + 1 if retries > 0 else 1


def gate(name: str, entry: Mapping, expected: Mapping, call: Call, *, plan_leaves: Mapping | None = None,
         hosts_qos: Mapping | None = None, attempts: int = 1, interval: float = 5, check_mode: bool = False,
         sleep: Callable[[float], None] = time.sleep) -> dict:
    """Read leaf ``name`` (nvue_info) until ``_leaf.readiness`` says it is ready for its servers, at most ``attempts``
    times ``interval`` seconds apart (once in check mode: nothing was applied, nothing is waited for). The result:
    ``ready``, ``reads`` and either ``gate`` (the readiness of the last read) or - the leaf could not be read -
    ``status`` (``failed``, ``changed``, ``msg``: the module's words)."""
    reads = 0
    while True:
        info = call(INFO, {"gather": list(GATE_GATHER)})
        reads += 1
        if not isinstance(info, Mapping) or info.get("failed") or "system" not in info:
            msg = info.get("msg") if isinstance(info, Mapping) else "nvue_info answered %s" % kind_of(info)
            return {"ready": False, "reads": reads,
                    "status": {"failed": True, "changed": False, "msg": msg or "the leaf could not be read"}}
        verdict = readiness(name, entry, info, expected, plan_leaves, hosts_qos)
        if verdict["ready"] or check_mode or reads >= attempts:
            return {"ready": verdict["ready"], "reads": reads, "gate": verdict}
        sleep(interval)
