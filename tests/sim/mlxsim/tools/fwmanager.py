"""mlxfwmanager (MFT) / mstfwmanager (mstflint) / mlxup: query, compare with an image, update.

Formats from fixtures/real/mlxup_*.txt, mlxfwmanager_*.txt and FORMAT_FACTS.md; the query
block, the XML, the summary lines and the exit codes follow the mstflint mlxfwupdate sources'
behaviour (facts, no code copied). Devices are burnt one after another like the real tool.

mlxup is the same tool with its firmware inside: its default action is the update (mlxup_update_cx7_1.txt); without
-i/-D it compares against (and burns) the images it carries, one per family at the version of MLXUP_BUNDLE (the FW
versions of the real mlxup 4.30 release-notes list, fixtures/real/mlxup_online_cx6lx_1.txt; an image for the card's
own PSID, not an OEM one; ROM versions only where a real capture shows them [the rest invented]). `--help` prints the
real help (mlxup_help_1.txt); `-l` lists the images it carries (mlxup_list()). `--online` and the download options
need NVIDIA's server: refused with `-E- ... no network in the simulator` and exit code 24 (the tool's "online
connection error" code; the message is invented) unless MLXSIM_NVIDIA_SERVER=reachable [invented]; then `--online`
uses the server's images and prints its release-notes list as the capture.
"""
import os
import re
import sys

from .. import faults, image, model, versions
from .. import state as st
from ..common import out, read_answer

BURN_FAIL_MSG = "Firmware verifying failed!"


DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data")
# The release-notes list NVIDIA's server sent mlxup 4.30 (data/mlxup_online_release_notes.txt, verbatim from
# fixtures/real/mlxup_online_cx6lx_1.txt): the newest firmware per family, which is also what mlxup 4.30 carries.
with open(os.path.join(DATA, "mlxup_online_release_notes.txt")) as _fh:
    RELEASE_NOTES = _fh.read()
SERVER_FW = {name.upper(): ver for name, ver in re.findall(r"^ +\d+- (\S+) \(([\d.]+)\):", RELEASE_NOTES, re.M)}
# ROM versions of the images, only where a capture shows them
ROMS = {"ConnectX6LX": {"PXE": "3.7.500", "UEFI": "14.36.16"}}                # mlxup_query_cx6lx_1.txt


def server_entry(family):
    """What NVIDIA's server offers a family (its release-notes list) as (FW version, ROMs), or None."""
    ver = SERVER_FW.get(family.upper())
    return None if ver is None else (ver, ROMS.get(family, {}))


# family -> (FW version, ROMs) of the image mlxup 4.30 carries: the server's of its time (ROMs N/A for ConnectX-7,
# mlxup_query_cx7_1.txt)
MLXUP_BUNDLE = {fam: server_entry(fam) for fam in ("ConnectX4", "ConnectX4LX", "ConnectX5", "ConnectX6", "ConnectX6DX",
                                                   "ConnectX6LX", "ConnectX7", "BlueField2", "BlueField3")}
# `--online` reaches NVIDIA's server only when the simulator is told it may (the lab has no route out) [invented]
SERVER_ENV = "MLXSIM_NVIDIA_SERVER"
ONLINE_OPTS = ("--online", "--online-query-psid", "--download", "--download-default", "--get-download-opt")
ONLINE_RC = 24


def mlxup_help():
    """The real `mlxup --help` (fixtures/real/mlxup_help_1.txt) as far as the simulator keeps it."""
    with open(os.path.join(DATA, "mlxup_help.txt")) as fh:
        return fh.read()


def mlxup_list():
    """`mlxup -l`: a row per image the bundle carries - every card model the simulator knows whose family the bundle
    has, at the bundle's version - in the columns of fixtures/real/mlxup_list_and_download_1.txt (name 26, PSID 19,
    `FW <version>` 29, the ROMs or `--` 15, the description cut at 110 characters and `...`). The real listing's
    header is not in the capture (a grep): none is printed **[invented]**."""
    from .. import profiles
    rows = []
    for card in profiles.MODELS:
        entry = MLXUP_BUNDLE.get(card["family"])
        if entry is None or not nvidia_psid(card["psid"]):
            continue
        roms = " ".join("%s %s" % kv for kv in sorted(entry[1].items())) or "--"
        desc = card["description"] if len(card["description"]) <= 110 else card["description"][:110] + "..."
        rows.append("%-26s%-19s%-29s%-15s%s" % (card["name"], card["psid"], "FW " + entry[0], roms, desc))
    return "\n".join(rows) + "\n"


def nvidia_psid(psid):
    """Whether NVIDIA's bundle and server carry images of this PSID: its own (MT_...), not an OEM's (DEL..., HP_...,
    LNV...), whose images come from the OEM [modelled: NVIDIA's firmware pages list MT_ PSIDs only - an OEM card is
    flashed with an NVIDIA image by its PSID's digits and --allow_psid_change, as in mstflint_query_cx4_cx4lx_oem_1.txt's
    source]."""
    return str(psid).startswith("MT_")


def bundle_images(host, state, online=False):
    """The images mlxup compares with: those it carries, or with `--online` those the server offers - for each card
    its own PSID's."""
    imgs = []
    for card in host.cards():
        entry = server_entry(card["family"]) if online else MLXUP_BUNDLE.get(card["family"])
        if entry and nvidia_psid(card["psid"]):
            imgs.append({"psid": card["psid"], "fw_version": entry[0], "roms": dict(entry[1]),
                         "device_id": None})
    return imgs


def err(text):
    sys.stdout.flush()
    sys.stderr.write(text)
    sys.stderr.flush()


class Opts:
    def __init__(self):
        self.devices = []
        self.query = False
        self.xml = False
        self.update = False
        self.image = None
        self.image_dir = None
        self.force = False
        self.yes = None   # None = interactive, True = -y, False = --no
        self.cmd = None
        self.online = False


def parse(args):
    o = Opts()
    i = 0
    while i < len(args):
        a = args[i]
        nxt = args[i + 1] if i + 1 < len(args) else None
        if a in ("-d", "--dev"):
            if nxt is None:
                raise ValueError("Missing argument for option -d")
            o.devices += [d for d in nxt.split(";") if d]
            i += 1
        elif a == "--query":
            o.query = True
        elif a == "--query-xml":
            o.query = True
            o.xml = True
        elif a == "--query-format":
            if nxt is None:
                raise ValueError("Missing argument for option --query-format")
            if nxt.lower() == "xml":
                o.xml = True
            elif nxt.lower() != "text":
                raise ValueError("-E- Value :'%s' is not valid, valid values are : XML | Text" % nxt)
            i += 1
        elif a in ("-u", "--update"):
            o.update = True
        elif a in ("-i", "--image-file"):
            if nxt is None:
                raise ValueError("Missing argument for option -i")
            o.image = nxt
            i += 1
        elif a in ("-D", "--image-dir"):
            if nxt is None:
                raise ValueError("Missing argument for option -D")
            o.image_dir = nxt
            i += 1
        elif a in ("-f", "--force"):
            o.force = True
        elif a in ("-y", "--yes"):
            o.yes = True
        elif a == "--no":
            o.yes = False
        elif a in ("-v", "--version"):
            o.cmd = "version"
        elif a in ("-h", "--help"):
            o.cmd = "help"
        elif a in ("-l", "--list-content"):
            o.cmd = "list"
        elif a == "--online":
            o.online = True
        elif a in ONLINE_OPTS:
            o.cmd = "online"
            if a in ("--online-query-psid", "--download", "--get-download-opt"):
                i += 1
        elif a in ("--log", "--no-progress", "--nofs", "--no_fw_ctrl", "--exe-rel-path", "--archive-names"):
            pass
        elif a in ("-L", "--log-file", "-o", "--outfile"):
            i += 1
        else:
            raise ValueError("-E- Unknown option: %s" % a)
        i += 1
    return o


def server_reachable():
    return os.environ.get(SERVER_ENV) == "reachable"


def _rom_ver(v):
    parts = [int(x) for x in str(v).split(".")]
    while len(parts) < 3:
        parts.append(0)
    return "%d.%d.%04d" % (parts[0], parts[1], parts[2])


def _cmp(a, b):
    pa, pb = versions.parse(a), versions.parse(b)
    return (pa > pb) - (pa < pb)


def _load_images(o):
    """-> (list of image metadata, error message or None)."""
    imgs = []
    if o.image:
        try:
            imgs.append(image.read(o.image))
        except image.ImageError:
            return None, "-E- Error parsing file: %s\n" % o.image
    if o.image_dir:
        try:
            names = sorted(os.listdir(o.image_dir))
        except OSError:
            return None, "-E- Error parsing file: %s\n" % o.image_dir
        for n in names:
            try:
                imgs.append(image.read(os.path.join(o.image_dir, n)))
            except (image.ImageError, OSError):
                continue
    return imgs, None


class Dev:
    def __init__(self, name, card, fidx, ok, err_msg=None):
        self.name, self.card, self.fidx, self.ok, self.err_msg = name, card, fidx, ok, err_msg
        self.status = ""
        self.image = None
        self.needs_update = False


# Which cards print only the Base MAC: a ConnectX-7 or BlueField-3 whose ports are all Ethernet (mlxup_query_cx7_1.txt,
# mlxup_update_cx7_1.txt) and an Ethernet BlueField-2 (mlxfwmanager_query_bf2_1.txt); ConnectX-8 as ConnectX-7
# [invented]; a ConnectX-4 Lx, on its Dell OEM image and on NVIDIA's (mlxfwmanager_query_dell_cx4lx_1.txt). Every
# other card prints the Base GUID and the Base MAC, Ethernet-only silicon included: ConnectX-6 Lx in
# mlxup_query_cx6lx_1.txt and mlxup_online_cx6lx_1.txt, a ConnectX-5 EN card in
# mlxfwmanager_query_and_mlxconfig_e_query_cx5_1.txt, a ConnectX-4 in Ethernet mode in
# mlxfwmanager_query_dell_cx4lx_1.txt.
MAC_ONLY_WHEN_ETHERNET = ("ConnectX7", "BlueField3", "BlueField2", "ConnectX8", "ConnectX4LX")


def _port_types(card):
    lls = [model.link_layer(card, p) for p in range(model.num_ports(card))]
    if card["family"] in MAC_ONLY_WHEN_ETHERNET and all(x == "Ethernet" for x in lls):
        return "ETH"
    return "NONE"


def _device_block(tool, idx, d, state, avail_fw, rom_rows):
    card = d.card
    lines = ["Device #%d:" % (idx + 1), "----------", ""]
    if card is None:
        lines += ["  Device Type:      N/A", "  Part Number:      N/A", "  Description:      ",
                  "  PSID:             ", "  PCI Device Name:  %s" % d.name]
    else:
        lines += ["  Device Type:      %s" % card["family"],
                  "  Part Number:      %s" % (card["name"] or "N/A"),
                  "  Description:      %s" % card["description"],
                  "  PSID:             %s" % faults.effective_psid(state, card),
                  "  PCI Device Name:  %s" % d.name]
        if _port_types(card) == "ETH":
            lines.append("  Base MAC:         %s" % card["base_mac"])
        else:
            lines.append("  Base GUID:        %s" % card["base_guid"])
            lines.append("  Base MAC:         %s" % card["base_mac"])
    lines.append("  Versions:         %-14s %-14s" % ("Current", "Available"))
    cur = card["fw"]["burned"] if card else "N/A"
    lines.append("     FW             %-14s %-14s" % (cur, avail_fw))
    for k, dver, aver in rom_rows:
        lines.append("     %-12s   %-14s %-14s" % (k, dver, aver))
    lines.append("")
    lines.append("  Status:           %s" % d.status)
    lines.append("")
    return "\n".join(lines) + "\n"


def _xml_block(d, state, avail_fw, rom_rows):
    card = d.card
    psid = faults.effective_psid(state, card) if card else ""
    pn = card["name"] if card else "N/A"
    dtype = card["family"] if card else "N/A"
    o = '    <Device pciName="%s" type="%s" psid="%s" partNumber="%s">\n' % (d.name, dtype, psid, pn)
    o += "      <Versions>\n"
    o += '        <FW current="%s" available="%s"/>\n' % (card["fw"]["burned"] if card else "N/A", avail_fw)
    for k, dver, aver in rom_rows:
        key = k.replace(" ", "_").replace("(", "").replace(")", "")
        o += '        <%s current="%s" available="%s"/>\n' % (key, dver, aver)
    o += "      </Versions>\n"
    if card:
        if _port_types(card) == "ETH":
            o += '      <MACs Base_Mac="%s" />\n' % card["base_mac"]
        else:
            o += '      <MACs Base_Mac="%s" />\n' % card["base_mac"]
            o += '      <GUIDs Base_Guid="%s" />\n' % card["base_guid"]
    desc = card["description"] if card else ""
    for ch in "\"&'><":
        desc = desc.replace(ch, "")
    o += "      <Status>%s</Status>\n" % d.status
    o += "      <Description>%s</Description>\n" % desc
    o += "    </Device>"
    return o


def _rows_for(tool, d, img):
    card = d.card
    if card is None:
        return "N/A", []
    dev_roms = {r[0]: r[1] for r in card["fw"].get("burned_roms", card["fw"]["roms"])}
    keys = set(dev_roms)
    img_roms = img.get("roms", {}) if img else {}
    keys |= set(img_roms)
    running = card["fw"]["running"] != card["fw"]["burned"] and tool != "mstfwmanager"
    if running:
        keys.add("FW (Running)")
    rows = []
    for k in sorted(keys):
        if k == "FW (Running)":
            rows.append((k, card["fw"]["running"], "N/A"))
            continue
        dver = _rom_ver(dev_roms[k]) if k in dev_roms else "N/A"
        aver = _rom_ver(img_roms[k]) if k in img_roms else "N/A"
        rows.append((k, dver, aver))
    return (img["fw_version"] if img else "N/A"), rows


def _status(d, img, force):
    """Return (status, kind) with kind in update/keep/mixed/uptodate/noimg/force."""
    card = d.card
    if img is None:
        return "No matching image found", "noimg"
    upd = keep = 0
    c = _cmp(card["fw"]["burned"], img["fw_version"])
    upd += c < 0
    keep += c > 0
    dev_roms = {r[0]: r[1] for r in card["fw"].get("burned_roms", card["fw"]["roms"])}
    for k, v in img.get("roms", {}).items():
        if k not in dev_roms:
            upd += 1
            continue
        c = _cmp(dev_roms[k], v)
        upd += c < 0
        keep += c > 0
    if upd and not keep:
        return "Update required", "update"
    if force:
        return "Forced update required", "force"
    if upd and keep:
        return "N/A (Mixed versions)", "mixed"
    return "Up to date", "uptodate"


def _collect(tool, host, state, o):
    mft = tool != "mstfwmanager"
    devs = []
    if o.devices:
        for name in o.devices:
            found = host.resolve(name, allow_mst=mft)
            if found is None:
                devs.append(Dev(name, None, 0, False, "No such file or directory"))
            elif not any(d.card is not None and d.card["id"] == found[0]["id"] for d in devs):
                devs.append(Dev(name, found[0], found[1], True))   # one entry per card (checkExistence)
    else:
        for card in host.cards():
            if mft and host.mst_started:
                name = host.mst_path(card, 0)
            else:
                name = card["functions"][0]["pci"]
            devs.append(Dev(name, card, 0, True))
    return devs


def run(tool, args):
    state = st.load()
    host = model.Host(state)
    try:
        o = parse(args)
    except ValueError as e:
        msg = str(e)
        err((msg if msg.startswith("-E-") else "-E- " + msg) + "\n")
        return 3
    if o.cmd == "version":
        if tool == "mstfwmanager":
            out("%s, mstflint %s, Git SHA Hash: N/A\n" % (tool, versions.mstflint_version(state)))
        else:
            out("%s, mft %s, built on Nov 14 2024, 10:28:15. Git SHA Hash: 0bd3c6f\n"
                % (tool, versions.mft_version(state)))
        return 0
    if o.cmd == "help" and tool == "mlxup":
        out(mlxup_help())
        return 0
    if o.cmd == "list" and tool == "mlxup":
        out(mlxup_list())
        return 0
    if tool != "mlxup" and (o.cmd == "online" or o.online):
        err("-E- Unknown option: --online\n")
        return 3
    if (o.cmd == "online" or o.online) and not server_reachable():
        out("Querying Mellanox devices firmware ...\n")
        err("-E- Failed to connect to the Mellanox server: no network in the simulator\n")
        return ONLINE_RC
    if o.cmd == "online":
        err("-E- --online-query-psid, --download, --download-default and --get-download-opt are not simulated\n")
        return 3
    if tool == "mlxup" and o.cmd is None and not o.query:
        o.update = True                     # mlxup's default action (mlxup_update_cx7_1.txt: `mlxup` prompts)
    if o.cmd == "help":
        out("\nSYNOPSIS\n    %s\n        [-d|--dev DeviceName] [-h|--help] [-v|--version] [--query] [--query-format Format]\n"
            "        [-u|--update] [-i|--image-file FileName] [-D|--image-dir DirectoryName] [-f|--force]\n"
            "        [--no_fw_ctrl] [-y|--yes] [--no] [--clear-semaphore] [--exe-rel-path]\n" % tool)
        return 0
    imgs, img_err = _load_images(o)
    if tool == "mlxup" and not (o.image or o.image_dir) and not img_err:
        imgs = bundle_images(host, state, online=o.online)
    if not o.xml:
        out("Querying Mellanox devices firmware ...\n")
    if img_err:
        err(img_err)
        return 17
    devs = _collect(tool, host, state, o)
    if not devs:
        if tool == "mstfwmanager":
            err("-E- No devices found or specified\n")
        else:
            err("-E- No devices found or specified, mst might be stopped, run 'mst start' to load MST modules\n")
        return 20
    img_path = bool(o.image or o.image_dir) or tool == "mlxup"
    by_psid = {}
    for im in imgs:
        prev = by_psid.get(im["psid"])
        if prev is None or _cmp(im["fw_version"], prev["fw_version"]) > 0:
            by_psid[im["psid"]] = im
    res = 0
    update_cnt = no_img = mixed = failed = 0
    err_lines = []
    blocks = []
    if not o.xml:
        out("\n")
    for i, d in enumerate(devs):
        if d.ok and faults.fires(state, "semaphore_held", d.card):
            d.ok = False
            d.err_msg = "Failed to lock flash semaphore"
        if d.ok:
            st.sim_sleep(1.5)
        if not d.ok:
            d.status = "Failed to open device"
            err_lines.append("-E- Failed to query %s device, error : %s\n" % (d.name, d.err_msg))
            failed += 1
            res = 1
            avail, rows = "N/A", []
            if d.card is not None:
                avail, rows = _rows_for(tool, d, None)
        else:
            d.image = by_psid.get(faults.effective_psid(state, d.card))
            d.status, kind = _status(d, d.image, o.force)
            if kind in ("update", "force"):
                update_cnt += 1
                d.needs_update = True
            elif kind == "noimg":
                no_img += 1
            elif kind == "mixed":
                mixed += 1
            avail, rows = _rows_for(tool, d, d.image)
        if o.xml:
            blocks.append(_xml_block(d, state, avail, rows))
        else:
            out(_device_block(tool, i, d, state, avail, rows))
            sys.stdout.flush()
    if o.xml:
        out("<Devices>\n" + "\n".join(blocks) + "\n</Devices>\n")
        return res
    if o.query:
        if err_lines:
            err("---------\n" + "".join(err_lines))
        return res
    out_str = ""
    if not o.update or update_cnt == 0:
        if update_cnt:
            out_str += ("Found %d device(s) requiring firmware update. Please use -u flag to perform the update.\n"
                        % update_cnt)
        if img_path and no_img:
            err_lines.append("-E- Could not find matching firmware images for %d device(s).\n" % no_img)
            res = 9
        if mixed:
            err_lines.append("-E- Found mixed component image versions for %d device(s).\n" % mixed)
            res = 16
        if img_path and not no_img and not update_cnt and not failed and not mixed:
            out_str += "All listed device(s) firmware images are up to date.\n"
        if failed:
            res = 1
    if o.update and no_img:
        res = 9
    if o.update and update_cnt:
        out_str += "Found %d device(s) requiring firmware update...\n" % update_cnt
    if o.update and o.online:
        out(RELEASE_NOTES)                  # the server's list, before the summary (mlxup_online_cx6lx_1.txt)
    if out_str:
        out("---------\n")
        if not o.update:
            out(out_str)
    if err_lines:
        if not out_str:
            err("---------\n")
        err("".join(err_lines))
    if o.update and out_str:
        out(out_str)
    if not o.update:
        return res
    # ---- update
    out("\n")
    statuses = []
    err_continue = 0
    require = 0
    for d in devs:
        if not d.ok:
            statuses.append("Device query failed")
            err_continue += 1
        elif d.image is None:
            statuses.append("Error - no matching image found")
            err_continue += 1
        elif not o.force and not d.needs_update:
            statuses.append("Up to date")
        else:
            statuses.append("")
            require += 1
    if not o.force:
        if require:
            if o.yes is None:
                out("Perform FW update? [y/N]: ")
                ans = read_answer()
                go = ans[:1] in ("y", "Y")
            else:
                go = bool(o.yes)
            if not go:
                out("No updates performed\n")
                return res
        else:
            return res
    burn_cnt = ok_cnt = 0
    any_fail = False
    for i, d in enumerate(devs):
        if statuses[i]:
            out("Device #%d: %s\n" % (i + 1, statuses[i]))
            continue
        out("Device #%d: %s" % (i + 1, "Updating FW ...     \n"))
        sys.stdout.flush()
        burn_cnt += 1
        out("\rFSMST_INITIALIZE -   OK          \n")
        sys.stdout.flush()
        if faults.fires(state, "burn_fail", d.card):
            st.sim_sleep(45)
            out("\rWriting Boot image component -  47%")
            out("\b\b\b\bFail : %s \n" % BURN_FAIL_MSG)
            any_fail = True
            continue
        st.sim_sleep(90)
        out("\rWriting Boot image component -   OK          \n")
        img = d.image
        with st.transaction() as s:
            c2 = next(c for c in s["cards"] if c["id"] == d.card["id"])
            c2["fw"]["burned"] = img["fw_version"]
            c2["fw"]["product_version"] = img.get("product_version")
            model.count(c2, "burns")
            roms = [[k, v, "AMD64" if k == "PXE" else "AMD64,AARCH64"] for k, v in sorted(img.get("roms", {}).items())]
            if roms:
                c2["fw"]["burned_roms"] = roms
            if img.get("release_date"):
                c2["fw"]["release_date"] = img["release_date"]
        out("\b\b\b\bDone\n")
        sys.stdout.flush()
        ok_cnt += 1
    if burn_cnt and any_fail:
        res = 2
    if ok_cnt:
        out("\nRestart needed for updates to take effect.\n")
    if err_continue:
        res = 255
        err("-E- One or more errors were encountered.\n")
    if ok_cnt and (ok_cnt < burn_cnt or err_continue):
        res = 254
    return res
