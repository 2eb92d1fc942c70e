# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a switch is: releases, the factory state, the defaults of the filled view, validation and warnings."""
import copy
import hashlib
import re
import time

from . import tree

FACTORY_PASSWORD = "cumulus"
MTU_MIN, MTU_MAX = 552, 9216
DEFAULT_MTU = 9216                      # [U] the swp default MTU is not confirmed (README: defaults)
DEFAULT_LOSSLESS_POOL = ("3",)          # RoCE lossless pool: SP3 (the Cumulus RoCE docs page)
RELEASE_RE = re.compile(r"^5\.(\d{1,2})\.(\d{1,2})\Z", re.ASCII)
BUILD_ID_RE = re.compile(r"^5\.\d{1,2}\.\d{1,2}\.\d{4}\Z", re.ASCII)
HOSTNAME_RE = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9-]{0,62})\Z", re.ASCII)
PORT_RE = re.compile(r"^swp\d{1,3}(s\d)?\Z", re.ASCII)
SPEED_RE = re.compile(r"^(1|10|25|40|50|100|200|400|800)G\Z", re.ASCII)
PERSONAS = ("default", "cl56-default-password")
BGP_REASON = "BGP requires router-id to be set globally or in the VRF.\n"
KERNELS = {9: "6.1.0-cl-1-amd64"}


# Keys NVUE renamed between releases: the object holding the key (ids as "*") -> the first release that spells it
# `state enabled|disabled` instead of `enable on|off` (CumulusNetworks/docs: content/cumulus-linux-515/Whats-New/
# New-and-Changed-NVUE-Commands.md for 5.15; the 5.10 What's New "Changed NVUE Commands" for auto-save, which came
# in 5.4). The emulator speaks the spelling of the release it runs: the other one is an unknown key when staged.
RENAMED = {
    ("system", "config", "auto-save"): (5, 10, 0),
    ("qos", "roce"): (5, 15, 0),
    ("router", "bgp"): (5, 15, 0),
    ("vrf", "*", "router", "bgp"): (5, 15, 0),
    ("vrf", "*", "router", "bgp", "neighbor", "*"): (5, 15, 0),
    ("vrf", "*", "router", "bgp", "address-family", "ipv4-unicast"): (5, 15, 0),
    ("router", "adaptive-routing"): (5, 15, 0),
    ("interface", "*", "router", "adaptive-routing"): (5, 15, 0),
}
OLD_WORDS = ("enable", "on", "off")
NEW_WORDS = ("state", "enabled", "disabled")
# qos roce mode values by release (RoCE pages 5.0-5.16): lossless-single-ipool from 5.12, lossy-multi-tc from 5.14.
ROCE_MODES = (("lossless", (5, 0, 0)), ("lossy", (5, 0, 0)), ("lossless-single-ipool", (5, 12, 0)),
              ("lossy-multi-tc", (5, 14, 0)))


def words_at(path, release):
    """``(key, on, off)`` of the renamed object at ``path`` on ``release``; None when the object is not renamed."""
    for where, since in RENAMED.items():
        if len(where) == len(path) and all(w in ("*", p) for w, p in zip(where, path)):
            return NEW_WORDS if release_tuple(release) >= since else OLD_WORDS
    return None


def is_on(node, path, release, default=False):
    """Whether the renamed object ``node`` at ``path`` is on, in the spelling of ``release``."""
    key, on, _off = words_at(path, release)
    if not isinstance(node, dict) or key not in node:
        return default
    return node[key] == on


def staged_problem(config, release):
    """The first key or value of ``config`` that the release's schema does not take, as a message; None. Checked
    when a change is staged: the renamed keys in the other release's spelling, their values, and qos roce mode."""
    stack = [((), config)]
    while stack:
        path, node = stack.pop()
        if not isinstance(node, dict):
            continue
        words = words_at(path, release)
        if words is not None:
            key, on, off = words
            other = OLD_WORDS[0] if key == NEW_WORDS[0] else NEW_WORDS[0]
            if other in node:
                return ("%s: unknown property '%s' on Cumulus Linux %s (this release spells it %s %s|%s)"
                        % (".".join(path) or "/", other, release, key, on, off))
            if key in node and node[key] not in (on, off, None):
                return "%s.%s: %r is not one of %s, %s" % (".".join(path), key, node[key], on, off)
        if path == ("qos", "roce") and node.get("mode") is not None:
            allowed = [m for m, since in ROCE_MODES if release_tuple(release) >= since]
            if node["mode"] not in allowed:
                return "qos.roce.mode: %r is not one of %s on Cumulus Linux %s" % (
                    node["mode"], ", ".join(allowed), release)
        stack.extend((path + (k,), v) for k, v in node.items())
    return None


def release_tuple(release):
    m = RELEASE_RE.match(release or "")
    if not m:
        raise ValueError("release %r: expected 5.<minor>.<patch>, e.g. 5.9.1" % release)
    return (5, int(m.group(1)), int(m.group(2)))


def check_release(release):
    release_tuple(release)
    return release


def build_id_for(release):
    return "%s.%04d" % (release, 12 + sum(release_tuple(release)))   # [invented] a stable 4-digit build


def partition_for(release, build_id=None, build_date=None):
    return {"release": release, "build-id": build_id or build_id_for(release),
            "build-date": build_date or "Thu Feb 19 20:27:27 UTC 2026"}


def default_auto_save(release):
    """Auto-save is on by default from 5.9 (NVUE-CLI.md)."""
    return release_tuple(release) >= (5, 9, 0)


def mac_for(name):
    digest = hashlib.sha256(name.encode()).hexdigest()
    return "48:b0:2d:%s:%s:%s" % (digest[0:2], digest[2:4], digest[4:6])


def parse_ports(spec):
    """'swp1-32' or 'swp1,swp2,swp5-8' -> ['swp1', ...]."""
    out = []
    for part in spec.split(","):
        m = re.fullmatch(r"swp(\d{1,3})(?:-(?:swp)?(\d{1,3}))?", part.strip(), re.ASCII)
        if not m:
            raise ValueError("ports %r: expected swpN, swpN-M or a comma list of them" % spec)
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if hi < lo or hi - lo > 511:
            raise ValueError("ports %r: range %s is empty or too large" % (spec, part))
        out.extend("swp%d" % n for n in range(lo, hi + 1))
    return out


def factory_state(hostname, release="5.9.1", persona="default", ports=None, user="cumulus", password=None,
                  auto_save=None, older_release=None):
    """A new switch: factory config (hostname, the ports with their physical speed), applied == startup,
    partition 1 running ``release``, partition 2 empty or holding ``older_release``."""
    if not HOSTNAME_RE.match(hostname or ""):
        raise ValueError("hostname %r: letters, digits and '-', at most 63, not starting with '-'" % hostname)
    check_release(release)
    if persona not in PERSONAS:
        raise ValueError("persona %r: one of %s" % (persona, ", ".join(PERSONAS)))
    ports = ports if ports is not None else {"swp%d" % n: {"speed": "400G"} for n in range(1, 33)}
    config = {"system": {"hostname": hostname}, "interface": {}}
    for name, port in ports.items():
        config["interface"][name] = {"type": "swp", "link": {"speed": port.get("speed", "400G")}}
    if password is None:
        password = FACTORY_PASSWORD if persona == "cl56-default-password" else "CumulusLinux!"
    return {
        "version": 1, "seq": 0,
        "hostname": hostname,
        "persona": persona,
        "user": {"name": user, "password": password},
        "auto_save": auto_save,                 # None: by release (on from 5.9)
        "first_apply_done": False,
        "applied": copy.deepcopy(config), "startup": copy.deepcopy(config), "applied_rev": None,
        "revisions": {}, "next_rev": 1, "cli_sessions": {},
        "actions": {}, "next_action": 1,
        "image": {"current": "1", "next": "1",
                  "partition1": partition_for(release),
                  "partition2": partition_for(older_release) if older_release else {},
                  "files": {}},
        "ports": copy.deepcopy(ports),
        "faults": {},
        "settings": {"apply_seconds": 0.3, "reboot_seconds": 1.0, "action_seconds": 0.05},
        "boot": {"booted_at": time.time(), "count": 0},
        "counters": {"applies": 0, "applied": 0, "installs": 0, "reboots": 0},
    }


def running(state):
    return state["image"]["partition" + state["image"]["current"]]


def auto_save_on(state):
    release = running(state)["release"]
    node = tree.get(state["applied"], ["system", "config", "auto-save"], None)
    key = words_at(("system", "config", "auto-save"), release)[0]
    if isinstance(node, dict) and node.get(key) is not None:
        return is_on(node, ("system", "config", "auto-save"), release)
    if state.get("auto_save") is not None:
        return bool(state["auto_save"])
    return default_auto_save(running(state)["release"])


def password_unchanged(state):
    """The 5.6+ REST persona: 403 while the cumulus password is the factory default (or the fault says so)."""
    if "default_password" in state["faults"]:
        return True
    return (state["persona"] == "cl56-default-password" and state["user"]["password"] == FACTORY_PASSWORD
            and release_tuple(running(state)["release"]) >= (5, 6, 0))


# ---------- the filled view

def roce_mode(config, release):
    """The RoCE mode in effect, or None without RoCE. The specification's default: enable off (a present qos roce
    object without enable is off; tests/nvue/spec), mode lossless."""
    roce = tree.get(config, ["qos", "roce"], None)
    if not is_on(roce, ("qos", "roce"), release):
        return None
    return roce.get("mode", "lossless")


def filled(config, state=None, release=None):
    """``config`` with the defaults merged in (README: the defaults table), spelled for ``release``."""
    out = copy.deepcopy(config)
    release = release or (running(state)["release"] if state is not None else None)
    for name, intf in (out.get("interface") or {}).items():
        if not isinstance(intf, dict):
            continue
        if PORT_RE.match(name):
            intf.setdefault("type", "swp")
        link = intf.setdefault("link", {})
        if isinstance(link, dict):
            link.setdefault("mtu", DEFAULT_MTU)
            link.setdefault("state", {"up": {}})
            link.setdefault("speed", "auto")
    if release is not None:
        key, _on, off = words_at(("qos", "roce"), release)
        roce = out.setdefault("qos", {}).setdefault("roce", {})
        if isinstance(roce, dict):
            roce.setdefault(key, off)
            roce.setdefault("mode", "lossless")
    if state is not None and release_tuple(release) >= (5, 4, 0):
        key, on, off = words_at(("system", "config", "auto-save"), release)
        system = out.setdefault("system", {})
        cfg = system.setdefault("config", {}).setdefault("auto-save", {})
        cfg.setdefault(key, on if auto_save_on(state) else off)
    return out


# ---------- validation (invalid) and warnings (ays)

def lossless_pool(config):
    pool = tree.get(config, ["qos", "traffic-pool", "roce-lossless", "switch-priority"], None)
    if isinstance(pool, dict) and pool:
        return tuple(sorted(pool))
    return DEFAULT_LOSSLESS_POOL


def validate(config, faults, release):
    """The first problem as (location, reason), or None."""
    fault = faults.get("invalid_apply")
    if fault:
        return fault["location"], fault["reason"]
    for name, intf in sorted((config.get("interface") or {}).items()):
        mtu = tree.get(intf, ["link", "mtu"], None) if isinstance(intf, dict) else None
        if mtu is None:
            continue
        if isinstance(mtu, bool) or not isinstance(mtu, int):
            return "interface.%s.link.mtu" % name, "Value %r is not an integer\n" % (mtu,)
        if not MTU_MIN <= mtu <= MTU_MAX:
            return ("interface.%s.link.mtu" % name,
                    "Value %d is outside the allowed range %d-%d\n" % (mtu, MTU_MIN, MTU_MAX))
    if roce_mode(config, release) == "lossless":
        pool = lossless_pool(config)
        for pfc_id, pfc in sorted((tree.get(config, ["qos", "pfc"], None) or {}).items()):
            prios = pfc.get("switch-priority") if isinstance(pfc, dict) else None
            for prio in sorted(prios or {}):
                if prio not in pool:
                    return ("qos.pfc.%s.switch-priority" % pfc_id,
                            "PFC switch-priority %s is not in the RoCE lossless pool (switch-priority %s)\n"
                            % (prio, ",".join(pool)))
    bgp = tree.get(config, ["router", "bgp"], None)
    if is_on(bgp, ("router", "bgp"), release) and not bgp.get("router-id"):
        vrf_ids = [tree.get(v, ["router", "bgp", "router-id"], None)
                   for v in (config.get("vrf") or {}).values() if isinstance(v, dict)]
        if not any(vrf_ids):
            return "router.bgp.%s" % words_at(("router", "bgp"), release)[0], BGP_REASON
    return None


def warnings(state, new_config):
    """The questions an apply of ``new_config`` asks (answered by auto-prompt ays_yes)."""
    out = []
    if not state.get("first_apply_done"):
        out.append("The first NVUE apply replaces the configuration files edited outside NVUE.")   # [invented]
    old = tree.get(state["applied"], ["system", "hostname"], None)
    new = tree.get(new_config, ["system", "hostname"], None)
    if new is not None and old is not None and new != old:
        out.append("current hostname `%s` will be replaced with `%s`" % (old, new))
    return out
