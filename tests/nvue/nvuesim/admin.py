# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""nvuesim: the admin CLI of tests (init a switch, faults, ports, images, the event log, the state)."""
import argparse
import copy
import json
import os
import re
import subprocess
import sys
import time

from . import images, model
from .store import SimError, Store, state_dir

FAULTS = {
    # name: (arguments, help)
    "port_down": (["port"], "the port's carrier is lost (oper-status down, no LLDP neighbour)"),
    "protodown": (["port"], "the port is in protodown, reason linkflap"),
    "speed": (["port", "speed"], "the port's operational speed differs (e.g. 100G)"),
    "mtu": (["port", "mtu"], "the port's operational MTU differs from the applied one"),
    "roce_lossy": ([], "a hand change: applied AND startup get qos roce mode lossy (one-shot)"),
    "nvued_down": ([], "REST answers 502 (nginx, nvued stopped); the CLI cannot connect"),
    "slow_apply": (["seconds"], "every apply takes this much longer (until the fault is cleared: an apply in flight then ends)"),
    "invalid_apply": (["location", "reason"], "every apply ends invalid at this location"),
    "swap": (["port", "port"], "swapped cables: the two ports' LLDP neighbours are exchanged"),
    "release": (["release"], "the running release is this one (one-shot, e.g. an older release)"),
    "reboot_slow": (["seconds"], "a reboot takes this much longer"),
    "default_password": ([], "the 403 persona: the cumulus password counts as unchanged"),
    "fetch_fail": ([], "the image repository is down as this switch sees it: every image fetch ends in "
                       "action_error, connection refused"),
    "raw_ber": (["port", "ber"], "from now the port's raw (pre-FEC) errors grow at BER x speed per second (e.g. "
                                 "1e-7); its effective errors stay as they are"),
    "effective_errors": (["port", "count"], "the port counts this many effective (uncorrectable) errors"),
    "spectrum1": ([], "the switch is a Spectrum-1: no PHY counters (link phy-detail and link phy health answer 404)"),
}
PER_PORT = ("port_down", "protodown", "speed", "mtu", "raw_ber", "effective_errors")
BER_RE = re.compile(r"^[0-9]{1,3}(\.[0-9]{1,12})?([eE]-[0-9]{1,3})?\Z", re.ASCII)
LOCATION_RE = re.compile(r"^[A-Za-z0-9_.:/-]{1,200}\Z", re.ASCII)
NEIGHBOR_RE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]{0,62}):([A-Za-z0-9][A-Za-z0-9._/-]{0,31})\Z", re.ASCII)


def _port(state, port):
    if port not in state["ports"]:
        raise SimError("switch %s: port %r does not exist (ports: %s ... %s)" % (
            state["hostname"], port, min(state["ports"], default="-"), max(state["ports"], default="-")))
    return port


def _seconds(value, what):
    try:
        out = float(value)
    except ValueError:
        out = -1
    if not 0 <= out <= 3600:
        raise SimError("fault %s: seconds %r must be a number 0-3600" % (what, value))
    return out


def set_fault(tx, name, args):
    st = tx.state
    if name not in FAULTS:
        raise SimError("fault %r: one of %s" % (name, ", ".join(sorted(FAULTS))))
    want = FAULTS[name][0]
    if len(args) != len(want):
        raise SimError("fault %s takes %s" % (name, " ".join("<%s>" % a for a in want) or "no arguments"))
    faults = st["faults"]
    if name in ("port_down", "protodown"):
        faults.setdefault(name, {})[_port(st, args[0])] = True
    elif name == "speed":
        if not model.SPEED_RE.match(args[1]):
            raise SimError("fault speed: speed %r must be like 100G, 400G, 800G" % args[1])
        faults.setdefault(name, {})[_port(st, args[0])] = args[1]
    elif name == "mtu":
        if not re.fullmatch(r"\d{3,5}", args[1], re.ASCII):
            raise SimError("fault mtu: mtu %r must be an integer" % args[1])
        faults.setdefault(name, {})[_port(st, args[0])] = int(args[1])
    elif name == "swap":
        a, b = _port(st, args[0]), _port(st, args[1])
        if a == b:
            raise SimError("fault swap: two different ports are needed")
        faults.setdefault("swap", {})[a] = b
    elif name == "raw_ber":
        ber = float(args[1]) if BER_RE.match(args[1]) else -1.0
        if not 0 < ber < 1:
            raise SimError("fault raw_ber: ber %r must be a rate above 0 and below 1, e.g. 1e-7" % args[1])
        faults.setdefault(name, {})[_port(st, args[0])] = {"ber": ber, "since": time.time()}
    elif name == "effective_errors":
        if not re.fullmatch(r"[0-9]{1,19}", args[1], re.ASCII):
            raise SimError("fault effective_errors: count %r must be an integer 0 or more" % args[1])
        faults.setdefault(name, {})[_port(st, args[0])] = int(args[1])
    elif name in ("slow_apply", "reboot_slow"):
        faults[name] = _seconds(args[0], name)
    elif name == "invalid_apply":
        if not LOCATION_RE.match(args[0]):
            raise SimError("fault invalid_apply: location %r must be a dotted path like interface.swp3.link.mtu"
                           % args[0])
        faults[name] = {"location": args[0], "reason": args[1] if args[1].endswith("\n") else args[1] + "\n"}
    elif name == "roce_lossy":
        for which in ("applied", "startup"):
            key, on, _off = model.words_at(("qos", "roce"), model.running(st)["release"])
            st[which].setdefault("qos", {}).setdefault("roce", {}).update({key: on, "mode": "lossy"})
    elif name == "release":
        try:
            model.check_release(args[0])
        except ValueError as exc:
            raise SimError("fault release: %s" % exc) from None
        img = st["image"]
        img["partition" + img["current"]] = model.partition_for(args[0])
    else:
        faults[name] = True
    tx.event("fault", "admin", action="set", name=name, args=list(args))


def clear_fault(tx, name=None, port=None):
    faults = tx.state["faults"]
    # a port that comes up again starts its PHY counters anew (operational.phy_since) [invented]
    for down in ("port_down", "protodown"):
        if name in (None, down):
            for back in ([port] if port is not None and name is not None else list(faults.get(down, {}))):
                if back in faults.get(down, {}):
                    tx.state.setdefault("phy_since", {})[back] = time.time()
    if name is None:
        faults.clear()
    elif name not in FAULTS:
        raise SimError("fault %r: one of %s" % (name, ", ".join(sorted(FAULTS))))
    elif port is not None and name in PER_PORT + ("swap",):
        faults.get(name, {}).pop(port, None)
        if not faults.get(name):
            faults.pop(name, None)
    else:
        faults.pop(name, None)
    tx.event("fault", "admin", action="clear", name=name or "all", **({"port": port} if port else {}))


def make_cert(store, hostname):
    os.makedirs(store.dir, exist_ok=True)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=%s" % hostname,
                    "-days", "3650", "-keyout", store.key, "-out", store.cert],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.chmod(store.key, 0o600)


def load_ports(args):
    if args.ports_file:
        with open(args.ports_file) as fh:
            data = json.load(fh)
        if not isinstance(data, dict):
            raise SimError("--ports-file %s: expected a JSON object {\"swp1\": {\"speed\": \"400G\", "
                           "\"neighbor\": {\"host\": H, \"ifname\": I}}}" % args.ports_file)
        out = {}
        for name, port in data.items():
            if not model.PORT_RE.match(name) or not isinstance(port, dict):
                raise SimError("--ports-file: port %r: expected swpN (or swpNsM) with an object" % name)
            speed = port.get("speed", "400G")
            if not model.SPEED_RE.match(str(speed)):
                raise SimError("--ports-file: port %s: speed %r must be like 400G" % (name, speed))
            entry = {"speed": speed}
            if "carrier" in port:
                if not isinstance(port["carrier"], bool):
                    raise SimError("--ports-file: port %s: carrier %r must be true or false" % (name, port["carrier"]))
                entry["carrier"] = port["carrier"]
            nb = port.get("neighbor")
            if nb:
                if not isinstance(nb, dict) or not nb.get("host") or not nb.get("ifname"):
                    raise SimError("--ports-file: port %s: neighbor needs host and ifname" % name)
                entry["neighbor"] = {k: nb[k] for k in ("host", "ifname", "mac", "description") if k in nb}
            out[name] = entry
        return out
    try:
        return {name: {"speed": args.speed} for name in model.parse_ports(args.ports)}
    except ValueError as exc:
        raise SimError(str(exc)) from None


def load_config(path):
    """``--config-file``: ``{"applied": tree, "startup": tree}`` (or one tree for both), each a JSON object."""
    try:
        with open(path) as fh:
            data = json.load(fh)
    except (OSError, ValueError) as exc:
        raise SimError("nvuesim init --config-file %s: %s" % (path, exc)) from None
    if isinstance(data, dict) and set(data) <= {"applied", "startup"} and isinstance(data.get("applied"), dict):
        applied, startup = data["applied"], data.get("startup", data["applied"])
    else:
        applied = startup = data
    if not isinstance(applied, dict) or not isinstance(startup, dict):
        raise SimError("nvuesim init --config-file %s: expected a JSON object {\"applied\": tree, \"startup\": "
                       "tree} or one tree" % path)
    return copy.deepcopy(applied), copy.deepcopy(startup)


def cmd_init(args, store):
    if store.exists() and not args.force:
        raise SimError("nvuesim init: %s already holds a switch (use --force)" % store.dir)
    try:
        state = model.factory_state(args.hostname, args.release, args.persona, load_ports(args), args.user,
                                    args.password, None if args.auto_save is None else args.auto_save == "on",
                                    args.older_release)
    except ValueError as exc:
        raise SimError("nvuesim init: %s" % exc) from None
    if args.build_id is not None and not (model.BUILD_ID_RE.match(args.build_id)
                                          and args.build_id.startswith(args.release + ".")):
        raise SimError("nvuesim init: --build-id %r must be the release and 4 digits, e.g. %s.0012"
                       % (args.build_id, args.release))
    if args.build_date is not None and not re.fullmatch(r"[\x20-\x7e]{1,64}", args.build_date, re.ASCII):
        raise SimError("nvuesim init: --build-date %r must be printable ASCII on one line" % args.build_date)
    state["image"]["partition1"] = model.partition_for(args.release, args.build_id, args.build_date)
    if args.config_file:   # a switch in service: its configuration instead of the factory's (a snapshot's)
        state["applied"], state["startup"] = load_config(args.config_file)
    from . import operational
    if args.provider not in operational.PROVIDERS:
        raise SimError("nvuesim init: --provider %r: one of %s" % (args.provider, ", ".join(sorted(
            operational.PROVIDERS))))
    state["provider"] = args.provider
    state["settings"]["apply_seconds"] = args.apply_seconds
    state["settings"]["reboot_seconds"] = args.reboot_seconds
    if args.first_apply_done:
        state["first_apply_done"] = True
    if args.cert or args.key:
        if not (args.cert and args.key):
            raise SimError("nvuesim init: --cert and --key go together")
        os.makedirs(store.dir, exist_ok=True)
        for src, dest in ((args.cert, store.cert), (args.key, store.key)):
            with open(src, "rb") as fh:
                data = fh.read()
            with open(dest, "wb") as out:
                out.write(data)
        os.chmod(store.key, 0o600)
    else:
        make_cert(store, args.hostname)
    store.create(state)
    print("nvuesim: switch %s (Cumulus Linux %s, %d ports) in %s" % (args.hostname, args.release,
                                                                     len(state["ports"]), store.dir))


def cmd_port(args, store):
    with store.transaction() as tx:
        st = tx.state
        port = st["ports"].setdefault(args.port, {"speed": "400G"}) if args.create else st["ports"].get(
            _port(st, args.port))
        if args.speed:
            if not model.SPEED_RE.match(args.speed):
                raise SimError("nvuesim port %s: speed %r must be like 400G" % (args.port, args.speed))
            port["speed"] = args.speed
        if args.neighbor:
            m = NEIGHBOR_RE.match(args.neighbor)
            if not m:
                raise SimError("nvuesim port %s: --neighbor %r must be HOST:IFNAME" % (args.port, args.neighbor))
            port["neighbor"] = {"host": m.group(1), "ifname": m.group(2)}
            if args.description:
                port["neighbor"]["description"] = args.description
        if args.no_neighbor:
            port.pop("neighbor", None)
        tx.event("port", "admin", port=args.port, **copy.deepcopy(port))


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="nvuesim", description="admin CLI of the NVUE emulator")
    parser.add_argument("--state", help="state directory (default $NVUESIM_STATE)")
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("init", help="create a switch")
    p.add_argument("--state", dest="state_sub")
    p.add_argument("--hostname", required=True)
    p.add_argument("--release", default="5.9.1")
    p.add_argument("--older-release", help="partition 2 holds this release (default: empty)")
    p.add_argument("--persona", default="default", choices=model.PERSONAS)
    p.add_argument("--ports", default="swp1-32")
    p.add_argument("--speed", default="400G")
    p.add_argument("--ports-file")
    p.add_argument("--user", default="cumulus")
    p.add_argument("--password")
    p.add_argument("--auto-save", choices=("on", "off"))
    p.add_argument("--apply-seconds", type=float, default=0.3)
    p.add_argument("--reboot-seconds", type=float, default=1.0)
    p.add_argument("--first-apply-done", action="store_true", help="no 'first NVUE apply' warning")
    p.add_argument("--build-id", help="the running release's build id (default: made from the release)")
    p.add_argument("--build-date", help="the running release's build date")
    p.add_argument("--config-file",
                   help="JSON {\"applied\": tree, \"startup\": tree} (or one tree for both): the configuration "
                        "instead of the factory one (a switch seeded from a snapshot, tests/twin/snapshot.py)")
    p.add_argument("--provider", default="static",
                   help="operational data: static (state.json's ports) or lab (this host's /sys/class/net, real "
                        "LLDP; the applied config goes to the interfaces)")
    p.add_argument("--cert", help="use this PEM certificate (with --key) instead of making one")
    p.add_argument("--key")
    p.add_argument("--force", action="store_true")
    p = sub.add_parser("fault", help="fault set NAME [ARGS] | clear [NAME [PORT]] | list")
    p.add_argument("--state", dest="state_sub")
    p.add_argument("action", choices=("set", "clear", "list"))
    p.add_argument("name", nargs="?")
    p.add_argument("args", nargs="*")
    p = sub.add_parser("events", help="print the event log (JSON lines)")
    p.add_argument("--state", dest="state_sub")
    p.add_argument("--event", help="only this event")
    p.add_argument("--summary", action="store_true", help="counts per event")
    p = sub.add_parser("show-state", help="print state.json")
    p.add_argument("--state", dest="state_sub")
    p = sub.add_parser("port", help="set a port's speed or LLDP neighbour (static provider)")
    p.add_argument("--state", dest="state_sub")
    p.add_argument("port")
    p.add_argument("--speed")
    p.add_argument("--neighbor", help="HOST:IFNAME")
    p.add_argument("--description")
    p.add_argument("--no-neighbor", action="store_true")
    p.add_argument("--create", action="store_true")
    p = sub.add_parser("mkimage", help="write a fake Cumulus Linux image")
    p.add_argument("--release", required=True)
    p.add_argument("--build-id")
    p.add_argument("--build-date")
    p.add_argument("-o", dest="output", required=True)
    p = sub.add_parser("passwd", help="change the REST user's password (leaves the 403 persona)")
    p.add_argument("--state", dest="state_sub")
    p.add_argument("password")
    p = sub.add_parser("set", help="emulator settings: apply_seconds, reboot_seconds, action_seconds")
    p.add_argument("--state", dest="state_sub")
    p.add_argument("key", choices=("apply_seconds", "reboot_seconds", "action_seconds"))
    p.add_argument("value", type=float)
    args = parser.parse_args(argv)
    store = Store(state_dir(getattr(args, "state_sub", None) or args.state))
    try:
        return _run(args, store)
    except SimError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except images.ImageError as exc:
        print("nvuesim mkimage: %s" % exc, file=sys.stderr)
        return 1


def _run(args, store):
    if args.cmd == "init":
        cmd_init(args, store)
    elif args.cmd == "mkimage":
        header = images.mkimage(args.output, args.release, args.build_id, args.build_date)
        print("nvuesim: image %s (%s, build %s)" % (args.output, header["release"], header["build-id"]))
    elif args.cmd == "fault":
        if args.action == "list":
            print(json.dumps(store.load()["faults"], indent=2, sort_keys=True))
            return 0
        with store.transaction() as tx:
            if args.action == "set":
                if not args.name:
                    raise SimError("nvuesim fault set NAME [ARGS]: NAME is one of %s" % ", ".join(sorted(FAULTS)))
                set_fault(tx, args.name, args.args)
            else:
                clear_fault(tx, args.name, args.args[0] if args.args else None)
    elif args.cmd == "events":
        events = store.events()
        if args.event:
            events = [e for e in events if e["event"] == args.event]
        if args.summary:
            counts = {}
            for e in events:
                counts[e["event"]] = counts.get(e["event"], 0) + 1
            print(json.dumps(counts, indent=2, sort_keys=True))
        else:
            for e in events:
                print(json.dumps(e, sort_keys=True))
    elif args.cmd == "show-state":
        print(json.dumps(store.load(), indent=2, sort_keys=True))
    elif args.cmd == "port":
        args.port = args.port if model.PORT_RE.match(args.port) else _bad_port(args.port)
        cmd_port(args, store)
    elif args.cmd == "passwd":
        with store.transaction() as tx:
            tx.state["user"]["password"] = args.password
            tx.state["persona"] = "default" if args.password != model.FACTORY_PASSWORD else tx.state["persona"]
            tx.event("passwd", "admin", user=tx.state["user"]["name"])
    elif args.cmd == "set":
        with store.transaction() as tx:
            tx.state["settings"][args.key] = args.value
            tx.event("setting", "admin", key=args.key, value=args.value)
    return 0


def _bad_port(port):
    raise SimError("nvuesim port: port %r must be swpN or swpNsM" % port)
