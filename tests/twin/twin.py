"""The fleet twin: playbooks/site.yml on many simulated machines on this controller, without containers.

    .venv/bin/python tests/twin/twin.py build --inventory inventory/example-1250 --out /tmp/twin \\
        --vault-password-file F           # every server a simulator state, every leaf an NVUE emulator state
    .venv/bin/python tests/twin/twin.py run --out /tmp/twin [--limit SU-or-rack] [-- more ansible-playbook words]

``build`` reads the site's inventory (``ansible-inventory --list``), makes every server a simulator state
(tests/sim: ``mlxsim init`` of a profile, in this process) and every leaf an NVUE emulator state (tests/nvue: its
ports and the LLDP neighbours the rail plan cables), the matrix's firmware images as simulator images of the
same PSID and version (the twin's matrix: the site's with their sha256), and writes the twin's inventory beside
the site's (``twin.yml``: each server's connection ``twin``, each leaf's port on 127.0.0.1) and its variables
(``twin-vars.yml``: where each machine's files are). ``run`` starts one emulator process serving every leaf
(``nvued --fleet``) and runs ``playbooks/site.yml --check --diff`` (``--apply`` to converge) with the site's
inventory and the twin's, the modules of a server running in the task's worker (tests/twin/plugins/connection).

What the twin leaves to the lab (tests/twin/README.md): the BIOS over Redfish (platform), the driver packages
(ofed), the rails' interfaces and the validation gate's traffic - they need a BMC, a package database and real
networks per machine.
"""
import argparse
import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SIM_BIN = REPO / "tests" / "sim" / "bin"
NVUE = REPO / "tests" / "nvue"
PLUGINS = HERE / "plugins"
BIN = Path(sys.executable).parent
IMAGE_URL = "http://127.0.0.1:{port}/%s"
LEAF_PASSWORD = "Twin-Leaf-1"  # noqa: S105 - the emulated leaves' password, in this test tool only
# The steps the twin cannot stand in for without a BMC, a package database or real networks per machine.
OFF = {"gpufabric_platform_enabled": False, "gpufabric_ofed_enabled": False, "gpufabric_rails_enabled": False,
       "gpufabric_validate_enabled": False}

for _path in (REPO / "tests" / "sim", NVUE, REPO / "tests", REPO / "tests" / "unit" / "nvue", REPO / ".collections"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))
sys.path.insert(0, str(HERE))
from snapshot import environ as _environ  # noqa: E402 - tests/twin/snapshot.py, beside this file


def _quiet(call, *args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = call(*args)
    if rc:
        raise SystemExit("twin: %s failed: %s" % (" ".join(str(a) for a in args[-1]), (err.getvalue() or out.getvalue()).strip()))
    return out.getvalue()


def machine_env(root):
    """The environment of a simulated server whose files are under ``root``."""
    return {"PATH": os.pathsep.join([str(SIM_BIN), str(BIN), "/usr/sbin", "/usr/bin", "/sbin", "/bin"]),
            "MLXSIM_STATE": str(Path(root) / "state.json"), "MLXSIM_TIME_SCALE": "0",
            "MLXSIM_LOG": str(Path(root) / "calls.jsonl")}


def read_inventory(sources, vault_password_file=None):
    argv = [str(BIN / "ansible-inventory"), "--list"]
    for source in sources:
        argv += ["-i", str(source)]
    if vault_password_file:
        argv += ["--vault-password-file", str(vault_password_file)]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False,
                          env=dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(REPO / ".collections")))
    if proc.returncode:
        raise SystemExit("twin: ansible-inventory failed: %s" % proc.stderr.strip())
    return json.loads(proc.stdout)


def members(data, group):
    """Every host of ``group`` and its children, in inventory order."""
    out = list(data.get(group, {}).get("hosts", []))
    for child in data.get(group, {}).get("children", []):
        out += [h for h in members(data, child) if h not in out]
    return out


def rail_plan(data, servers, leaves):
    """The site's rail plan (the collection's own code), from the inventory's variables."""
    from ansible_collections.gpufabric.mlnx.plugins.plugin_utils import _rail_plan
    hostvars = data["_meta"]["hostvars"]
    fabric = next((hostvars[h]["gpufabric_fabric"] for h in servers if "gpufabric_fabric" in hostvars[h]), None)
    if fabric is None:
        return None
    spines = {h: {"gpufabric_spine_plane": hostvars[h].get("gpufabric_spine_plane")} for h in members(data, "spines")}
    plan_servers = [{"name": h, "rack": hostvars[h].get("rack"), "position": hostvars[h].get("position")}
                    for h in servers]
    plan_leaves = {h: {k: v for k, v in hostvars[h].items() if k.startswith("gpufabric_leaf_")} for h in leaves}
    return _rail_plan.plan(plan_servers, fabric, plan_leaves, spines or None)


# The directories every Linux server has, under the machine's own files (fs/).
FILESYSTEM = ("etc/udev/rules.d", "etc/systemd/system", "usr/local/sbin", "var/lib")


def identities(root):
    """The serial numbers, MACs and GUIDs of a machine's cards."""
    cards = json.loads((root / "state.json").read_text()).get("cards") or []
    return {value for card in cards
            for value in (card.get("vpd", {}).get("SN"), card.get("base_mac"), card.get("base_guid")) if value}


def build_server(root, name, profile, used=None):
    """A simulated server; ``used``: the identities (serial numbers, MACs, GUIDs) of the machines built so far - a
    card that would share one is made again with another identity salt, so that the fleet's are unique (the
    preflight refuses a serial number on two cards). A machine already there (a snapshot's) keeps its own."""
    from mlxsim import cli
    root.mkdir(parents=True, exist_ok=True)
    for folder in FILESYSTEM:
        (root / "fs" / folder).mkdir(parents=True, exist_ok=True)
    if not (root / "state.json").exists():
        salt = 0
        while True:
            with _environ(**machine_env(root)):
                _quiet(cli.main, "mlxsim", ["init", "--profile", profile, "--hostname", name, "--force"]
                       + (["--identity-salt", str(salt)] if salt else []))
            if used is None or not identities(root) & used:
                break
            salt += 1
    if used is not None:
        used |= identities(root)


def build_leaf(root, name, ports, release, cert):
    from nvuesim import admin
    if (root / "state.json").exists():
        return
    root.parent.mkdir(parents=True, exist_ok=True)
    ports_file = root.parent / (name + ".ports.json")
    ports_file.write_text(json.dumps(ports))
    _quiet(admin.main, ["--state", str(root), "init", "--hostname", name, "--release", release,
                        "--ports-file", str(ports_file), "--password", LEAF_PASSWORD, "--auto-save", "on",
                        "--apply-seconds", "0.05", "--reboot-seconds", "0.2", "--first-apply-done",
                        "--cert", cert["cert"], "--key", cert["key"]])
    ports_file.unlink()


def netdevs(root):
    """{PCI function: interface name} of a simulated server (the names its cards give the kernel)."""
    from mlxsim import model
    state = json.loads((Path(root) / "state.json").read_text())
    return {func["pci"]: model.netdev(card, index) for card in state["cards"]
            for index, func in enumerate(card["functions"])}


def leaf_ports(plan, leaf, names):
    """{port: {"speed", "neighbor"}} of a leaf: each server port cabled as the plan says, its LLDP neighbour the
    server's interface on that PCI function (what the cable shows; the plan's name where the server has no such
    function), each uplink to its spine."""
    entry = plan["leaves"][leaf]
    out = {}
    for port, server in entry["ports"].items():
        rail = next(r for r in plan["hosts"][server] if r["leaf"] == leaf)
        iface = names.get(server, {}).get(rail["pci"]) or rail["interface"]
        out[port] = {"speed": "400G", "neighbor": {"host": server, "ifname": iface}}
    for port, uplink in (entry.get("uplinks") or {}).items():
        out[port] = {"speed": "400G", "neighbor": {"host": uplink["spine"], "ifname": uplink["spine_port"]}}
    return out


def images(out, matrix):
    """The twin's matrix: the site's, each firmware image a simulator image of its PSID and version."""
    from mlxsim import families
    from mlxsim import profiles
    import hashlib
    folder = out / "firmware"
    folder.mkdir(parents=True, exist_ok=True)
    twin = json.loads(json.dumps(matrix))
    device_ids = {}
    for profile in profiles.PROFILES:
        for card in profiles.card_specs(profile):
            if card.get("psid") and card.get("family") in families.FAMILIES:
                device_ids.setdefault(card["psid"], str(families.FAMILIES[card["family"]]["dev_id"]))
    from mlxsim import cli
    for psid, pin in (twin.get("firmware") or {}).items():
        path = folder / pin["image"]
        if not path.exists():
            with _environ(**machine_env(out / "controller")):
                _quiet(cli.main, "mlxsim", ["mkimage", "--psid", psid, "--version", pin["version"],
                                            "--device-id", device_ids.get(psid, "4129"), "-o", str(path)])
        pin["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    from nvuesim import admin
    for pin in (twin.get("switch_os") or {}).values():  # the leaves' release: an emulator image, from a file URL
        path = folder / pin["image"]
        if not path.exists():
            _quiet(admin.main, ["mkimage", "--release", pin["release"], "-o", str(path)])
        pin["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
        pin["url"] = IMAGE_URL % pin["image"]  # twin.py run serves OUT/firmware on 127.0.0.1 (the port then)
    return twin


def build(args):
    out = Path(args.out).resolve()
    sources = [Path(s).resolve() for s in args.inventory]
    data = read_inventory(sources, args.vault_password_file)
    hostvars = data["_meta"]["hostvars"]
    servers, leaves = members(data, "servers"), members(data, "leaves")
    plan = rail_plan(data, servers, leaves)
    if args.groups:  # machines only for the hosts of these groups (a slice of a large site)
        chosen = {h for g in args.groups.split(":") for h in members(data, g)}
        servers, leaves = [h for h in servers if h in chosen], [h for h in leaves if h in chosen]
    started = time.monotonic()
    if args.snapshot:  # a machine with a file in the snapshot is made from it (tests/twin/snapshot.py), not below
        from snapshot import seed  # pylint: disable=import-outside-toplevel
        seed(args.snapshot, out, servers, leaves, LEAF_PASSWORD)
    # the controller's own simulated tools (flint reads the images there)
    build_server(out / "controller", "controller", "cx6dx-roce")
    used = set()
    for name in servers:
        build_server(out / "machines" / name, name, hostvars[name].get("gpufabric_twin_profile", args.profile), used)
    from nvue_helpers import cert_pair  # tests/unit/nvue: one certificate for every emulated leaf
    cert = cert_pair(out / "cert")
    names = {name: netdevs(out / "machines" / name) for name in servers}
    for name in leaves:
        ports = leaf_ports(plan, name, names) if plan and name in plan["leaves"] else {}
        build_leaf(out / "leaves" / name, name, ports, args.leaf_release, cert)
    matrix = next((hostvars[h]["gpufabric_matrix"] for h in servers if "gpufabric_matrix" in hostvars[h]), None)
    twin_vars = dict(OFF, gpufabric_twin_sim=str(SIM_BIN),
                     # a simulated server boots at once: a longer wait only waits for one that does not come back
                     gpufabric_activate_reboot_timeout=args.reboot_timeout,
                     gpufabric_firmware_source_dir=str(out / "firmware"),
                     gpufabric_report_dir=str(out / "reports"))
    if matrix:
        twin_vars["gpufabric_matrix"] = images(out, matrix)
    (out / "twin-vars.yml").write_text(yaml.safe_dump(twin_vars, sort_keys=True) + SERVER_VARS)
    inventory = {"all": {"children": {
        "servers": {"hosts": {name: {"ansible_connection": "twin", "gpufabric_twin_root": str(out / "machines" / name)}
                              for name in servers}},
        "leaves": {"hosts": {name: {"gpufabric_twin_leaf": True} for name in leaves}}}}}
    (out / "twin.yml").write_text(yaml.safe_dump(inventory, sort_keys=False))
    for machine, faults in (yaml.safe_load(Path(args.faults).read_text()) if args.faults else {}).items():
        for words in faults:
            set_fault(out, machine, words if isinstance(words, list) else str(words).split())
    (out / "sources.json").write_text(json.dumps({"inventory": [str(s) for s in sources]}))
    print("twin: %d servers, %d leaves in %s (%.1f s)" % (len(servers), len(leaves), out, time.monotonic() - started))


# Per server, under gpufabric_twin_root (templated per host by Ansible: extra variables apply to every host).
SERVER_VARS = """
gpufabric_twin_env:
  PATH: "%(path)s"
  MLXSIM_STATE: "{{ gpufabric_twin_root }}/state.json"
  MLXSIM_TIME_SCALE: "0"
  MLXSIM_LOG: "{{ gpufabric_twin_root }}/calls.jsonl"
ansible_pipelining: true
ansible_python_interpreter: "%(python)s"
gpufabric_sysfs_root: "{{ gpufabric_twin_root }}/root"
gpufabric_firmware_dir: "{{ gpufabric_twin_root }}/fs/var/lib/gpufabric/firmware"
gpufabric_activate_reboot_command: "/usr/bin/env MLXSIM_STATE={{ gpufabric_twin_root }}/state.json MLXSIM_TIME_SCALE=0 %(sim)s/mlxsim reboot"
gpufabric_activate_boot_time_command: "/usr/bin/env MLXSIM_STATE={{ gpufabric_twin_root }}/state.json %(sim)s/mlxsim boot-id"
gpufabric_roce_qos_script: "{{ gpufabric_twin_root }}/fs/usr/local/sbin/gpufabric-roce-qos"
gpufabric_roce_qos_udev_rule: "{{ gpufabric_twin_root }}/fs/etc/udev/rules.d/90-gpufabric-roce-qos.rules"
""" % {"path": os.pathsep.join([str(SIM_BIN), str(BIN), "/usr/sbin", "/usr/bin", "/sbin", "/bin"]),
       "python": sys.executable, "sim": SIM_BIN}


def leaf_vars(ports):
    return {name: {"ansible_host": "127.0.0.1", "ansible_connection": "ansible.netcommon.httpapi",
                   "ansible_network_os": "gpufabric.mlnx.nvue", "ansible_httpapi_port": port, "ansible_port": port,
                   "ansible_httpapi_use_ssl": True, "ansible_httpapi_validate_certs": False,
                   "ansible_user": "cumulus", "ansible_password": LEAF_PASSWORD, "gpufabric_twin_leaf": True}
            for name, port in ports.items()}


def start_leaves(out):
    """One nvued serving every leaf; -> (process, {leaf: port})."""
    ports_file = out / "leaves" / "ports.json"
    if ports_file.exists():
        ports_file.unlink()
    proc = subprocess.Popen([sys.executable, str(NVUE / "bin" / "nvued"), "--fleet", str(out / "leaves"),
                             "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if "listening" not in line:
        raise SystemExit("twin: nvued --fleet did not start: %s %s" % (line, proc.stderr.read()))
    return proc, json.loads(ports_file.read_text())


def serve_images(out):
    """An HTTP server on 127.0.0.1 for the twin's switch images (the matrix wants an http URL); -> (process, port)."""
    proc = subprocess.Popen([sys.executable, "-u", "-m", "http.server", "--bind", "127.0.0.1", "0",
                             "--directory", str(out / "firmware")], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()  # Serving HTTP on 127.0.0.1 port N (http://127.0.0.1:N/) ...
    words = line.split()
    if "port" not in words:
        raise SystemExit("twin: the image server did not start: %s" % line)
    return proc, int(words[words.index("port") + 1])


def start(out, forks=50):
    """The twin's leaves (one nvued) and its image server started, twin-run.yml and twin-run-vars.yml written with
    their ports -> (stop, env): ``stop()`` ends both; ``env`` the environment ansible-playbook runs in (the twin's
    connection and callback, the controller's simulated tools)."""
    out = Path(out).resolve()
    leaves_proc, ports = (None, {})
    (out / "firmware").mkdir(exist_ok=True)
    images_proc, image_port = serve_images(out)
    twin_vars = yaml.safe_load((out / "twin-vars.yml").read_text())
    for pin in ((twin_vars.get("gpufabric_matrix") or {}).get("switch_os") or {}).values():
        pin["url"] = pin["url"].replace("{port}", str(image_port))
    (out / "twin-run-vars.yml").write_text(yaml.safe_dump(twin_vars, sort_keys=True))
    if (out / "leaves").is_dir() and any((out / "leaves").iterdir()):
        leaves_proc, ports = start_leaves(out)
    inventory = yaml.safe_load((out / "twin.yml").read_text())
    inventory["all"]["children"]["leaves"]["hosts"] = leaf_vars(ports)
    (out / "twin-run.yml").write_text(yaml.safe_dump(inventory, sort_keys=False))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(REPO / ".collections"),
               ANSIBLE_CONNECTION_PLUGINS=str(PLUGINS / "connection"), ANSIBLE_FORKS=str(forks),
               ANSIBLE_HOST_KEY_CHECKING="false", ANSIBLE_RETRY_FILES_ENABLED="false",
               ANSIBLE_CALLBACK_PLUGINS=str(PLUGINS / "callback"),
               ANSIBLE_CALLBACKS_ENABLED=",".join(filter(None, ["twin", os.environ.get("ANSIBLE_CALLBACKS_ENABLED")])),
               GPUFABRIC_TWIN_SIM=str(SIM_BIN), GPUFABRIC_TWIN_REPORT=str(out / "reports" / "rehearsal.json"),
               **machine_env(out / "controller"))

    def stop():
        images_proc.terminate()
        images_proc.wait(10)
        if leaves_proc is not None:
            leaves_proc.send_signal(signal.SIGINT)
            try:
                leaves_proc.wait(10)
            except subprocess.TimeoutExpired:
                leaves_proc.kill()
    return stop, env


def run(args, extra):
    out = Path(args.out).resolve()
    sources = json.loads((out / "sources.json").read_text())["inventory"]
    stop, env = start(out, args.forks)
    argv = [str(BIN / "ansible-playbook")]
    for source in sources:
        argv += ["-i", source]
    argv += ["-i", str(out / "twin-run.yml"), "-e", "@" + str(out / "twin-run-vars.yml"),
             str(Path(REPO / "playbooks", args.playbook))]  # a name of playbooks/ or a path
    if not args.apply:
        argv += ["--check", "--diff"]
    if args.limit:
        argv += ["--limit", args.limit]
    if args.vault_password_file:
        argv += ["--vault-password-file", args.vault_password_file]
    try:
        return subprocess.run(argv + list(extra), env=env, check=False).returncode
    finally:
        stop()


def set_fault(out, machine, words):
    """Inject a fault on a machine of the twin: a server's as ``mlxsim fault add`` (``TYPE [device=D] [KEY=VALUE...]``,
    tests/sim/README.md), a leaf's as ``nvuesim fault set`` (``NAME [ARGS...]``, tests/nvue/README.md)."""
    words = [str(w) for w in words]
    if (out / "machines" / machine / "state.json").exists():
        from mlxsim import cli
        device = [w.split("=", 1)[1] for w in words[1:] if w.startswith("device=")]
        argv = ["fault", "add", words[0]] + (["--device", device[0]] if device else []) + \
            [w for w in words[1:] if not w.startswith("device=")]
        with _environ(**machine_env(out / "machines" / machine)):
            _quiet(cli.main, "mlxsim", argv)
    elif (out / "leaves" / machine / "state.json").exists():
        from nvuesim import admin
        _quiet(admin.main, ["--state", str(out / "leaves" / machine), "fault", "set"] + words)
    else:
        raise SystemExit("twin: no machine %s in %s" % (machine, out))


def clear_faults(out, machines=()):
    """Clear every fault of these machines (all the twin's without any): a powered-off server boots."""
    from mlxsim import cli
    from nvuesim import admin
    servers = sorted(p.name for p in (out / "machines").iterdir()) if (out / "machines").is_dir() else []
    leaves = sorted(p.name for p in (out / "leaves").iterdir() if p.is_dir()) if (out / "leaves").is_dir() else []
    for name in servers:
        if not machines or name in machines:
            with _environ(**machine_env(out / "machines" / name)):
                _quiet(cli.main, "mlxsim", ["fault", "clear"])
    for name in leaves:
        if not machines or name in machines:
            _quiet(admin.main, ["--state", str(out / "leaves" / name), "fault", "clear"])


# The latency model of a rollout (seconds). The simulator's (tests/sim/README.md, MLXSIM_TIME_SCALE): a card read
# 1.5 s (each of the run's 4 reads - preflight, firmware, NV configuration, activation - reads every card at once),
# an NV write 0.5 s, a burn 90 s (every card of a server at once), a level-3 firmware reset 20 s. The reboot of a
# server (a DGX H100's POST, minutes: inventory/example-1250's rollout.yml) and a leaf's apply are [invented].
MODEL = {"read": 1.5, "reads": 4, "nv_write": 0.5, "burn": 90.0, "fwreset": 20.0, "reboot": 300.0, "leaf_apply": 5.0}


def predicted_seconds(row):
    """A server's time in the rollout by the latency model, from its row of the rollout report."""
    if row.get("outcome") in ("held", "failed", "not run"):
        return 0.0
    seconds = MODEL["read"] * MODEL["reads"]
    seconds += MODEL["burn"] if row.get("firmware_burned") else 0.0
    seconds += MODEL["nv_write"] if row.get("nv_changed") else 0.0
    activation = str(row.get("activation") or "none")
    seconds += MODEL["reboot"] if activation.startswith("reboot") else (
        MODEL["fwreset"] if activation.startswith("fwreset") else 0.0)
    return seconds


def report(out):
    """The rehearsal's prediction (reports/rehearsal.json, written by the twin's callback) with the latency model:
    per server what the rollout does and how long it takes, per batch its leaves then its slowest server, the
    rollout's duration (the batches one after the other). -> the document, also written as reports/twin.json and
    reports/twin.md."""
    data = json.loads((out / "reports" / "rehearsal.json").read_text())
    rows = data.get("hosts") or []
    for row in rows:
        row["seconds"] = predicted_seconds(row)
    batches = []
    for batch in data.get("batches") or []:
        members = [r for r in rows if r.get("batch") == batch.get("batch")]
        seconds = (MODEL["leaf_apply"] if batch.get("leaves") else 0.0) + max([r["seconds"] for r in members] or [0.0])
        changes = {"burn": sum(1 for r in members if r.get("firmware_burned")),
                   "nv": sum(1 for r in members if r.get("nv_changed")),
                   "fwreset": sum(1 for r in members if str(r.get("activation") or "").startswith("fwreset")),
                   "reboot": sum(1 for r in members if str(r.get("activation") or "").startswith("reboot"))}
        batches.append(dict(batch, seconds=seconds, **changes))
    plays = data.get("plays") or []
    rollout_start = next((p["started"] for p in plays if p["name"].startswith("The rollout, batch by batch")), None)
    planning = next((later["started"] - play["started"] for play, later in zip(plays, plays[1:])
                     if play["name"].startswith("Plan the rollout")), None)
    count = {}
    for row in rows:
        count[row["outcome"]] = count.get(row["outcome"], 0) + 1
    doc = {"model": MODEL, "servers": len(rows), "outcomes": count,
           "burned": sum(1 for r in rows if r.get("firmware_burned")),
           "fwresets": sum(1 for r in rows if str(r.get("activation") or "").startswith("fwreset")),
           "reboots": sum(1 for r in rows if str(r.get("activation") or "").startswith("reboot")),
           "held": {r["host"]: r.get("why") for r in rows if r["outcome"] == "held"},
           "failed": sorted(r["host"] for r in rows if r["outcome"] == "failed"),
           "rollout_seconds": sum(b["seconds"] for b in batches), "batches": batches, "hosts": rows,
           "rehearsal_seconds": data.get("seconds"), "before_first_batch_seconds": rollout_start,
           "planning_seconds": round(planning, 2) if planning is not None else None}
    (out / "reports" / "twin.json").write_text(json.dumps(doc, indent=1, sort_keys=True))
    lines = ["# Rehearsal on the fleet twin", "",
             "%d servers: %s; %d burn firmware, %d reset it (level 3), %d reboot; predicted rollout %.0f min "
             "(latency model: tests/twin/twin.py MODEL)." % (
                 len(rows), ", ".join("%d %s" % (n, k) for k, n in sorted(count.items())), doc["burned"],
                 doc["fwresets"], doc["reboots"], doc["rollout_seconds"] / 60), "",
             "| batch | servers | leaves | held | failed | burn firmware | NV changes | firmware resets | reboots | "
             "predicted |", "|---|---|---|---|---|---|---|---|---|---|"]
    lines += ["| %s | %s | %s | %s | %s | %d | %d | %d | %d | %.0f s |" % (
        b.get("batch"), b.get("servers"), b.get("leaves"), b.get("held"), b.get("failed"), b["burn"], b["nv"],
        b["fwreset"], b["reboot"], b["seconds"]) for b in batches]
    if rollout_start is not None:
        lines += ["", "The rehearsal itself: %.0f s on this controller, of which %.0f s before the first batch (the "
                  "variable check, the preflight, the plan) and %.0f s the planning play (the rail plan and the "
                  "batches)." % (data.get("seconds") or 0, rollout_start, planning or 0)]
    lines += ["", "| server | outcome | firmware burned | NV changed | activation | predicted | why |",
              "|---|---|---|---|---|---|---|"]
    lines += ["| %s | %s | %s | %s | %s | %.0f s | %s |" % (
        r["host"], r["outcome"], r.get("firmware_burned"), r.get("nv_changed"), r.get("activation") or "",
        r["seconds"], str(r.get("why") or "").replace("|", "/")) for r in rows]
    (out / "reports" / "twin.md").write_text("\n".join(lines) + "\n")
    return doc


def main(argv=None):
    parser = argparse.ArgumentParser(prog="twin", description=__doc__.split("\n\n", maxsplit=1)[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="make every machine of an inventory a simulated one")
    b.add_argument("--inventory", "-i", action="append", required=True)
    b.add_argument("--out", required=True)
    b.add_argument("--profile", default="dgx-h100-eth",
                   help="the simulator profile of a server without gpufabric_twin_profile (default dgx-h100-eth)")
    b.add_argument("--leaf-release", default="5.11.0")
    b.add_argument("--vault-password-file")
    b.add_argument("--reboot-timeout", type=int, default=120,
                   help="how long the activation waits for a rebooted server (default 120 s)")
    b.add_argument("--faults", help="a YAML file {machine: [[TYPE, ARGS...], ...]}: faults injected once built "
                                    "(twin.py fault)")
    b.add_argument("--groups", help="GROUP:GROUP...: make only the machines of these groups (run with the same "
                                    "--limit)")
    b.add_argument("--snapshot", metavar="DIR", help="a directory playbooks/snapshot.yml wrote: a server or leaf "
                                                     "with a file DIR/<name>.json is made from it")
    f = sub.add_parser("fault", help="inject a fault on a machine, or clear faults (--clear)")
    f.add_argument("--out", required=True)
    f.add_argument("--clear", action="store_true", help="clear every fault of the machines named (of all without)")
    f.add_argument("words", nargs="*", help="MACHINE TYPE [ARGS...] (or, with --clear, MACHINE...)")
    p = sub.add_parser("report", help="the last run's prediction with the latency model (reports/twin.md, .json)")
    p.add_argument("--out", required=True)
    r = sub.add_parser("run", help="site.yml on the twin (check mode unless --apply)")
    r.add_argument("--out", required=True)
    r.add_argument("--playbook", default="site.yml")
    r.add_argument("--limit")
    r.add_argument("--apply", action="store_true")
    r.add_argument("--forks", type=int, default=20)
    r.add_argument("--vault-password-file")
    args, extra = parser.parse_known_args(argv)
    if args.cmd == "build":
        return build(args) or 0
    if args.cmd == "report":
        doc = report(Path(args.out).resolve())
        print((Path(args.out).resolve() / "reports" / "twin.md").read_text().split("\n\n")[1])
        return 0 if doc["hosts"] else 1
    if args.cmd == "fault":
        out = Path(args.out).resolve()
        if args.clear:
            clear_faults(out, args.words)
        elif len(args.words) < 2:
            parser.error("fault: MACHINE TYPE [ARGS...]")
        else:
            set_fault(out, args.words[0], args.words[1:])
        return 0
    return run(args, [w for w in extra if w != "--"])


if __name__ == "__main__":
    sys.exit(main())
