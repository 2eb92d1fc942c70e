"""The simulated sysfs/configfs tree of a host: plain files under a root directory.

Root: $MLXSIM_ROOT, else ``root`` beside the state file. Created by ``mlxsim init``, re-created with
the defaults on ``mlxsim reboot`` and ``mlxsim driver-reload`` (runtime settings are lost there),
completed (never reset) by the QoS tools when something is missing.

Per mlx5 netdev (every RDMA function of a present card):
  sys/class/net/IF/device/driver -> ../../../../bus/pci/drivers/mlx5_core   (symlink)
  sys/class/net/IF/device/power/control           auto (runtime PM on)
  sys/class/net/IF/device/infiniband/DEV/         (directory: the RDMA device of the netdev)
  sys/class/net/IF/ecn/roce_np/enable/0..7        1  (Ethernet ports only; DCQCN is enabled on
  sys/class/net/IF/ecn/roce_rp/enable/0..7        1   every priority by default, NVIDIA DCQCN docs)
  sys/class/net/IF/ecn/roce_np/cnp_dscp           48
  sys/class/net/IF/ecn/roce_np/cnp_802p_prio      6
Per RDMA device:
  sys/class/infiniband/DEV/ports/1/               (directory)
  sys/class/infiniband/DEV/tc/1/traffic_class     empty until written (mlx5_ib then shows
                                                  "Global tclass=N"; the tools rewrite a bare N so)
Host:
  sys/kernel/config/rdma_cm/                      configfs of rdma_cm (cma_roce_tos mkdirs DEV there)
  sys/module/pcie_aspm/parameters/policy          [default] performance powersave powersupersave
"""
import contextlib
import fcntl
import os
import re
import shutil

from . import model, udev
from . import state as st

ROOT_ENV = "MLXSIM_ROOT"
ECN_DEFAULT = 1
CNP_DSCP_DEFAULT = 48
CNP_802P_DEFAULT = 6
ASPM_POLICY = "[default] performance powersave powersupersave"
TCLASS_RE = re.compile(r"^\s*(\d+)\s*$")


def root_path():
    env = os.environ.get(ROOT_ENV)
    if env:
        return env
    return os.path.join(os.path.dirname(os.path.abspath(st.state_path())), "root")


def ports(state):
    """[{"netdev", "rdma", "port", "eth", "card"}] of every mlx5 netdev of the present cards."""
    out = []
    for card, fidx in model.Host(state).functions():
        f = card["functions"][fidx]
        if not f.get("rdma"):
            continue
        pidx = min(f.get("port", 1), model.num_ports(card)) - 1
        out.append({"netdev": model.netdev(card, fidx), "rdma": f["rdma"], "port": 1,
                    "eth": model.link_layer(card, pidx) == "Ethernet", "card": card["id"]})
    return out


def find_netdev(state, name):
    for p in ports(state):
        if p["netdev"] == name:
            return p
    return None


def find_rdma(state, name):
    for p in ports(state):
        if p["rdma"] == name:
            return p
    return None


@contextlib.contextmanager
def locked(root):
    """Exclusive lock of the tree: a level-3 reset of one card removes and re-creates its files while
    another card of the same host resets or a QoS tool completes the tree (mlx_fwreset resets the
    cards of a host at the same time). Lock order: the state's lock first, then this one."""
    os.makedirs(os.path.dirname(os.path.abspath(root)) or ".", exist_ok=True)
    fd = os.open(os.path.abspath(root) + ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield root
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _replace(path, text):
    """Atomic: a reader running in parallel (the module reads while another tool runs) never sees a
    half-written attribute."""
    tmp = "%s.%d.tmp" % (path, os.getpid())
    with open(tmp, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)


def _put(path, text, reset):
    if not reset and os.path.exists(path):
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    _replace(path, text)


def _link(path, target):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.islink(path) or os.path.exists(path):
        return
    try:
        os.symlink(target, path)
    except FileExistsError:     # a tool running in parallel made it first
        pass


def reset_card(state, card_id, root=None):
    """One card's driver instance restarted (mlxfwreset level 3): its ports' runtime settings are lost.
    ``state`` is changed in place (the caller saves it); the card's files are re-created afterwards."""
    root = root or root_path()
    mine = [p for p in ports(state) if p["card"] == card_id]
    rt = state.get("runtime") or {}
    with locked(root):
        _forget(root, rt, mine)


def _forget(root, rt, mine):
    for p in mine:
        (rt.get("qos") or {}).pop(p["netdev"], None)
        for key in [k for k in (rt.get("cma_roce_tos") or {}) if k.split("/")[0] == p["rdma"]]:
            rt["cma_roce_tos"].pop(key)
        shutil.rmtree(os.path.join(root, "sys", "class", "net", p["netdev"]), ignore_errors=True)
        shutil.rmtree(os.path.join(root, "sys", "class", "infiniband", p["rdma"]), ignore_errors=True)
        shutil.rmtree(os.path.join(root, "sys", "kernel", "config", "rdma_cm", p["rdma"]), ignore_errors=True)


def build(state, reset=False, root=None):
    """Create the tree; ``reset``: every runtime attribute back to its boot default, netdevs of cards
    that are gone removed, the rdma_cm configfs emptied."""
    root = root or root_path()
    with locked(root):
        _build(state, reset, root)
    return root


def _build(state, reset, root):
    sysd = os.path.join(root, "sys")
    net = os.path.join(sysd, "class", "net")
    ib = os.path.join(sysd, "class", "infiniband")
    cfg = os.path.join(sysd, "kernel", "config", "rdma_cm")
    have = ports(state)
    if reset:
        for base, names in ((net, {p["netdev"] for p in have}), (ib, {p["rdma"] for p in have})):
            if os.path.isdir(base):
                for name in os.listdir(base):
                    if name not in names:
                        shutil.rmtree(os.path.join(base, name), ignore_errors=True)
        shutil.rmtree(cfg, ignore_errors=True)
    os.makedirs(cfg, exist_ok=True)
    os.makedirs(os.path.join(sysd, "bus", "pci", "drivers", "mlx5_core"), exist_ok=True)
    _put(os.path.join(sysd, "module", "pcie_aspm", "parameters", "policy"), ASPM_POLICY + "\n", reset)
    for p in have:
        nd = os.path.join(net, p["netdev"])
        _link(os.path.join(nd, "device", "driver"), "../../../../bus/pci/drivers/mlx5_core")
        _put(os.path.join(nd, "device", "power", "control"), "auto\n", reset)
        if p["eth"]:
            for point in ("roce_np", "roce_rp"):
                for prio in range(8):
                    _put(os.path.join(nd, "ecn", point, "enable", str(prio)), "%d\n" % ECN_DEFAULT, reset)
            _put(os.path.join(nd, "ecn", "roce_np", "cnp_dscp"), "%d\n" % CNP_DSCP_DEFAULT, reset)
            _put(os.path.join(nd, "ecn", "roce_np", "cnp_802p_prio"), "%d\n" % CNP_802P_DEFAULT, reset)
        _put(os.path.join(ib, p["rdma"], "tc", str(p["port"]), "traffic_class"), "", reset)
        os.makedirs(os.path.join(nd, "device", "infiniband", p["rdma"]), exist_ok=True)
        os.makedirs(os.path.join(ib, p["rdma"], "ports", str(p["port"])), exist_ok=True)
    return root


def come_up(reset=True, card_id=None, root=None):
    """The mlx5 driver registers its netdevs again (reboot, driver reload: every card, runtime settings
    back to defaults; level-3 reset: one card, whose files ``reset_card`` removed): the tree is built
    from the saved state, then the "add" uevent of each of those netdevs runs the udev rules (udev.py)."""
    state = st.load()
    root = build(state, reset=reset, root=root)
    udev.add_netdevs([p["netdev"] for p in ports(state) if card_id is None or p["card"] == card_id])
    return root


def normalise(state, root=None):
    """What the kernel shows after plain writes: ``traffic_class`` reads back ``Global tclass=N``."""
    root = root or root_path()
    for p in ports(state):
        path = os.path.join(root, "sys", "class", "infiniband", p["rdma"], "tc", str(p["port"]), "traffic_class")
        try:
            with open(path) as fh:
                text = fh.read()
        except OSError:
            continue
        m = TCLASS_RE.match(text)
        if m and text.strip():
            _replace(path, "Global tclass=%d\n" % int(m.group(1)))


def ensure(state, root=None):
    """Complete the tree (nothing is reset) and normalise what was written to it."""
    root = root or root_path()
    with locked(root):
        _build(state, False, root)
        normalise(state, root)
    return root
