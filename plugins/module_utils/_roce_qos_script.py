# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The files that keep RoCE QoS across reboots: the shell script that re-applies it and the udev rule that runs it.

The mlx5 driver forgets trust, PFC, ECN, CNP, traffic_class and the RDMA-CM ToS on every reboot and
driver reload. The roce_qos module returns per interface the steps that set everything again
(``replay`` in its ``interfaces`` result, module_utils/_roce_qos.replay); ``replay_script`` turns
them into the script a udev rule runs on the interface's "add" event (``udev_rule``); the roce_qos module writes
both (``persist``), the roce_qos_script filter gives the script on the controller. Every inventory value in it is quoted (shlex.quote); the RDMA device
name, known only when the script runs, is looked up then and used as "$rdma".
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from ansible_collections.gpufabric.mlnx.plugins.module_utils import _forecast
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidValue
from ansible_collections.gpufabric.mlnx.plugins.module_utils._files import check_path, converge_files
from ansible_collections.gpufabric.mlnx.plugins.module_utils._roce_qos import (
    REPLAY_TOOLS,
    REPLAY_WRITE_ALLOWED,
    REPLAY_WRITE_RE,
    converge,
    desired_state,
    summary,
)
from ansible_collections.gpufabric.mlnx.plugins.module_utils._validate import (
    IFNAME_ALLOWED,
    IFNAME_RE,
    Problems,
    ProblemsError,
    check_list,
    is_whole,
    join_path,
    kind_of,
    read_text,
)

# Any absolute path without a newline, NUL or lone surrogate (it is quoted wherever it goes; a lone surrogate is text
# that is not UTF-8, which no file can hold), and the stricter grammar of the script's own path, which a comment line
# also names.
ABSOLUTE_RE = re.compile(r"/[^\n\r\x00\ud800-\udfff]*", re.ASCII)
ABSOLUTE_ALLOWED = "an absolute path of UTF-8 text without a newline or NUL"
SCRIPT_PATH_RE = re.compile(r"/[A-Za-z0-9_.+/-]*", re.ASCII)

SCRIPT_HEAD = """#!/bin/sh
# gpufabric.mlnx roce_qos - managed by Ansible, local changes are overwritten.
# Re-applies the RoCE QoS of this host's compute interfaces: the mlx5 driver forgets trust, PFC, ECN,
# CNP, traffic_class and the RDMA-CM ToS on every reboot and driver reload. udev runs it with the
# interface's name on its "add" event; by hand: %(path)s [INTERFACE|all]
# Exit status 1 when a setting failed (each failure is logged with the tag gpufabric-roce-qos).
ROOT=%(root)s
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin${PATH:+:$PATH}
export PATH
rc=0
log() { logger -t gpufabric-roce-qos -- "$*" 2>/dev/null; echo "gpufabric-roce-qos: $*" >&2; }
# The RDMA device of a netdev; mlx5_ib registers it shortly after the netdev appears (wait up to 10 s).
rdma_of() {
    n=0
    while [ "$n" -lt 50 ]; do
        for d in "$ROOT/sys/class/net/$1/device/infiniband/"*; do
            [ -d "$d" ] && { basename "$d"; return 0; }
        done
        n=$((n + 1))
        sleep 0.2
    done
    return 1
}
run() { "$@" >/dev/null 2>&1 || { log "$IFACE: failed: $*"; rc=1; }; }
put() { printf '%%s\\n' "$2" > "$ROOT$1" 2>/dev/null || { log "$IFACE: cannot write $2 to $1"; rc=1; }; }
# cma_roce_tos exits 0 even when the write fails: compare what it prints.
tos() {
    for want do :; done
    got=$("$@" 2>/dev/null)
    [ "$got" = "$want" ] || { log "$IFACE: $* printed '$got'"; rc=1; }
}
apply() {
    IFACE=$1
    case "$1" in
"""

SCRIPT_TAIL = """    *) return 0 ;;
    esac
}
if [ "${1:-all}" = all ]; then
    for i in %(all)s; do apply "$i"; done
else
    apply "$1"
fi
exit $rc
"""


# The RDMA device name: what the kernel registers (mlx5_0, mlx5_bond_0); it is replaced by "$rdma" in the script.
RDMA_RE = re.compile(r"[A-Za-z0-9_.-]{1,64}", re.ASCII)
RDMA_ALLOWED = "1-64 ASCII letters, digits and _ . - (e.g. mlx5_0)"


def _sh(word: str, rdma: str | None) -> str:
    """One shell word, every part quoted; a path component (or the whole word) that is the RDMA device name
    becomes "$rdma" (looked up when the script runs)."""
    if not rdma or rdma not in word.split("/"):
        return shlex.quote(word)
    return "/".join('"$rdma"' if part == rdma else (shlex.quote(part) if part else "") for part in word.split("/"))


def _utf8(text: str) -> bool:
    """Whether ``text`` is UTF-8 text (no lone surrogate such as "\\ud800", which the script file cannot hold)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _word(problems: Problems, path: str, value: Any, what: str) -> str | None:
    """A string or whole number as the text a script writes; else a problem."""
    if (isinstance(value, str) and "\x00" not in value and _utf8(value)) or is_whole(value):
        return str(value)
    problems.add(path, "must be UTF-8 text without NUL or a whole number (%s), not %s" % (what, kind_of(value)))
    return None


def _entries(entries: Any) -> list[tuple[str, str | None, list[dict]]]:
    """``entries`` checked: ``[(interface, rdma_device, steps)]``; ProblemsError naming every bad path."""
    problems = Problems()
    base = "roce_qos_script: interfaces"
    if entries is None:
        # null is no module result (a skipped or failed task): a script that restores nothing is refused
        problems.add(base, "required: the roce_qos module's interfaces result (a list), not null")
        raise ProblemsError("roce_qos_script: the interfaces cannot be written into a script", problems,
                            parameter="interfaces")
    if not check_list(problems, base, entries, "the roce_qos module's interfaces result"):
        raise ProblemsError("roce_qos_script: the interfaces cannot be written into a script", problems,
                            parameter="interfaces")
    out = []
    for index, entry in enumerate(entries):
        where = join_path(base, index)
        if not isinstance(entry, dict) or not entry.get("interface"):
            problems.add(where, "each entry needs interface and replay (the roce_qos module's interfaces result), "
                                "not %s" % kind_of(entry))
            continue
        name = read_text(problems, join_path(where, "interface"), entry["interface"],
                         "a network interface name of " + IFNAME_ALLOWED, pattern=IFNAME_RE)
        rdma = entry.get("rdma_device")
        if rdma is not None:
            rdma = read_text(problems, join_path(where, "rdma_device"), rdma, "an RDMA device name of " + RDMA_ALLOWED,
                             pattern=RDMA_RE)
        steps = []
        replay = entry.get("replay")
        if replay is not None and check_list(problems, join_path(where, "replay"), replay, "the steps"):
            for number, step in enumerate(replay):
                spot = join_path(where, "replay", number)
                if isinstance(step, dict) and isinstance(step.get("argv"), list) and step["argv"]:
                    words = [_word(problems, join_path(spot, "argv", i), w, "a command word")
                             for i, w in enumerate(step["argv"])]
                    if words[0] is not None and words[0] not in REPLAY_TOOLS:
                        problems.add(join_path(spot, "argv", 0), "%s is not a tool the script runs (allowed: %s)"
                                     % (words[0], ", ".join(REPLAY_TOOLS)))
                    elif None not in words:
                        steps.append({"argv": words})
                elif isinstance(step, dict) and "write" in step and "value" in step and "argv" not in step:
                    target = read_text(problems, join_path(spot, "write"), step["write"], REPLAY_WRITE_ALLOWED,
                                       pattern=REPLAY_WRITE_RE)
                    value = _word(problems, join_path(spot, "value"), step["value"], "the value written")
                    if target is not None and value is not None:
                        steps.append({"write": target, "value": value})
                else:
                    problems.add(spot, "must be a mapping with argv (a non-empty list of words) or with write and "
                                       "value, not %s" % kind_of(step))
        if name is not None:
            out.append((name, rdma, steps))
    if problems:
        raise ProblemsError("roce_qos_script: the interfaces cannot be written into a script", problems,
                            parameter="interfaces")
    return out


def replay_script(entries: list[dict] | None, *, root: str | None = "/",
                  path: str = "/usr/local/sbin/gpufabric-roce-qos") -> str:
    """Pure: the shell script a udev rule runs on an interface's "add" event. ``entries``: the module's
    ``interfaces`` result (``interface``, ``rdma_device``, ``replay``); ``root``: the sysfs prefix the
    module used (``/`` on real hosts); ``path``: where the script is installed (it is named in a comment,
    so it must match a strict path grammar). Everything is checked before any text is made: InvalidValue /
    ProblemsError naming the path of every bad value."""
    for option, value, pattern, what in (
            ("root", root or "/", ABSOLUTE_RE, ABSOLUTE_ALLOWED),
            ("path", path, SCRIPT_PATH_RE, "an absolute path of ASCII letters, digits and _ . + - /")):
        problems = Problems()
        read_text(problems, "roce_qos_script: " + option, value, what, pattern=pattern)
        if problems:
            raise ProblemsError("roce_qos_script: the %s cannot be written into a script" % option, problems,
                                parameter=option)
    checked = _entries(entries)
    root = (root or "/").rstrip("/")
    lines = [SCRIPT_HEAD % {"path": path, "root": shlex.quote(root) if root else "''"}]
    names = []
    for name, rdma, steps in checked:
        names.append(shlex.quote(name))
        lines.append("    %s)\n" % shlex.quote(name))
        if rdma:
            lines.append("        rdma=$(rdma_of %s) || { log %s; return 1; }\n"
                         % (shlex.quote(name), shlex.quote("%s: no RDMA device" % name)))
        for step in steps:
            if "argv" in step:
                words = " ".join(_sh(w, rdma) for w in step["argv"])
                verb = "tos" if step["argv"][0] == "cma_roce_tos" else "run"
                lines.append("        %s %s\n" % (verb, words))
            else:
                lines.append("        put %s %s\n" % (_sh(step["write"], rdma), shlex.quote(step["value"])))
        lines.append("        ;;\n")
    lines.append(SCRIPT_TAIL % {"all": " ".join(names) or "''"})
    return "".join(lines)


# ---------------------------------------------------------------------------------- the udev rule

RULE_TEXT = (
    "# gpufabric.mlnx roce_qos - managed by Ansible, local changes are overwritten.\n"
    "# The mlx5 driver forgets RoCE QoS on reboot, driver reload and firmware reset; re-apply it when the\n"
    "# compute rail's netdev appears.\n"
    'ACTION=="add", SUBSYSTEM=="net", KERNEL=="%s", RUN+="%s $name"\n')


def udev_rule(interfaces: list[str], script: str, *, host: str | None = None) -> str:
    """Pure: the udev rule that runs ``script`` with the interface's name on the "add" event of ``interfaces``. The
    names and the path reach udev's match and RUN keys, so each must match a strict grammar (no quote, space, glob,
    '$' or '%'): else InvalidValue naming the host and the variable (the role's, as the strict_word filter did)."""
    def refuse(parameter, value, allowed):
        return InvalidValue("%s%s=%r cannot be written into a udev rule, systemd unit or script: allowed is %s" % (
            "%s: " % host if host else "", parameter, value, allowed), device=host, parameter=parameter,
            allowed=allowed)
    for name in interfaces:
        if not isinstance(name, str) or not IFNAME_RE.fullmatch(name):
            raise refuse("gpufabric_roce_qos_interfaces", name, "a network interface name of " + IFNAME_ALLOWED)
    if not isinstance(script, str) or not SCRIPT_PATH_RE.fullmatch(script):
        raise refuse("gpufabric_roce_qos_script", script, "an absolute path of ASCII letters, digits and _ . + - /")
    return RULE_TEXT % ("|".join(interfaces), script)


# ---------------------------------------------------------------------------------- the whole job

def converge_kept(reader: Any, files: Any, params: dict, *, host: str, check_mode: bool = False) -> dict:
    """The roce_qos module's whole job. The host's interfaces checked (none, with ``plan_hosts`` given: the host is
    not in the rail plan), every option checked (``_roce_qos.desired_state``, the files' paths); in check mode the
    forecast (``_forecast.waiting``: a driver change of this run - nothing read -, or an activation of this run with
    rails not on the host yet: every interface reported as to be configured after it); else ``_roce_qos.converge``
    and, with ``persist``, the script and the udev rule (``_files``: written only when they differ, atomically).

    ``reader`` reads and changes the devices (sysfs under the module's root); ``files`` the files (host paths).
    Returns ``_roce_qos.converge``'s result with ``msg``, ``files``, ``diff`` and ``fact`` (gpufabric_roce_qos)."""
    interfaces = params.get("interfaces")
    if interfaces in (None, []) and params.get("plan_hosts") is not None:
        raise _forecast.not_planned(host, params["plan_hosts"], params.get("plan_group"), parameter="interfaces")
    names, _desired = desired_state(params)
    driver_action, pending = _forecast.check_options("roce_qos", params.get("driver_action"),
                                                     params.get("pending_activation"))
    persist = bool(params.get("persist"))
    if persist:
        script = check_path(params.get("script"), "gpufabric_roce_qos_script", host)
        rule = check_path(params.get("udev_rule"), "gpufabric_roce_qos_udev_rule", host, named=False)
        udev_rule(names, script, host=host)
    wait = _forecast.waiting(reader, names, check_mode=check_mode, driver_action=driver_action,
                             pending_activation=pending, driver_reads_nothing=True)
    if wait:
        if wait["for"] == "driver":
            msg = "the driver would change (%s): RoCE QoS of %s would be set on the new driver" % (
                driver_action, ", ".join(names))
        else:
            msg = "%s not on the host before the activation (%s) of this run: RoCE QoS of %s would be set after it" % (
                ", ".join(wait["absent"]), pending, ", ".join(names))
        return {"changed": True, "interfaces": [], "failed": {}, "errors": [], "msg": msg, "files": [], "diff": [],
                "fact": {"changed": True, "interfaces": names, "drift": names,
                         "waiting_for_driver": wait["for"] == "driver",
                         "waiting_for_activation": wait["for"] == "activation"}}
    result = converge(reader, params, check_mode=check_mode)
    msg = summary(result, check_mode=check_mode)
    diff = [{"before": {r["interface"]: r["before"] for r in result["interfaces"]},
             "after": {r["interface"]: r["after"] for r in result["interfaces"]}}]
    planned = []
    if persist and not result["failed"]:
        text = replay_script(result["interfaces"], root=params.get("root") or "/", path=script)
        wanted = [{"path": script, "content": text, "mode": 0o755},
                  {"path": rule, "content": udev_rule([r["interface"] for r in result["interfaces"]], script, host=host),
                   "mode": 0o644, "make_parent": True}]
        planned = converge_files(files, wanted, check_mode=check_mode)
        diff += [d for p in planned for d in p["diff"]]
        if any(p["changed"] for p in planned):
            msg += "; re-applied on interface add by %s (%s)" % (script, "would change" if check_mode else "changed")
    return dict(result, changed=result["changed"] or any(p["changed"] for p in planned), msg=msg, diff=diff,
                files=[{k: p[k] for k in ("path", "changed", "reasons")} for p in planned],
                fact={"changed": result["changed"], "interfaces": [r["interface"] for r in result["interfaces"]],
                      "drift": [r["interface"] for r in result["interfaces"] if r["changed"]],
                      "waiting_for_driver": False, "waiting_for_activation": False})
