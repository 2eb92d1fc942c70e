"""The "add" uevents of the netdevs a driver (re)load creates, and the udev rules they run.

On a real host the mlx5 driver registers its netdevs again after a reboot, a driver reload
(``/etc/init.d/openibd restart``) or a level-3 ``mlxfwreset``, and systemd-udevd runs the rules
matching each "add" event. The lab's containers have no udevd, so the simulator does what udevd
would for those events, for the rule subset the collection writes:

- files ``*.rules`` of $MLXSIM_UDEV_RULES (a ':' list), in file-name order; unset, /etc/udev/rules.d
  when the state is the lab's (/var/lib/mlxsim/state.json, a container), else none - a simulator run
  on a developer's machine never runs that machine's rules;
- match keys ACTION, SUBSYSTEM, KERNEL, NAME and DRIVERS (DRIVERS matches ``mlx5_core``) with
  ``==`` / ``!=``, values as udev globs (``*``, ``?``, ``[...]``, alternatives with ``|``); a rule
  with any other match key never matches (the simulator cannot evaluate it);
- ``ATTR{name}=="glob"`` matches the device's sysfs attribute (PCI devices: vendor, class, ...) and
  ``ATTR{name}="value"`` writes it (``add_pci``: "add" at boot, "bind" after a driver reload);
- ``RUN+=`` / ``RUN=`` programs, run after the event's rules are read, in order, without a shell
  (udev splits the command line the same way), with ``$kernel``/``%k``, ``$name`` and ``$$``
  substituted and ACTION, SUBSYSTEM, INTERFACE, DEVPATH in the environment.

Each program run is appended to ``uevents.log`` beside the state file: ``add IF: PROGRAM rc=N``.
``boot_units`` does what systemd does at boot for the oneshot units enabled in multi-user.target
(``boot UNIT: COMMAND rc=N``): the lab's containers run no systemd either.
"""
import fnmatch
import glob
import os
import re
import shlex
import subprocess

from . import state as st

RULES_ENV = "MLXSIM_UDEV_RULES"
DEFAULT_RULES = "/etc/udev/rules.d"
MATCH_KEYS = {"ACTION", "SUBSYSTEM", "KERNEL", "NAME", "DRIVERS"}
PAIR_RE = re.compile(r'\s*([A-Z_]+(?:\{[^}]*\})?)\s*(==|!=|\+=|-=|:=|=)\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)')


def rule_files():
    env = os.environ.get(RULES_ENV)
    if env is None:
        env = DEFAULT_RULES if os.path.abspath(st.state_path()) == st.DEFAULT_STATE else ""
    dirs = [d for d in env.split(":") if d]
    files = {}
    for d in dirs:                                   # a later directory does not replace an earlier name
        for path in glob.glob(os.path.join(d, "*.rules")):
            files.setdefault(os.path.basename(path), path)
    return [files[name] for name in sorted(files)]


def parse_rules(text):
    """[[(key, op, value), ...], ...] - one list per rule line (continuations joined)."""
    rules = []
    for line in text.replace("\\\n", "").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        pairs, pos = [], 0
        while pos < len(line):
            m = PAIR_RE.match(line, pos)
            if not m:
                pairs = None            # udevd skips a line it cannot parse (and logs it)
                break
            pairs.append((m.group(1), m.group(2), m.group(3)))
            pos = m.end()
        if pairs:
            rules.append(pairs)
    return rules


def _glob(value, text):
    return any(fnmatch.fnmatchcase(text, alt) for alt in value.split("|"))


ATTR_RE = re.compile(r"^ATTR\{([A-Za-z0-9_./-]+)\}$")


def _attr(event, name):
    """A sysfs attribute of the event's device (``DEVDIR``), without its trailing newline; None when absent."""
    if not event.get("DEVDIR") or ".." in name.split("/"):
        return None
    try:
        with open(os.path.join(event["DEVDIR"], name)) as fh:
            return fh.read().rstrip("\n")
    except OSError:
        return None


def _matches(pairs, event):
    for key, op, value in pairs:
        if op not in ("==", "!="):
            continue
        attr = ATTR_RE.match(key)
        if attr:
            have = _attr(event, attr.group(1))
            hit = have is not None and _glob(value, have)
        elif key in MATCH_KEYS:
            hit = _glob(value, event.get(key) or "")
        else:
            return False
        if hit != (op == "=="):
            return False
    return True


def load_rules(files=None):
    """Every rule of ``files`` (default: ``rule_files()``), in order - read and parsed once per batch of events."""
    rules = []
    for path in rule_files() if files is None else files:
        with open(path) as fh:
            rules.extend(parse_rules(fh.read()))
    return rules


def assignments(event, files=None, rules=None):
    """``[(attribute, value)]``: the ``ATTR{name}="value"`` of the rules matching ``event``, in order."""
    out = []
    for pairs in load_rules(files) if rules is None else rules:
        if _matches(pairs, event):
            out.extend((ATTR_RE.match(k).group(1), _expand(v, event)) for k, op, v in pairs
                       if op in ("=", ":=") and ATTR_RE.match(k))
    return out


def _expand(program, event):
    return (program.replace("$$", "\0").replace("$kernel", event["KERNEL"]).replace("%k", event["KERNEL"])
            .replace("$name", event["NAME"]).replace("\0", "$"))


def programs(event, files=None, rules=None):
    """The RUN programs of the rules matching ``event`` (ACTION, SUBSYSTEM, KERNEL, NAME, DRIVERS)."""
    run = []
    for pairs in load_rules(files) if rules is None else rules:
        if not _matches(pairs, event):
            continue
        for key, op, value in pairs:
            if key == "RUN":
                if op in ("=", ":="):
                    run = []
                run.append(_expand(value, event))
    return run


def _log(line):
    log = os.path.join(os.path.dirname(os.path.abspath(st.state_path())), "uevents.log")
    with open(log, "a") as fh:
        fh.write(line + "\n")


def add_pci(devices, action="add"):
    """Emit ``action`` (add at boot, bind after a driver reload) for each PCI device: ``{address: its directory
    in the tree}``. The ATTR{...}= assignments of the matching rules are written to the device's files (as udevd
    does), then their RUN programs run. Returns [(address, what, result)]."""
    done = []
    files = rule_files()
    if not files:
        return done
    rules = load_rules(files)
    for address, devdir in sorted(devices.items()):
        event = {"ACTION": action, "SUBSYSTEM": "pci", "KERNEL": address, "NAME": "", "DRIVERS": "mlx5_core",
                 "DEVDIR": devdir}
        for name, value in assignments(event, rules=rules):
            try:
                with open(os.path.join(devdir, name), "w") as fh:
                    fh.write(value + "\n")
                result = "ok"
            except OSError as exc:
                result = "error: %s" % exc.strerror
            done.append((address, "ATTR{%s}=%s" % (name, value), result))
            _log("%s %s: ATTR{%s}=\"%s\" %s" % (action, address, name, value, result))
        env = dict(os.environ, ACTION=action, SUBSYSTEM="pci", PCI_SLOT_NAME=address)
        for program in programs(event, rules=rules):
            done.append((address, program, _run(program, env)))
            _log("%s %s: %s rc=%s" % (action, address, program, done[-1][2]))
    return done


def _run(program, env):
    try:
        return subprocess.run(shlex.split(program), env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=180, check=False).returncode
    except (OSError, subprocess.TimeoutExpired) as exc:
        return "error: %s" % exc


def boot_units(sysroot):
    """What systemd does at boot for the oneshot units enabled in multi-user.target (the lab has no systemd):
    each ExecStart of ``<sysroot>/etc/systemd/system/multi-user.target.wants/*.service``, in name order, split
    like systemd splits a command line (quotes kept together). Returns [(unit, command, rc)]."""
    wants = os.path.join(sysroot, "etc", "systemd", "system", "multi-user.target.wants")
    done = []
    for link in sorted(glob.glob(os.path.join(wants, "*.service"))):
        try:
            with open(link) as fh:
                text = fh.read()
        except OSError:
            continue
        section, oneshot, commands = None, False, []
        for line in text.splitlines():
            line = line.strip()
            if line.startswith("[") and line.endswith("]"):
                section = line[1:-1]
            elif section == "Service" and line.startswith("Type="):
                oneshot = line.split("=", 1)[1].strip() == "oneshot"
            elif section == "Service" and line.startswith("ExecStart="):
                commands.append(line.split("=", 1)[1].lstrip("-@+!"))
        if not oneshot:
            continue
        for command in commands:
            rc = _run(command, dict(os.environ))
            done.append((os.path.basename(link), command, rc))
            _log("boot %s: %s rc=%s" % (os.path.basename(link), command, rc))
    return done


def add_netdevs(netdevs):
    """Emit "add" for each netdev (after the tree has them); returns [(netdev, program, rc)]."""
    done = []
    files = rule_files()
    if not files:
        return done
    rules = load_rules(files)
    for name in netdevs:
        event = {"ACTION": "add", "SUBSYSTEM": "net", "KERNEL": name, "NAME": name, "DRIVERS": "mlx5_core"}
        env = dict(os.environ, ACTION="add", SUBSYSTEM="net", INTERFACE=name, DEVPATH="/class/net/" + name)
        for program in programs(event, rules=rules):
            done.append((name, program, _run(program, env)))
            _log("add %s: %s rc=%s" % (name, program, done[-1][2]))
    return done
