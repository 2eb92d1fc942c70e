"""Tool versions and the output-layout choices that depend on them.

Layout facts are from tests/fixtures/FORMAT_FACTS.md (checked against the mstflint tags):
the mlxconfig table changed at 4.22, 4.25, 4.26, 4.31 and 4.36, and MFT builds run about
one minor ahead of the mstflint tag (MFT 4.30.1 already prints the 4.31 header).
"""
import os
import re

DEFAULT_MFT = "4.30.1-1210"
DEFAULT_MSTFLINT = "4.21.0"


def parse(text):
    nums = [int(x) for x in re.findall(r"\d+", str(text))[:3]]
    while len(nums) < 3:
        nums.append(0)
    return tuple(nums)


def mft_version(state):
    return os.environ.get("MLXSIM_MFT_VERSION") or state.get("mft_version") or DEFAULT_MFT


def mstflint_version(state):
    return os.environ.get("MLXSIM_MSTFLINT_VERSION") or state.get("mstflint_version") or DEFAULT_MSTFLINT


def tool_version(state, mft):
    """Version string of the running tool (MFT name or mstflint name)."""
    return mft_version(state) if mft else mstflint_version(state)


def effective(version_text, mft):
    """The mstflint-equivalent version whose output an (MFT or mstflint) build prints."""
    v = parse(version_text)
    if mft and v[:2] == (4, 30) and v[2] >= 1:
        return (4, 31, 0)
    return v


# Parameters an older tool does not know (it lists none and refuses them by name as unknown): absent from the
# MFT 4.22-4.24 ConnectX-5 listing (fixtures/real/mlxconfig_e_query_cx5_partial_1.txt), present in the 4.26-4.30
# ConnectX-4 Lx listing (PF_SD_GROUP, mstconfig_e_query_cx4lx_1.txt) and the MFT 4.30.1 ConnectX-5 one
# (mlxconfig_query_cx5_1.txt). The release in between that added them is not public: 4.25 [invented].
KNOWN_SINCE = {"PHY_AUTO_NEG": (4, 25, 0), "PHY_RATE_MASK_OVERRIDE": (4, 25, 0), "PF_SD_GROUP": (4, 25, 0)}


class ConfigLayout:
    """Column layout of the mlxconfig/mstconfig query/set table."""

    def __init__(self, v):
        self.v = v
        if v < (4, 22, 0):
            self.key = "4.21"
        elif v < (4, 25, 0):
            self.key = "4.22"
        elif v < (4, 26, 0):
            self.key = "4.25"
        elif v < (4, 31, 0):
            self.key = "4.26"
        elif v < (4, 36, 0):
            self.key = "4.31"
        else:
            self.key = "4.36"
        self.label_w = 16 if self.key in ("4.21", "4.22", "4.25") else 20
        self.name_w = {"4.21": 36, "4.36": 48}.get(self.key, 44)
        self.val_w = {"4.21": 16, "4.22": 16, "4.25": 16, "4.36": 33}.get(self.key, 20)
        self.has_ro = self.key not in ("4.21", "4.22")
        self.json = v >= (4, 31, 0)
        self.new_unknown_text = v >= (4, 34, 0)
        self.ro_set_error = v >= (4, 36, 0)

    def knows(self, base):
        """Whether this tool version knows the parameter (KNOWN_SINCE)."""
        return self.v >= KNOWN_SINCE.get(base, (0, 0, 0))

    def space_needed(self, width):
        if self.key in ("4.21", "4.22", "4.25"):
            return width > 16
        return width >= self.val_w

    def header(self, show_default, show_current, show_new):
        k = self.key
        c = "Configurations:"
        nb = "Next Boot"
        if k == "4.36":
            out = "%-56s" % c
            if show_default:
                out += "%-33s " % "Default"
            if show_current:
                out += "%-33s " % "Current"
            out += "%-33s" % nb
            if show_new:
                out += " %-33s" % "New"
            return out
        if k == "4.21":
            both, one, nxt = "%-16s%36s%16s%18s", "%-16s%36s%18s", "%-16s%38s"
            cur = one
        elif k in ("4.22", "4.25"):
            both, one, nxt = "%-16s%44s%16s%18s", "%-16s%44s%18s", "%-16s%46s"
            cur = "%-16s%46s%18s"
        elif k == "4.26":
            both, one, nxt = "%-20s%39s%21s%23s", "%-20s%39s%23s", "%-20s%41s"
            cur = "%-20s%41s%18s"
        else:
            both, one, nxt = "%-20s%44s%20s%18s", "%-20s%44s%18s", "%-20s%46s"
            cur = "%-20s%46s%18s"
        if show_default and show_current:
            out = both % (c, "Default", "Current", nb)
        elif show_default:
            out = one % (c, "Default", nb)
        elif show_current:
            out = cur % (c, "Current", nb)
        else:
            out = nxt % (c, nb)
        if show_new:
            out += "       %s" % "New"
        return out

    def row_prefix(self, modified, read_only):
        if self.has_ro:
            return ("*" if modified else " ") + ("RO" if read_only else "  ") + "     "
        return ("*" if modified else " ") + "        "

    def row(self, name, values, modified=False, read_only=False):
        out = self.row_prefix(modified, read_only) + ("%-*s" % (self.name_w, name))
        width = 0
        for i, val in enumerate(values):
            if i and self.space_needed(width):
                out += " "
            cell = "%-*s" % (self.val_w, val)
            width = len(cell)
            out += cell
        return out
