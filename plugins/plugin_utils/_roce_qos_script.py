# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of RoCE QoS: the shell script that re-applies it at boot.

The mlx5 driver forgets trust, PFC, ECN, CNP, traffic_class and the RDMA-CM ToS on every reboot and
driver reload. The roce_qos module returns per interface the steps that set everything again
(``replay`` in its ``interfaces`` result, module_utils/_roce_qos.replay); ``replay_script`` turns
them into the script a udev rule runs on the interface's "add" event (the roce_qos_script filter,
written by the roce_qos role). Every inventory value in it is quoted (shlex.quote); the RDMA device
name, known only when the script runs, is looked up then and used as "$rdma".
"""

from __future__ import annotations

import shlex

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidValue

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


def _sh(word, rdma):
    """One shell word; the RDMA device name becomes "$rdma" (looked up when the script runs)."""
    word = str(word)
    if rdma and rdma in word.split("/"):
        return '"$rdma"'.join(shlex.quote(part) if part else "" for part in word.split(rdma))
    return shlex.quote(word)


def replay_script(entries: list[dict] | None, *, root: str | None = "/",
                  path: str = "/usr/local/sbin/gpufabric-roce-qos") -> str:
    """Pure: the shell script a udev rule runs on an interface's "add" event. ``entries``: the module's
    ``interfaces`` result (``interface``, ``rdma_device``, ``replay``); ``root``: the sysfs prefix the
    module used (``/`` on real hosts)."""
    root = (root or "/").rstrip("/")
    lines = [SCRIPT_HEAD % {"path": path, "root": shlex.quote(root) if root else "''"}]
    names = []
    for entry in entries or []:
        if not isinstance(entry, dict) or not entry.get("interface"):
            raise InvalidValue("roce_qos_script: each entry needs interface and replay (the roce_qos module's "
                               "interfaces result), got %r" % (entry,), parameter="interfaces")
        name, rdma = entry["interface"], entry.get("rdma_device")
        names.append(shlex.quote(name))
        lines.append("    %s)\n" % shlex.quote(name))
        if rdma:
            lines.append("        rdma=$(rdma_of %s) || { log %s; return 1; }\n"
                         % (shlex.quote(name), shlex.quote("%s: no RDMA device" % name)))
        for step in entry.get("replay") or []:
            if "argv" in step:
                words = " ".join(_sh(w, rdma) for w in step["argv"])
                verb = "tos" if step["argv"][0] == "cma_roce_tos" else "run"
                lines.append("        %s %s\n" % (verb, words))
            else:
                lines.append("        put %s %s\n" % (_sh(step["write"], rdma), shlex.quote(str(step["value"]))))
        lines.append("        ;;\n")
    lines.append(SCRIPT_TAIL % {"all": " ".join(names) or "''"})
    return "".join(lines)
