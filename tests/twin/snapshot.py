"""The fleet twin seeded from a snapshot of a real fleet (playbooks/snapshot.yml; tests/twin/README.md).

``playbooks/snapshot.yml`` writes one JSON file per host, ``<host>.json``: a server's mlx_info (every card with its
NV configuration) and platform facts, a leaf's nvue_info (release, image partitions, ports, the applied and startup
configuration). Here a server's file becomes a simulator state (``mlxsim init --snapshot``: tests/sim/mlxsim/
snapshot.py picks the closest modelled card and puts the snapshot's values over it) and a leaf's file an NVUE
emulator state (``nvuesim init`` with the snapshot's release, ports and LLDP neighbours, and its applied and startup
configuration in place of the factory one). ``twin.py build --snapshot DIR`` calls :func:`seed`: a machine with a
file in DIR is made from it, the others from their profile as before.

Every value of a leaf's file that reaches the emulator's files is checked by a strict grammar here (the
simulator checks a server's); a value that does not fit is refused, naming the leaf, the port and the value.
"""
import contextlib
import io
import json
import os
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
for _path in (REPO / "tests" / "sim", REPO / "tests" / "nvue", REPO / "tests" / "unit" / "nvue"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

SCHEMA = 1
KINDS = ("server", "leaf")
# What the emulator takes from a leaf's snapshot (whole strings, ASCII).
PORT_RE = re.compile(r"swp\d{1,3}(s\d)?", re.ASCII)
SPEED_RE = re.compile(r"(1|10|25|40|50|100|200|400|800)G", re.ASCII)
HOST_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}", re.ASCII)
IFNAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:-]{0,63}", re.ASCII)
MAC_RE = re.compile(r"[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}", re.ASCII)
TEXT_RE = re.compile(r"[\x20-\x7e]{0,200}", re.ASCII)
RELEASE_RE = re.compile(r"5\.\d{1,2}\.\d{1,2}", re.ASCII)
BUILD_ID_RE = re.compile(r"5\.\d{1,2}\.\d{1,2}\.\d{4}", re.ASCII)
# The emulated leaves' settings, as twin.py's build_leaf gives its leaves (fast applies and reboots).
LEAF_SETTINGS = ["--apply-seconds", "0.05", "--reboot-seconds", "0.2", "--first-apply-done"]


class SnapshotError(Exception):
    """A snapshot file that cannot seed a machine; the message names the file or host and what is wrong."""


@contextlib.contextmanager
def environ(**values):
    """``values`` in the environment, and no simulator setting of the caller's (another tree, sysroot, faults)."""
    saved = dict(os.environ)
    for key in ("MLXSIM_ROOT", "MLXSIM_SYSROOT", "MLXSIM_FAULTS", "MLXSIM_UDEV_RULES"):
        os.environ.pop(key, None)
    os.environ.update(values)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def load(path, kind=None, host=None):
    """The snapshot document of ``path``, checked: schema, kind (``server``/``leaf``, ``kind`` when given) and
    host (``host`` when given)."""
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise SnapshotError("snapshot %s: %s" % (path, exc)) from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA or doc.get("kind") not in KINDS:
        raise SnapshotError("snapshot %s: not a snapshot of schema %d (playbooks/snapshot.yml writes them)"
                            % (path, SCHEMA))
    if kind is not None and doc["kind"] != kind:
        raise SnapshotError("snapshot %s: the snapshot of a %s, not of a %s" % (path, doc["kind"], kind))
    if host is not None and doc.get("host") != host:
        raise SnapshotError("snapshot %s: the snapshot of %s, not of %s" % (path, doc.get("host"), host))
    return doc


# ------------------------------------------------------------------------------------------ a server

def server_state(path, root, hostname=None):
    """The simulator state of a server's snapshot ``path`` in ``root`` (``root/state.json``, its tree in
    ``root/root``): ``mlxsim init --snapshot``, in this process. A card no model matches, or a value the simulator
    refuses, raises mlxsim's SimError naming the host, the card and the value."""
    from mlxsim.tools import admin
    doc = load(path, kind="server", host=hostname)
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    with environ(MLXSIM_STATE=str(root / "state.json"), MLXSIM_TIME_SCALE="0", MLXSIM_LOG=str(root / "calls.jsonl")):
        with contextlib.redirect_stdout(io.StringIO()):
            rc = admin.run("mlxsim", ["init", "--snapshot", str(path), "--hostname", hostname or doc["host"]])
    if rc:
        raise SnapshotError("snapshot %s: mlxsim init --snapshot failed (rc %s)" % (path, rc))
    return root / "state.json"


# ------------------------------------------------------------------------------------------ a leaf

def _word(pattern, value, where, what):
    if isinstance(value, str) and pattern.fullmatch(value):
        return value
    raise SnapshotError("snapshot of %s: %s %s cannot be taken (allowed: %s)" % (
        where, what, json.dumps(value), pattern.pattern))


def leaf_ports(doc):
    """The emulator's ports (``nvuesim init --ports-file``) of a leaf's snapshot: each swp port nvue_info listed,
    its speed, carrier (oper status up) and first LLDP neighbour."""
    host = doc.get("host")
    interfaces = (doc.get("nvue_info") or {}).get("interfaces")
    if not isinstance(interfaces, dict):
        raise SnapshotError("snapshot of %s: no nvue_info interfaces" % host)
    out = {}
    for name, port in sorted(interfaces.items()):
        _word(PORT_RE, name, host, "port")
        where = "%s port %s" % (host, name)
        port = port if isinstance(port, dict) else {}
        entry = {"carrier": port.get("oper_status") == "up"}
        if port.get("speed") is not None:
            entry["speed"] = _word(SPEED_RE, port["speed"], where, "speed")
        lldp = [n for n in port.get("lldp") or [] if isinstance(n, dict)]
        if lldp:
            nb = lldp[0]
            entry["neighbor"] = {"host": _word(HOST_RE, nb.get("system_name"), where, "LLDP system name"),
                                 "ifname": _word(IFNAME_RE, nb.get("port"), where, "LLDP port")}
            if nb.get("description") is not None:
                entry["neighbor"]["description"] = _word(TEXT_RE, nb["description"], where, "LLDP description")
            if nb.get("chassis_id") is not None and MAC_RE.fullmatch(str(nb["chassis_id"])):
                entry["neighbor"]["mac"] = nb["chassis_id"]
        out[name] = entry
    return out


def leaf_words(doc):
    """The ``nvuesim init`` words of a leaf's release: the running one, its build, the other partition's."""
    host = doc.get("host")
    info = doc.get("nvue_info") or {}
    system = info.get("system") if isinstance(info.get("system"), dict) else {}
    words = ["--release", _word(RELEASE_RE, system.get("release"), host, "release")]
    if system.get("build_id") is not None and BUILD_ID_RE.fullmatch(str(system["build_id"])) \
            and str(system["build_id"]).startswith(system["release"] + "."):
        words += ["--build-id", system["build_id"]]
    if system.get("build_date") is not None:
        words += ["--build-date", _word(TEXT_RE, system["build_date"], host, "build date")]
    image = info.get("image") if isinstance(info.get("image"), dict) else {}
    partitions = image.get("partitions") if isinstance(image.get("partitions"), dict) else {}
    other = [p.get("release") for key, p in sorted(partitions.items())
             if key != image.get("current") and isinstance(p, dict) and p.get("release")]
    if other:
        words += ["--older-release", _word(RELEASE_RE, other[0], host, "release of the other partition")]
    return words


def leaf_config(doc):
    """``{"applied": tree, "startup": tree}`` of a leaf's snapshot (nvue_info's ``config``)."""
    config = (doc.get("nvue_info") or {}).get("config")
    if not isinstance(config, dict) or not isinstance(config.get("applied"), dict):
        raise SnapshotError("snapshot of %s: no applied configuration (nvue_info gather config)" % doc.get("host"))
    startup = config.get("startup") if isinstance(config.get("startup"), dict) else config["applied"]
    return {"applied": config["applied"], "startup": startup}


def leaf_state(path, root, password, cert, hostname=None):
    """The NVUE emulator state of a leaf's snapshot ``path`` in ``root``: ``nvuesim init`` with its release, ports
    and configuration (applied and startup), the REST user's ``password`` and the TLS pair ``cert``
    (``{"cert", "key"}``), in this process."""
    from nvuesim import admin
    doc = load(path, kind="leaf", host=hostname)
    name = hostname or doc["host"]
    _word(HOST_RE, name, name, "host name")
    root = Path(root)
    root.parent.mkdir(parents=True, exist_ok=True)
    ports_file, config_file = root.parent / (name + ".ports.json"), root.parent / (name + ".config.json")
    ports_file.write_text(json.dumps(leaf_ports(doc)))
    config_file.write_text(json.dumps(leaf_config(doc)))
    err = io.StringIO()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            rc = admin.main(["--state", str(root), "init", "--hostname", name, *leaf_words(doc),
                             "--ports-file", str(ports_file), "--config-file", str(config_file),
                             "--password", password, "--cert", cert["cert"], "--key", cert["key"], *LEAF_SETTINGS])
    finally:
        ports_file.unlink()
        config_file.unlink()
    if rc:
        raise SnapshotError("snapshot %s: nvuesim init failed: %s" % (path, err.getvalue().strip()))
    return root / "state.json"


# ------------------------------------------------------------------------------------------ the twin

def seed(directory, out, servers, leaves, leaf_password):
    """``twin.py build --snapshot DIR``: every server and leaf with a file ``DIR/<name>.json`` made from it (a
    machine whose state exists already is left as it is); the others are left to the twin's profiles. Returns
    ``{"servers": [...], "leaves": [...]}`` seeded."""
    from mlxsim.state import SimError as ServerRefused
    from nvuesim.store import SimError as LeafRefused
    from nvue_helpers import cert_pair  # tests/unit/nvue: the certificate twin.py gives every emulated leaf
    directory, out = Path(directory), Path(out)
    if not directory.is_dir():
        raise SystemExit("twin: --snapshot %s is not a directory" % directory)
    done = {"servers": [], "leaves": []}
    try:
        for name in servers:
            if (directory / (name + ".json")).is_file() and not (out / "machines" / name / "state.json").exists():
                server_state(directory / (name + ".json"), out / "machines" / name, hostname=name)
                done["servers"].append(name)
        for name in leaves:
            if (directory / (name + ".json")).is_file() and not (out / "leaves" / name / "state.json").exists():
                leaf_state(directory / (name + ".json"), out / "leaves" / name, leaf_password, cert_pair(out / "cert"),
                           hostname=name)
                done["leaves"].append(name)
    except (SnapshotError, ServerRefused, LeafRefused) as exc:  # each names the host (and card or port)
        raise SystemExit("twin: %s" % exc) from None
    print("twin: %d servers and %d leaves seeded from the snapshot in %s" % (
        len(done["servers"]), len(done["leaves"]), directory))
    return done
