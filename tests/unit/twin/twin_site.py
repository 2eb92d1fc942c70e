"""A small site for the twin's tests: racks of ConnectX-6 Dx servers, one leaf per rack and rail, a matrix that pins
newer firmware and an NV profile, written as an inventory directory and built as a twin (tests/twin/twin.py)."""
import importlib.util
import json
import os
import subprocess
import sys

import yaml

from _paths import REPO
from _roleplay import Run, matrix

TWIN = REPO / "tests" / "twin" / "twin.py"
if str(REPO / "tests" / "unit" / "nvue") not in sys.path:
    sys.path.append(str(REPO / "tests" / "unit" / "nvue"))
# tests/twin/twin.py as a module (its directory's name is also a namespace package's under tests/)
_SPEC = importlib.util.spec_from_file_location("twin_tool", TWIN)
twin_tool = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(twin_tool)
PCI = ["0000:3b:00.0", "0000:d8:00.0"]
NAMES = ["enp59s0f0np0", "enp216s0f0np0"]
PIN = {"version": "22.43.1014", "image": "fw-cx6dx-22.43.1014.bin", "sha256": "0" * 64,
       "part_numbers": ["MCX623106AN-CDAT"]}
PROFILE = {"SRIOV_EN": True, "NUM_OF_VFS": 8}


def site(directory, racks, rails=2, spines=(), sus=False, **extra):
    """An inventory directory: ``racks`` {rack: number of servers}; -> (servers, leaves). ``sus``: each rack is an SU
    (racks_per_su 1) in groups as inventory/example-1250 has them - servers_suNN (with the SU's su, in group
    scalable_units) with the rack's group, leaves_suNN its leaves; ``spines``: a spines group of these names (every leaf to every spine, 4
    server-facing ports per leaf)."""
    fabric = {"rails": rails, "su_prefix": 26, "racks_per_su": 1, "addressing": "p2p31",
              "leaf_name": "{rack}-leaf-rail{rail}",
              "pools": {"rail%d" % r: "198.18.%d.0/20" % (16 * r) for r in range(rails)},
              "nics": {"pci": PCI[:rails]}, "interface_names": NAMES[:rails]}
    if spines:
        fabric.update(leaf_ports=4, uplinks={"loopbacks": "198.18.128.0/24"})
    servers = {rack: {"srv-%s-%02d" % (rack, n): {"position": n} for n in range(1, count + 1)}
               for rack, count in racks.items()}
    leaves = ["%s-leaf-rail%d" % (rack, r) for rack in racks for r in range(rails)]
    groups = {"servers": {"children": {"rack_" + rack: {"vars": {"rack": rack}, "hosts": hosts}
                                       for rack, hosts in servers.items()}},
              "leaves": {"hosts": {name: {} for name in leaves}}}
    if sus:
        groups["scalable_units"] = {"children": {"servers_su%02d" % su: {"vars": {"su": su}, "children": {
            "rack_" + rack: {}}} for su, rack in enumerate(racks, 1)}}
        groups["leaves"] = {"children": {"leaves_su%02d" % su: {"hosts": {
            "%s-leaf-rail%d" % (rack, r): {} for r in range(rails)}} for su, rack in enumerate(racks, 1)}}
    if spines:
        groups["spines"] = {"hosts": {name: {} for name in spines}}
    pinned = matrix("twin-test", {"MT_0000000359": PIN})
    pinned["switch_os"] = {"cumulus-linux": {"release": "5.11.0", "image": "cumulus-linux-5.11.0-mlx-amd64.bin",
                                             "sha256": "0" * 64, "url": "http://mirror.example/cumulus-linux-5.11.0.bin"}}
    pinned["compatibility"]["switch_os_min"] = {"cumulus-linux": "5.11.0"}
    (directory / "group_vars").mkdir(parents=True, exist_ok=True)
    (directory / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": groups}}))
    (directory / "group_vars" / "all.yml").write_text(yaml.safe_dump(dict({
        "gpufabric_fabric": fabric, "gpufabric_twin_profile": "cx6dx-roce", "gpufabric_batch_by": "rack",
        "gpufabric_matrix": pinned,
        "gpufabric_activate_allow_reboot": True,
        "gpufabric_nic_config_profiles": {"sriov": PROFILE},
        "gpufabric_nic_config_assignments": [{"profile": "sriov", "part_numbers": ["MCX623106AN-CDAT"]}]}, **extra)))
    return [h for hosts in servers.values() for h in hosts], leaves


def build(directory, out, *words):
    proc = subprocess.run([sys.executable, str(TWIN), "build", "-i", str(directory), "--out", str(out), *words],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    return out


def twin(*words):
    proc = subprocess.run([sys.executable, str(TWIN), *words], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr + proc.stdout


def rehearse(out, *words):
    """twin.py run (check mode unless --apply) -> Run (the ansible.posix.json output)."""
    proc = subprocess.run([sys.executable, str(TWIN), "run", "--out", str(out), *words], capture_output=True,
                          text=True, check=False, timeout=1200,
                          env=dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.posix.json"))
    return Run(proc)


def cards(out, server):
    return json.loads((out / "machines" / server / "state.json").read_text())["cards"]


def applied(out, leaf):
    """The apply events of a leaf (its emulator's event log)."""
    path = out / "leaves" / leaf / "events.jsonl"
    return [e for e in map(json.loads, path.read_text().splitlines()) if e.get("event") == "apply"] \
        if path.exists() else []


def rollout(out):
    """{server: its row of the rollout report} of the last run."""
    return {row["host"]: row for row in json.loads((out / "reports" / "rollout.json").read_text())["hosts"]}


def hand_change(out, leaf, tree):
    """Apply ``tree`` on a leaf of the twin by hand (its own nvued for a moment, over REST): configuration the
    inventory does not name."""
    from nvue_helpers import Switch  # pylint: disable=import-outside-toplevel
    sw = Switch.__new__(Switch)
    sw.dir, sw.hostname, sw.password, sw.proc, sw.port = out / "leaves" / leaf, leaf, twin_tool.LEAF_PASSWORD, None, None
    sw.start("--no-socket")
    try:
        rid = sw.new_rev()
        sw.ok("PATCH", "/?rev=%s" % rid, tree)
        return sw.apply(rid)["state"]
    finally:
        sw.stop()


def leaf_applied(out, leaf, path):
    """A part of a leaf's applied configuration (its state file)."""
    node = json.loads((out / "leaves" / leaf / "state.json").read_text())["applied"]
    for key in path.split("/"):
        node = (node or {}).get(key)
    return node


def nv_values(out, server, skip=()):
    """{(card, function or None, parameter): (current, next)} of a server's NV configuration, without ``skip``."""
    values = {}
    for card in cards(out, server):
        for name, value in card.get("nv", {}).items():
            values[(card["id"], None, name)] = (value.get("current"), value.get("next"))
        for func in card["functions"]:
            for name, value in func.get("nv", {}).items():
                values[(card["id"], func["pci"], name)] = (value.get("current"), value.get("next"))
    return {key: value for key, value in values.items() if key[2] not in skip}
