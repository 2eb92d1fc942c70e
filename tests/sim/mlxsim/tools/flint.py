"""flint (MFT) / mstflint: query a device or an image, burn an image.

Formats from fixtures/real/flint_query_cx7_1.txt, mstflint_query_cx6lx_1.txt,
mstflint_burn_cx4_fs3_1.txt, mstflint_burn_psid_mismatch_cx4lx_1.txt and FORMAT_FACTS.md.
Error wordings were checked against Debian's mstflint 4.21 on a host without a card.
"""
import sys

from .. import faults, families, image, model, versions
from .. import state as st
from ..common import data_file, out, outln, read_answer

FAIL = 1
SEM_MSG = ('Can not obtain Flash semaphore. You can run "flint -clear_semaphore -d <device>" to force semaphore '
           'unlock. See help for details.')
BURN_FAIL_MSG = "Firmware verifying failed!"

_NO_ARG = {"-y", "--yes", "--no", "--allow_psid_change", "--nofs", "--use_image_ps", "--ir", "-s", "--silent",
           "--qq", "--low_cpu", "--no_fw_ctrl", "--use_fw", "--override_cache_replacement",
           "--no_flash_verify", "--use_image_guids", "--use_image_rom", "--use_dev_rom", "--ignore_dev_data",
           "--allow_rom_change", "--blank_guids", "--flashed_version", "--latest_fw", "--striped_image",
           "--dual_image"}
_WITH_ARG = {"--guid", "--guids", "--mac", "--macs", "--uid", "--vsd", "--banks", "--log", "--psid",
             "--flash_params", "--private_key", "--public_key", "--key_uuid"}
_COMMANDS = {"q": "query", "query": "query", "b": "burn", "burn": "burn", "v": "verify", "verify": "verify"}


def _usage_short(tool):
    text = data_file("mstflint_help_4.21.txt")
    lines = text.split("\n")[:26]
    return "\n".join(lines).replace("MstFlint", "MstFlint" if tool == "mstflint" else "flint") + "\n"


def _help(tool):
    text = data_file("mstflint_help_4.21.txt")
    return text if tool == "mstflint" else text.replace("MstFlint", "flint")


class Opts:
    def __init__(self):
        self.device = None
        self.image = None
        self.yes = False
        self.no = False
        self.allow_psid_change = False
        self.clear_semaphore = False
        self.cmd = None
        self.params = []


def parse(tool, args):
    o = Opts()
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-d", "--device"):
            i += 1
            o.device = args[i] if i < len(args) else ""
        elif a in ("-i", "--image"):
            i += 1
            o.image = args[i] if i < len(args) else ""
        elif a in ("-y", "--yes"):
            o.yes = True
        elif a == "--no":
            o.no = True
        elif a == "--allow_psid_change":
            o.allow_psid_change = True
        elif a in ("--clear_semaphore", "-clear_semaphore"):
            o.clear_semaphore = True
        elif a in ("-v", "--version"):
            o.cmd = "version"
            return o
        elif a in ("-h", "--help", "--hh"):
            o.cmd = "help"
            return o
        elif a in _NO_ARG:
            pass
        elif a in _WITH_ARG:
            i += 1
        elif a.startswith("-"):
            raise ValueError(a)
        elif o.cmd is None:
            o.cmd = a
        else:
            o.params.append(a)
        i += 1
    return o


def rom_version(text):
    """A ROM version as flint prints it: the numbers without zero padding ("3.6.0102" -> "3.6.102"); mlxfwmanager
    pads the third to 4 digits instead (fwmanager._rom_ver)."""
    parts = str(text).split(".")
    return ".".join(str(int(p)) if p.isdigit() else p for p in parts)


def rom_order(roms):
    """The ROMs in the order flint prints them: UEFI, then PXE (every real query: flint_query_cx7_1.txt,
    mstflint_query_cx6lx_1.txt, flint_query_cx4_lenovo_1.txt, mstflint_query_cx4_cx4lx_oem_1.txt), then any other
    ROM in the order the card lists it [invented: no capture shows a third ROM in flint's Rom Info]."""
    rank = {"UEFI": 0, "PXE": 1}
    return [r for _i, r in sorted(enumerate(roms), key=lambda ir: (rank.get(ir[1][0], 2), ir[0]))]


def _fmt_rom(roms):
    lines = []
    for r in rom_order(roms):
        rtype, ver, cpu = (list(r) + ["", "", ""])[:3]
        # an old ROM prints no cpu field: the Dell image's UEFI 14.9.50 / PXE 3.4.729
        # (mstflint_query_cx4_cx4lx_oem_1.txt), the HPE image's PXE 3.5.110 (flint_query_hpe_cx4lx_1.txt)
        lines.append("type=%s version=%s" % (rtype, rom_version(ver)) + (" cpu=%s" % cpu if cpu else ""))
    return lines


def _print_info(kind, data, full, tool):
    """kind: 'device' or 'image'."""
    outln("%-23s%s" % ("Image type:", data["image_type"]))
    outln("%-23s%s" % ("FW Version:", data["fw"]))
    if data.get("running") and data["running"] != data["fw"]:
        outln("%-23s%s" % ("FW Version(Running):", data["running"]))
    if data.get("date"):
        outln("%-23s%s" % ("FW Release Date:", data["date"]))
    if full:
        if data.get("part_number"):
            outln("%-23s%s" % ("Part Number:", data["part_number"]))
        if data.get("description"):
            outln("%-23s%s" % ("Description:", data["description"]))
    outln("%-23s%s" % ("Product Version:", data.get("product_version") or data["fw"]))
    roms = _fmt_rom(data.get("roms", []))
    if roms:
        outln("%-23s%s" % ("Rom Info:", roms[0]))
        for r in roms[1:]:
            outln(" " * 23 + r)
    outln("Description:           UID                GuidsNumber")
    outln("%-23s%-24s%d" % ("Base GUID:", data["guid"], data["uids"]))
    outln("%-23s%-24s%d" % ("Base MAC:", data["mac"], data["uids"]))
    outln("%-23s%s" % ("Image VSD:", "N/A"))
    outln("%-23s%s" % ("Device VSD:", "N/A"))
    outln("%-23s%s" % ("PSID:", data["psid"]))
    if data.get("orig_psid") and data["orig_psid"] != data["psid"]:
        outln("%-23s%s" % ("Orig PSID:", data["orig_psid"]))
    outln("%-23s%s" % ("Security Attributes:", data.get("security", "secure-fw")))
    if kind == "image" and data["image_type"] != "FS3":
        # FS4 images only: an FS3 image's query ends at Security Attributes (fixtures/real/mstflint_query_image_cx4lx_1.txt)
        outln("%-23s%d" % ("Security Ver:", 0))
    if full:
        outln("%-23s%s" % ("Default Update Method:", "fw_ctrl"))
        if kind == "device":
            outln("%-23s%s" % ("Life cycle:", "GA SECURED"))
            outln("%-23s%s" % ("Secure Boot Capable:", "Enabled"))


def _device_data(state, card):
    return {"image_type": families.of(card)["image_type"], "fw": card["fw"]["burned"],
            "running": card["fw"]["running"], "date": card["fw"]["release_date"],
            "part_number": card["name"], "description": card["description"],
            "product_version": card["fw"].get("product_version"),
            "roms": card["fw"].get("burned_roms", card["fw"]["roms"]), "guid": card["base_guid"],
            "mac": card["base_mac"], "uids": card["uids"], "psid": faults.effective_psid(state, card),
            # the board's manufacturing PSID, printed as Orig PSID while the image's differs: a Huawei card on NVIDIA's
            # image (flint_query_orig_psid_cx4lx_1.txt); a Dell card cross-flashed the same way shows none
            # (mstflint_query_cx4_cx4lx_oem_1.txt) - so a card spec's "board_psid", not the PSID it was built with
            "orig_psid": card.get("board_psid"), "security": card["fw"].get("security", "secure-fw")}


def _image_data(meta):
    roms = [[k, v, "AMD64" if k == "PXE" else "AMD64,AARCH64"] for k, v in sorted(
        meta.get("roms", {}).items(), key=lambda kv: (kv[0] != "UEFI", kv[0]))]
    uids = 16
    for fam in families.FAMILIES.values():
        if fam["dev_id"] == meta.get("device_id"):
            uids = fam["uids"]
    uids = meta.get("uids") or uids                 # the image's own GuidsNumber (mkimage --guids)
    return {"image_type": meta.get("image_type", "FS4"), "fw": meta["fw_version"], "date": meta.get("release_date"),
            # an image file's Product Version is its release name, rel-14_32_1912 for FW 14.32.1912
            # (mstflint_query_image_cx4lx_1.txt), unless the image carries another
            "product_version": meta.get("product_version") or "rel-" + str(meta["fw_version"]).replace(".", "_"),
            "part_number": (meta.get("part_numbers") or [""])[0], "description": meta.get("description"),
            "roms": roms, "guid": "N/A", "mac": "N/A", "uids": uids, "psid": meta["psid"],
            "security": meta.get("security", "secure-fw")}


def _open_device(tool, host, state, dev):
    found = host.resolve(dev, allow_mst=(tool == "flint"))
    if found is None:
        outln("-E- Cannot open Device: %s. No such file or directory. MFE_CR_ERROR" % dev)
        return None
    card, _f = found
    if faults.fires(state, "semaphore_held", card):
        outln("-E- Cannot open Device: %s. %s" % (dev, SEM_MSG))
        return None
    return found


def _ask(o, question=None):
    out("\n %s ? (y/n) [n] : " % (question or "Do you want to continue"))
    if o.yes:
        outln("y")
        return True
    if o.no:
        outln("n")
        return False
    ans = read_answer()
    if ans.lower() in ("y", "yes"):
        return True
    outln("-E- Aborted by user")
    return False


def cmd_query(tool, state, host, o):
    full = bool(o.params and o.params[0] == "full")
    if o.params and not full:
        outln('-E- Unknown option "%s" for the "query" command. you can use full.' % o.params[0])
        return FAIL
    if o.device is not None:
        found = _open_device(tool, host, state, o.device)
        if found is None:
            return FAIL
        st.sim_sleep(1.5)
        _print_info("device", _device_data(state, found[0]), full, tool)
        return 0
    try:
        meta = image.read(o.image)
    except image.ImageError as e:
        if e.kind == "novalid":
            outln("-E- Failed to query image: %s. %s" % (o.image, e))
        else:
            outln("-E- Cannot open Image: %s. %s" % (o.image, e))
        return FAIL
    _print_info("image", _image_data(meta), full, tool)
    return 0


def _family_name(dev_id):
    for name, fam in families.FAMILIES.items():
        if fam["dev_id"] == dev_id:
            return name
    return "Unknown (%s)" % dev_id


def _cmp(a, b):
    pa, pb = versions.parse(a), versions.parse(b)
    return (pa > pb) - (pa < pb)


def cmd_burn(tool, state, host, o):
    if o.device is None or o.image is None:
        outln('-E- Command "burn" requires both image and device to be specified.')
        return FAIL
    if not image.exists(o.image):
        outln('-E- Cannot open Image: %s. Can not open file "%s" - No such file or directory' % (o.image, o.image))
        return FAIL
    found = _open_device(tool, host, state, o.device)
    if found is None:
        return FAIL
    card, _fidx = found
    try:
        meta = image.read(o.image)
    except image.ImageError as e:
        outln("-E- Cannot open Image: %s. %s" % (o.image, e))
        return FAIL
    fam = families.of(card)
    if meta.get("device_id") != fam["dev_id"]:
        outln("-E- Burning FS4 image failed: FW image file cannot be programmed to device %s, it is intended for: "
              "%s only" % (card["family"], _family_name(meta.get("device_id"))))
        return FAIL
    dev_psid = faults.effective_psid(state, card)
    psid_differs = meta["psid"] != dev_psid
    cur = card["fw"]["burned"]
    new = meta["fw_version"]
    if psid_differs:
        out("Done.")
    outln("\n    Current FW version on flash:  %s" % cur)
    outln("    New FW version:               %s" % new)
    c = _cmp(cur, new)
    if c >= 0:
        outln("\n    Note: The new FW version is %s the current FW version on flash." %
              ("the same as" if c == 0 else "older than"))
        if not _ask(o):
            return FAIL
    outln()
    if psid_differs:
        if not o.allow_psid_change:
            outln()
            outln("-E- PSID mismatch. The PSID on flash (%s) differs from the PSID in the given image (%s)."
                  % (dev_psid, meta["psid"]))
            return FAIL
        outln('\n    You are about to replace current PSID on flash - "%s" with a different PSID - "%s".'
              % (dev_psid, meta["psid"]))
        outln("    Note: It is highly recommended not to change the PSID.")
        if not _ask(o):
            return FAIL
    out("\rFSMST_INITIALIZE -   OK          \n")
    sys.stdout.flush()
    if faults.fires(state, "burn_fail", card):
        st.sim_sleep(45)
        out("\rWriting Boot image component -  47%\n")
        outln("-E- Burning FS4 image failed: %s" % BURN_FAIL_MSG)
        return FAIL
    st.sim_sleep(90)
    out("\rWriting Boot image component -   OK          \n")
    with st.transaction() as s:
        c2 = next(x for x in s["cards"] if x["id"] == card["id"])
        c2["fw"]["burned"] = new
        c2["fw"]["product_version"] = meta.get("product_version")
        model.count(c2, "burns")
        c2["fw"]["burned_roms"] = _image_data(meta)["roms"] or c2["fw"].get("burned_roms", [])
        if meta.get("release_date"):
            c2["fw"]["release_date"] = meta["release_date"]
        if psid_differs:
            c2["psid"] = meta["psid"]
            c2["psid_changed"] = True
    outln("-I- To load new FW run %s or reboot machine." % ("mlxfwreset" if tool == "flint" else "mstfwreset"))
    return 0


def run(tool, args):
    state = st.load()
    host = model.Host(state)
    try:
        o = parse(tool, args)
    except ValueError as e:
        sys.stdout.flush()
        sys.stderr.write("%s: unrecognized option `%s'\n" % (tool, e))
        sys.stderr.flush()
        out(_usage_short(tool))
        outln("-E- Bad input parameter")
        return FAIL
    if o.cmd == "version":
        if tool == "flint":
            outln("flint, mft %s, built on Nov 14 2024, 10:28:15. Git SHA Hash: 0bd3c6f"
                  % versions.mft_version(state))
        else:
            outln("mstflint, mstflint %s, Git SHA Hash: N/A" % versions.mstflint_version(state))
        return 0
    if o.cmd == "help":
        out(_help(tool))
        return 0
    if o.device is None and o.image is None:
        outln("-E- Please specify either Device or Image.")
        return FAIL
    if o.clear_semaphore:
        if o.cmd is not None:
            outln("-E- No command is allowed when -clear_semaphore flag is given.")
            return FAIL
        found = host.resolve(o.device or "", allow_mst=(tool == "flint"))
        if found is None:
            outln("-E- Cannot open Device: %s. No such file or directory. MFE_CR_ERROR" % o.device)
            return FAIL
        with st.transaction() as s:
            s["faults"] = [f for f in s.get("faults", [])
                           if not (f.get("type") == "semaphore_held" and faults.card_matches(f, found[0]))]
        return 0
    if o.cmd is None:
        outln("-E- No command found.")
        return FAIL
    cmd = _COMMANDS.get(o.cmd)
    if cmd is None:
        outln("Invalid command: %s" % o.cmd)
        out(_usage_short(tool))
        return FAIL
    if cmd == "query":
        return cmd_query(tool, state, host, o)
    if cmd == "burn":
        return cmd_burn(tool, state, host, o)
    outln("-E- %s: command not implemented by the simulator (mlxsim)" % o.cmd)
    return FAIL
