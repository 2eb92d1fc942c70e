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
- ``RUN+=`` / ``RUN=`` programs, run after the event's rules are read, in order, without a shell
  (udev splits the command line the same way), with ``$kernel``/``%k``, ``$name`` and ``$$``
  substituted and ACTION, SUBSYSTEM, INTERFACE, DEVPATH in the environment.

Each program run is appended to ``uevents.log`` beside the state file: ``add IF: PROGRAM rc=N``.
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


def _matches(pairs, event):
    for key, op, value in pairs:
        if op not in ("==", "!="):
            continue
        if key not in MATCH_KEYS:
            return False
        hit = _glob(value, event[key])
        if hit != (op == "=="):
            return False
    return True


def _expand(program, event):
    return (program.replace("$$", "\0").replace("$kernel", event["KERNEL"]).replace("%k", event["KERNEL"])
            .replace("$name", event["NAME"]).replace("\0", "$"))


def programs(event, files=None):
    """The RUN programs of the rules matching ``event`` (ACTION, SUBSYSTEM, KERNEL, NAME, DRIVERS)."""
    run = []
    for path in rule_files() if files is None else files:
        with open(path) as fh:
            text = fh.read()
        for pairs in parse_rules(text):
            if not _matches(pairs, event):
                continue
            for key, op, value in pairs:
                if key == "RUN":
                    if op in ("=", ":="):
                        run = []
                    run.append(_expand(value, event))
    return run


def add_netdevs(netdevs):
    """Emit "add" for each netdev (after the tree has them); returns [(netdev, program, rc)]."""
    done = []
    log = os.path.join(os.path.dirname(os.path.abspath(st.state_path())), "uevents.log")
    files = rule_files()
    if not files:
        return done
    for name in netdevs:
        event = {"ACTION": "add", "SUBSYSTEM": "net", "KERNEL": name, "NAME": name, "DRIVERS": "mlx5_core"}
        env = dict(os.environ, ACTION="add", SUBSYSTEM="net", INTERFACE=name, DEVPATH="/class/net/" + name)
        for program in programs(event, files):
            try:
                rc = subprocess.run(shlex.split(program), env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, timeout=180, check=False).returncode
            except (OSError, subprocess.TimeoutExpired) as exc:
                rc = "error: %s" % exc
            done.append((name, program, rc))
            with open(log, "a") as fh:
                fh.write("add %s: %s rc=%s\n" % (name, program, rc))
    return done
