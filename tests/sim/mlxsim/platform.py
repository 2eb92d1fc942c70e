"""The host around the NICs: CPUs, the kernel command line and the boot loader configuration.

Sysroot - where the simulated host's /etc/default/grub, /boot and /etc/kernel live:
$MLXSIM_SYSROOT; unset, ``/`` when the state is the lab's (/var/lib/mlxsim/state.json, a container,
as udev.py decides), else the simulated tree's root (``root`` beside the state file or $MLXSIM_ROOT).
A simulator run on a developer's machine therefore never reads or writes that machine's boot files.
Under ``/`` the simulator never overwrites or removes a file it did not make: ``mlxsim init`` only
adds /etc/default/grub when it is missing and /boot/grub as a directory; it puts no kernel into /boot
(the ofed role takes the newest /boot/vmlinuz-* as the boot kernel).

The kernel command line of the simulated host is ``<root>/proc/cmdline`` (under the sysfs root, not
the sysroot). ``mlxsim init`` writes the boot entry's line; a power cycle (``mlxsim reboot``,
``mlxfwreset --level 4``) replaces it with what GRUB would boot: the default menuentry of
<sysroot>/boot/grub/grub.cfg (``BOOT_IMAGE=<path>`` and the words after the path of its ``linux``
line), else the default BLS entry of <sysroot>/boot/loader/entries (its ``options``), else it stays.
So a change to /etc/default/grub.d without ``update-grub`` is not there after the reboot, as on a
real host.
"""
import functools
import glob
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import tempfile

from . import profiles
from . import state as st

SYSROOT_ENV = "MLXSIM_SYSROOT"
DEBIAN_KERNEL = "6.1.0-26-amd64"                    # Debian 12.7 (bookworm) kernel ABI
RHEL_KERNEL = "5.14.0-427.13.1.el9_4.x86_64"        # RHEL 9.4 GA kernel
RHEL_TITLE = "Red Hat Enterprise Linux (%s) 9.4 (Plow)"
ROOT_DEVICE = "/dev/nvme0n1p2"                      # the simulated root file system (GRUB_DEVICE)
GRUB_CFG = "/boot/grub/grub.cfg"
BLS_DIR = "/boot/loader/entries"
GRUBENV = "/boot/grub2/grubenv"
CPUFREQ = {
    # driver: (available governors as the kernel prints them, default governor). intel_pstate in
    # active mode has no ->target: "performance powersave" without a trailing blank; a driver with
    # ->target lists every registered governor followed by a blank (cpufreq.c,
    # show_scaling_available_governors). Defaults: intel_pstate starts in powersave, acpi-cpufreq
    # with the kernel's default governor (schedutil in Debian's and RHEL's configs).
    "intel_pstate": ("performance powersave", "powersave"),
    "acpi-cpufreq": ("conservative ondemand userspace powersave performance schedutil ", "schedutil"),
}
ASPM_POLICIES = ("default", "performance", "powersave", "powersupersave")

# /usr/share/grub/default/grub of Debian's grub2 2.06-13+deb12u2 (the file the postinst installs).
DEBIAN_DEFAULT_GRUB = """\
# If you change this file, run 'update-grub' afterwards to update
# /boot/grub/grub.cfg.
# For full documentation of the options in this file, see:
#   info -f grub -n 'Simple configuration'

GRUB_DEFAULT=0
GRUB_TIMEOUT=5
GRUB_DISTRIBUTOR=`lsb_release -i -s 2> /dev/null || echo Debian`
GRUB_CMDLINE_LINUX_DEFAULT="quiet"
GRUB_CMDLINE_LINUX=""

# If your computer has multiple operating systems installed, then you
# probably want to run os-prober. However, if your computer is a host
# for guest OSes installed via LVM or raw disk devices, running
# os-prober can cause damage to those guest OSes as it mounts
# filesystems to look for things.
GRUB_DISABLE_OS_PROBER=true

# Uncomment to enable BadRAM filtering, modify to suit your needs
# This works with Linux (no patch required) and with any kernel that obtains
# the memory map information from GRUB (GNU Mach, kernel of FreeBSD ...)
#GRUB_BADRAM="0x01234567,0xfefefefe,0x89abcdef,0xefefefef"

# Uncomment to disable graphical terminal
#GRUB_TERMINAL=console

# The resolution used on graphical terminal
# note that you can use only modes which your graphic card supports via VBE
# you can see them in real GRUB with the command `vbeinfo'
#GRUB_GFXMODE=640x480

# Uncomment if you don't want GRUB to pass "root=UUID=xxx" parameter to Linux
#GRUB_DISABLE_LINUX_UUID=true

# Uncomment to disable generation of recovery mode menu entries
#GRUB_DISABLE_RECOVERY="true"

# Uncomment to get a beep at grub start
#GRUB_INIT_TUNE="480 440 1"
"""

# A RHEL 9 installation's /etc/default/grub (GRUB_DISTRIBUTOR is a literal here: the real file runs
# sed on /etc/system-release, which would read the machine running the simulator).
RHEL_DEFAULT_GRUB = """\
GRUB_TIMEOUT=5
GRUB_DISTRIBUTOR="Red Hat Enterprise Linux"
GRUB_DEFAULT=saved
GRUB_DISABLE_SUBMENU=true
GRUB_TERMINAL_OUTPUT="console"
GRUB_CMDLINE_LINUX="crashkernel=1G-4G:192M,4G-64G:256M,64G-:512M resume=/dev/mapper/rhel-swap rd.lvm.lv=rhel/root \
rd.lvm.lv=rhel/swap rhgb quiet"
GRUB_DISABLE_RECOVERY="true"
GRUB_ENABLE_BLSCFG=true
"""
RHEL_OPTIONS = ("root=/dev/mapper/rhel-root ro crashkernel=1G-4G:192M,4G-64G:256M,64G-:512M resume=/dev/mapper/rhel-swap "
                "rd.lvm.lv=rhel/root rd.lvm.lv=rhel/swap rhgb quiet")


# ------------------------------------------------------------------------------------------ paths


def sysroot():
    env = os.environ.get(SYSROOT_ENV)
    if env:
        return env
    if os.path.abspath(st.state_path()) == st.DEFAULT_STATE:
        return "/"
    from . import sysfs
    return sysfs.root_path()


def is_real_root(root):
    return os.path.realpath(root) == "/"


def under(root, path):
    """``path`` (absolute, as the host sees it) inside ``root``."""
    return os.path.join(root, path.lstrip("/"))


def shown(root, path):
    """The host's view of a path inside ``root`` (for messages)."""
    if is_real_root(root):
        return path
    rel = os.path.relpath(path, root)
    return "/" + rel if rel != "." else "/"


# ------------------------------------------------------------------------------------------ host facts


def _h(*parts):
    return hashlib.sha256("/".join(str(p) for p in parts).encode()).hexdigest()


# The GPU model a host's nccl-tests ranks print ("# Rank ... device N [0x..] <name>"), as CUDA names it: the
# profile's (profiles.HOSTS "gpu"), `mlxsim init --gpu NAME`, else this one. profiles.GPUS lists the names the
# real captures show.
DEFAULT_GPU = "NVIDIA H100 80GB HBM3"


def build_host(profile, hostname, cpus=None, cpufreq_driver=None, bootloader="grub", gpu=None):
    """state["platform"] of a new host."""
    spec = profiles.host_spec(profile)
    h = _h(hostname, "rootfs")
    return {
        "cpus": int(cpus if cpus is not None else spec["cpus"]),
        "cpufreq_driver": cpufreq_driver or spec["cpufreq_driver"],
        "gpu": gpu or spec.get("gpu") or DEFAULT_GPU,
        "bootloader": bootloader,
        "kernel": RHEL_KERNEL if bootloader == "bls" else DEBIAN_KERNEL,
        "root_uuid": "%s-%s-%s-%s-%s" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:32]),
        "machine_id": _h(hostname, "machine-id")[:32],
    }


def host(state):
    """The platform facts of a state (states written before they existed get the profile's)."""
    plat = state.get("platform")
    if plat:
        return plat
    return build_host(state.get("profile", ""), state.get("hostname", "host"))


def host_or_default():
    """host() of the current state, or of an unnamed host when there is none (the boot tools work
    without a simulator state, like the real ones)."""
    try:
        if st.exists():
            return host(st.load())
    except (st.SimError, ValueError):
        pass
    return build_host("", "host")


# ------------------------------------------------------------------------------------------ versions


def deb_compare(a, b):
    """``dpkg --compare-versions`` itself (what grub-mkconfig_lib's version_test_gt runs): -1, 0 or 1."""
    def holds(op):
        return subprocess.run(["dpkg", "--compare-versions", a, op, b], check=False).returncode == 0
    return -1 if holds("lt") else (0 if holds("eq") else 1)


def grub_version_gt(a, b):
    """version_test_gt of grub-mkconfig_lib (Debian: dpkg --compare-versions) on two kernel paths."""
    def norm(path):
        v = re.sub(r"^[^-]*-", "", path, count=1)
        return re.sub(r"[._-](pre|rc|test|git|old|trunk)", r"~\1", v)
    va, vb = norm(a), norm(b)
    if not vb:
        return True
    cmp_ge = False
    if va.endswith(".old") and not vb.endswith(".old"):
        va = va[:-4]
    elif vb.endswith(".old") and not va.endswith(".old"):
        vb, cmp_ge = vb[:-4], True
    c = deb_compare(va, vb)
    return c >= 0 if cmp_ge else c > 0


def rpmvercmp(a, b):
    """rpm's version comparison (segments of digits or letters; ``~`` sorts before anything)."""
    if a == b:
        return 0
    i = j = 0
    while i < len(a) or j < len(b):
        while i < len(a) and not a[i].isalnum() and a[i] not in "~^":
            i += 1
        while j < len(b) and not b[j].isalnum() and b[j] not in "~^":
            j += 1
        if (i < len(a) and a[i] == "~") or (j < len(b) and b[j] == "~"):
            if not (i < len(a) and a[i] == "~"):
                return 1
            if not (j < len(b) and b[j] == "~"):
                return -1
            i += 1
            j += 1
            continue
        if (i < len(a) and a[i] == "^") or (j < len(b) and b[j] == "^"):
            if i >= len(a):
                return -1
            if j >= len(b):
                return 1
            if a[i] != "^":
                return 1
            if b[j] != "^":
                return -1
            i += 1
            j += 1
            continue
        if i >= len(a) or j >= len(b):
            break
        num = a[i].isdigit()
        si, sj = i, j
        if num:
            while i < len(a) and a[i].isdigit():
                i += 1
            while j < len(b) and b[j].isdigit():
                j += 1
        else:
            while i < len(a) and a[i].isalpha():
                i += 1
            while j < len(b) and b[j].isalpha():
                j += 1
        sa, sb = a[si:i], b[sj:j]
        if not sb:
            return 1 if num else -1
        if num:
            sa, sb = sa.lstrip("0"), sb.lstrip("0")
            if len(sa) != len(sb):
                return 1 if len(sa) > len(sb) else -1
        if sa != sb:
            return 1 if sa > sb else -1
    if i >= len(a) and j >= len(b):
        return 0
    return 1 if i < len(a) else -1


# ------------------------------------------------------------------------------------------ /etc/default/grub


GRUB_NAMES = ("GRUB_DEFAULT", "GRUB_TIMEOUT", "GRUB_DISTRIBUTOR", "GRUB_CMDLINE_LINUX", "GRUB_CMDLINE_LINUX_DEFAULT",
              "GRUB_DISABLE_RECOVERY", "GRUB_DISABLE_SUBMENU", "GRUB_DISABLE_LINUX_UUID", "GRUB_DISABLE_UUID",
              "GRUB_EARLY_INITRD_LINUX_STOCK", "GRUB_EARLY_INITRD_LINUX_CUSTOM", "GRUB_ENABLE_BLSCFG",
              "GRUB_RECOVERY_TITLE")


def source_vars(root, names, argv0="sh", drop_ins=False):
    """Source <root>/etc/default/grub (and with ``drop_ins`` <root>/etc/default/grub.d/*.cfg in glob order,
    as grub-mkconfig does) with /bin/sh and ``set -e``; returns (rc, {NAME: value}, stdout, stderr),
    stderr as the host shows it (paths without the sysroot)."""
    etc = under(root, "/etc").rstrip("/")
    script = ('set -e\n'
              'GRUB_EARLY_INITRD_LINUX_STOCK="intel-uc.img intel-ucode.img amd-uc.img amd-ucode.img '
              'early_ucode.cpio microcode.cpio"\n'
              'if test -f "$1/default/grub" ; then\n  . "$1/default/grub"\nfi\n')
    if drop_ins:
        script += 'for x in "$1"/default/grub.d/*.cfg ; do\n  if [ -e "${x}" ]; then\n    . "${x}"\n  fi\ndone\n'
    script += 'printf "%s\\037" ' + " ".join('"$%s"' % n for n in names) + ' >"$2"\n'
    with tempfile.NamedTemporaryFile("r", prefix="mlxsim-grub.") as values:
        p = subprocess.run(["/bin/sh", "-c", script, argv0, etc, values.name], capture_output=True, text=True,
                           check=False, stdin=subprocess.DEVNULL)
        raw = values.read()
    err = p.stderr
    if not is_real_root(root):
        err = err.replace(etc + "/", "/etc/")
    if p.returncode != 0:
        return p.returncode, {}, p.stdout, err
    return 0, dict(zip(names, raw.split("\037"))), p.stdout, err


def source_grub_defaults(root, argv0="/usr/sbin/grub-mkconfig"):
    """The settings grub-mkconfig reads: (rc, {GRUB_...: value}, stdout, stderr)."""
    return source_vars(root, GRUB_NAMES, argv0, drop_ins=True)


# ------------------------------------------------------------------------------------------ grub.cfg


def _garbage(path):
    base = os.path.basename(path)
    return (not os.path.isfile(path) or ".dpkg-" in base or base.endswith((".rpmsave", ".rpmnew", ".sig"))
            or base.startswith("README"))


def kernels(root):
    """The kernel images 10_linux finds, newest first (its version_find_latest loop); host paths."""
    found = []
    for pattern in ("/boot/vmlinuz-*", "/vmlinuz-*", "/boot/kernel-*"):
        for path in sorted(glob.glob(under(root, pattern))):
            if not _garbage(path):
                found.append(shown(root, path))
    ordered = []
    while found:
        latest = ""
        for k in found:
            if grub_version_gt(k, latest):
                latest = k
        ordered.append(latest)
        found = [k for k in found if k != latest]
    return ordered


def _quote(text):
    return text.replace("'", "'\\''")


def _linux_entry(kind, k, args, indent, m):
    """One menuentry of 10_linux's linux_entry (``kind``: simple, advanced, recovery) for kernel ``k``."""
    if kind == "simple":
        head = "menuentry '%s' %s $menuentry_id_option 'gnulinux-simple-%s' {" % (_quote(m["os"]), m["cls"], m["uuid"])
    else:
        title = "%s, with Linux %s" % (m["os"], k["version"])
        if kind == "recovery":
            title += " (%s)" % m["recovery_title"]
        head = "menuentry '%s' %s $menuentry_id_option 'gnulinux-%s-%s-%s' {" % (
            _quote(title), m["cls"], k["version"], kind, m["uuid"])
    body = [head, "\tload_video", "\tinsmod gzio", "\tif [ x$grub_platform = xxen ]; then insmod xzio; insmod lzopio; fi",
            "\tinsmod part_gpt", "\tinsmod ext2", "\tsearch --no-floppy --fs-uuid --set=root %s" % m["uuid"],
            "\techo\t'%s'" % _quote("Loading Linux %s ..." % k["version"]),
            "\tlinux\t%s/%s root=%s ro %s" % (k["dirname"], k["base"], k["root_dev"], args)]
    if k["initrd"]:
        body.append("\techo\t'Loading initial ramdisk ...'")
        body.append("\tinitrd\t%s" % " ".join("%s/%s" % (k["dirname"], i) for i in k["initrd"]))
    body.append("}")
    return [indent + b for b in body]


def _kernel(root, kpath, settings, menu):
    """What 10_linux works out for one kernel image: version, initrd files, root= device."""
    dirname, base = os.path.dirname(kpath), os.path.basename(kpath)
    version = re.sub(r"^[^0-9]*-", "", base, count=1)
    alt = re.sub(r"\.old$", "", version)
    early = [n for n in (settings.get("GRUB_EARLY_INITRD_LINUX_STOCK", "").split()
                         + settings.get("GRUB_EARLY_INITRD_LINUX_CUSTOM", "").split())
             if os.path.exists(under(root, os.path.join(dirname, n)))]
    real = ""
    for cand in ("initrd.img-%s" % version, "initrd-%s.img" % version, "initrd-%s.gz" % version,
                 "initrd-%s" % version, "initramfs-%s.img" % version, "initrd.img-%s" % alt,
                 "initrd-%s.img" % alt, "initrd-%s" % alt, "initramfs-%s.img" % alt):
        if os.path.exists(under(root, os.path.join(dirname, cand))):
            real = cand
            break
    no_uuid = settings.get("GRUB_DISABLE_LINUX_UUID") == "true" or settings.get("GRUB_DISABLE_UUID") == "true"
    # without an initrd nothing can resolve UUID=: 10_linux passes the device (PARTUUID is off by default)
    root_dev = ROOT_DEVICE if (no_uuid or not real) else "UUID=%s" % menu["uuid"]
    return {"dirname": dirname, "base": base, "version": version, "initrd": early + ([real] if real else []),
            "root_dev": root_dev}


def mkconfig(root, settings, plat):
    """(grub.cfg text, [stderr lines]) the way Debian's grub-mkconfig with 00_header and 10_linux
    writes it (reduced: no gfxterm/theme code, no os-prober, no init-* entries, /boot on /)."""
    dist = settings.get("GRUB_DISTRIBUTOR", "")
    cls = "--class gnu-linux --class gnu --class os"
    if dist:
        cls = "--class %s %s" % (re.sub(r"[^A-Za-z0-9_]", "_", dist.split(" ")[0].lower()), cls)
    menu = {"uuid": plat["root_uuid"], "cls": cls,
            "os": "GNU/Linux" if not dist else (dist if dist in ("Ubuntu", "Kubuntu") else dist + " GNU/Linux"),
            "recovery_title": settings.get("GRUB_RECOVERY_TITLE") or "recovery mode"}
    default = settings.get("GRUB_DEFAULT", "")
    lines = ["#", "# DO NOT EDIT THIS FILE", "#",
             "# It is automatically generated by grub-mkconfig using templates",
             "# from /etc/grub.d and settings from /etc/default/grub", "#", "",
             "### BEGIN /etc/grub.d/00_header ###"]
    if default == "saved":
        lines += ['if [ -s $prefix/grubenv ]; then', '  load_env', 'fi', 'if [ "${next_entry}" ] ; then',
                  '   set default="${next_entry}"', '   set next_entry=', '   save_env next_entry', '   set boot_once=true',
                  'else', '   set default="${saved_entry}"', 'fi']
    else:
        lines.append('set default="%s"' % default)
    lines += ["set timeout=%s" % settings.get("GRUB_TIMEOUT", "5"), "### END /etc/grub.d/00_header ###", "",
              "### BEGIN /etc/grub.d/10_linux ###"]
    normal = "%s %s" % (settings.get("GRUB_CMDLINE_LINUX", ""), settings.get("GRUB_CMDLINE_LINUX_DEFAULT", ""))
    recovery = "single %s" % settings.get("GRUB_CMDLINE_LINUX", "")
    submenu_ok = settings.get("GRUB_DISABLE_SUBMENU") not in ("true", "y", "yes")
    msgs, top, indent = [], True, ""
    for kpath in kernels(root):
        msgs.append("Found linux image: %s" % kpath)
        k = _kernel(root, kpath, settings, menu)
        if k["initrd"]:
            msgs.append("Found initrd image: %s" % " ".join(os.path.join(k["dirname"], i) for i in k["initrd"]))
        if top and submenu_ok:
            lines += _linux_entry("simple", k, normal, "", menu)
            lines.append("submenu 'Advanced options for %s' $menuentry_id_option 'gnulinux-advanced-%s' {"
                         % (_quote(menu["os"]), menu["uuid"]))
            indent, top = "\t", False
        lines += _linux_entry("advanced", k, normal, indent, menu)
        if settings.get("GRUB_DISABLE_RECOVERY") != "true":
            lines += _linux_entry("recovery", k, recovery, indent, menu)
    if not top:
        lines.append("}")
    lines += ["", "### END /etc/grub.d/10_linux ###", ""]
    return "\n".join(lines) + "\n", msgs


def _grub_words(text):
    try:
        words = shlex.split(text, comments=False, posix=True)
    except ValueError:
        words = text.split()
    return [w for w in words if not re.match(r"^\$(\w+|\{\w+\})$", w)]


def parse_grub_cfg(text):
    """[{"title", "id", "linux": path, "args": [words], "path": [indexes], "submenu": bool}], and the
    ``set default=`` value (None when absent)."""
    entries, stack, default = [], [], None
    counters = [0]
    head_re = re.compile(r"""^\s*(menuentry|submenu)\s+(?:'((?:[^']|'\\'')*)'|"([^"]*)"|(\S+))(.*)\{\s*$""")
    for raw in text.splitlines():
        line = raw.strip()
        m = re.match(r'^set\s+default=(?:"([^"]*)"|\'([^\']*)\'|(\S*))\s*$', line)
        if m and not stack:
            default = next(g for g in m.groups() if g is not None)
            continue
        m = head_re.match(raw)
        if m:
            title = next((g for g in m.group(2, 3, 4) if g is not None), "").replace("'\\''", "'")
            ident = re.search(r"\$menuentry_id_option\s+'([^']*)'", m.group(5) or "")
            node = {"title": title, "id": ident.group(1) if ident else "", "linux": None, "args": [],
                    "path": (stack[-1]["path"] if stack else []) + [counters[-1]], "submenu": m.group(1) == "submenu"}
            counters[-1] += 1
            entries.append(node)
            stack.append(node)
            counters.append(0)
            continue
        if line == "}" and stack:
            stack.pop()
            counters.pop()
            continue
        m = re.match(r"^(?:linux|linuxefi|linux16)\s+(\S+)\s*(.*)$", line)
        if m and stack and not stack[-1]["submenu"]:
            stack[-1]["linux"] = m.group(1)
            stack[-1]["args"] = _grub_words(m.group(2))
    return entries, default


def read_grubenv(root, path):
    try:
        with open(under(root, path)) as fh:
            text = fh.read()
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        if line.startswith("#") or "=" not in line:
            continue
        k, _s, v = line.partition("=")
        out[k] = v
    return out


def write_grubenv(root, path, values):
    """A GRUB environment block (1024 bytes, '#' padding), as grub2-editenv writes it."""
    body = "# GRUB Environment Block\n" + "".join("%s=%s\n" % (k, v) for k, v in values.items())
    body += "#" * max(0, 1024 - len(body.encode()))
    full = under(root, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as fh:
        fh.write(body)


def grub_default_entry(root):
    """The menuentry GRUB boots from <root>/boot/grub/grub.cfg, None without one (or without entries)."""
    try:
        with open(under(root, GRUB_CFG)) as fh:
            text = fh.read()
    except OSError:
        return None
    entries, default = parse_grub_cfg(text)
    bootable = [e for e in entries if not e["submenu"] and e["linux"]]
    if not bootable:
        return None
    if default == "${saved_entry}":
        default = read_grubenv(root, "/boot/grub/grubenv").get("saved_entry", "")
    if default:
        if re.match(r"^\d+(>\d+)*$", default):
            want = [int(x) for x in default.split(">")]
            for e in entries:
                if e["path"] == want and not e["submenu"]:
                    return e
        else:
            last = default.split(">")[-1]
            for e in entries:
                if not e["submenu"] and last in (e["title"], e["id"]):
                    return e
    top = [e for e in entries if len(e["path"]) == 1]
    return top[0] if top and not top[0]["submenu"] else bootable[0]


# ------------------------------------------------------------------------------------------ BLS entries


def bls_entries(root, blsdir=BLS_DIR):
    """The BLS entries as grubby lists them: newest first (rpm-sort | tac); each a dict of the keys
    title, version, linux, initrd, options and id (the file name without .conf), file."""
    found = []
    for path in glob.glob(os.path.join(under(root, blsdir), "*.conf")):
        entry = {"file": path, "id": os.path.basename(path)[:-5]}
        try:
            with open(path) as fh:
                text = fh.read()
        except OSError:
            continue
        for key in ("title", "version", "linux", "initrd", "options"):
            vals = [re.sub(r"^%s[ \t]*" % key, "", ln) for ln in text.splitlines() if re.match(r"^%s[ \t]" % key, ln)]
            entry[key] = "\n".join(vals)
        found.append(entry)
    found.sort(key=functools.cmp_to_key(lambda a, b: rpmvercmp(a["id"], b["id"])), reverse=True)
    return found


def bls_default_index(root, entries, env=GRUBENV):
    """get_default_index of grubby-bls: saved_entry of the grubenv (an index, an id or a title); none: 0."""
    default = read_grubenv(root, env).get("saved_entry", "")
    index = 0 if not default else (int(default) if default.isdigit() else -1)
    for i, e in enumerate(entries):
        if i == index or default in (e["id"], e["title"]):
            return i
    return None


def bls_args(root, entry, env=GRUBENV):
    """The options of an entry with $kernelopts taken from the grubenv (RHEL 8), words joined by one blank."""
    words = entry.get("options", "").split()
    if "$kernelopts" in words:
        opts = read_grubenv(root, env).get("kernelopts", "")
        if opts:
            words = " ".join(words).replace("$kernelopts", opts, 1).split()
    return " ".join(words)


# ------------------------------------------------------------------------------------------ the command line


def debian_cmdline(plat):
    return "BOOT_IMAGE=/boot/vmlinuz-%s root=UUID=%s ro quiet" % (plat["kernel"], plat["root_uuid"])


def boot_cmdline(root):
    """What the boot loader of <root> starts the kernel with, None when it has no entry to boot."""
    e = grub_default_entry(root)
    if e:
        return " ".join(["BOOT_IMAGE=%s" % e["linux"]] + e["args"])
    entries = bls_entries(root)
    if entries:
        i = bls_default_index(root, entries)
        e = entries[i if i is not None else 0]
        env = read_grubenv(root, GRUBENV)           # GRUB expands $tuned_params & co. (empty when unset)
        words = [env.get(w[1:], "") if w.startswith("$") else w for w in bls_args(root, e).split()]
        return " ".join(["BOOT_IMAGE=%s" % e["linux"]] + " ".join(words).split())
    return None


def cmdline_path(sys_root):
    return os.path.join(sys_root, "proc", "cmdline")


def read_cmdline(sys_root):
    try:
        with open(cmdline_path(sys_root)) as fh:
            return fh.read().strip()
    except OSError:
        return ""


def write_cmdline(sys_root, line):
    path = cmdline_path(sys_root)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = "%s.%d.tmp" % (path, os.getpid())
    with open(tmp, "w") as fh:
        fh.write(line + "\n")
    os.replace(tmp, path)


def power_cycle(sys_root):
    """A boot: /proc/cmdline from the boot loader's default entry (unchanged when there is none)."""
    line = boot_cmdline(sysroot())
    if line:
        write_cmdline(sys_root, line)
    return read_cmdline(sys_root)


def cmdline_param(line, name):
    """The value of the last ``name=value`` on a command line (the kernel's last one wins), None."""
    value = None
    for word in line.split():
        if word.startswith(name + "="):
            value = word[len(name) + 1:]
    return value


# ------------------------------------------------------------------------------------------ mlxsim init


def _touch(path, text=""):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        fh.write(text)


def install(plat, sys_root):
    """The boot files of a freshly installed host (``mlxsim init``), and its /proc/cmdline.

    Not under ``/``: the sysroot's /boot, /etc/default and /etc/kernel are replaced by a fresh
    installation - Debian 12 (``grub``: /etc/default/grub of the grub2 package, a kernel and its
    initrd, grub.cfg as update-grub writes it) or RHEL 9 (``bls``: /etc/default/grub, BLS entries
    for the kernel and the rescue image, /etc/kernel/cmdline). Under ``/``: /etc/default/grub only
    when it is missing, /boot/grub as a directory, nothing else."""
    root = sysroot()
    if is_real_root(root):
        os.makedirs(under(root, "/boot/grub"), exist_ok=True)
        if not os.path.lexists(under(root, "/etc/default/grub")):
            _touch(under(root, "/etc/default/grub"), DEBIAN_DEFAULT_GRUB)
        write_cmdline(sys_root, boot_cmdline(root) or debian_cmdline(plat))
        return
    for sub in ("/boot", "/etc/default", "/etc/kernel"):
        shutil.rmtree(under(root, sub), ignore_errors=True)
    kver = plat["kernel"]
    if plat.get("bootloader") == "bls":
        _touch(under(root, "/etc/default/grub"), RHEL_DEFAULT_GRUB)
        _touch(under(root, "/etc/kernel/cmdline"), RHEL_OPTIONS + "\n")
        mid = plat["machine_id"]
        for ver, title in ((kver, RHEL_TITLE % kver), ("0-rescue-" + mid, RHEL_TITLE % ("0-rescue-" + mid))):
            _touch(under(root, "/boot/vmlinuz-%s" % ver))
            _touch(under(root, "/boot/initramfs-%s.img" % ver))
            name = "%s-%s.conf" % (mid, kver) if ver == kver else "%s-0-rescue.conf" % mid
            _touch(under(root, os.path.join(BLS_DIR, name)),
                   "title %s\nversion %s\nlinux /boot/vmlinuz-%s\ninitrd /boot/initramfs-%s.img $tuned_initrd\n"
                   "options %s $tuned_params\ngrub_users $grub_users\ngrub_arg --unrestricted\ngrub_class %s\n"
                   % (title, ver, ver, ver, RHEL_OPTIONS, "rhel" if ver == kver else "kernel"))
        write_grubenv(root, GRUBENV, {"saved_entry": "%s-%s" % (mid, kver), "boot_success": "0"})
    else:
        _touch(under(root, "/etc/default/grub"), DEBIAN_DEFAULT_GRUB)
        os.makedirs(under(root, "/etc/default/grub.d"), exist_ok=True)
        _touch(under(root, "/boot/vmlinuz-%s" % kver))
        _touch(under(root, "/boot/initrd.img-%s" % kver))
        _touch(under(root, "/boot/config-%s" % kver), "CONFIG_BLK_DEV_INITRD=y\n")
        rc, settings, _out, _err = source_grub_defaults(root)
        if rc == 0:
            text, _msgs = mkconfig(root, settings, plat)
            _touch(under(root, GRUB_CFG), text)
    write_cmdline(sys_root, boot_cmdline(root) or debian_cmdline(plat))
