"""Benchmark of the leaf role on NVUE emulators (tests/nvue) on 127.0.0.1: wall time of ansible-playbook configuring
8 leaves at once against one leaf alone (the same role, the same per-leaf work: the ratio is what parallel leaves
cost), and what a compliant rerun asks of each leaf, counted in the emulators' own event logs.

    .venv/bin/python tests/bench/leaves.py

Each leaf is a fresh emulator (8 swp ports, auto-save) with the LLDP neighbours the rail plan names, measured
twice: with the emulator's default apply (0.3 s: what is left is Ansible's own cost per leaf and task - a worker
process, the host's connection plugin loaded, the module run in the worker - CPU-bound on this 2-core machine) and with an apply of APPLY_SECONDS (default
5 s; a real NVUE apply takes seconds - the figure [U], its order of magnitude is what matters), which is the
target's case: leaves configured in parallel wait for their switches at the same time. The fabric has 8 rails and
one SU of 8 servers, so each leaf gets 8 ports, their /31s and the RoCE QoS. The play is site.yml's: the rail plan made
once, then the leaf role on every leaf. Each measure is the fastest of 3 rounds (BENCH_REPEAT to change; a 2-core
machine's noise is a few tenths of a second, the poll of the apply's end 1 s), and each leaf's first run must have
applied its revision (a timing of runs that configured nothing would mean nothing); nothing is asserted: each figure
is printed with its target (issue 13: 8 leaves in parallel at most 1.3 x one; a compliant rerun at most 3 reads and 0 applies
per leaf) and written to tests/output/bench-leaves.json.
"""
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parent / "unit"), str(HERE.parent / "unit" / "nvue"),
                str(HERE.parents[1] / ".collections")]
from _paths import REPO  # noqa: E402
from _report import SMOKE, at_most, command_line, each_equal, publish, repeat  # noqa: E402
from nvue_helpers import Switch  # noqa: E402

REPEAT = repeat(3)
FAILED = []   # the playbook runs that failed: the benchmark is broken
BIN = Path(sys.executable).parent
RAILS = 8
SERVERS = 8
NAMES = ["enp%ds0np0" % n for n in (24, 64, 79, 94, 154, 192, 206, 220)]
FABRIC = {"rails": RAILS, "su_prefix": 26, "racks_per_su": 1, "addressing": "p2p31",
          "pools": {"rail%d" % r: "198.18.%d.0/20" % (16 * r) for r in range(RAILS)},
          "nics": {"pci": ["0000:%02x:00.0" % (0x18 + r) for r in range(RAILS)]}, "interface_names": NAMES}
# As site.yml runs it: the rail plan made once for the run (its planning play), then the leaf role on every leaf.
PLAY = [{"hosts": "leaves", "gather_facts": False, "roles": ["gpufabric.mlnx.leaf"], "pre_tasks": [
    {"name": "The rail plan, once", "ansible.builtin.include_role": {"name": "gpufabric.mlnx.rail_plan"},
     "run_once": True}]}]


APPLY_SECONDS = float(os.environ.get("APPLY_SECONDS", "5"))


def leaves(work, prefix, apply_seconds):
    made = {}
    for rail in range(RAILS):
        name = "su1-leaf-rail%d" % rail
        sw = Switch(work / ("%s-%s" % (prefix, name)), name, ports="swp1-%d" % SERVERS, apply_seconds=apply_seconds)
        for index in range(1, SERVERS + 1):
            sw.admin("port", "swp%d" % index, "--neighbor", "srv-%02d:%s" % (index, NAMES[rail]))
        sw.start()
        made[name] = sw
    return made


def inventory(work, made):
    servers = {"srv-%02d" % i: {"rack": "r01", "position": i} for i in range(1, SERVERS + 1)}
    leaf_vars = {name: sw.httpapi_vars() for name, sw in made.items()}
    data = {"all": {"vars": {"gpufabric_fabric": FABRIC}, "children": {
        "servers": {"hosts": servers, "vars": {"ansible_connection": "local"}},
        "leaves": {"hosts": leaf_vars}}}}
    path = work / "hosts.yml"
    path.write_text(yaml.safe_dump(data))
    return path


def playbook(work, inv, *extra):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(REPO / ".collections"), ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
               ANSIBLE_LOCAL_TEMP=str(work / "tmp"), ANSIBLE_HOME=str(work / "home"), NO_COLOR="1", ANSIBLE_FORKS="8")
    (work / "play.yml").write_text(yaml.safe_dump(PLAY))
    start = time.perf_counter()
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", str(inv), str(work / "play.yml"), *extra], env=env,
                          capture_output=True, text=True, check=False)
    took = round(time.perf_counter() - start, 2)
    if proc.returncode != 0:
        print(proc.stdout[-3000:], proc.stderr[-2000:], file=sys.stderr)
        FAILED.append("the leaf role %s: rc %d" % (" ".join(extra) or "on every leaf", proc.returncode))
    return took, proc.returncode


def measure(work, apply_seconds, tag):
    """(one leaf, eight leaves, rerun, reads, applies) of the fastest of REPEAT rounds."""
    one, eight, reads, applies, first, rerun = [], [], {}, {}, {}, None
    for attempt in range(REPEAT):
        made = leaves(work, "%s-a%d" % (tag, attempt), apply_seconds)
        try:
            one.append(playbook(work, inventory(work, made), "--limit", "su1-leaf-rail0"))
            first["one: su1-leaf-rail0"] = len(made["su1-leaf-rail0"].events("apply"))
        finally:
            for sw in made.values():
                sw.stop()
        made = leaves(work, "%s-b%d" % (tag, attempt), apply_seconds)
        try:
            inv = inventory(work, made)
            eight.append(playbook(work, inv))
            first.update({"eight: " + name: len(sw.events("apply")) for name, sw in made.items()})
            marks = {name: sw.mark() for name, sw in made.items()}
            rerun = playbook(work, inv)
            reads = {n: len(sw.since(marks[n], "read")) for n, sw in made.items()}
            applies = {n: len(sw.since(marks[n], "apply")) for n, sw in made.items()}
        finally:
            for sw in made.values():
                sw.stop()
    return {"apply_s": apply_seconds, "one_leaf": min(one), "eight_leaves": min(eight), "rerun": rerun,
            "ratio_8_to_1": round(min(eight)[0] / min(one)[0], 2), "first_run_applies_per_leaf": first,
            "rerun_reads_per_leaf": reads,
            "rerun_applies_per_leaf": applies}


def main():
    out = {"repeat": REPEAT, "cpus": os.cpu_count(), "load_average": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="bench-leaves-") as tmp:
        work = Path(tmp)
        out["emulator_apply"] = real = measure(work, 0.3, "fast")
        applied = 0.3
        if not SMOKE:   # a smoke run: the emulator's own apply time only, once
            out["realistic_apply"] = real = measure(work, APPLY_SECONDS, "real")
            applied = APPLY_SECONDS
    reads = real["rerun_reads_per_leaf"]
    publish("bench-leaves", out, [
        # a timing of runs that configured nothing would mean nothing: each leaf's first run applies its revision
        each_equal("first runs: revisions applied per leaf (apply %g s)" % applied,
                   real["first_run_applies_per_leaf"], 1),
        at_most("t(8 leaves) / t(1 leaf), apply %g s" % applied, real["ratio_8_to_1"], 1.3),
        at_most("compliant rerun: the most reads of one leaf", max(reads.values()) if reads else None, 3),
        each_equal("compliant rerun: applies per leaf", real["rerun_applies_per_leaf"], 0)], FAILED)


if __name__ == "__main__":
    command_line(__doc__)
    main()
