"""The simulated sysfs/configfs/procfs tree of a host: plain files under a root directory.

Root: $MLXSIM_ROOT, else ``root`` beside the state file. Created by ``mlxsim init``, re-created with
the defaults on ``mlxsim reboot`` and ``mlxsim driver-reload`` (runtime settings are lost there),
completed (never reset) by the QoS tools when something is missing.

Per PCI function of a present card (D = sys/devices/pci0000:00/ADDR; no bridges are modelled):
  D/vendor, device, subsystem_vendor, subsystem_device, revision, class     0x15b3, 0x1021, ...; class
                                                  0x020700 (InfiniBand) / 0x020000 (Ethernet) by the
                                                  port's current link type (lspci's class)
  D/current_link_speed, current_link_width        LnkSta of lspci -vv (faults.pcie_status): "32.0 GT/s PCIe", "16"
  D/max_link_speed, max_link_width                LnkCap of lspci -vv
  D/numa_node                                     the card's NUMA node
  D/power/control                                 auto; kept by a driver reload, back to auto on a power
                                                  cycle and on a level-3 mlxfwreset of the card (the
                                                  device is removed and enumerated again)
  D/driver -> ../../../bus/pci/drivers/mlx5_core  (mlx5 functions; sys/bus/pci/drivers/mlx5_core/ADDR links back)
  D/infiniband/DEV/, D/net/IF -> the netdev       (the RDMA device and netdev of the function)
  sys/bus/pci/devices/ADDR -> ../../../devices/pci0000:00/ADDR
Per mlx5 netdev (every RDMA function of a present card):
  sys/class/net/IF/device -> ../../../devices/pci0000:00/ADDR   (so IF/device/power/control, driver,
                                                  infiniband/DEV resolve into D)
  sys/class/net/IF/ecn/roce_np/enable/0..7        1  (Ethernet ports only; DCQCN is enabled on
  sys/class/net/IF/ecn/roce_rp/enable/0..7        1   every priority by default, NVIDIA DCQCN docs)
  sys/class/net/IF/ecn/roce_np/cnp_dscp           48
  sys/class/net/IF/ecn/roce_np/cnp_802p_prio      6
Per RDMA device:
  sys/class/infiniband/DEV/device -> D, sys/class/infiniband/DEV/ports/1/ (directory)
  sys/class/infiniband/DEV/tc/1/traffic_class     empty until written (mlx5_ib then shows
                                                  "Global tclass=N"; the tools rewrite a bare N so)
Host:
  sys/kernel/config/rdma_cm/                      configfs of rdma_cm (cma_roce_tos mkdirs DEV there)
  sys/module/pcie_aspm/parameters/policy          "[default] performance powersave powersupersave " (the
                                                  boot's pcie_aspm.policy= selects another; a written
                                                  bare name is shown bracketed after the next ensure/build:
                                                  mlnx_qos, cma_roce_tos, driver-reload, level-3 reset)
  sys/devices/system/cpu/{online,possible,present} 0-N-1
  sys/devices/system/cpu/cpufreq/policyK/{scaling_governor,scaling_available_governors,scaling_driver}
  sys/devices/system/cpu/cpuK/cpufreq -> ../cpufreq/policyK   (one policy per CPU, as with
                                                  intel_pstate and acpi-cpufreq on these hosts)
  proc/cmdline                                    the kernel command line (platform.py)
Runtime attributes of the driver (ECN, CNP, traffic_class, rdma_cm) are reset by a driver reload;
platform attributes (power/control, governors, ASPM policy) only by a power cycle.
"""
import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil

from . import faults, families, model, platform, udev
from . import state as st

ROOT_ENV = "MLXSIM_ROOT"
ECN_DEFAULT = 1
CNP_DSCP_DEFAULT = 48
CNP_802P_DEFAULT = 6
PCI_VENDOR = "0x15b3"
PCI_HOST = "pci0000:00"
CLASS_IB, CLASS_ETH = "0x020700", "0x020000"
POWER_CONTROL_DEFAULT = "auto"
TCLASS_RE = re.compile(r"^\s*(\d+)\s*$")


def root_path():
    env = os.environ.get(ROOT_ENV)
    if env:
        return env
    return os.path.join(os.path.dirname(os.path.abspath(st.state_path())), "root")


def ports(state):
    """[{"netdev", "rdma", "port", "eth", "card", "pci"}] of every mlx5 netdev of the present cards."""
    out = []
    for card, fidx in model.Host(state).functions():
        f = card["functions"][fidx]
        if not f.get("rdma"):
            continue
        pidx = min(f.get("port", 1), model.num_ports(card)) - 1
        out.append({"netdev": model.netdev(card, fidx), "rdma": f["rdma"], "port": 1,
                    "eth": model.link_layer(card, pidx) == "Ethernet", "card": card["id"], "pci": f["pci"]})
    return out


def speed_text(lspci_speed):
    """lspci's "32GT/s" as sysfs shows it: "32.0 GT/s PCIe" (pci_speed_string of drivers/pci/probe.c)."""
    return "%.1f GT/s PCIe" % float(lspci_speed.replace("GT/s", ""))


def pci_functions(state):
    """Every PCI function of the present cards, as lspci lists them (BlueField's DMA function too):
    [{"pci", "card", "device", "class", "numa", "netdev", "rdma", "attrs": {name: text}}]."""
    out = []
    for card in model.Host(state).cards():
        fam = families.of(card)
        p = card["pcie"]
        speed, width = faults.pcie_status(state, card)
        bus = model.bus_dev_fn(card["functions"][0]["pci"])[1]
        common = {"vendor": PCI_VENDOR, "subsystem_vendor": PCI_VENDOR,
                  "subsystem_device": "0x%04x" % (0x20 + bus % 16), "revision": "0x%02x" % fam["rev"],
                  "numa_node": str(card["numa"]),
                  "max_link_speed": speed_text(p["cap_speed"]), "max_link_width": str(p["cap_width"]),
                  "current_link_speed": speed_text(speed), "current_link_width": str(width)}
        for fidx, f in enumerate(card["functions"]):
            port = min(f.get("port", 1), model.num_ports(card)) - 1
            cls = CLASS_IB if model.link_layer(card, port) == "InfiniBand" else CLASS_ETH
            attrs = dict(common, device="0x" + fam["pci_id"], **{"class": cls})
            out.append({"pci": f["pci"], "card": card["id"], "attrs": attrs, "driver": True,
                        "netdev": model.netdev(card, fidx) if f.get("rdma") else None, "rdma": f.get("rdma")})
        for extra in fam.get("extra_functions", []):
            attrs = dict(common, device="0x" + extra["pci_id"], **{"class": "0x%s00" % extra["class_id"]})
            out.append({"pci": card["functions"][0]["pci"][:-1] + str(extra["func"]), "card": card["id"],
                        "attrs": attrs, "driver": False, "netdev": None, "rdma": None})
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
    _sync(path, text)


def _sync(path, text):
    """An attribute the hardware or the kernel decides (link speed, class, ...): rewritten when it differs."""
    try:
        with open(path) as fh:
            if fh.read() == text:
                return
    except OSError:
        pass
    os.makedirs(os.path.dirname(path), exist_ok=True)
    _replace(path, text)


def _link(path, target):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.islink(path):
        if os.readlink(path) == target:
            return
        os.unlink(path)
    elif os.path.isdir(path):                  # a tree from before the PCI devices existed
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.exists(path):
        return
    try:
        os.symlink(target, path)
    except FileExistsError:     # a tool running in parallel made it first
        pass


def _unlink(path):
    try:
        if os.path.islink(path) or os.path.isfile(path):
            os.unlink(path)
        elif os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
    except FileNotFoundError:
        pass


def pci_dir(root, addr):
    return os.path.join(root, "sys", "devices", PCI_HOST, addr)


def reset_card(state, card_id, root=None):
    """One card's driver instance restarted (mlxfwreset level 3): its ports' runtime settings are lost and
    its PCI functions are removed (the reset re-enumerates them: runtime PM control back to auto).
    ``state`` is changed in place (the caller saves it); the card's files are re-created afterwards."""
    root = root or root_path()
    mine = [p for p in ports(state) if p["card"] == card_id]
    functions = [f["pci"] for f in pci_functions(state) if f["card"] == card_id]
    rt = state.get("runtime") or {}
    with locked(root):
        _forget_stamp(root)
        _forget(root, rt, mine)
        for addr in functions:
            _remove_function(root, addr)


def _remove_function(root, addr):
    shutil.rmtree(pci_dir(root, addr), ignore_errors=True)
    _unlink(os.path.join(root, "sys", "bus", "pci", "devices", addr))
    _unlink(os.path.join(root, "sys", "bus", "pci", "drivers", "mlx5_core", addr))


def _forget(root, rt, mine):
    for p in mine:
        (rt.get("qos") or {}).pop(p["netdev"], None)
        for key in [k for k in (rt.get("cma_roce_tos") or {}) if k.split("/")[0] == p["rdma"]]:
            rt["cma_roce_tos"].pop(key)
        shutil.rmtree(os.path.join(root, "sys", "class", "net", p["netdev"]), ignore_errors=True)
        shutil.rmtree(os.path.join(root, "sys", "class", "infiniband", p["rdma"]), ignore_errors=True)
        shutil.rmtree(os.path.join(root, "sys", "kernel", "config", "rdma_cm", p["rdma"]), ignore_errors=True)


def build(state, reset=False, root=None, boot=False):
    """Create the tree; ``reset`` (driver (re)load): every runtime attribute of the driver back to its
    default, netdevs of cards that are gone removed, the rdma_cm configfs emptied; ``boot`` (power
    cycle, init): the platform attributes too (runtime PM control, governors, ASPM policy)."""
    root = root or root_path()
    with locked(root):
        _forget_stamp(root)
        _build(state, reset or boot, root, boot)
        _write_stamp(root, _stamp(state, root))
        normalise(state, root)
    return root


def aspm_policy_text(active):
    """/sys/module/pcie_aspm/parameters/policy as pcie_aspm_get_policy prints it (a blank after each)."""
    return "".join(("[%s] " if p == active else "%s ") % p for p in platform.ASPM_POLICIES) + "\n"


def _build(state, reset, root, boot=False):
    sysd = os.path.join(root, "sys")
    net = os.path.join(sysd, "class", "net")
    ib = os.path.join(sysd, "class", "infiniband")
    cfg = os.path.join(sysd, "kernel", "config", "rdma_cm")
    have = ports(state)
    functions = pci_functions(state)
    if reset:
        for base, names in ((net, {p["netdev"] for p in have}), (ib, {p["rdma"] for p in have})):
            if os.path.isdir(base):
                for name in os.listdir(base):
                    if name not in names:
                        shutil.rmtree(os.path.join(base, name), ignore_errors=True)
        shutil.rmtree(cfg, ignore_errors=True)
        devices = os.path.join(sysd, "devices", PCI_HOST)
        present = {f["pci"] for f in functions}
        if os.path.isdir(devices):
            for name in os.listdir(devices):
                if name not in present:
                    _remove_function(root, name)
    os.makedirs(cfg, exist_ok=True)
    drivers = os.path.join(sysd, "bus", "pci", "drivers", "mlx5_core")
    os.makedirs(drivers, exist_ok=True)
    _build_platform(state, root, boot)
    for f in functions:
        d = pci_dir(root, f["pci"])
        for name, text in f["attrs"].items():
            _sync(os.path.join(d, name), text + "\n")
        _put(os.path.join(d, "power", "control"), POWER_CONTROL_DEFAULT + "\n", boot)
        _link(os.path.join(sysd, "bus", "pci", "devices", f["pci"]), "../../../devices/%s/%s" % (PCI_HOST, f["pci"]))
        if f["driver"]:
            _link(os.path.join(d, "driver"), "../../../bus/pci/drivers/mlx5_core")
            _link(os.path.join(drivers, f["pci"]), "../../../../devices/%s/%s" % (PCI_HOST, f["pci"]))
        if f["netdev"]:
            netd = os.path.join(d, "net")
            if os.path.isdir(netd):
                for name in os.listdir(netd):
                    if name != f["netdev"]:
                        _unlink(os.path.join(netd, name))
            _link(os.path.join(netd, f["netdev"]), "../../../../class/net/" + f["netdev"])
    for p in have:
        nd = os.path.join(net, p["netdev"])
        _link(os.path.join(nd, "device"), "../../../devices/%s/%s" % (PCI_HOST, p["pci"]))
        if p["eth"]:
            for point in ("roce_np", "roce_rp"):
                for prio in range(8):
                    _put(os.path.join(nd, "ecn", point, "enable", str(prio)), "%d\n" % ECN_DEFAULT, reset)
            _put(os.path.join(nd, "ecn", "roce_np", "cnp_dscp"), "%d\n" % CNP_DSCP_DEFAULT, reset)
            _put(os.path.join(nd, "ecn", "roce_np", "cnp_802p_prio"), "%d\n" % CNP_802P_DEFAULT, reset)
        _put(os.path.join(ib, p["rdma"], "tc", str(p["port"]), "traffic_class"), "", reset)
        os.makedirs(os.path.join(pci_dir(root, p["pci"]), "infiniband", p["rdma"]), exist_ok=True)
        os.makedirs(os.path.join(ib, p["rdma"], "ports", str(p["port"])), exist_ok=True)
        _link(os.path.join(ib, p["rdma"], "device"), "../../../devices/%s/%s" % (PCI_HOST, p["pci"]))
    return root


def _build_platform(state, root, boot):
    """CPUs, cpufreq and the ASPM policy; ``boot``: the defaults of a fresh boot (the governors the driver
    starts with, the policy the command line selects)."""
    plat = platform.host(state)
    line = platform.read_cmdline(root)
    policy = platform.cmdline_param(line, "pcie_aspm.policy")
    if policy not in platform.ASPM_POLICIES:
        policy = "default"
    _put(os.path.join(root, "sys", "module", "pcie_aspm", "parameters", "policy"), aspm_policy_text(policy), boot)
    cpu = os.path.join(root, "sys", "devices", "system", "cpu")
    n = max(1, int(plat.get("cpus", 8)))
    driver = plat.get("cpufreq_driver", "intel_pstate")
    available, default = platform.CPUFREQ.get(driver, platform.CPUFREQ["intel_pstate"])
    span = "0-%d\n" % (n - 1) if n > 1 else "0\n"
    for name in ("online", "possible", "present"):
        _sync(os.path.join(cpu, name), span)
    if boot and os.path.isdir(cpu):
        for name in os.listdir(cpu):
            m = re.match(r"^cpu(\d+)$", name)
            if m and int(m.group(1)) >= n:
                shutil.rmtree(os.path.join(cpu, name), ignore_errors=True)
                shutil.rmtree(os.path.join(cpu, "cpufreq", "policy" + m.group(1)), ignore_errors=True)
    for k in range(n):
        pol = os.path.join(cpu, "cpufreq", "policy%d" % k)
        _sync(os.path.join(pol, "scaling_driver"), driver + "\n")
        _sync(os.path.join(pol, "scaling_available_governors"), available + "\n")
        _put(os.path.join(pol, "scaling_governor"), default + "\n", boot)
        _link(os.path.join(cpu, "cpu%d" % k, "cpufreq"), "../cpufreq/policy%d" % k)


def come_up(reset=True, card_id=None, root=None, boot=False):
    """The mlx5 driver registers its netdevs again (reboot, driver reload: every card, runtime settings
    back to defaults; level-3 reset: one card, whose files ``reset_card`` removed): the tree is built
    from the saved state, then the "add" uevent of each of those netdevs runs the udev rules (udev.py).
    ``boot``: a power cycle - /proc/cmdline from the boot loader, platform attributes at their defaults."""
    state = st.load()
    root = root or root_path()
    if boot:
        platform.power_cycle(root)
    root = build(state, reset=reset, root=root, boot=boot)
    # PCI devices: "add" when they are enumerated (boot, a level-3 reset re-enumerates the card), "bind" when
    # only the driver comes back (driver reload); udev applies the ATTR{} assignments of matching rules.
    functions = [f for f in pci_functions(state) if card_id is None or f["card"] == card_id]
    udev.add_pci({f["pci"]: os.path.join(root, "sys", "devices", PCI_HOST, f["pci"]) for f in functions},
                 action="add" if boot or card_id is not None else "bind")
    udev.add_netdevs([p["netdev"] for p in ports(state) if card_id is None or p["card"] == card_id])
    if boot:
        udev.boot_units(platform.sysroot())
    return root


def normalise(state, root=None):
    """What the kernel shows after plain writes: ``traffic_class`` reads back ``Global tclass=N``, the
    ASPM policy a written name in brackets."""
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
    path = os.path.join(root, "sys", "module", "pcie_aspm", "parameters", "policy")
    try:
        with open(path) as fh:
            text = fh.read()
    except OSError:
        return
    if text.strip() in platform.ASPM_POLICIES:
        _replace(path, aspm_policy_text(text.strip()))


def refresh_links(state, root=None):
    """The link attributes after a pcie_degraded fault was added or cleared (the kernel reads LnkSta live)."""
    root = root or root_path()
    if not os.path.isdir(os.path.join(root, "sys", "devices", PCI_HOST)):
        return
    with locked(root):
        _forget_stamp(root)
        for f in pci_functions(state):
            d = pci_dir(root, f["pci"])
            if os.path.isdir(d):
                for name in ("current_link_speed", "current_link_width"):
                    _sync(os.path.join(d, name), f["attrs"][name] + "\n")


def ensure(state, root=None):
    """Complete the tree (nothing is reset) and normalise what was written to it. The tree is walked
    only when it may lack something: the state's cards, ports, link status or platform, or the command
    line, differ from the last complete build (the stamp beside the tree), or a top directory of a
    function, netdev or RDMA device is gone. Every QoS tool call ensures the tree; walking it each time
    (a DGX H100's 224 cpufreq policies: 600 files) was half of the controller's CPU in a rehearsal of
    1,250 servers. A hand-written read-only attribute (scaling_driver, current_link_speed) is therefore
    put back by the next change of the state or a driver reload, not by every tool run."""
    root = root or root_path()
    with locked(root):
        functions, have = pci_functions(state), ports(state)
        key = _stamp(state, root, functions, have)
        if key != _read_stamp(root) or not _whole(root, functions, have):
            _build(state, False, root)
            _write_stamp(root, key)
        normalise(state, root)
    return root


def _stamp_path(root):
    return os.path.abspath(root) + ".stamp"


def _stamp(state, root, functions=None, have=None):
    """What the tree is built from: a digest of the functions, ports (``pci_functions``, ``ports`` of the state when
    not given), platform facts and /proc/cmdline."""
    functions = pci_functions(state) if functions is None else functions
    have = ports(state) if have is None else have
    text = json.dumps([functions, have, platform.host(state), platform.read_cmdline(root)], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _read_stamp(root):
    try:
        with open(_stamp_path(root)) as fh:
            return fh.read().strip()
    except OSError:
        return None


def _write_stamp(root, key):
    _replace(_stamp_path(root), key + "\n")


def _forget_stamp(root):
    with contextlib.suppress(FileNotFoundError):
        os.unlink(_stamp_path(root))


def _whole(root, functions, have):
    """The top directories of the tree of these functions and ports are all there (a few dozen stat calls)."""
    sysd = os.path.join(root, "sys")
    paths = [os.path.join(sysd, "kernel", "config", "rdma_cm"),
             os.path.join(sysd, "module", "pcie_aspm", "parameters", "policy"),
             os.path.join(sysd, "devices", "system", "cpu", "online")]
    paths += [pci_dir(root, f["pci"]) for f in functions]
    for p in have:
        paths += [os.path.join(sysd, "class", "net", p["netdev"]), os.path.join(sysd, "class", "infiniband", p["rdma"])]
    return all(os.path.exists(p) for p in paths)
