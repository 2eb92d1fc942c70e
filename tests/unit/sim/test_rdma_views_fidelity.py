"""ibstatus, rdma link / rdma dev and ibv_devinfo (issue 16) vs the real captures: line structure, field names,
column offsets, value forms, errors and exit codes; and agreement with ibstat / ibdev2netdev of the same host."""
import json
import re

from sim_helpers import real


def _ibstat(sim, dev):
    """{field: value} of `ibstat DEV` (the view the three tools must agree with)."""
    out = {}
    for ln in sim.out("ibstat", dev).split("\n"):
        if ":" in ln and ln.startswith("\t"):
            k, v = ln.strip().split(":", 1)
            out[k] = v.strip()
    return out


def _offsets(lines):
    """(label, column where the value starts) of each `label: value` line once TABs are expanded."""
    out = []
    for ln in lines:
        m = re.match(r"^(\s*)([^:]+:)(\s+)\S", ln.expandtabs(8))
        out.append((m.group(2), len(m.group(1) + m.group(2) + m.group(3))) if m else ln)
    return out


# ---------------------------------------------------------------------------- ibstatus


def test_ibstatus_matches_real(sim):
    sim.init("mixed")                              # mlx5_0: ConnectX-6 HDR IB, 200G - the capture's card
    cap = real("ibstatus_a100_1.txt")
    out = sim.out("ibstatus")
    lines = out.split("\n")
    assert "\t" in out                             # the script's TABs; the capture has them expanded
    exp = [ln.expandtabs(8) for ln in lines]
    ib_real, eth_real = cap[0:9], cap[cap.index("Infiniband device 'mlx5_8' port 1 status:"):][:9]
    ib_mine = exp[0:9]
    assert _offsets(ib_mine) == _offsets(ib_real)
    assert ib_mine[0] == "Infiniband device 'mlx5_0' port 1 status:" and ib_mine[8] == ""
    for i in (4, 5, 6, 7):                         # state, phys state, rate, link_layer: the same text
        assert ib_mine[i] == ib_real[i], (ib_mine[i], ib_real[i])
    assert re.match(r"^ {8}default gid: {5}fe80:0000:0000:0000(:[0-9a-f]{4}){4}$", ib_mine[1])
    assert re.match(r"^ {8}base lid: {8}0x[0-9a-f]+$", ib_mine[2]) and ib_mine[3] == ib_real[3]
    # an Ethernet port (BlueField-3 at 200GbE): LIDs 0x0, the same layout as the capture's Ethernet device
    i = exp.index("Infiniband device 'mlx5_2' port 1 status:")
    eth = exp[i:i + 9]
    assert _offsets(eth[1:]) == _offsets(eth_real[1:])
    assert eth[2:6] == eth_real[2:6] and eth[7] == eth_real[7] == "        link_layer:      Ethernet"
    assert eth[6] == "        rate:            200 Gb/sec (4X HDR)"
    # the capture's "unknown" gid (an Azure VF without a GID table) is not modelled: the MAC-derived one
    assert re.match(r"^ {8}default gid: {5}fe80:0000:0000:0000:[0-9a-f]{2}[0-9a-f]{2}:[0-9a-f]{2}ff:fe", eth[1])
    assert out.endswith("link_layer:\t Ethernet\n\n")      # blank line after every port, the last one too


def test_ibstatus_agrees_with_ibstat(sim):
    sim.init("mixed")
    for dev in ("mlx5_0", "mlx5_2"):
        st = _ibstat(sim, dev)
        lines = sim.out("ibstatus", dev).split("\n")
        vals = {ln.split(":", 1)[0].strip(): ln.split(":", 1)[1].strip() for ln in lines[1:8]}
        assert lines[0] == "Infiniband device '%s' port 1 status:" % dev and lines[9:] == [""]
        assert int(vals["base lid"], 16) == int(st["Base lid"]) and int(vals["sm lid"], 16) == int(st["SM lid"])
        assert vals["default gid"].replace(":", "")[16:] == st["Port GUID"][2:]
        assert vals["state"] == "4: ACTIVE" and vals["phys state"] == "5: LinkUp"
        assert vals["rate"].startswith(st["Rate"] + " Gb/sec (") and vals["link_layer"] == st["Link layer"]


def test_ibstatus_down_ports_and_errors(sim):
    sim.init("mixed")
    sim.out("mlxsim", "fault", "add", "link_down")
    ib = sim.out("ibstatus", "mlx5_0:1").split("\n")
    assert ib[4:8] == ["\tstate:\t\t 1: DOWN", "\tphys state:\t 2: Polling", "\trate:\t\t 10 Gb/sec (4X)",
                       "\tlink_layer:\t InfiniBand"]
    assert ib[2:4] == ["\tbase lid:\t 0x0", "\tsm lid:\t\t 0x0"]
    eth = sim.out("ibstatus", "mlx5_2").split("\n")
    assert eth[4:7] == ["\tstate:\t\t 1: DOWN", "\tphys state:\t 3: Disabled", "\trate:\t\t 40 Gb/sec (4X QDR)"]
    assert _ibstat(sim, "mlx5_2")["Rate"] == "40"
    p = sim.run("ibstatus", "mlx5_9")              # the script's fatal(): on stdout, exit 255
    assert p.returncode == 255 and p.stderr == ""
    assert p.stdout == "Fatal error:  device 'mlx5_9': sys files not found (/sys/class/infiniband/mlx5_9/ports)\n"
    two = sim.out("ibstatus", "mlx5_0:2").split("\n")   # no such port: every sysfs read fails
    assert two[0] == "Infiniband device 'mlx5_0' port 2 status:"
    assert two[1] == "\tdefault gid:\t unknown" and two[7] == "\tlink_layer:\t IB"
    assert sim.run("ibstatus", "-h").returncode == 255


# ---------------------------------------------------------------------------- rdma link / rdma dev


def test_rdma_link_new_format_matches_real(sim):
    sim.init("refresh-cx5-storage")                # mlx5_1: ConnectX-5 EN, as the capture's card (there in Ethernet)
    cap = real("rdma_link_ibstat_lspci_cx5_1.txt")
    real_lines = [ln.strip() for ln in cap[1:3]]   # doc-indented, trailing spaces stripped
    out = sim.out("rdma", "link").split("\n")
    assert out[-1] == "" and all(ln.endswith(" ") for ln in out[:-1])   # iproute2: every field ends with a space
    pattern = re.compile(r"^link (mlx5_\d+)/1 state ACTIVE physical_state LINK_UP netdev (\S+)$")
    for ln in real_lines:
        assert pattern.match(ln), ln
    cx5 = [ln.rstrip() for ln in out if ln.startswith("link mlx5_1/1 ")][0]
    assert pattern.match(cx5) and cx5 == "link mlx5_1/1 state ACTIVE physical_state LINK_UP netdev enp41s0np0"
    ib = [ln for ln in out if ln.startswith("link mlx5_0/1 ")][0]
    st = _ibstat(sim, "mlx5_0")
    assert ib == ("link mlx5_0/1 subnet_prefix fe80:0000:0000:0000 lid %s sm_lid %s lmc 0 state ACTIVE "
                  "physical_state LINK_UP netdev ibp24s0 " % (st["Base lid"], st["SM lid"]))
    # netdevs as ibdev2netdev maps them, every RDMA device once
    i2n = dict(re.match(r"^(\S+) port 1 ==> (\S+) \(Up\)$", ln).groups()
               for ln in sim.out("ibdev2netdev").split("\n") if ln)
    mine = {m.group(1): m.group(2) for m in (re.search(r"^link (\S+)/1 .*netdev (\S+) $", ln) for ln in out[:-1])}
    assert mine == i2n
    assert sim.out("rdma", "link", "show", "mlx5_1/1") == cx5 + " \n"
    assert sim.out("rdma", "link", "show", "mlx5_1") == cx5 + " \n"
    assert sim.out("rdma", "link", "list") == sim.out("rdma", "link", "show") == sim.out("rdma", "link")


def test_rdma_link_old_format_matches_real(sim):
    sim.init("cx6dx-roce")
    cap = [ln.strip() for ln in real("rdma_link_old_format_1.txt")[1:3]]
    out = sim.out("rdma", "link", env={"MLXSIM_RDMA_FORMAT": "old"}).split("\n")
    assert [ln.rstrip() for ln in out[:2]] == cap                 # the capture lost the trailing space
    assert out[0] == cap[0] + " "
    # the state's "rdma_format" selects it too (a host whose iproute2 is old)
    data = sim.state_data()
    data["rdma_format"] = "old"
    with open(sim.state, "w") as fh:
        json.dump(data, fh)
    assert sim.out("rdma", "link").split("\n")[:2] == out[:2]


def test_rdma_dev_and_errors(sim):
    sim.init("dgx-h100")
    out = sim.out("rdma", "dev").split("\n")
    st = _ibstat(sim, "mlx5_2")
    line = [ln for ln in out if " mlx5_2: " in ln][0]
    guid = st["Node GUID"][2:]
    sys_guid = st["System image GUID"][2:]

    def grp(g):
        return ":".join(g[i:i + 4] for i in range(0, 16, 4))
    assert line == "2: mlx5_2: node_type ca fw %s node_guid %s sys_image_guid %s " % (
        st["Firmware version"], grp(guid), grp(sys_guid))
    assert [ln.split(":")[0] for ln in out if ln] == [str(i) for i in range(12)]   # index order from 0
    assert sim.out("rdma", "dev", "show", "mlx5_2") == line + "\n"
    p = sim.run("rdma", "link", "show", "mlx5_99/1")
    assert (p.returncode, p.stdout, p.stderr) == (1, "", "Wrong device name\n")
    p = sim.run("rdma", "link", "show", "mlx5_0/2")
    assert (p.returncode, p.stderr) == (1, "Wrong device name\n")
    p = sim.run("rdma", "dev", "show", "mlx5_99")
    assert (p.returncode, p.stderr) == (1, "Wrong device name - mlx5_99\n")
    p = sim.run("rdma", "bogus")
    assert p.returncode == 1 and "unknown" in p.stderr


# ---------------------------------------------------------------------------- ibv_devinfo


def test_ibv_devinfo_cx6dx_matches_real(sim):
    sim.init("cx6dx-roce")
    sim.out("mlxsim", "fault", "add", "link_down", "--device", "mlx5_0")      # the capture's port is down
    cap = real("ibv_devinfo_cx6dx_cx7_1.txt")      # TABs expanded (INDEX.md)
    block = cap[:cap.index("")]
    out = sim.out("ibv_devinfo", "-d", "mlx5_0").split("\n")
    mine = [ln.expandtabs(8) for ln in out]
    assert mine[len(block):] == ["", ""]           # each port ends with an empty line
    mine = mine[:len(block)]
    assert _offsets(mine) == _offsets(block)
    same = ("transport:", "vendor_id:", "vendor_part_id:", "hw_ver:", "phys_port_cnt:", "port:", "state:",
            "max_mtu:", "active_mtu:", "sm_lid:", "port_lid:", "port_lmc:", "link_layer:")
    for a, b in zip(mine, block):
        if a.strip().split(":")[0] + ":" in same:
            assert a == b, (a, b)
    assert re.match(r"^ {8}node_guid: {22}[0-9a-f]{4}(:[0-9a-f]{4}){3}$", mine[3])
    assert mine[8].split() == ["board_id:", "MT_0000000359"]


def test_ibv_devinfo_cx7_and_azure_layout(sim):
    sim.init("dgx-h100")
    cx7 = real("ibv_devinfo_cx6dx_cx7_1.txt")
    cx7 = [ln for ln in cx7[cx7.index("hca_id: mlx5_13"):] if ln]     # the excerpt ends at phys_port_cnt
    out = sim.out("ibv_devinfo", "-d", "mlx5_0").split("\n")
    head = [ln.expandtabs(8) for ln in out[:len(cx7)]]
    assert _offsets(head) == _offsets(cx7)
    for i in (1, 5, 6, 7, 8, 9):                  # transport, vendor ids, hw_ver, board_id (MCX75310AAS-NEAT), ports
        assert head[i] == cx7[i], (head[i], cx7[i])
    az = real("ibv_devinfo_azure_h200_cx7vf_1.txt")
    az = az[az.index("hca_id:\tmlx5_ib0"):]
    az = az[:az.index("")]
    raw = out[:len(az)]
    assert [ln.split(":")[0] for ln in raw] == [ln.split(":")[0] for ln in az]
    assert [re.sub(r"(:\t+).*", r"\1", ln) for ln in raw] == [re.sub(r"(:\t+).*", r"\1", ln) for ln in az]
    for i in (1, 5, 7, 9, 10, 11, 12, 13, 14, 16, 17):    # the IB port's values as the real NDR port
        assert raw[i] == az[i], (raw[i], az[i])


def test_ibv_devinfo_agrees_with_ibstat(sim):
    sim.init("mixed")
    for dev in ("mlx5_0", "mlx5_1", "mlx5_2"):
        st = _ibstat(sim, dev)
        vals = {}
        for ln in sim.out("ibv_devinfo", "-d", dev).split("\n"):
            if ":" in ln:
                k, v = ln.split(":", 1)
                vals[k.strip()] = v.strip()
        assert vals["hca_id"] == dev and vals["fw_ver"] == st["Firmware version"]
        assert vals["node_guid"].replace(":", "") == st["Node GUID"][2:]
        assert vals["sys_image_guid"].replace(":", "") == st["System image GUID"][2:]
        assert vals["vendor_part_id"] == st["CA type"][2:] and int(vals["hw_ver"], 16) == int(st["Hardware version"])
        assert vals["port_lid"] == st["Base lid"] and vals["sm_lid"] == st["SM lid"]
        assert vals["link_layer"] == st["Link layer"] and vals["state"] == "PORT_ACTIVE (4)"
        assert vals["active_mtu"] == ("4096 (5)" if st["Link layer"] == "InfiniBand" else "1024 (3)")


def test_ibv_devinfo_verbose_matches_real_cx4(sim):
    sim.init("legacy-eth")                         # mlx5_0: ConnectX-4 MCX416A-CCAT
    cap = real("ibv_devinfo_vv_cx4_1.txt")
    cap = cap[cap.index("[tgillis@node1019 ~]$ ibv_devinfo -vv") + 1:]
    cap = [ln for ln in cap if ln]
    for args in (("-v",), ("-vv",), ("-v", "-v"), ("--verbose",)):
        out = sim.out("ibv_devinfo", "-d", "mlx5_0", *args).split("\n")
        assert [re.sub(r"(:\t+).*", r"\1", ln) for ln in out[:len(cap)]] == \
            [re.sub(r"(:\t+).*", r"\1", ln) for ln in cap]
        assert out[10:len(cap)] == cap[10:]        # max_mr_size .. max_ah as the capture prints them
        assert out[6] == cap[6] == "\tvendor_part_id:\t\t\t4115"
        assert out[len(cap)] == "\t\tport:\t1"     # the rest of -v is not simulated


def test_ibv_devinfo_errors_and_list(sim):
    sim.init("cx6dx-roce")
    p = sim.run("ibv_devinfo", "-d", "mlx5_9")
    assert (p.returncode, p.stdout, p.stderr) == (255, "", "IB device 'mlx5_9' wasn't found\n")
    assert sim.out("ibv_devinfo", "-l") == "4 HCAs found:\n\tmlx5_0\n\tmlx5_1\n\tmlx5_2\n\tmlx5_3\n\n"
    allv = sim.out("ibv_devinfo")
    assert [ln for ln in allv.split("\n") if ln.startswith("hca_id:")] == ["hca_id:\tmlx5_%d" % i for i in range(4)]
    assert allv == "".join(sim.out("ibv_devinfo", "-d", "mlx5_%d" % i) for i in range(4))
    p = sim.run("ibv_devinfo", "-d", "mlx5_0", "-i", "2")
    assert (p.returncode, p.stderr) == (4, "Invalid port requested for device\n")
    assert sim.out("ibv_devinfo", "-d", "mlx5_0", "-i", "1") == sim.out("ibv_devinfo", "--ib-dev=mlx5_0")
