"""mlxsim - control the simulator (init, reboot, show, faults, images, call log)."""
import argparse
import json
import os
import sys
import time

from .. import faults, families, image, model, perf, platform, profiles, snapshot, sysfs, versions
from .. import state as st

USAGE = "mlxsim {init,reboot,driver-reload,boot-id,activity,show,fault,mkimage,calls,profiles} ..."


def _parser():
    p = argparse.ArgumentParser(prog="mlxsim", description="Control the NIC tool simulator.")
    p.add_argument("--state", help="state file (default: $MLXSIM_STATE or %s)" % st.DEFAULT_STATE)
    sub = p.add_subparsers(dest="cmd")

    i = sub.add_parser("init", help="create the host state from a profile, or from a snapshot of a real host")
    i.add_argument("--profile", choices=sorted(profiles.PROFILES),
                   help="the cards and host of this profile (with --snapshot: only its host - CPUs, cpufreq)")
    i.add_argument("--snapshot", metavar="FILE",
                   help="the cards, kernel, OS and driver of a real server from its snapshot (the JSON file "
                        "playbooks/snapshot.yml writes): each card the closest modelled one with the snapshot's "
                        "values over it (tests/sim/README.md, 'Seeded from a snapshot')")
    i.add_argument("--hostname", help="the host's name (default: the snapshot's host; required with --profile)")
    i.add_argument("--mft-version", default=versions.DEFAULT_MFT)
    i.add_argument("--mstflint-version", default=versions.DEFAULT_MSTFLINT)
    i.add_argument("--ofed", default="MLNX_OFED_LINUX-24.10-2.1.8.0")
    i.add_argument("--mst-started", action="store_true", help="start with the MST modules loaded")
    i.add_argument("--nccl-version", default=None,
                   help="the NCCL library the simulated nccl-tests report (default %s)" % perf.DEFAULT_NCCL_VERSION)
    i.add_argument("--nccl-tests-version", default=None,
                   help="the nccl-tests release whose output layout is printed, 2.13.0 or later (default 2.17.6)")
    i.add_argument("--gpu", default=None,
                   help="the GPU model nccl-tests print, as CUDA names it, e.g. 'NVIDIA H200', 'Tesla V100-SXM2-32GB' "
                        "(default: the profile's, else %s)" % platform.DEFAULT_GPU)
    i.add_argument("--cpus", type=int, help="logical CPUs (default: the profile's, else 8)")
    i.add_argument("--cpufreq-driver", choices=sorted(platform.CPUFREQ),
                   help="cpufreq driver (default: the profile's, else intel_pstate)")
    i.add_argument("--bootloader", choices=["grub", "bls"],
                   help="boot configuration of the sysroot: grub (Debian 12, update-grub; the default) or bls (RHEL 9, "
                        "grubby); with --snapshot, by default bls for a RedHat-family OS, else grub")
    i.add_argument("--identity-salt", default="",
                   help="derive the cards' serial numbers, MACs and GUIDs from the host name and this word (the fleet "
                        "twin's way to keep them unique across a fleet)")
    i.add_argument("--state", dest="state2")
    i.add_argument("--force", action="store_true", help="overwrite an existing state")

    r = sub.add_parser("reboot", help="simulated power cycle (the kernel command line comes from the boot loader)")
    r.add_argument("--state", dest="state2")

    d = sub.add_parser("driver-reload", help="what /etc/init.d/openibd restart does: the runtime settings "
                                             "(mlnx_qos, cma_roce_tos, ECN/CNP, traffic_class) are lost, "
                                             "NV config and firmware untouched")
    d.add_argument("--state", dest="state2")

    b = sub.add_parser("boot-id", help="print an id that changes on every simulated power cycle "
                                       "(as /proc/sys/kernel/random/boot_id does on a real host)")
    b.add_argument("--state", dest="state2")

    y = sub.add_parser("activity", help="print the power cycles and, per card, the burns and firmware resets "
                                        "done so far (JSON)")
    y.add_argument("--state", dest="state2")

    s = sub.add_parser("show", help="print the state (JSON)")
    s.add_argument("--state", dest="state2")
    s.add_argument("--pending", action="store_true", help="only what waits for a reset, per card")

    f = sub.add_parser("fault", help="inject or clear faults")
    f.add_argument("--state", dest="state2")
    fs = f.add_subparsers(dest="fcmd")
    fa = fs.add_parser("add")
    fa.add_argument("type", choices=sorted(faults.TYPES))
    fa.add_argument("--device")
    fa.add_argument("opts", nargs="*", help="key=value (count=N, seconds=S, tool=T, serial=S, psid=P)")
    fc = fs.add_parser("clear")
    fc.add_argument("type", nargs="?")
    fs.add_parser("list")

    m = sub.add_parser("mkimage", help="write a firmware image in the simulator's format")
    m.add_argument("--psid", required=True)
    m.add_argument("--version", required=True, dest="fw_version")
    m.add_argument("--device-id", required=True, type=int)
    m.add_argument("--part-number", action="append", default=[])
    m.add_argument("--pxe")
    m.add_argument("--uefi")
    m.add_argument("--rom", action="append", default=[], help="TYPE=VERSION, e.g. 'UEFI Virtio net=21.4.13'")
    m.add_argument("--release-date", default="")
    m.add_argument("--guids", type=int, default=None,
                   help="the GuidsNumber the image carries (default: its family's)")
    m.add_argument("--description", default="")
    m.add_argument("-o", "--output", required=True)

    c = sub.add_parser("calls", help="print the invocation log")
    c.add_argument("--tool")
    c.add_argument("--summary", action="store_true")
    c.add_argument("--clear", action="store_true")

    sub.add_parser("profiles", help="list the profiles")
    return p


def build_state(profile, hostname, mft_version=versions.DEFAULT_MFT, mstflint_version=versions.DEFAULT_MSTFLINT,
                ofed="MLNX_OFED_LINUX-24.10-2.1.8.0", mst_started=False, cpus=None, cpufreq_driver=None,
                bootloader="grub", cards=None, salt=""):
    """The initial state dict of a host (what `mlxsim init` writes); ``cards``: these instead of the profile's."""
    specs = profiles.card_specs(profile) if cards is None else []
    return {
        "platform": platform.build_host(profile, hostname, cpus, cpufreq_driver, bootloader),
        "version": st.STATE_VERSION,
        "hostname": hostname,
        "profile": profile,
        "mft_version": mft_version,
        "mstflint_version": mstflint_version,
        "ofed": ofed,
        "mst_started": bool(mst_started),
        "boot_count": 0,
        "faults": [],
        "fault_used": {},
        "cards": cards if cards is not None else [model.build_card(spec, hostname, i, salt)
                                                  for i, spec in enumerate(specs)],
    }


def snapshot_state(a):
    """The state of ``mlxsim init --snapshot FILE``: the snapshot's cards, kernel, OS (its boot loader) and driver;
    the rest (CPUs, cpufreq, tool versions) the profile's or the defaults."""
    doc = snapshot.load(a.snapshot)
    hostname = a.hostname or doc.get("host")
    if not isinstance(hostname, str) or not hostname:
        raise st.SimError("mlxsim init --snapshot %s: the snapshot names no host: give --hostname" % a.snapshot)
    seeded = snapshot.seed(doc, hostname)
    data = build_state(a.profile or "", hostname, a.mft_version, a.mstflint_version, seeded["ofed"] or a.ofed,
                       a.mst_started, a.cpus, a.cpufreq_driver, a.bootloader or seeded["bootloader"] or "grub",
                       cards=seeded["cards"])
    data["profile"] = a.profile
    if seeded["kernel"]:
        data["platform"]["kernel"] = seeded["kernel"]
    data["snapshot"] = seeded["record"]
    return data


def cmd_init(a):
    if st.exists() and not a.force:
        sys.stderr.write("mlxsim: state %s exists (use --force)\n" % st.state_path())
        return 1
    if a.cpus is not None and a.cpus < 1:
        sys.stderr.write("mlxsim: --cpus must be at least 1\n")
        return 2
    if a.snapshot:
        data = snapshot_state(a)
    elif not a.profile or not a.hostname:
        sys.stderr.write("mlxsim: init needs --profile and --hostname, or --snapshot\n")
        return 2
    else:
        data = build_state(a.profile, a.hostname, a.mft_version, a.mstflint_version, a.ofed, a.mst_started,
                           a.cpus, a.cpufreq_driver, a.bootloader or "grub", salt=a.identity_salt)
    if a.nccl_version:
        data["nccl_version"] = a.nccl_version
    if a.nccl_tests_version:
        data["nccl_tests_version"] = a.nccl_tests_version
    if a.gpu:
        data["platform"]["gpu"] = a.gpu
    cards = data["cards"]
    st.save(data)
    root = sysfs.root_path()
    platform.install(data["platform"], root)
    sysfs.build(data, reset=True, root=root, boot=True)
    print("mlxsim: %s initialised from %s (%d cards, %d PCI functions) at %s" % (
        data["hostname"], "snapshot %s" % a.snapshot if a.snapshot else "profile %s" % a.profile, len(cards),
        sum(len(c["functions"]) for c in cards), st.state_path()))
    return 0


def reboot_state(s):
    """Power cycle: next-boot -> current, burned -> running; devices with a missing_after_reset
    fault vanish; the MST modules are unloaded."""
    for card in s["cards"]:
        model.activate_card(card, power_cycle=True)
        if faults.find(s, "missing_after_reset", card):
            card["missing"] = True
    s["mst_started"] = False
    s["boot_count"] = s.get("boot_count", 0) + 1
    driver_reload_state(s)


def driver_reload_state(s):
    """The mlx5 driver comes up afresh: every runtime QoS setting is back to its default
    (the sysfs/configfs tree is re-created by the caller, after the state is saved)."""
    s.pop("runtime", None)
    s["driver_loads"] = s.get("driver_loads", 0) + 1


def cmd_reboot(a):
    with st.transaction() as s:
        reboot_state(s)
        down = bool(faults.find(s, "no_boot"))
    if down:  # powered off, and it does not come back
        with open(st.down_path(), "w") as fh:
            fh.write("%s\n" % s.get("hostname"))
        print("mlxsim: %s powered off (no_boot: it does not come back)" % s.get("hostname"))
        return 0
    sysfs.come_up(boot=True)
    print("mlxsim: %s power cycled" % st.load().get("hostname"))
    return 0


def cmd_driver_reload(a):
    with st.transaction() as s:
        driver_reload_state(s)
    sysfs.come_up()
    print("mlxsim: %s driver reloaded (runtime QoS settings back to defaults)" % st.load().get("hostname"))
    return 0


def cmd_boot_id(a):
    s = st.load()
    if os.path.exists(st.down_path()):
        sys.stderr.write("mlxsim: %s is down (powered off, not back after its reboot)\n" % s.get("hostname"))
        return 255
    print("mlxsim-%s-boot-%d" % (s.get("hostname"), s.get("boot_count", 0)))
    return 0


def activity(s):
    """What changed the devices so far: power cycles, and burns / firmware resets per card (by card id)."""
    return {"boots": s.get("boot_count", 0),
            "cards": {c["id"]: {"burns": c.get("counters", {}).get("burns", 0),
                                "fwresets": c.get("counters", {}).get("fwresets", 0),
                                "pci": c["functions"][0]["pci"]} for c in s["cards"]}}


def cmd_activity(a):
    print(json.dumps(activity(st.load()), indent=1, sort_keys=True))
    return 0


def cmd_show(a):
    s = st.load()
    if a.pending:
        out = {c["id"]: model.pending(c) for c in s["cards"]}
        print(json.dumps(out, indent=1, sort_keys=True))
    else:
        print(json.dumps(s, indent=1, sort_keys=True))
    return 0


def cmd_fault(a):
    if a.fcmd == "add":
        fault = {"type": a.type}
        if a.device:
            fault["device"] = a.device
        fault.update(faults.parse_kv(a.opts))
        if a.type == "raw_ber":
            fault.setdefault("ber", "1e-4")
            fault.setdefault("since", "%.3f" % time.time())     # the errors accrue from now
        with st.transaction() as s:
            s.setdefault("faults", []).append(fault)
        sysfs.refresh_links(st.load())
        print("mlxsim: fault added: %s" % json.dumps(fault, sort_keys=True))
        return 0
    if a.fcmd == "clear":
        with st.transaction() as s:
            if a.type:
                s["faults"] = [f for f in s.get("faults", []) if f.get("type") != a.type]
            else:
                s["faults"] = []
            s["fault_used"] = {}
            if not a.type or a.type == "missing_after_reset":
                for c in s["cards"]:
                    c["missing"] = False
            powered_on = (not a.type or a.type == "no_boot") and os.path.exists(st.down_path())
            if powered_on:  # someone powers it on: it boots
                os.unlink(st.down_path())
                s["boot_count"] = s.get("boot_count", 0) + 1
        if powered_on:
            sysfs.come_up(boot=True)
        sysfs.refresh_links(st.load())
        print("mlxsim: faults cleared")
        return 0
    s = st.load()
    for f in faults.all_faults(s):
        print(json.dumps(f, sort_keys=True))
    return 0


def cmd_mkimage(a):
    roms = {}
    if a.pxe:
        roms["PXE"] = a.pxe
    if a.uefi:
        roms["UEFI"] = a.uefi
    for r in a.rom:
        k, _s, v = r.partition("=")
        roms[k] = v
    # the image format of the device's family: FS3 images of ConnectX-4/4 Lx/5 carry no secure-fw attributes
    # (Security Attributes: N/A, mstflint_query_image_cx4lx_1.txt); FS4 for the rest and for an unknown device id
    itype = next((f["image_type"] for f in families.FAMILIES.values() if f["dev_id"] == a.device_id), "FS4")
    meta = {"psid": a.psid, "fw_version": a.fw_version, "device_id": a.device_id,
            "part_numbers": a.part_number, "roms": roms, "release_date": a.release_date,
            "description": a.description, "image_type": itype, "security": "N/A" if itype == "FS3" else "secure-fw"}
    if a.guids:
        meta["uids"] = a.guids
    image.write(a.output, meta)
    print("mlxsim: image %s written (PSID %s, FW %s)" % (a.output, a.psid, a.fw_version))
    return 0


def cmd_calls(a):
    path = st.log_path()
    if a.clear:
        open(path, "w").close()
        return 0
    entries = []
    if os.path.exists(path):
        with open(path) as fh:
            for line in fh:
                line = line.strip()
                if not line:
                    continue
                try:
                    e = json.loads(line)
                except ValueError:
                    continue
                if a.tool and e.get("tool") != a.tool:
                    continue
                entries.append(e)
    if a.summary:
        counts = {}
        for e in entries:
            counts[e["tool"]] = counts.get(e["tool"], 0) + 1
        for k in sorted(counts):
            print("%-14s %d" % (k, counts[k]))
        return 0
    for e in entries:
        print(json.dumps(e, sort_keys=True))
    return 0


def run(tool, args):
    p = _parser()
    a, extra = p.parse_known_args(args)
    if a.cmd == "fault" and a.fcmd == "add" and all("=" in x for x in extra):
        a.opts = list(a.opts) + extra
    elif extra:
        p.error("unrecognized arguments: %s" % " ".join(extra))
    path = getattr(a, "state2", None) or a.state
    if path:
        os.environ["MLXSIM_STATE"] = path
    if a.cmd == "init":
        return cmd_init(a)
    if a.cmd == "reboot":
        return cmd_reboot(a)
    if a.cmd == "driver-reload":
        return cmd_driver_reload(a)
    if a.cmd == "boot-id":
        return cmd_boot_id(a)
    if a.cmd == "activity":
        return cmd_activity(a)
    if a.cmd == "show":
        return cmd_show(a)
    if a.cmd == "fault":
        if not a.fcmd:
            a.fcmd = "list"
        return cmd_fault(a)
    if a.cmd == "mkimage":
        return cmd_mkimage(a)
    if a.cmd == "calls":
        return cmd_calls(a)
    if a.cmd == "profiles":
        for k in sorted(profiles.PROFILES):
            print("%-18s %s" % (k, profiles.PROFILES[k][1]))
        return 0
    p.print_help()
    return 1
