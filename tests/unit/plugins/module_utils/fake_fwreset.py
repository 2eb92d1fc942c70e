"""Fake mlxfwreset / mstfwreset, flint / mstflint and mlxconfig / mstconfig over cards, for the tests.

mlxfwreset reset answers mlxfwreset_reset_cx7_1.txt, flint q flint_query_cx7_1.txt (versions changed), mstconfig -e q
mstconfig_e_query_cx4lx_1.txt; the mlxfwreset query is built from FORMAT_FACTS.md's row format (no real capture of it
exists). ``mgmt_host`` is what the management-interface detection reads on a host.
"""
import json

from _fakehost import FakeHost
from _paths import REAL
from ansible_collections.gpufabric.mlnx.plugins.module_utils import _devices as devices_
from unit.plugins.module_utils.fake_flint import CX7_PSID, CX7_QUERY, render_query
from unit.plugins.module_utils.test_mlxconfig_converge import cx4lx_query

A, A1, B, C = "0000:18:00.0", "0000:18:00.1", "0000:40:00.0", "0000:4f:00.0"
OLD, NEW = "28.42.1000", "28.43.1014"

# ---------------------------------------------------------------- tool output

LEVEL_TEXT = [
    (0, 'Driver, PCI link, network link will remain up ("live-Patch")'),
    (1, 'Only ARM side will not remain up ("Immediate reset").'),
    (3, "Driver restart and PCI reset"),
    (4, "Warm Reboot"),
]


def _row(number, text, status, default=False):
    """FORMAT_FACTS.md: ``"{level}: {desc:<62}-{status:<14}{(default)}"``."""
    return "{0}: {1:<62}-{2:<14}{3}".format(number, text, status, "(default)" if default else "")


def fwreset_query(supported=(3, 4), default=3):
    lines = ["Reset-levels:"]
    lines += [_row(n, t, "Supported" if n in supported else "Not Supported", n == default) for n, t in LEVEL_TEXT]
    lines += ["", "Reset-types (relevant only for reset-levels 1,3,4):",
              _row(0, "Full chip reset", "Supported", True),
              _row(1, "Phy-less reset (keep network port active during reset)", "Supported"),
              "", "Reset-sync (relevant only for reset-level 3):",
              _row(0, "Tool is the owner", "Supported", True),
              _row(1, "Driver is the owner", "Not supported")]   # lowercase s in sync rows
    return "\n".join(lines) + "\n"


def _reset_capture():
    """The real ``mlxfwreset -d ... reset -y`` output (prompt lines and the flint query after it dropped)."""
    lines = (REAL / "mlxfwreset_reset_cx7_1.txt").read_text().splitlines()
    start = [i for i, line in enumerate(lines) if "# mlxfwreset" in line][0] + 1
    end = [i for i, line in enumerate(lines) if "# flint" in line][0]
    return "\n".join(lines[start:end]).rstrip("\n") + "\n"


RESET_OK = _reset_capture()


def nv_query(pending=False, device="19:00.0"):
    """The real ConnectX-4 Lx ``-e q`` with nothing pending, or with SRIOV_EN pending."""
    text = cx4lx_query(sriov_cur="False(0)" if pending else "True(1)", device=device)
    # The captured card also has ROCE_CONTROL and LEGACY_BOOT_PROTOCOL pending: settle them.
    text = text.replace("DEVICE_DEFAULT(0)    ROCE_ENABLE(2)", "ROCE_ENABLE(2)       ROCE_ENABLE(2)")
    return text.replace("PXE(1)               NONE(0)", "NONE(0)              NONE(0)")


def nv_json(pending, path, device):
    params = {"SRIOV_EN": {"read_only": False, "modified": True, "default_value": "False(0)",
                           "current_value": "False(0)" if pending else "True(1)", "next_value": "True(1)"}}
    doc = {"Device #1": {"description": "x", "device": device, "device_type": "ConnectX7", "name": "MCX75310AAS-NEA_Ax",
                         "tlv_configuration": params}}
    with open(path, "w") as stream:
        json.dump(doc, stream, indent="\t", sort_keys=True)
    return "Query output saved to %s successfully\n" % path


class Card:
    def __init__(self, burned=OLD, running=None, nv_pending=(), levels=(3, 4), default=3, reset_fail=None,
                 stuck=False, vanish=False, functions=1):
        self.functions = functions             # PCI functions lspci lists for the card
        self.burned, self.running = burned, running or burned
        self.nv_pending = set(nv_pending)      # functions with SRIOV_EN pending
        self.levels, self.default = levels, default
        self.reset_fail, self.stuck, self.vanish = reset_fail, stuck, vanish
        self.gone = False


MFT_TOOLS = ("mlxconfig", "flint", "mlxfwreset")
MSTFLINT_TOOLS = ("mstconfig", "mstflint", "mstfwreset")
MFT = MFT_TOOLS + ("lspci",)
MSTFLINT = MSTFLINT_TOOLS + ("lspci",)


class CardsHost(FakeHost):
    """mlxfwreset/mstfwreset, flint/mstflint, mlxconfig/mstconfig over cards keyed by function 0 (files under
    ``root`` when given)."""

    def __init__(self, cards, unreadable=(), root=None):
        super().__init__(root, {name: self.tool(name) for name in MFT_TOOLS + MSTFLINT_TOOLS})
        self.cards = cards
        self.unreadable = set(unreadable)

    def card(self, address):
        card = self.cards.get(devices_.card_of(address) + ".0")
        return None if card is None or card.gone else card

    def tool(self, name):
        return lambda args: self.answer(name, args)

    def answer(self, tool, args):
        card = self.card(args[1])
        if card is None or args[1] in self.unreadable:
            return 3, "-E- Failed to open the device\n", ""
        if tool in ("mlxfwreset", "mstfwreset"):
            if args[2:] == ["q"]:
                return 0, fwreset_query(card.levels, card.default), ""
            assert args[2:4] == ["reset", "-l"] and args[5:] == ["-y"], args
            if card.reset_fail:
                return card.reset_fail
            if int(args[4]) not in card.levels:
                return 1, "-E- Reset-level '%s' is not supported in the current state of this device.\n" % args[4], ""
            if not card.stuck:
                card.running = card.burned
                card.nv_pending = set()
            card.gone = card.vanish
            return 0, RESET_OK, ""
        if tool in ("flint", "mstflint"):
            assert args[2:] == ["q"], args
            return 0, render_query(CX7_QUERY, CX7_PSID, card.burned, card.running), ""
        pending = args[1] in card.nv_pending
        if "-j" in args:
            return 0, nv_json(pending, args[args.index("-j") + 1], args[1]), ""
        assert args[2:] == ["-e", "q"], args
        return 0, nv_query(pending, args[1]), ""

    def resets(self):
        return sorted(c for c in self.calls if "reset" in c)

    def discover(self, _runner):
        return [{"address": addr[:-1] + str(fn), "part_number": "MCX75310AAS-NEAT"}
                for addr, card in sorted(self.cards.items()) if not card.gone for fn in range(card.functions)]


def make_runner(fake, family="mstflint", execute=None):
    """A Runner of ``family`` on the fake (``execute``: a wrapper of the fake's answers)."""
    return fake.runner(family, installed=MFT if family == "mft" else MSTFLINT, execute=execute)


def mgmt_host(root, default_route="bond0"):
    """A FakeHost with what mgmt_state and mgmt_cards read (``with_mgmt``)."""
    return with_mgmt(FakeHost(root), default_route)


def with_mgmt(fake, default_route="bond0"):
    """``fake`` (with a root) and what mgmt_state and mgmt_cards read: bond0 (198.18.0.10) over two ConnectX ports,
    one of them with no PCI function in sysfs (found through ibdev2netdev -v), and eth9 (10.0.0.1), a virtual
    interface; the default route goes out of ``default_route``."""
    def ip(args):
        if args == ["-o", "addr", "show"]:
            return 0, ("4: bond0    inet 198.18.0.10/26 brd 198.18.0.63 scope global bond0\n"
                       "5: eth9    inet 10.0.0.1/8 scope global eth9\n"), ""
        assert args[1:] == ["-o", "route", "show", "default"], args
        return 0, "default via 198.18.0.1 dev %s proto static\n" % default_route if args[0] == "-4" else "", ""

    def ibdev2netdev(args):
        if args == ["-v"]:
            return 0, ("0000:18:00.0 mlx5_0 (MT4129 - MCX75310AAS-NEAT) ConnectX-7 fw 28.39.1002 port 1 (ACTIVE) ==> "
                       "enp24s0np0 (Up)\n0000:40:00.1 mlx5_1 (MT4129 - MCX75310AAS-NEAT) ConnectX-7 fw 28.39.1002 "
                       "port 1 (ACTIVE) ==> enp64s0np0 (Up)\n"), ""
        return 0, "mlx5_0 port 1 ==> enp24s0np0 (Up)\nmlx5_1 port 1 ==> enp64s0np0 (Up)\n", ""

    fake.tools.update(ip=ip, ibdev2netdev=ibdev2netdev)
    fake.netdev("enp24s0np0", "mlx5_core", pci="0000:18:00.0")
    fake.netdev("enp64s0np0", "mlx5_core")
    fake.netdev("eth9")
    fake.put("/sys/class/net/bond0/bonding/slaves", "enp24s0np0 enp64s0np0")
    return fake
