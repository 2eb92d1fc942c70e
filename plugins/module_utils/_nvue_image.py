# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pinned switch OS on an NVIDIA Cumulus Linux 5.x leaf: the optimized (two-partition) image upgrade, decided once
for every transport, on the operations of :class:`_nvue.Switch`.

``upgrade()`` brings a switch to ``release`` with at most ONE reboot:

1. the running release is read; when it is the pinned one nothing else is read or written (unchanged);
2. a downgrade without ``allow_downgrade`` is refused before anything changes, naming both releases;
3. when the other partition already holds the pinned release, nothing is fetched or installed;
4. else the image is fetched (``nv action fetch system image URL``), the action waited for (its ``action_error`` /
   ``action_failed`` status and detail, or the timeout, fail the task), the fetched file must be listed, its release
   (when the switch lists one) must be the pinned one and its sha256 (when the switch lists one) the pinned one - all
   BEFORE the install; then installed into the other partition, which must hold the release afterwards;
5. the configuration must survive the reboot: unsaved changes (applied != startup) are saved first
   (``save_before_reboot``; without it the unsaved change is refused, before the fetch), and the startup
   configuration is recorded;
6. boot-next the other partition, one reboot, wait until the switch answers again (refused connections and HTTP 502
   are expected meanwhile) within ``reboot_timeout``, then the running release must be the pinned one and the applied
   configuration the recorded startup one.

Check mode does steps 1-3 (reads only) and predicts the actions.
"""

from __future__ import annotations

import re
import time
from typing import Any

from ansible_collections.gpufabric.mlnx.plugins.module_utils._firmware import SHA256_RE
from ansible_collections.gpufabric.mlnx.plugins.module_utils._matrix import (
    SWITCH_IMAGE_RE, SWITCH_RELEASE_RE, SWITCH_URL_RE, normal_sha256)
from ansible_collections.gpufabric.mlnx.plugins.module_utils._nvue import (
    PREFIX, NvueError, Switch, diff_is_empty, diff_shape, shown, unanswered)
from ansible_collections.gpufabric.mlnx.plugins.module_utils._versions import version_key

ACTION_DONE = "action_success"
ACTION_FAILED = ("action_error", "action_failed")
# Not ended yet: the specification's states (5.3 and NVOS 25.02 schema-actions-simple-action-def: inactive, start,
# running) and nv-rms' spelling ``action_running``. Any other state is an answer not understood: the wait fails.
ACTION_GOING = ("inactive", "start", "running", "action_running")
# file:///path/<image>: an image already on the switch (copied there by other means).
FILE_URL_RE = re.compile(r"file:///(?:[A-Za-z0-9._+-]+/)*[A-Za-z0-9._+-]+", re.ASCII)
FETCH, INSTALL, BOOT_NEXT, REBOOT = "fetch", "install", "boot-next", "reboot"


def _release_of(version: Any) -> str | None:
    value = version.get("product-release") if isinstance(version, dict) else None
    return value.strip() if isinstance(value, str) and value.strip() else None


def check_request(release: Any, url: Any, sha256: Any) -> tuple[str, str | None, str | None, str]:
    """``(release, url, image file name, sha256)`` of a well-formed request, or NvueError naming the parameter.
    ``url`` None: not given (the image then must already be in the other partition; url and name are None)."""
    if not isinstance(release, str) or not SWITCH_RELEASE_RE.fullmatch(release.strip()):
        raise NvueError("release: %r is not a Cumulus Linux release (allowed: N.N.N as nv show system version prints "
                        "product-release, e.g. 5.11.0)" % (release,), parameter="release")
    release = release.strip()
    digest = normal_sha256(sha256) if isinstance(sha256, str) else ""
    if not SHA256_RE.match(digest):
        raise NvueError("sha256: %r is not a sha256 (allowed: 64 hex digits as sha256sum prints them, a sha256: prefix "
                        "is accepted)" % (sha256,), parameter="sha256")
    if url is None:
        return release, None, None, digest
    text = url.strip() if isinstance(url, str) else None
    if text is None or not (SWITCH_URL_RE.fullmatch(text) or FILE_URL_RE.fullmatch(text)):
        raise NvueError("url: %r is not an image URL (allowed: http:// or https://, a host, an optional port and a "
                        "path ending in the image file name; or file:///path/on/the/switch/IMAGE.bin; no spaces, query, "
                        "fragment or credentials)" % (url,), parameter="url")
    image = text.rsplit("/", 1)[-1]
    if not SWITCH_IMAGE_RE.fullmatch(image):
        raise NvueError("url: %r does not end in an image file name (letters, digits and . _ + -, ending in .bin, e.g. "
                        "cumulus-linux-5.11.0-mlx-amd64.bin)" % text, parameter="url")
    return release, text, image, digest


def other_partition(image: dict) -> str:
    current = str(image.get("current") or "")
    if current not in ("1", "2"):
        raise NvueError("the switch's image has no running partition 1 or 2 (nv show system image current is %r)"
                        % (image.get("current"),))
    return "2" if current == "1" else "1"


def partition_release(image: dict, partition: str) -> str | None:
    part = image.get("partition" + partition)
    value = part.get("release") if isinstance(part, dict) else None
    return value.strip() if isinstance(value, str) and value.strip() else None


def wait_action(switch: Switch, aid: str, what: str, timeout: float, interval: float, clock=time.monotonic,
                sleep=time.sleep) -> dict:
    """Poll action ``aid`` until ``action_success``; NvueError with the switch's status and detail on
    ``action_error`` / ``action_failed``, on a state that is none of the known ones, or after ``timeout`` seconds."""
    deadline = clock() + timeout
    while True:
        act = switch.action(aid)
        state = act.get("state")
        if state == ACTION_DONE:
            return act
        if state in ACTION_FAILED:
            words = [str(act[k]).strip() for k in ("status", "detail") if act.get(k) and str(act[k]).strip()]
            found = act.get("issue")
            for issue in (found.values() if isinstance(found, dict) else found if isinstance(found, list) else ()):
                text = issue.get("message") if isinstance(issue, dict) else issue
                if text and str(text).strip() not in words:
                    words.append(str(text).strip())
            raise NvueError("%s: %s failed: action %s ended %s: %s" % (
                switch.name, what, aid, state, "; ".join(words) or "the switch gave no status"))
        if state not in ACTION_GOING:
            raise NvueError("%s: %s: GET %s/action/%s answered state %s, which is none of %s: not understood, so not "
                            "taken as progress" % (switch.name, what, PREFIX, aid, shown(state),
                                                   ", ".join(ACTION_GOING + (ACTION_DONE,) + ACTION_FAILED)))
        if clock() >= deadline:
            raise NvueError("%s: %s did not finish within %g s (action %s is still %r, %s%%); raise action_timeout"
                            % (switch.name, what, timeout, aid, state, act.get("percentage", "?")),
                            parameter="action_timeout")
        sleep(interval)


def _paths(tree: Any, prefix: str = "") -> list[str]:
    """The dotted leaf paths of a tree."""
    if isinstance(tree, dict) and tree:
        out = []
        for key, value in tree.items():
            out.extend(_paths(value, "%s.%s" % (prefix, key) if prefix else str(key)))
        return out
    return [prefix or "."]


def differences(have: Any, want: Any, prefix: str = "") -> list[str]:
    """The dotted paths where two configuration trees differ (present in one only, or another value)."""
    if isinstance(have, dict) and isinstance(want, dict):
        out = []
        for key in sorted(set(have) | set(want), key=str):
            path = "%s.%s" % (prefix, key) if prefix else str(key)
            if key not in have or key not in want:
                out.append(path)
            else:
                out.extend(differences(have[key], want[key], path))
        return out
    return [] if have == want else [prefix or "."]


def _unsaved(switch: Switch) -> list[str]:
    """The paths an unsaved change touches (applied != startup); [] when everything is saved."""
    diff = switch.diff("applied", base="startup")
    if diff_is_empty(diff):
        return []
    return sorted(_paths(diff_shape(diff)))


def _wait_booted(switch: Switch, release: str, before: str, timeout: float, interval: float, clock, sleep) -> str:
    """After @reboot: the release the switch runs once it answers again. It may still answer for a moment before it
    goes down, so an answer counts only after the switch was seen down or once it names another release."""
    deadline = clock() + timeout
    seen_down = False
    while True:
        try:
            running = _release_of(switch.version())
        except NvueError as err:
            if not unanswered(err):  # refused or timed out, or nginx's 502 until nvued is up
                raise
            seen_down = True
            running = None
        if running is not None and (seen_down or running != before or running == release):
            return running
        if clock() >= deadline:
            raise NvueError("%s did not come back within reboot_timeout %g s after the reboot (%s)" % (
                switch.name, timeout, "it stopped answering and has not answered since" if seen_down or running is None
                else "it still answers with %s and never went down" % before), parameter="reboot_timeout")
        sleep(interval)


def upgrade(switch: Switch, release: Any, url: Any, sha256: Any, *, allow_downgrade: bool = False,
            save_before_reboot: bool = True, check_mode: bool = False, action_timeout: float = 1800.0,
            reboot_timeout: float = 900.0, interval: float = 2.0, clock=time.monotonic, sleep=time.sleep) -> dict:
    """Bring ``switch`` to ``release`` (see the module docstring). The result: ``changed``, ``release_before``,
    ``release``, ``actions`` (what was done, or in check mode what would be), ``reboots`` (0 or 1, predicted in check
    mode), ``partition`` (the one booted, or to be booted), ``saved`` (the configuration was saved before the
    reboot), ``sha256_verified`` (the switch listed the fetched file's sha256 and it was the pinned one)."""
    release, url, image_name, digest = check_request(release, url, sha256)
    before = _release_of(switch.version())
    result = {"changed": False, "release_before": before, "release": release, "actions": [], "reboots": 0,
              "partition": None, "saved": False, "sha256_verified": False}
    if before is None:
        raise NvueError("%s: the running release is unreadable (nv show system version has no product-release)"
                        % switch.name)
    if before == release:
        return result
    try:
        downgrade = version_key(before) > version_key(release)
    except ValueError:
        raise NvueError("%s runs %r, not a release N.N.N that can be compared with %s" % (switch.name, before, release))
    if downgrade and not allow_downgrade:
        raise NvueError("%s: downgrade from %s to %s refused: the switch runs a newer release than the pin; nothing "
                        "was changed (set allow_downgrade to allow it)" % (switch.name, before, release),
                        parameter="allow_downgrade")
    image = switch.image()
    other = other_partition(image)
    ready = partition_release(image, other) == release
    if not ready and url is None:
        raise NvueError("%s: %s needs the image of %s fetched and installed (partition %s holds %s), but no url was "
                        "given; nothing was changed" % (switch.name, before, release, other,
                                                        partition_release(image, other) or "nothing"), parameter="url")
    actions = ([] if ready else [FETCH, INSTALL]) + [BOOT_NEXT, REBOOT]
    result.update(changed=True, actions=actions, reboots=1, partition=other)
    if check_mode:
        return result

    unsaved = _unsaved(switch)
    if unsaved and not save_before_reboot:
        raise NvueError("%s has configuration changes that are applied but not saved (%s): the reboot would lose them; "
                        "save them (nv config save) or set save_before_reboot; nothing was changed"
                        % (switch.name, ", ".join(unsaved)), parameter="save_before_reboot")
    done = []
    result["actions"] = done
    result["reboots"] = 0
    if not ready:
        aid = switch.fetch(url)
        done.append(FETCH)
        wait_action(switch, aid, "fetch %s" % url, action_timeout, interval, clock, sleep)
        files = switch.image_files()
        listed = files.get(image_name)
        if not isinstance(listed, dict):
            raise NvueError("%s: the fetch of %s succeeded but %s is not among the switch's image files (%s)" % (
                switch.name, url, image_name, ", ".join(sorted(map(str, files))) or "none"))
        have = str(listed.get("sha256") or "").strip().lower()
        if have:
            if have != digest:
                raise NvueError("%s: the fetched image %s has sha256 %s, not the pinned %s: not installed (a corrupt "
                                "download, or the wrong file at %s)" % (switch.name, image_name, have, digest, url),
                                parameter="sha256")
            result["sha256_verified"] = True
        holds = str(listed.get("release") or "").strip()
        if holds and holds != release:
            raise NvueError("%s: the fetched image %s holds release %s, not the pinned %s: not installed"
                            % (switch.name, image_name, holds, release), parameter="release")
        aid = switch.install(image_name, force=downgrade)
        done.append(INSTALL)
        wait_action(switch, aid, "install %s" % image_name, action_timeout, interval, clock, sleep)
        image = switch.image()
        if partition_release(image, other) != release:
            raise NvueError("%s: the install of %s succeeded but partition %s holds %s, not %s" % (
                switch.name, image_name, other, partition_release(image, other) or "nothing", release))

    if _unsaved(switch):  # again: the configuration may have changed during a long fetch
        if not save_before_reboot:
            raise NvueError("%s: configuration changes were applied but not saved during the install (%s): not "
                            "rebooted; save them or set save_before_reboot"
                            % (switch.name, ", ".join(_unsaved(switch))), parameter="save_before_reboot")
        switch.save()
        result["saved"] = True
        left = _unsaved(switch)
        if left:
            raise NvueError("%s: the configuration was saved but startup still differs from applied (%s): not rebooted"
                            % (switch.name, ", ".join(left)))
    startup = switch.get([], "startup")

    switch.boot_next(other)
    done.append(BOOT_NEXT)
    switch.reboot()
    done.append(REBOOT)
    result["reboots"] = 1
    running = _wait_booted(switch, release, before, reboot_timeout, interval, clock, sleep)
    if running != release:
        raise NvueError("%s booted release %s, not the pinned %s (partition %s was to boot next)" % (
            switch.name, running, release, other))
    applied = switch.get([], "applied")
    changed_paths = differences(applied, startup)
    if changed_paths:
        raise NvueError("%s: the configuration did not survive the reboot: the applied configuration differs from the "
                        "startup one saved before it at %s" % (switch.name, ", ".join(changed_paths)))
    return result
