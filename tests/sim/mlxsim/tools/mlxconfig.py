"""mlxconfig (MFT) / mstconfig (mstflint).

Behaviour follows tests/fixtures/FORMAT_FACTS.md and the real captures: options must come
before the command (what follows `q` is a list of parameter names, so `q -e` asks for a
parameter called "-e"), set changes the next-boot value only, `-y` echoes "y", exit codes
0/2/3, errors on stdout with "-E- ".
"""
import copy

from .. import faults, model, paramdb, versions
from .. import state as st
from ..common import data_file, jsoncpp_dumps, out, outln, read_answer

OK, ABORTED, ERROR, ERROR_EXIT = 0, 2, 3, 4

NO_DEV_MFT = "No devices found, mst might be stopped. You may need to run 'mst start' to load MST modules. "
SEMAPHORE_ERR = "ME_ICMD_STATUS_SEMAPHORE_TO"

_UNSUPPORTED_CMDS = {"set_raw", "get_raw", "backup", "gen_tlvs_file", "t", "gen_xml_template", "g",
                     "raw2xml", "xml2raw", "x", "xml2bin", "create_conf", "apply"}


class CfgError(Exception):
    pass


def _help(tool, layout):
    if tool == "mstconfig" and layout.v < (4, 31, 0):
        return data_file("mstconfig_help_4.21.txt").replace("mstconfig", tool)
    lines = []
    add = lines.append
    ind, ind2 = "    ", "        "

    def flag(s, long_, param, desc):
        flags = "-" + s + "|--" + long_ + (" <" + param + ">" if param else "")
        add(ind2 + "%-16s" % flags + "\t\t: " + desc)

    add(ind + "NAME:")
    add(ind2 + tool)
    add(ind + "SYNOPSIS:")
    add(ind2 + tool + " [Options] <Commands> [Parameters]")
    add(ind + "DESCRIPTION:")
    add(ind2 + "Allows the user to change some of the device configurations without having to")
    add(ind2 + "create and burn a new firmware.")
    add(ind + "OPTIONS:")
    flag("d", "dev", "device", "Perform operation for a specified MST device.")
    flag("b", "db", "filename", "Use a specific database file.")
    flag("f", "file", "conf_file", "raw configuration file.")
    flag("h", "help", "", "Display help message.")
    flag("v", "version", "", "Display version info.")
    flag("e", "enable_verbosity", "", "Show default and current configurations.")
    if layout.json:
        flag("j", "json_format", "file", "Save the query output to file in JSON format, only usable with Query command")
    flag("y", "yes", "", "Answer yes in prompt.")
    flag("a", "all_attrs", "", "Show all attributes in the XML template")
    flag("p", "private_key", "PKEY", "pem file for private key")
    flag("u", "key_uuid", "UUID", "keypair uuid")
    flag("eng", "openssl_engine", "ENGINE NAME", "deprecated")
    flag("k", "openssl_key_id", "IDENTIFIER", "deprecated")
    flag("t", "device_type", "switch/hca", "Specify the device type")
    add("")
    add(ind + "COMMANDS SUMMARY")
    for c, d in [("clear_semaphore", "clear the tool semaphore."),
                 ("i|show_confs", "display information about all configurations."),
                 ("q|query", "query supported configurations."),
                 ("r|reset", "reset all configurations to their default value. Optionally, resets specific TLV if given."),
                 ("s|set", "set configurations to a specific device."),
                 ("set_raw", "set raw configuration file(5th Generation and above)."),
                 ("get_raw", "get raw configuration (5th Generation and above)."),
                 ("backup", "backup configurations to a file. Use set_raw command to restore file (5th Generation and above)."),
                 ("gen_tlvs_file", "Generate List of all TLVs. TLVs output file name must be specified. (*)"),
                 ("g <en_xml_template>", "Generate XML template. TLVs input file name and XML output file name must be specified. (*)"),
                 ("xml2raw", "Generate Raw file from XML file. XML input file name and raw output file name must be specified. (*)"),
                 ("raw2xml", "Generate XML file from Raw file. raw input file name and XML output file name must be specified. (*)"),
                 ("xml2bin", "Generate binary configuration dump file from XML file. XML input file name and bin output file name must be specified. (*)"),
                 ("create_conf", "Generate configuration file from XML file. XML input file name and bin output file name must be specified. (*)"),
                 ("apply", "Apply a configuration file, that was created with create_conf command. bin input file name must be specified. (*)")]:
        add(ind2 + "%-24s : %s" % (c, d))
    add("")
    add(ind + "(*) These commands do not require MST device")
    add("")
    add(ind + "To show supported configurations by device type, run show_confs command")
    add("")
    add("")
    add(ind + "Examples:")
    ex = "/dev/mst/mt4115_pciconf0" if tool == "mlxconfig" else "04:00.0"
    ex2 = "/dev/mst/mt4115_pciconf0" if tool == "mlxconfig" else "05:00.0"
    for c, d in [("To query configurations", tool + " -d " + ex + " query"),
                 ("To query in json format", tool + " -d " + ex + " -j /tmp/query.json query"),
                 ("To query specific parameter", tool + " -d " + ex + " q NUM_OF_VFS"),
                 ("To set configuration", tool + " -d " + ex + " set SRIOV_EN=1 NUM_OF_VFS=16 WOL_MAGIC_EN_P1=1"),
                 ("To set raw configuration", tool + " -d " + ex2 + " -f conf_file set_raw"),
                 ("To reset configuration", tool + " -d " + ex + " reset"),
                 ("To reset specific configuration", tool + " -d " + ex + " reset NV_GLOBAL_PCI_CONF_4")]:
        if "json" in c and not layout.json:
            continue
        add(ind2 + "%-35s: %s" % (c, d))
    add("")
    return "\n".join(lines) + "\n"


def _version_line(tool, state):
    if tool == "mlxconfig":
        v = versions.mft_version(state)
        return "%s, mft %s, built on Nov 14 2024, 10:28:15. Git SHA Hash: 0bd3c6f" % (tool, v)
    return "%s, mstflint %s, Git SHA Hash: N/A" % (tool, versions.mstflint_version(state))


class Params:
    def __init__(self):
        self.device = ""
        self.yes = False
        self.verbose = False
        self.json_file = None
        self.cmd = None
        self.names = []      # query: [name]; set: [(name, value)]
        self.force = False


def parse(tool, args, layout):
    """Return Params or raise CfgError(message) (message printed with usage)."""
    p = Params()
    i = 0
    n = len(args)
    while i < n:
        a = args[i]
        if a in ("-v", "--version"):
            p.cmd = "version"
            return p
        if a in ("-h", "--help"):
            p.cmd = "help"
            return p
        if a in ("-d", "--dev"):
            i += 1
            if i == n:
                raise CfgError("missing device name")
            p.device = args[i]
        elif a in ("-t", "--device_type"):
            i += 1
            if i == n:
                raise CfgError("missing device type")
            if args[i].lower() not in ("switch", "hca"):
                raise CfgError('Unsupported device name given, please specify "switch" or "hca"device type')
        elif a in ("-b", "--db"):
            i += 1
            if i == n:
                raise CfgError("missing database file name")
        elif a in ("-y", "--yes"):
            p.yes = True
        elif a in ("-f", "--file"):
            i += 1
            if i == n:
                raise CfgError("missing file name")
            p.raw_file = args[i]
        elif a in ("-e", "--enable_verbosity"):
            p.verbose = True
        elif a in ("-a", "--all_attrs"):
            pass
        elif a in ("-p", "--private_key", "-u", "--key_uuid"):
            i += 1
            if i == n:
                raise CfgError("missing file name")
        elif a in ("-eng", "--openssl_engine"):
            i += 1
            if i == n:
                raise CfgError("missing OpenSSL engine")
        elif a in ("-k", "--openssl_key_id"):
            i += 1
            if i == n:
                raise CfgError("missing OpenSSL key identifier")
        elif layout.json and a in ("-j", "--json_format"):
            i += 1
            if i == n:
                raise CfgError("missing file name")
            p.json_file = args[i]
        elif a == "--force":
            p.force = True
        elif a in ("set", "s"):
            p.cmd = "set"
            break
        elif a in ("query", "q"):
            p.cmd = "query"
            break
        elif a in ("reset", "r"):
            p.cmd = "reset"
            break
        elif a == "clear_semaphore":
            p.cmd = "clear_semaphore"
            break
        elif a in ("show_confs", "i"):
            p.cmd = "show_confs"
            break
        elif a in _UNSUPPORTED_CMDS:
            p.cmd = a
            break
        else:
            raise CfgError("invalid argument: %s" % a)
        i += 1
    i += 1
    rest = args[i:]
    if p.cmd is None:
        raise CfgError("No command found. For more information please read the help message:")
    if p.cmd == "set" and not rest:
        raise CfgError("missing configuration arguments. For more information please run %s -h|--help." % tool)
    if p.json_file is not None and p.cmd != "query":
        raise CfgError("Json format is only supported for query command.")
    if p.cmd == "reset" and rest:
        raise CfgError("reset command expects no argument but %d argument received" % len(rest))
    if p.cmd in ("set", "clear_semaphore", "show_confs") and not p.device:
        raise CfgError("%s command expects device to be specified." % p.cmd)
    if p.cmd == "query":
        for name in rest:
            base, idx = paramdb.split_index(name)
            if idx is not None and len(idx) > 1:
                p.names.extend("%s[%d]" % (base, k) for k in idx)
            else:
                p.names.append(name)
    elif p.cmd == "set":
        seen = set()
        for arg in rest:
            parts = [x for x in arg.split("=") if x]
            if "=" not in arg or len(parts) != 2:
                raise CfgError("Invalid Configuration argument %s" % arg)
            tag, val = parts
            if tag in seen:
                raise CfgError("Duplicate parameter, %s." % tag)
            seen.add(tag)
            base, idx = paramdb.split_index(tag)
            if idx is not None and len(idx) > 1:
                p.names.extend(("%s[%d]" % (base, k), val) for k in idx)
            else:
                p.names.append((tag, val))
    return p


# ------------------------------------------------------------------------------------------


class Row:
    def __init__(self, name, p, default, current, nxt, ro):
        self.name, self.p, self.default, self.current, self.next, self.ro = name, p, default, current, nxt, ro
        self.new = None

    def fmt(self, val):
        if isinstance(val, list):
            return "Array[0..%d]" % (len(val) - 1)
        return paramdb.format_value(self.p, val)

    def jval(self, val):
        if isinstance(val, list):
            return "Array[0..%d]" % (len(val) - 1)
        return paramdb.json_value(self.p, val)


class DeviceView:
    """One PCI function as mlxconfig sees it."""

    def __init__(self, host, card, fidx):
        self.host, self.card, self.fidx = host, card, fidx
        self.nports = model.num_ports(card)

    def header_lines(self, layout, dev_text):
        w = layout.label_w
        c = self.card
        return ["%-*s%-*s" % (w, "Device type:", w, c["family"]),
                "%-*s%-*s" % (w, "Name:", w, c["name"]),
                "%-*s%-*s" % (w, "Description:", w, c["description"]),
                "%-*s%-*s" % (w, "Device:", w, dev_text)]

    def all_rows(self, layout):
        rows = []
        for key, base in model.nv_keys(self.card, self.fidx):
            if not model.visible(self.card, self.fidx, base, layout.v) or not layout.knows(base):
                continue
            e = model.nv_entry(self.card, self.fidx, key)
            rows.append(Row(key, paramdb.param(base), e["default"], e["current"], e["next"],
                            model.read_only(self.card, base)))
        return rows

    def resolve(self, name, layout):
        """-> (key, base, index, paramdef); raises CfgError with the tool's message."""
        bare, idx = paramdb.split_index(name)
        base, port, module, p = paramdb.lookup(bare, self.nports)
        if p is None or not layout.knows(base):
            raise CfgError(paramdb.unknown_text(name, layout, self.nports))
        key = bare
        e = model.nv_entry(self.card, self.fidx, key)
        if e is None or not model.visible(self.card, self.fidx, base, layout.v):
            raise CfgError("The Device doesn't support %s parameter" % name)
        index = idx[0] if idx else None
        if index is not None:
            if not isinstance(e["next"], list):
                raise CfgError("The Device doesn't support %s parameter" % name)
            if index >= len(e["next"]):
                raise CfgError("Index %d is out of range" % index)
        return key, base, index, p

    def row_for(self, name, layout):
        key, base, index, p = self.resolve(name, layout)
        e = model.nv_entry(self.card, self.fidx, key)
        vals = [e["default"], e["current"], e["next"]]
        if index is not None:
            vals = [v[index] for v in vals]
        return Row(name, p, vals[0], vals[1], vals[2], model.read_only(self.card, base))


def _semaphore(state, card):
    return faults.fires(state, "semaphore_held", card)


def _first_tlv(card):
    for key, base in model.nv_keys(card, 0):
        return paramdb.tlv_name(paramdb.param(base)["tlv"])
    return "nv_global_pci_conf"


def query_one(tool, state, host, layout, prm, dev_text, found, index, json_doc):
    """Print (or add to json_doc) one device. Returns (rc, error message or None)."""
    if found is None:
        return ERROR, "Failed to open the device"
    card, fidx = found
    view = DeviceView(host, card, fidx)
    dev_key = "Device #%d" % index
    if json_doc is None:
        out("\n%s:\n----------\n\n" % dev_key)
        for line in view.header_lines(layout, dev_text):
            outln(line)
        outln()
    else:
        json_doc[dev_key] = {"description": card["description"], "device": dev_text,
                             "device_type": card["family"], "name": card["name"], "tlv_configuration": {}}
    st.sim_sleep(1.5)
    show_def = show_cur = prm.verbose
    if json_doc is None:
        outln(layout.header(show_def, show_cur, False))
    if _semaphore(state, card):
        return ERROR, "Failed to get %s settings %s" % (_first_tlv(card), SEMAPHORE_ERR)
    try:
        rows = [view.row_for(n, layout) for n in prm.names] if prm.names else view.all_rows(layout)
    except CfgError as e:
        return ERROR, str(e)
    any_mod = any_ro = False
    for r in rows:
        mod = (show_def and r.next != r.default) or (show_cur and r.next != r.current)
        any_mod |= mod
        any_ro |= bool(r.ro)
        if json_doc is None:
            vals = []
            if show_def:
                vals.append(r.fmt(r.default))
            if show_cur:
                vals.append(r.fmt(r.current))
            vals.append(r.fmt(r.next))
            outln(layout.row(r.name, vals, mod, r.ro and layout.has_ro))
        else:
            item = {"read_only": bool(r.ro), "next_value": r.jval(r.next)}
            if show_def or show_cur:
                item["modified"] = bool(mod)
            if show_def:
                item["default_value"] = r.jval(r.default)
            if show_cur:
                item["current_value"] = r.jval(r.current)
            json_doc[dev_key]["tlv_configuration"][r.name] = item
    if json_doc is None:
        if any_mod:
            outln("The '*' shows parameters with next value different from default/current value.")
        if any_ro and layout.has_ro:
            outln("\nThe 'RO' shows parameters which are for read only and cannot be changed")
    if not rows:
        return ERROR, "Device doesn't support any configuration changes."
    return OK, None


def _all_devices(tool, host):
    """(device text, (card, fidx)) for a query/reset without -d."""
    if tool == "mlxconfig":
        return [(host.mst_path(c, 0), (c, 0)) for c in host.cards()]
    return [(c["functions"][i]["pci"], (c, i)) for c, i in host.functions()]


def cmd_query(tool, state, host, layout, prm):
    json_doc = None
    if prm.json_file is not None:
        try:
            with open(prm.json_file, "w") as fh:
                fh.write("{}\n")
        except OSError as e:
            import sys
            sys.stderr.write('Failed to open "%s". Reason: %s\n' % (prm.json_file, e.strerror))
            return ERROR
        json_doc = {}
    failed = False
    if prm.device:
        targets = [(prm.device, _resolve(tool, host, prm.device))]
    else:
        if tool == "mlxconfig" and not host.mst_started:
            outln("-E- " + NO_DEV_MFT)
            return ERROR
        targets = _all_devices(tool, host)
        if not targets:
            outln("-E- " + (NO_DEV_MFT if tool == "mlxconfig" else "Failed to get devices."))
            return ERROR
    for n, (dev_text, found) in enumerate(targets, 1):
        rc, msg = query_one(tool, state, host, layout, prm, dev_text, found, n, json_doc)
        if rc != OK:
            outln("-E- " + msg)
            failed = True
    if json_doc is not None:
        with open(prm.json_file, "w") as fh:
            fh.write(jsoncpp_dumps(json_doc) + "\n")
        if failed:
            outln("Query output saved to %s but one or more devices had an error." % prm.json_file)
        else:
            outln("Query output saved to %s successfully" % prm.json_file)
    return ERROR if failed else OK


def _resolve(tool, host, dev):
    return host.resolve(dev, allow_mst=(tool == "mlxconfig"), allow_ibdev=(tool == "mlxconfig"))


def ask(question, yes, prefix=True):
    out(("\n " if prefix else "") + question + " (y/n) [n] : ")
    if yes:
        outln("y")
        return True
    ans = read_answer()
    if ans.lower() not in ("y", "yes"):
        outln("-E- Aborted by user.")
        return False
    return True


def cmd_set(tool, state, host, layout, prm):
    found = _resolve(tool, host, prm.device)
    if found is None:
        outln("-E- Failed to open the device")
        return ERROR
    card, fidx = found
    view = DeviceView(host, card, fidx)
    out("\nDevice #1:\n----------\n\n")
    for line in view.header_lines(layout, prm.device):
        outln(line)
    outln()
    show = prm.verbose
    outln(layout.header(show, show, True))
    st.sim_sleep(1.5)
    # 1) names and values (updateParamViewValue), 2) query of those parameters
    resolved = []
    try:
        for name, text in prm.names:
            key, base, index, p = _resolve_for_set(view, name, layout)
            try:
                val = paramdb.parse_value(p, text)
            except paramdb.ValueError_ as e:
                raise CfgError(str(e))
            resolved.append((name, key, base, index, p, val))
        if _semaphore(state, card):
            raise CfgError("Failed to get %s settings %s" % (_first_tlv(card), SEMAPHORE_ERR))
        for name, key, base, index, p, val in resolved:
            e = model.nv_entry(card, fidx, key)
            if e is None or not model.visible(card, fidx, base, layout.v):
                raise CfgError("The Device doesn't support %s parameter" % name)
            if index is not None:
                if not isinstance(e["next"], list):
                    raise CfgError("The Device doesn't support %s parameter" % name)
                if index >= len(e["next"]):
                    raise CfgError("Index %d is out of range" % index)
            if model.read_only(card, base):
                if layout.ro_set_error:
                    raise CfgError("Operation is not supported (Read only TLV: %s)" % paramdb.tlv_name(p["tlv"]))
                raise CfgError("The Device doesn't support %s parameter" % name)
    except CfgError as e:
        outln("-E- " + str(e))
        return ERROR
    for name, key, base, index, p, val in resolved:
        r = view.row_for(name, layout)
        vals = []
        if show:
            vals += [r.fmt(r.default), r.fmt(r.current)]
        vals += [r.fmt(r.next), paramdb.format_value(p, val)]
        mod = show and (r.next != r.default or r.next != r.current)
        outln(layout.row(name, vals, mod, r.ro and layout.has_ro))
    if prm.force:
        outln("\n-W- Force flag specified, the validity of the Parameters will not be checked !")
        out("-W- Incorrect configuration might yield unexpected results. running in this mode is not recommended.")
    if not ask("Apply new Configuration?", prm.yes):
        return ABORTED
    out("Applying... ")
    fam_max = _family_max(card)
    if not prm.force:
        for name, key, base, index, p, val in resolved:
            limit = fam_max.get(base)
            if limit is not None and index is None and val > limit:
                outln("Failed!")
                outln("-E- Parameter %s' value is larger than maximum allowed %d" % (base, limit))
                return ERROR
    st.sim_sleep(0.5)
    # set_ignored (the simulator's modelling): the firmware acknowledges the TLV and keeps its value
    ignored = faults.ignored_sets(state, card)
    with st.transaction() as s:
        c2 = next(c for c in s["cards"] if c["id"] == card["id"])
        for name, key, base, index, p, val in resolved:
            if ignored & {"*", name.upper(), key.upper(), base.upper()}:
                continue
            e = model.nv_entry(c2, fidx, key)
            if index is None:
                e["next"] = val
            else:
                e["next"][index] = val
    outln("Done!")
    outln("-I- Please reboot machine to load new configurations.")
    return OK


def _resolve_for_set(view, name, layout):
    bare, idx = paramdb.split_index(name)
    base, port, module, p = paramdb.lookup(bare, view.nports)
    if p is None or not layout.knows(base):
        raise CfgError(paramdb.unknown_text(name, layout, view.nports))
    return bare, base, (idx[0] if idx else None), p


def _family_max(card):
    from .. import families
    return families.of(card).get("max", {})


def cmd_reset(tool, state, host, layout, prm):
    if prm.device:
        if not ask("Reset configuration for device %s?" % prm.device, prm.yes):
            return ABORTED
        out("Applying... ")
        found = _resolve(tool, host, prm.device)
        if found is None:
            outln("Failed!")
            outln("-E- Failed to open the device")
            return ERROR
        targets = [found]
    else:
        if tool == "mlxconfig" and not host.mst_started:
            outln("-E- " + NO_DEV_MFT)
            return ERROR
        targets = [f for _t, f in _all_devices(tool, host)]
        if not targets:
            outln("-E- " + (NO_DEV_MFT if tool == "mlxconfig" else "Failed to get devices."))
            return ERROR
        if not ask("Reset configuration for all devices?", prm.yes):
            return ABORTED
        out("Applying... ")
    for card, fidx in targets:
        if _semaphore(state, card):
            outln("Failed!")
            outln("-E- Failed to reset %s settings %s" % (_first_tlv(card), SEMAPHORE_ERR))
            return ERROR
    st.sim_sleep(0.5)
    with st.transaction() as s:
        for card, fidx in targets:
            c2 = next(c for c in s["cards"] if c["id"] == card["id"])
            for key, base in model.nv_keys(c2, fidx):
                if model.read_only(c2, base):
                    continue
                e = model.nv_entry(c2, fidx, key)
                e["next"] = copy.deepcopy(e["default"])
    outln("Done!")
    outln("-I- Please reboot machine to load new configurations.")
    return OK


def cmd_show_confs(tool, state, host, layout, prm):
    found = _resolve(tool, host, prm.device)
    if found is None:
        outln("-E- Failed to open the device")
        return ERROR
    card, _fidx = found
    nports = model.num_ports(card)
    outln("\nList of configurations the device %s may support:" % prm.device)
    db = paramdb.db()
    by_tlv = {}
    for name, p in db["params"].items():
        if p.get("target") not in ("NIC", "EXP_ROM"):
            continue
        by_tlv.setdefault(p["tlv"], []).append((name, p))
    lines = []
    for t in db["tlvs"]:
        params = by_tlv.get(t["mlxconfig_name"])
        if not params:
            continue
        lines.append("\t\t%s:%s" % (t["mlxconfig_name"], t["description"]))
        entries = []
        for name, p in params:
            if p["cls"] == "port":
                for port in range(1, max(2, nports) + 1):
                    entries.append(("%s_P%d" % (name, port), p, port))
            elif p["cls"] == "module":
                entries.append(("%s_M0" % name, p, 0))
            else:
                entries.append((name, p, 0))
        for cli, p, port in sorted(entries, key=lambda e: e[0]):
            typ = p["type"]
            if typ == "BOOL":
                s = cli + "=<False|True>"
            elif typ == "ENUM":
                s = cli + "=<" + "|".join(sorted(v[0] for v in p.get("values", []))) + ">"
            elif typ in ("UNSIGNED", "INTEGER"):
                s = cli + "=<NUM>"
            else:
                s = cli + "=<%s>" % typ
            if port >= 2:
                lines.append("%20s%-40s" % (" ", s))
                continue
            desc = p.get("desc") or [""]
            lines.append("%20s%-40s%s" % (" ", s, desc[0]))
            for seg in desc[1:]:
                lines.append("%60s%s" % (" ", seg))
    out("\n".join(lines) + "\n")
    return OK


def cmd_clear_semaphore(tool, state, host, layout, prm):
    outln("-W- Forcefully clearing device Semaphore...")
    found = _resolve(tool, host, prm.device)
    if found is None:
        outln("-E- Failed to open the device")
        outln(" Failed!")
        return ERROR
    card = found[0]
    with st.transaction() as s:
        s["faults"] = [f for f in s.get("faults", [])
                       if not (f.get("type") == "semaphore_held" and faults.card_matches(f, card))]
    outln(" Done!")
    return OK


def run(tool, args):
    state = st.load()
    host = model.Host(state)
    mft = tool == "mlxconfig"
    layout = versions.ConfigLayout(versions.effective(versions.tool_version(state, mft), mft))
    try:
        prm = parse(tool, args, layout)
    except CfgError as e:
        outln("-E- " + str(e))
        out(_help(tool, layout))
        return ERROR
    if prm.cmd == "version":
        outln(_version_line(tool, state))
        return OK
    if prm.cmd == "help":
        out(_help(tool, layout))
        return OK
    if prm.cmd == "query":
        return cmd_query(tool, state, host, layout, prm)
    if prm.cmd == "set":
        return cmd_set(tool, state, host, layout, prm)
    if prm.cmd == "reset":
        return cmd_reset(tool, state, host, layout, prm)
    if prm.cmd == "show_confs":
        return cmd_show_confs(tool, state, host, layout, prm)
    if prm.cmd == "clear_semaphore":
        return cmd_clear_semaphore(tool, state, host, layout, prm)
    outln("-E- %s: command not implemented by the simulator (mlxsim)" % prm.cmd)
    return ERROR
