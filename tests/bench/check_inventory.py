"""Benchmark of the offline inventory check (playbooks/check_inventory.yml, called by its FQCN): wall time of
ansible-playbook on generated inventories of 125, 1,250 and 12,500 servers, and on inventory/example-1250 itself.

    .venv/bin/python tests/bench/check_inventory.py

Each generated inventory is example-1250's shape: DGX-H100-like servers, 4 per rack, one group per rack, the
example's matrix and fabric (pools widened to /11 per rail so that 12,500 servers fit), every host's RoCE QoS
settings from the roce_qos role's defaults and one rack group with its own (a second distinct input), and
the matrix's two images made by the simulator on the controller (tests/sim on PATH, as the role tests do). Nothing
is contacted: every host is an ssh host on a closed port. inventory/example-1250 ships no firmware images, so
its run skips the image check (gpufabric_preflight_images=false) and must pass.
Each size runs once (REPEAT to change; a smoke run: 125 servers only); nothing is asserted: each figure is printed
with its target (issue 12: example-1250 in at most 30 s, growth linear - t(12500)/t(1250) about 10, at most 12 -
issue 40) and written to tests/output/bench-check-inventory.json; a check that fails makes the benchmark fail.
"""
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parent / "unit")]
from _paths import REPO, SIM_BIN  # noqa: E402
from _report import SMOKE, at_most, command_line, equal, publish, repeat, smoke_or  # noqa: E402

SIZES = smoke_or((125, 1250, 12500), (125,))
REPEAT = repeat(1)
BIN = Path(sys.executable).parent
EXAMPLE = REPO / "inventory" / "example-1250"
DEVICE_IDS = {"MT_0000000838": "4129", "MT_0000000834": "4129"}   # ConnectX-7


def environment(work):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(REPO / ".collections"), ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
               ANSIBLE_LOCAL_TEMP=str(work / "tmp"), ANSIBLE_HOME=str(work / "home"), NO_COLOR="1",
               PATH=os.pathsep.join([str(SIM_BIN), str(BIN), os.environ.get("PATH", "")]),
               MLXSIM_STATE=str(work / "controller" / "state.json"), MLXSIM_TIME_SCALE="0",
               MLXSIM_LOG=str(work / "controller" / "calls.jsonl"))
    subprocess.run([str(SIM_BIN / "mlxsim"), "init", "--profile", "cx6dx-roce", "--hostname", "controller"], env=env,
                   check=True, capture_output=True)
    return env


def images(work, env, matrix):
    """The matrix with its images made by the simulator in work/firmware (their real sha256)."""
    folder = work / "firmware"
    folder.mkdir()
    for psid, pin in matrix["firmware"].items():
        path = folder / pin["image"]
        subprocess.run([str(SIM_BIN / "mlxsim"), "mkimage", "--psid", psid, "--version", pin["version"],
                        "--device-id", DEVICE_IDS[psid], "-o", str(path)], env=env, check=True, capture_output=True)
        pin["sha256"] = subprocess.run(["sha256sum", str(path)], check=True, capture_output=True,
                                       text=True).stdout.split()[0]
    return folder


def inventory(work, count, matrix, folder):
    """An inventory of ``count`` servers in work/inv-COUNT, with ``matrix`` and its images in ``folder``."""
    inv = work / ("inv-%d" % count)
    (inv / "group_vars" / "all").mkdir(parents=True)
    fabric = yaml.safe_load((EXAMPLE / "group_vars" / "all" / "rails.yml").read_text())["gpufabric_fabric"]
    fabric["pools"] = {"rail%d" % rail: "10.%d.0.0/11" % (32 * rail) for rail in range(fabric["rails"])}
    (inv / "group_vars" / "all" / "site.yml").write_text(yaml.safe_dump({
        "gpufabric_matrix": matrix, "gpufabric_fabric": fabric, "gpufabric_firmware_source_dir": str(folder),
        "ansible_connection": "ssh", "ansible_port": 9}))
    racks = {}
    for index in range(count):
        rack = "r%04d" % (index // 4 + 1)
        group = racks.setdefault("rack_" + rack, {"vars": {"rack": rack}, "hosts": {}})
        group["hosts"]["srv-%s-%02d" % (rack, index % 4 + 1)] = {"position": index % 4 + 1,
                                                                 "ansible_host": "198.19.%d.%d" % divmod(index, 250)}
    racks["rack_r0001"]["vars"]["gpufabric_roce_qos_cnp_dscp"] = 46      # a second distinct QoS input
    (inv / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": {"servers": {"children": racks}}}}))
    return inv


def check(inv, env, *extra):
    """(seconds, rc) of the fastest of REPEAT runs of gpufabric.mlnx.check_inventory on ``inv``."""
    best = None
    for _run in range(REPEAT):
        start = time.perf_counter()
        proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", str(inv), "gpufabric.mlnx.check_inventory"]
                              + list(extra), env=env, capture_output=True, text=True, check=False)
        took = time.perf_counter() - start
        if proc.returncode != 0:
            print(proc.stdout[-3000:], proc.stderr[-3000:], file=sys.stderr)
        if best is None or took < best[0]:
            best = (round(took, 2), proc.returncode)
    return best


def main():
    out = {"repeat": REPEAT, "cpus": os.cpu_count(), "load_average": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="bench-check-inventory-") as tmp:
        work = Path(tmp)
        env = environment(work)
        matrix = yaml.safe_load((EXAMPLE / "group_vars" / "all" / "matrix.yml").read_text())["gpufabric_matrix"]
        folder = images(work, env, matrix)
        for count in SIZES:
            seconds, rc = check(inventory(work, count, matrix, folder), env)
            out[str(count)] = {"hosts": count, "wall_s": seconds, "rc": rc}
        if not SMOKE:
            secret = work / "example-vault-pass"   # the example's published vault password (its README)
            secret.write_text(re.search(r"^    (\S+)$", (EXAMPLE / "README.md").read_text(), re.M).group(1))
            seconds, rc = check(EXAMPLE, env, "-e", "gpufabric_preflight_images=false", "--vault-password-file",
                                str(secret))
            out["example-1250"] = {"wall_s": seconds, "rc": rc}
    small, mid, big = (out.get(str(count), {}).get("wall_s") for count in (125, 1250, 12500))
    out["ratio_1250_to_125"] = round(mid / small, 2) if mid and small else None
    out["ratio_12500_to_1250"] = round(big / mid, 2) if big and mid else None
    # a check that refuses what it should pass measured nothing: the benchmark is broken, not slow
    broken = ["check_inventory on %s: rc %d" % (name, run["rc"]) for name, run in out.items()
              if isinstance(run, dict) and run.get("rc")]
    publish("bench-check-inventory", out, [
        at_most("inventory/example-1250: wall seconds", out.get("example-1250", {}).get("wall_s"), 30),
        equal("inventory/example-1250: rc (no problem)", out.get("example-1250", {}).get("rc"), 0),
        at_most("generated 1,250 hosts: wall seconds", mid, 30),
        equal("generated inventories: rc (no problem)", sorted({out[str(c)]["rc"] for c in SIZES}), [0]),
        at_most("t(12500) / t(1250) (linear: about 10; issue 40: at most 12)", out["ratio_12500_to_1250"], 12)],
        broken)


if __name__ == "__main__":
    command_line(__doc__)
    main()
