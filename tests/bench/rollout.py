"""Benchmark of the whole server rollout (playbooks/site.yml) on the lab, as ratios measured in one run.

    .venv/bin/python tests/bench/rollout.py        (make bench runs it; root, the lab image built)
    BENCH_SMOKE=1 (make test's smoke run): the latency model at 1/50 and the first rollout only

The lab is tests/lab/labs/bench.yml: a DGX H100 (10 cards) and a mixed server (ConnectX-6,
ConnectX-7, BlueField-3), with the simulator's latency model at full scale (burn 90 s, level-3
firmware reset 20 s, query 1.5 s). The matrix is the one of molecule/driver_firmware (its
group_vars, reused as they are) with the driver role off: this measures firmware, NV configuration
and activation. Runs, in order, each timed and counted on the simulator (`mlxsim activity`):

  first     release v1 on fresh hosts: every card burned, NV profiles set, one activation per host
            (the target is exactly 1; wall time / (one burn + one activation) <= 1.3)
  rerun     release v1 again (compliant): activations and burns per host - the target is 0
  bump      release v3 (ConnectX-7 firmware 28.44.1036) and a new NV value: activations per host -
            the target is exactly 1; wall time / (one burn + one activation) - the target is <= 1.3
  unit      one `flint ... burn` and one `mlxfwreset -l 3 reset` of one card, in a lab container

Each run also lists its slowest tasks (ansible.posix.profile_tasks), to show where the time goes.
The servers are made like real hosts (the lab's boot_kernel: a kernel in /boot, so update-grub writes
boot entries). Nothing is asserted: each figure is printed with its target and whether it is met, and
all is written to tests/output/bench-rollout.json.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from _report import SMOKE, at_most, command_line, each_equal, publish

REPO = Path(__file__).resolve().parents[2]
LAB = REPO / "tests" / "lab" / "labs" / "bench.yml"
SCENARIO_VARS = REPO / "molecule" / "driver_firmware" / "inventory" / "group_vars" / "servers.yml"
BIN = Path(sys.executable).parent
# The driver is not installed here (gpufabric_ofed_enabled=false), but the matrix names one.
DRIVER = {
    "flavour": "doca-ofed", "version": "24.10-2.1.8.0", "dkms": True, "kernels": [],
    "source": {"type": "apt", "url": "http://198.19.50.250/unused/", "suite": "./", "components": [],
               "packages": {"doca-ofed": "2.9.2-0.0.3"}},
}


def run(argv, **kw):
    return subprocess.run([str(a) for a in argv], check=True, text=True, capture_output=True, **kw)


def lab(*args, path=LAB):
    return run([sys.executable, REPO / "tests" / "lab" / "lab.py", *args, "--lab", path])


def smoke_lab(work):
    """A smoke run's lab: bench.yml with the simulator's latency model at 1/50 (a burn 1.8 s, a reset 0.4 s)."""
    spec = yaml.safe_load(LAB.read_text())
    spec["time_scale"] = 0.02
    path = work / "bench-smoke.yml"
    path.write_text(yaml.safe_dump(spec))
    return path


def activity(container):
    return json.loads(run(["podman", "exec", container, "mlxsim", "activity"]).stdout)


def activations(before, after):
    """Power cycles plus firmware-reset rounds (the most resets any one card got) between two readings."""
    resets = max(after["cards"][c]["fwresets"] - before["cards"][c]["fwresets"] for c in after["cards"])
    return after["boots"] - before["boots"] + resets


def images(scenario, dest):
    """The firmware images of releases v1, v2 and v3 on the controller (mlxsim mkimage, deterministic).

    v3 is a template in the scenario vars (v2 with the ConnectX-7 image of molecule_fw_cx7_v3)."""
    dest.mkdir(parents=True, exist_ok=True)
    releases = [scenario["molecule_firmware"]["v1"], scenario["molecule_firmware"]["v2"],
                {"MT_0000000838": scenario["molecule_fw_cx7_v3"]}]
    for psid, fw in [entry for release in releases for entry in release.items()]:
        run([sys.executable, REPO / "tests" / "sim" / "bin" / "mlxsim", "mkimage", "--psid", psid,
             "--version", fw["version"], "--device-id", scenario["molecule_device_ids"][psid],
             "-o", dest / fw["image"]])


def rollout(inventory, hosts, extra, env):
    before = {h: activity(c) for h, c in hosts.items()}
    start = time.monotonic()
    proc = subprocess.run([BIN / "ansible-playbook", "-i", inventory, REPO / "playbooks" / "site.yml",
                           "-e", json.dumps(extra)], text=True, capture_output=True, env=env, check=False)
    wall = time.monotonic() - start
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-6000:] + proc.stderr[-3000:])
        raise SystemExit("site.yml failed (rc %d) with %s" % (proc.returncode, extra))
    after = {h: activity(c) for h, c in hosts.items()}
    # ansible.posix.profile_tasks: "<role> : <task> ---- 93.21s", slowest first
    slowest = re.findall(r"^(.+?) -+ (\d+\.\d+)s$", proc.stdout, re.M)[:8]
    return {"wall_s": round(wall, 1),
            "slowest_tasks_s": {name.strip(): float(sec) for name, sec in slowest},
            "activations_per_host": {h: activations(before[h], after[h]) for h in hosts},
            "burns_per_host": {h: sum(after[h]["cards"][c]["burns"] - before[h]["cards"][c]["burns"]
                                      for c in after[h]["cards"]) for h in hosts}}


def unit_costs(container, scenario):
    """One burn and one level-3 firmware reset of one card, timed inside a lab container."""
    run(["podman", "exec", container, "mlxsim", "mkimage", "--psid", "MT_0000000838", "--version", "28.45.1000",
         "--device-id", scenario["molecule_device_ids"]["MT_0000000838"], "-o", "/tmp/bench.bin"])
    start = time.monotonic()
    run(["podman", "exec", container, "flint", "-d", "0000:18:00.0", "-i", "/tmp/bench.bin", "-y", "burn"])
    burn = time.monotonic() - start
    start = time.monotonic()
    run(["podman", "exec", container, "mlxfwreset", "-d", "0000:18:00.0", "-l", "3", "-y", "reset"])
    reset = time.monotonic() - start
    return round(burn, 1), round(reset, 1)


def main():
    scenario = yaml.safe_load(SCENARIO_VARS.read_text())
    out = {"lab": str(LAB.relative_to(REPO)), "load_average_start": os.getloadavg()}
    work = Path(tempfile.mkdtemp(prefix="gf-bench-"))
    where = smoke_lab(work) if SMOKE else LAB
    try:
        lab("up", path=where)
        inventory = work / "inventory"
        (inventory / "group_vars").mkdir(parents=True)
        (inventory / "hosts.yml").write_text(lab("inventory", path=where).stdout)
        shutil.copy(REPO / "tests" / "bench" / "inventory" / "group_vars" / "all.yml", inventory / "group_vars")
        shutil.copy(SCENARIO_VARS, inventory / "group_vars" / "servers.yml")
        images(scenario, work / "firmware")
        hosts = {h: v["ansible_host"] for rack in yaml.safe_load((inventory / "hosts.yml").read_text())
                 ["all"]["children"]["servers"]["children"].values() for h, v in rack["hosts"].items()}
        # The controller as molecule's driver_firmware scenario gives it: the preflight reads the firmware images
        # with flint on the controller, so the simulator's first on PATH with a state of its own (the real mstflint
        # that `make test` installs, or the simulator's without a state, refuses the simulated images and stops the
        # rollout before batch 1)
        sim = REPO / "tests" / "sim" / "bin"
        env = dict(os.environ, MOLECULE_EPHEMERAL_DIRECTORY=str(work), ANSIBLE_NOCOLOR="1",
                   ANSIBLE_CALLBACKS_ENABLED="ansible.posix.profile_tasks",
                   ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
                   ANSIBLE_COLLECTIONS_PATH=str(REPO / ".collections"),
                   PATH=os.pathsep.join([str(sim), str(BIN), os.environ.get("PATH", "")]),
                   MLXSIM_STATE=str(work / "controller" / "state.json"),
                   MLXSIM_LOG=str(work / "controller" / "calls.jsonl"))
        run([sys.executable, sim / "mlxsim", "init", "--profile", "cx6dx-roce", "--hostname", "controller",
             "--state", work / "controller" / "state.json"])
        drivers = {"v1": DRIVER, "v2": dict(DRIVER, version="25.01-0.6.0.0")}
        common = {"gpufabric_ofed_enabled": False, "molecule_driver": drivers}
        v1 = dict(common, molecule_release="v1")
        out["first"] = rollout(inventory, hosts, v1, env)
        if not SMOKE:   # a smoke run: the first rollout only
            out["rerun"] = rollout(inventory, hosts, v1, env)
            out["bump"] = rollout(inventory, hosts, dict(common, molecule_release="v3", molecule_cc_mask=16), env)
        burn, reset = unit_costs(next(iter(hosts.values())), scenario)
        out["one_burn_s"], out["one_fwreset_s"] = burn, reset
        for name in ("first", "bump"):
            if name in out:
                out[name]["ratio_to_one_burn_plus_one_activation"] = round(out[name]["wall_s"] / (burn + reset), 2)
        out["load_average_end"] = os.getloadavg()
    finally:
        lab("down", path=where)
        shutil.rmtree(work, ignore_errors=True)
    publish("bench-rollout", out, targets(out))


def targets(out):
    """What issues 3 and 17 ask of the rollout, figure by figure (a smoke run has the first rollout only)."""
    first, rerun, bump = (out.get(name, {}) for name in ("first", "rerun", "bump"))
    return [each_equal("first: activations per host", first.get("activations_per_host", {}), 1),
            at_most("first: wall / (one burn + one activation)", first.get("ratio_to_one_burn_plus_one_activation"),
                    1.3),
            each_equal("rerun: activations per host", rerun.get("activations_per_host", {}), 0),
            each_equal("rerun: burns per host", rerun.get("burns_per_host", {}), 0),
            each_equal("bump: activations per host", bump.get("activations_per_host", {}), 1),
            at_most("bump: wall / (one burn + one activation)", bump.get("ratio_to_one_burn_plus_one_activation"),
                    1.3)]


if __name__ == "__main__":
    command_line(__doc__)
    main()
