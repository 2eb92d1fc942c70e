"""update-grub / update-grub2 / grub-mkconfig (Debian's grub2 2.06) and grubby (RHEL 8/9 grubby-bls).

Both work on the sysroot of platform.py (never the developer machine's /etc and /boot) and need no
simulator state. ``mlxsim reboot`` then boots what they wrote (platform.boot_cmdline).

grub-mkconfig: the option loop, messages and exit codes of /usr/sbin/grub-mkconfig of
grub2 2.06-13+deb12u2; /etc/default/grub and /etc/default/grub.d/*.cfg are sourced by /bin/sh with
``set -e`` exactly as the real script does (a syntax error: sh's message, sh's exit code, nothing
written); the menu is 00_header + 10_linux reduced (platform.mkconfig). update-grub and update-grub2
are ``exec grub-mkconfig -o /boot/grub/grub.cfg "$@"``. Not simulated: the root check, grub-probe,
os-prober (its warning is not printed: the model host has no os-prober), themes, the grub-script-check
of the result, other /etc/grub.d scripts.

grubby: the RHEL 8/9 ``grubby-bls`` shell script (the grubby package's /usr/sbin/grubby):
getopt-style options (messages of util-linux getopt), ``--info=ALL|DEFAULT|PATH|INDEX|TITLE=..``
(index, kernel, args without root=, root, initrd, title, id), ``--default-kernel``,
``--default-index``, ``--default-title``, ``--update-kernel=... [--args=..] [--remove-args=..]
[--initrd=..]`` (its update_args: an added key replaces every earlier ``key``/``key=...`` and goes to
the end; ALL also rewrites GRUB_CMDLINE_LINUX in /etc/default/grub unless --no-etc-grub-update,
kernelopts of the grubenv when set, and /etc/kernel/cmdline when /etc/kernel exists),
``--set-default=...``, ``--set-default-index=N``, ``--env``, ``-b/--bls-directory``. Entries are
sorted newest first (rpm-sort | tac); the default is ``saved_entry`` of /boot/grub2/grubenv, else
index 0; /boot is not a separate file system (no /boot prefix is added to the paths). Not simulated
(refused with rc 1): --add-kernel, --remove-kernel, --zipl.
"""
import os
import re
import sys

from .. import platform

MKCONFIG = "/usr/sbin/grub-mkconfig"
MKCONFIG_VERSION = "2.06-13+deb12u2"
MKCONFIG_USAGE = """Usage: grub-mkconfig [OPTION]
Generate a grub config file

  -o, --output=FILE       output generated config to FILE [default=stdout]
  -h, --help              print this message and exit
  -V, --version           print the version information and exit

Report bugs to <bug-grub@gnu.org>.
"""


def _err(text):
    sys.stdout.flush()
    sys.stderr.write(text)
    sys.stderr.flush()


def _write_cfg(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = "%s.new" % path
    with open(tmp, "w") as fh:
        fh.write(text)
    os.chmod(tmp, 0o444)
    os.replace(tmp, path)


def grub_mkconfig(tool, args):
    if tool in ("update-grub", "update-grub2"):
        args = ["-o", platform.GRUB_CFG] + list(args)
    out_file = ""
    i = 0
    while i < len(args):
        opt = args[i]
        i += 1
        if opt in ("-h", "--help"):
            sys.stdout.write(MKCONFIG_USAGE)
            return 0
        if opt in ("-V", "--version"):
            sys.stdout.write("grub-mkconfig (GRUB) %s\n" % MKCONFIG_VERSION)
            return 0
        if opt in ("-o", "--output"):
            if i >= len(args):
                _err("grub-mkconfig: option requires an argument -- `%s'\n" % opt)
                return 1
            out_file = args[i]
            i += 1
        elif opt.startswith("--output="):
            out_file = opt[len("--output="):]
        elif opt.startswith("-"):
            _err("Unrecognized option `%s'\n" % opt)
            sys.stdout.write(MKCONFIG_USAGE)
            return 1
    root = platform.sysroot()
    plat = platform.host_or_default()
    rc, settings, out, err = platform.source_grub_defaults(root, MKCONFIG)
    sys.stdout.write(out)
    if err:
        _err(err)
    if rc:
        return rc
    target = platform.under(root, out_file) if out_file.startswith("/") else out_file
    if out_file and not os.path.isdir(os.path.dirname(os.path.abspath(target))):
        _err("%s: 270: cannot create %s.new: Directory nonexistent\n" % (MKCONFIG, out_file))
        return 2
    _err("Generating grub configuration file ...\n")
    text, msgs = platform.mkconfig(root, settings, plat)
    for m in msgs:
        _err(m + "\n")
    if out_file:
        _write_cfg(target, text)
    else:
        sys.stdout.write(text)
    _err("done\n")
    return 0


# ------------------------------------------------------------------------------------------ grubby

GRUBBY_LONG = ("help", "add-kernel:", "args:", "bad-image-okay", "config-file:", "copy-default", "default-kernel",
               "default-index", "default-title", "env:", "grub2", "info:", "initrd:", "extra-initrd:", "make-default",
               "remove-args:", "remove-kernel:", "set-default:", "set-default-index:", "title:", "update-kernel:",
               "zipl", "bls-directory:", "no-etc-grub-update", "add-multiboot:", "mbargs:", "mounts:",
               "boot-filesystem:", "bootloader-probe", "debug", "devtree", "devtreedir:", "elilo", "efi",
               "extlinux", "grub", "lilo", "output-file:", "remove-mbargs:", "remove-multiboot:", "silo", "yaboot")
GRUBBY_SHORT = "hc:i:b:?"
DEPRECATED = {"--add-multiboot", "--mbargs", "--mounts", "--boot-filesystem", "--bootloader-probe", "--debug",
              "--devtree", "--devtreedir", "--elilo", "--efi", "--extlinux", "--grub", "--lilo", "--output-file",
              "--remove-mbargs", "--silo", "--remove-multiboot", "--slilo", "--yaboot"}
NOT_SIMULATED = {"--add-kernel", "--remove-kernel", "--zipl"}
GRUBBY_USAGE = """Usage: grubby [OPTION...]
      --add-kernel=kernel-path            add an entry for the specified kernel
      --args=args                         default arguments for the new kernel or new arguments for kernel being updated)
      --bad-image-okay                    don't sanity check images in boot entries (for testing only)
  -c, --config-file=path                  path to grub config file to update ("-" for stdin)
      --copy-default                      use the default boot entry as a template for the new entry being added; \
if the default is not a linux image, or if the kernel referenced by the default image does not exist, the
                                          first linux entry whose kernel does exist is used as the template
      --default-kernel                    display the path of the default kernel
      --default-index                     display the index of the default kernel
      --default-title                     display the title of the default kernel
      --env=path                          path for environment data
      --grub2                             configure grub2 bootloader
      --info=kernel-path                  display boot information for specified kernel
      --initrd=initrd-path                initrd image for the new kernel
  -i, --extra-initrd=initrd-path          auxiliary initrd image for things other than the new kernel
      --make-default                      make the newly added entry the default boot entry
      --remove-args=STRING                remove kernel arguments
      --remove-kernel=kernel-path         remove all entries for the specified kernel
      --set-default=kernel-path           make the first entry referencing the specified kernel the default
      --set-default-index=entry-index     make the given entry index the default entry
      --title=entry-title                 title to use for the new kernel entry
      --update-kernel=kernel-path         updated information for the specified kernel
      --zipl                              configure zipl bootloader
  -b, --bls-directory                     path to directory containing the BootLoaderSpec fragment files
      --no-etc-grub-update                don't update the GRUB_CMDLINE_LINUX variable in /etc/default/grub

Help options:
  -h, --help                              Show this help message

"""


def getopt(args, short, longs, prog):
    """util-linux getopt(1) (GNU getopt_long, permuting): ([(option, value)], [errors])."""
    opts, errors, i = [], [], 0
    table = {name.rstrip(":"): name.endswith(":") for name in longs}
    while i < len(args):
        a = args[i]
        i += 1
        if a == "--":
            break
        if a.startswith("--"):
            name, eq, value = a[2:].partition("=")
            if name in table:
                hits = [name]
            else:
                hits = [n for n in table if n.startswith(name)]
            if not hits:
                errors.append("%s: unrecognized option '--%s'" % (prog, name if not eq else a[2:]))
                continue
            if len(hits) > 1:
                errors.append("%s: option '--%s' is ambiguous; possibilities:%s"
                              % (prog, name, "".join(" '--%s'" % h for h in hits)))
                continue
            full = hits[0]
            if table[full]:
                if not eq:
                    if i >= len(args):
                        errors.append("%s: option '--%s' requires an argument" % (prog, full))
                        continue
                    value = args[i]
                    i += 1
                opts.append(("--" + full, value))
            else:
                if eq:
                    errors.append("%s: option '--%s' doesn't allow an argument" % (prog, full))
                    continue
                opts.append(("--" + full, None))
        elif a.startswith("-") and len(a) > 1:
            j = 1
            while j < len(a):
                ch = a[j]
                j += 1
                pos = short.find(ch)
                if pos < 0 or ch == ":":
                    errors.append("%s: invalid option -- '%s'" % (prog, ch))
                    continue
                if short[pos + 1:pos + 2] == ":":
                    value = a[j:]
                    if not value:
                        if i >= len(args):
                            errors.append("%s: option requires an argument -- '%s'" % (prog, ch))
                            break
                        value = args[i]
                        i += 1
                    opts.append(("-" + ch, value))
                    break
                opts.append(("-" + ch, None))
    return opts, errors


class Grubby:
    def __init__(self, root):
        self.root = root
        self.blsdir = platform.BLS_DIR
        self.env = platform.GRUBENV
        self.entries = []
        self.default = None

    def load(self):
        self.entries = platform.bls_entries(self.root, self.blsdir)
        self.default = platform.bls_default_index(self.root, self.entries, self.env)

    def host_file(self, entry):
        return platform.shown(self.root, entry["file"])

    def indexes(self, param):
        """param_to_indexes: [] for ALL without entries, None for no match (the script's -1)."""
        if param == "ALL":
            return list(range(len(self.entries)))
        if param == "DEFAULT":
            return [] if self.default is None else [self.default]
        found = []
        for i, e in enumerate(self.entries):
            if param == e["linux"] or "/" + param.rsplit("/", 1)[-1] == e["linux"]:
                found.append(i)
            if param == "TITLE=" + e["title"]:
                found.append(i)
            if param == str(i):
                found.append(i)
        return found or None

    def args(self, i):
        return platform.bls_args(self.root, self.entries[i], self.env)

    def info(self, param):
        idx = self.indexes(param)
        if idx is None:
            _err("The param %s is incorrect\n" % param)
            return 1
        out = []
        for i in idx:
            e = self.entries[i]
            args = self.args(i)
            root = ""
            for opt in args.split():
                if opt.startswith("root="):
                    root = opt[len("root="):]
                    args = re.sub(re.escape(opt) + r"[ \t]*", "", args, count=1)
                    break
            out += ["index=%d" % i, 'kernel="%s"' % e["linux"], 'args="%s"' % args]
            if root:
                out.append('root="%s"' % root)
            out += ['initrd="%s"' % e["initrd"], 'title="%s"' % e["title"], 'id="%s"' % e["id"]]
        if out:
            sys.stdout.write("\n".join(out) + "\n")
        return 0

    def show_default(self, what):
        e = self.entries[self.default or 0] if self.entries else {}
        if what == "kernel":
            sys.stdout.write("%s\n" % e.get("linux", ""))
        elif what == "index":
            sys.stdout.write("%s\n" % ("" if self.default is None else self.default))
        else:
            sys.stdout.write("%s\n" % e.get("title", ""))
        return 0

    def _set_value(self, entry, key, value):
        with open(entry["file"]) as fh:
            lines = fh.read().split("\n")
        value = " ".join(value.split())                  # set_bls_value: echo $value
        lines = ["%s %s" % (key, value) if ln.startswith(key) else ln for ln in lines]
        tmp = entry["file"] + ".grubby"
        with open(tmp, "w") as fh:
            fh.write("\n".join(lines))
        os.replace(tmp, entry["file"])

    def update(self, param, remove, add, initrd, etc_update):
        idx = self.indexes(param)
        if idx is None:
            _err("The param %s is incorrect\n" % param)
            return 1
        changing = bool(remove or add)
        if param == "ALL" and changing:
            if etc_update:
                self._update_etc_default(remove, add)
            env = platform.read_grubenv(self.root, self.env)
            if env.get("kernelopts"):
                env["kernelopts"] = update_args(env["kernelopts"], remove, add)
                platform.write_grubenv(self.root, self.env, env)
        for i in idx:
            e = self.entries[i]
            if changing:
                new = update_args(self.args(i), remove, add)
                if param != "ALL" or "$kernelopts" not in e.get("options", "").split():
                    self._set_value(e, "options", new)
            if initrd:
                self._set_value(e, "initrd", initrd)
        if param == "ALL" and changing and os.path.isdir(platform.under(self.root, "/etc/kernel")):
            path = platform.under(self.root, "/etc/kernel/cmdline")
            if not os.path.exists(path):
                with open(path, "w") as fh:
                    fh.write((self.args(len(self.entries) - 1) if self.entries else "") + "\n")
            with open(path) as fh:
                old = fh.readline().rstrip("\n")
            with open(path, "w") as fh:
                fh.write(update_args(old, remove, add) + "\n")
        return 0

    def _update_etc_default(self, remove, add):
        path = platform.under(self.root, "/etc/default/grub")
        if not os.path.exists(path):
            return
        rc, values, _out, _err = platform.source_vars(self.root, ["GRUB_CMDLINE_LINUX"], "grubby")
        old = " ".join(values.get("GRUB_CMDLINE_LINUX", "").split()) if rc == 0 else ""
        if not old:
            return
        opts = update_args(old, remove, add)
        with open(path) as fh:
            lines = fh.read().split("\n")
        lines = ['GRUB_CMDLINE_LINUX="%s"' % opts if ln.startswith("GRUB_CMDLINE_LINUX=") else ln for ln in lines]
        with open(path, "w") as fh:
            fh.write("\n".join(lines))

    def set_default(self, param):
        idx = self.indexes(param)
        if not idx:
            _err("The param %s is incorrect\n" % param)
            return 1
        i = idx[0]
        env = platform.read_grubenv(self.root, self.env)
        env["saved_entry"] = self.entries[i]["id"]
        platform.write_grubenv(self.root, self.env, env)
        _err("The default is %s with index %d and kernel %s\n" % (self.host_file(self.entries[i]), i,
                                                                  self.entries[i]["linux"]))
        return 0


def update_args(args, remove, add):
    """update_args of grubby-bls: remove ``remove`` (``k=v``: that word; ``k``: ``k`` and every
    ``k=...``), drop the keys of ``add`` the same way, then append ``add`` in order; words joined by
    one blank."""
    words = args.split()
    for arg in (remove or "").split():
        if "=" in arg:
            if arg in words:
                words.remove(arg)
        else:
            words = [w for w in words if w != arg and not w.startswith(arg + "=")]
    added = (add or "").split()
    for arg in added:
        key = arg.split("=", 1)[0]
        words = [w for w in words if w != key and not w.startswith(key + "=")]
    return " ".join(words + added)


def grubby(args):
    prog = "grubby"
    if not args:
        _err("no action specified\n")
        return 1
    opts, errors = getopt(args, GRUBBY_SHORT, GRUBBY_LONG, prog)
    if errors:
        _err("".join(e + "\n" for e in errors))
        return 1
    o = {"etc_update": True}
    for name, value in opts:
        if name in ("--help", "-h", "-?"):
            sys.stdout.write(GRUBBY_USAGE)
            return 0
        if name in DEPRECATED:
            sys.stdout.write("\n")
            _err('%s: the option "%s" was deprecated\nTry \'%s --help\' to list supported options\n' % (prog, name, prog))
            sys.stdout.write("\n")
            return 1
        if name in NOT_SIMULATED:
            _err("%s: mlxsim does not simulate %s\n" % (prog, name))
            return 1
        key = {"--default-kernel": "display", "--default-index": "display", "--default-title": "display",
               "-b": "--bls-directory", "-c": "--config-file", "-i": "--extra-initrd",
               "--set-default-index": "--set-default"}.get(name, name)
        if key == "display":
            o["display"] = name[len("--default-"):]
        elif name == "--no-etc-grub-update":
            o["etc_update"] = False
        else:
            o[key] = value
    if not o.get("--update-kernel") and (o.get("--args") or o.get("--remove-args")):
        _err("no action specified\n")
        return 1
    g = Grubby(platform.sysroot())
    if o.get("--bls-directory"):
        g.blsdir = o["--bls-directory"]
    if o.get("--env"):
        g.env = o["--env"]
    g.load()
    if o.get("display"):
        return g.show_default(o["display"])
    if o.get("--info"):                                  # an empty --info= is no action, as in the script
        return g.info(o["--info"])
    rc = 0
    if o.get("--update-kernel"):
        rc = g.update(o["--update-kernel"], o.get("--remove-args"), o.get("--args"), o.get("--initrd"),
                      o["etc_update"])
        if rc:
            return rc
        g.load()
    if o.get("--set-default"):
        rc = g.set_default(o["--set-default"])
    return rc


def run(tool, args):
    if tool == "grubby":
        return grubby(list(args))
    return grub_mkconfig(tool, list(args))
