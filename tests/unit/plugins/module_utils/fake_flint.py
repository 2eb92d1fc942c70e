"""Fake flint / mstflint for the tests: the real captures (flint_query_cx7_1.txt, mstflint_query_cx6lx_1.txt,
mstflint_burn_*.txt) with only the version / PSID lines changed; every argv is recorded."""
import collections
import re
import threading

from _paths import REAL
from ansible_collections.gpufabric.mlnx.plugins.module_utils._runner import Runner

CX7_PSID = "MT_0000001244"      # flint_query_cx7_1.txt
CX7_FW = "28.42.1000"
CX6LX_PSID = "MT_0000000575"    # mstflint_query_cx6lx_1.txt
CX6LX_FW = "26.33.1048"


# ---------------------------------------------------------------- captures

def _capture_body(name, after=None):
    """The tool output of a capture: comment/prompt lines dropped, author's indent removed."""
    lines = (REAL / name).read_text().splitlines()
    if after:
        lines = lines[[i for i, line in enumerate(lines) if line.startswith(after)][0] + 1:]
    body = [line for line in lines if not line.startswith("#")]
    return "\n".join(body) + "\n"


CX7_QUERY = _capture_body("flint_query_cx7_1.txt")
CX7_QUERY = CX7_QUERY[CX7_QUERY.index("Image type:"):]
CX6LX_QUERY = _capture_body("mstflint_query_cx6lx_1.txt", after="# mstflint -d")


def _burn_capture():
    lines = (REAL / "mstflint_burn_cx4_fs3_1.txt").read_text().splitlines()
    body = [line[8:] for line in lines if not line.startswith("#") and "root@" not in line]
    return "\n".join(body) + "\n"


BURN_OK = _burn_capture()
PSID_MISMATCH_LINE = [line for line in (REAL / "mstflint_burn_psid_mismatch_cx4lx_1.txt").read_text().splitlines()
                      if line.startswith("-E- PSID mismatch")][0]


def render_query(template, psid, burned, running=None, part_number=None):
    """A capture with its PSID and FW Version replaced (and the lines flint adds when it has them)."""
    text = re.sub(r"(?m)^PSID:(\s+)\S+", lambda m: "PSID:%s%s" % (m.group(1), psid), template)
    fw_line = "%-23s%s" % ("FW Version:", burned)
    if running and running != burned:
        fw_line += "\n%-23s%s" % ("FW Version(Running):", running)
    text = re.sub(r"(?m)^FW Version:\s+\S+", fw_line, text)
    if part_number:
        text = re.sub(r"(?m)^Product Version:", "%-23s%s\nProduct Version:" % ("Part Number:", part_number), text)
    return text


# ---------------------------------------------------------------- the fake tool

def which_from(*names):
    return lambda name: "/usr/bin/" + name if name in names else None


MFT = ("mlxconfig", "flint", "lspci")
MSTFLINT = ("mstconfig", "mstflint", "lspci")


class FakeFlint:
    """flint / mstflint with devices and image files in memory; every argv is recorded.

    ``devices``: {address: {psid, burned, running, part_number?}}. ``images``: {path: (psid, version)}.
    ``burn_fail``: {address: (rc, stdout)} answered to that device's burn. ``stuck``: devices whose
    burn "succeeds" but leaves the flash unchanged.
    """

    def __init__(self, devices, images=None, template=CX7_QUERY, burn_fail=None, stuck=()):
        self.devices = {dev: dict(state) for dev, state in devices.items()}
        self.images = dict(images or {})
        self.template = template
        self.burn_fail = dict(burn_fail or {})
        self.stuck = set(stuck)
        self.calls = []
        self._lock = threading.Lock()

    def __call__(self, argv, env, timeout, data):
        with self._lock:
            self.calls.append(list(argv))
        args = argv[1:]
        assert env["LANG"] == "C"
        if args[:1] == ["-d"] and args[2:] == ["q"]:
            dev = self.devices.get(args[1])
            if dev is None:
                return 3, "-E- Cannot open %s: No such file or directory\n" % args[1], ""
            return 0, render_query(self.template, dev["psid"], dev["burned"], dev["running"],
                                   dev.get("part_number")), ""
        if args[:1] == ["-i"] and args[2:] == ["q"]:
            psid, version = self.images[args[1]]
            return 0, render_query(self.template, psid, version), ""
        if args[-1] == "burn":
            opts = dict(zip(args[0:4:2], args[1:4:2]))
            dev = self.devices[opts["-d"]]
            if opts["-d"] in self.burn_fail:
                return self.burn_fail[opts["-d"]]
            psid, version = self.images[opts["-i"]]
            if psid != dev["psid"] and "--allow_psid_change" not in args:
                return 1, "-E- PSID mismatch. The PSID on flash (%s) differs from the PSID in the given image (%s).\n" \
                    % (dev["psid"], psid), ""
            out = BURN_OK.replace("12.28.2006", dev["burned"]).replace("12.28.2302", version)
            if opts["-d"] not in self.stuck:
                dev.update(psid=psid, burned=version)
            return 0, out, ""
        raise AssertionError("unexpected command %r" % (argv,))

    def count(self):
        return collections.Counter(tuple(call) for call in self.calls)


def make_runner(fake, family="mft", sleeps=None):
    return Runner(family, execute=fake, which=which_from(*(MFT if family == "mft" else MSTFLINT)),
                  sleep=(sleeps.append if sleeps is not None else (lambda s: None)))


def dev(psid=CX7_PSID, burned=CX7_FW, running=None, part_number=None):
    return dict(psid=psid, burned=burned, running=running or burned, part_number=part_number)
