"""The real captures that no other simulator test compares (issue 16): each runs the same command on the closest
simulated card of the same family and compares the layout - the lines' labels and their order, indentation, the
column a value starts in, trailing spaces, markers and footers. A capture altered by its author (INDEX.md: W, X) is
compared on what the alteration kept: tabs the author turned into spaces are expanded on both sides, a `column -t`
is re-applied to the simulator's output, a `grep` is re-applied to it.

tests/unit/sim/test_every_capture.py checks that every capture in tests/fixtures/real is compared by some test here
or in the other simulator tests."""
import re

from sim_helpers import real


def expand(lines):
    return [line.expandtabs(8) for line in lines]


def skeleton(lines):
    """(indent, label) of every `label: value` line - the shape of a listing without its values."""
    out = []
    for line in expand(lines):
        m = re.match(r"^( *)([^:]+):", line)
        if m:
            out.append((len(m.group(1)), m.group(2).strip()))
    return out


def value_column(line):
    """Where the value of a `    NAME      value` row starts."""
    m = re.match(r"^(\s+\S+\s+)\S", line)
    return len(m.group(1)) if m else None


# ---------------------------------------------------------------------------- mlxconfig


def test_query_through_egrep_as_the_cx7_capture(sim):
    """mlxconfig_query_egrep_cx7_1.txt: `mlxconfig -d 37:00.0 query | egrep ...` on a ConnectX-7 (MFT 4.30.1)."""
    cap = [ln for ln in real("mlxconfig_query_egrep_cx7_1.txt") if ln]
    sim.init("dgx-h100-eth")
    wanted = re.compile(r"Device type:|Name:|Description:|Configurations:|SRIOV_EN|LINK_TYPE|NUM_OF_VFS")
    ours = [ln for ln in sim.out("mlxconfig", "-d", "18:00.0", "query").split("\n") if wanted.search(ln)]
    assert [ln.split()[0] for ln in ours] == [ln.split()[0] for ln in cap[1:]]
    for got, want in zip(ours, cap[1:]):
        if got.startswith(" "):          # a parameter row: the name at 8, the value at 52, padded to 20
            assert value_column(got) == value_column(want) == 52, (got, want)
        else:                             # a header label: the value at 20
            assert got.index(got.split(":", 1)[1].strip()) == want.index(want.split(":", 1)[1].strip()), (got, want)
    for got, want in zip(ours[:2] + ours[4:6], cap[1:3] + cap[5:7]):
        assert len(got) == len(want) and got.endswith(" "), (got, want)     # the trailing-space padding
    assert ours[3] == cap[4] and ours[3].endswith(" Next Boot")


def test_set_session_as_the_cx7_capture(sim):
    """mlxconfig_set_cx7_1.txt: `q | grep NUM_OF_VFS`, then `set NUM_OF_VFS=127` answered y, then the grep again
    (the author stripped the blank lines of the set's output)."""
    cap = real("mlxconfig_set_cx7_1.txt")
    sim.init("dgx-h100-eth")
    rows = [ln for ln in cap if ln.strip().startswith("NUM_OF_VFS")]
    before = [ln for ln in sim.out("mlxconfig", "-d", "18:00.0", "q").split("\n") if "NUM_OF_VFS" in ln]
    assert value_column(before[0]) == value_column(rows[0]) == 52
    start = cap.index("Device #1:")
    block = cap[start:cap.index("-I- Please reboot machine to load new configurations.") + 1]
    text = sim.out("mlxconfig", "-d", "18:00.0", "set", "NUM_OF_VFS=127", input="y\n")
    # the terminal echoes the answer; the tool's own output goes on after the prompt
    text = text.replace(" Apply new Configuration? (y/n) [n] : ", " Apply new Configuration? (y/n) [n] : y\n")
    ours = [ln for ln in text.split("\n") if ln.strip()]

    def labels(lines):
        return [ln.split(":")[0].strip() if ":" in ln else ln.split()[0] for ln in lines]
    assert labels(ours) == labels(block), ours
    header = [ln for ln in ours if ln.startswith("Configurations:")][0]
    assert header == [ln for ln in block if ln.startswith("Configurations:")][0]      # Next Boot at 57, New at 73
    row = [ln for ln in ours if ln.strip().startswith("NUM_OF_VFS")][0]
    want = [ln for ln in block if ln.strip().startswith("NUM_OF_VFS")][0]
    assert [m.start() for m in re.finditer(r"\S+", row)] == [m.start() for m in re.finditer(r"\S+", want)]
    assert ours[-3:] == block[-3:]
    after = [ln for ln in sim.out("mlxconfig", "-d", "18:00.0", "q").split("\n") if "NUM_OF_VFS" in ln]
    assert after[0].split() == ["NUM_OF_VFS", "127"]          # the next boot's value, as the capture shows


def test_e_query_starred_rows_as_the_cx6_capture(sim):
    """mlxconfig_e_query_grep_cx6_1.txt: `mlxconfig -e -d /dev/mst/mt4123_pciconf0 query | egrep '\\*|Next'` on a
    ConnectX-6 whose LINK_TYPE_P1 is Ethernet and two values wait for the next boot (the capture's columns were
    hand-aligned: names, values, the star and the footer are compared)."""
    cap = real("mlxconfig_e_query_grep_cx6_1.txt")
    sim.init("mixed")
    sim.out("mst", "start")
    sim.out("mlxconfig", "-d", "17:00.0", "-y", "set", "LINK_TYPE_P1=ETH")
    sim.out("mlxsim", "reboot")
    sim.out("mst", "start")
    sim.out("mlxconfig", "-d", "17:00.0", "-y", "set", "PCI_WR_ORDERING=1", "EXP_ROM_PXE_ENABLE=0")
    out = sim.out("mlxconfig", "-e", "-d", "/dev/mst/mt4123_pciconf0", "query").split("\n")
    ours = [ln for ln in out if re.search(r"\*|Next", ln)]
    want = [ln for ln in cap[1:] if re.search(r"\*|Next", ln)]     # cap[0]: the command line
    assert ours[0].split() == want[0].split() == ["Configurations:", "Default", "Current", "Next", "Boot"]
    starred = {ln.split()[1]: ln.split()[2:] for ln in ours if ln.startswith("*")}
    assert {ln.split()[1]: ln.split()[2:] for ln in want if ln.startswith("*")} == {
        name: starred[name] for name in ("LINK_TYPE_P1", "PCI_WR_ORDERING", "EXP_ROM_PXE_ENABLE")}
    assert ours[-1] == want[-1] == "The '*' shows parameters with next value different from default/current value."


def test_query_of_a_connectx4_as_the_capture(sim):
    """mlxconfig_query_cx4_1.txt: `mlxconfig -d /dev/mst/mt4115_pciconf0 query` on a ConnectX-4 (the author cut the
    listing after three rows and the header's column titles)."""
    cap = real("mlxconfig_query_cx4_1.txt")
    sim.init("legacy-eth")
    sim.out("mst", "start")
    out = sim.out("mlxconfig", "-d", "/dev/mst/mt4115_pciconf0", "query").split("\n")
    out = out[out.index("Device #1:"):]
    head = cap[cap.index("Device #1:"):cap.index("Configurations:")]
    assert out[:3] == head[:3]                                    # Device #1:, the dashes, a blank line
    assert [ln.split(":")[0] for ln in out[3:len(head)]] == [ln.split(":")[0] for ln in head[3:]]
    assert out[3].rstrip() == head[3] == "Device type:        ConnectX4"
    assert [ln for ln in out if ln.startswith("Device:")][0].rstrip() == "Device:             /dev/mst/mt4115_pciconf0"
    rows = {ln.split()[0]: ln for ln in out if ln.startswith("        ") and ln.strip()}
    for want in cap[cap.index("Configurations:") + 1:cap.index("...")]:
        assert value_column(rows[want.split()[0]]) == value_column(want) == 52, (rows[want.split()[0]], want)


# ---------------------------------------------------------------------------- mst


def test_mst_status_of_two_cx7_as_the_capture(sim):
    """mst_status_cx7_1.txt: `mst status` with only the configuration module loaded, two ConnectX-7."""
    cap = real("mst_status_cx7_1.txt")
    sim.init("dgx-h100")
    sim.out("mst", "start")
    out = sim.out("mst", "status").split("\n")
    assert out[:7] == cap[:7]
    assert out[7] == cap[7] == "/dev/mst/mt4129_pciconf0         - PCI configuration cycles access."
    assert re.sub(r"=\S+:\S+\.\d", "=X", out[8]) == re.sub(r"=\S+:\S+\.\d", "=X", cap[8])
    assert out[9] == cap[9] == "                                   Chip revision is: 00"
    assert out[10].startswith("/dev/mst/mt4129_pciconf1 ") and out[10] == cap[10]


def test_mst_status_v_of_a_bluefield3_as_the_capture(sim):
    """mst_status_v_bf3_1.txt: `mst status -v` (here on the host of a BlueField-3; the capture ran on its Arm
    cores, whose NET column names representors and SFs)."""
    cap = real("mst_status_v_bf3_1.txt")
    cap = cap[cap.index("MST modules:"):]
    sim.init("mixed")
    sim.out("mst", "start")
    out = sim.out("mst", "status", "-v").split("\n")
    assert out[:6] == cap[:6]
    # MFT 4.30.1: NET %-40s whatever the names (the capture's longest, a representor and an SF, is 33 characters);
    # the capture lost NUMA's padding (%-6s)
    title = [m.start() for m in re.finditer(r"\S+", cap[6])]
    assert [m.start() for m in re.finditer(r"\S+", out[6])] == title
    assert out[6] == cap[6] + "  "
    assert cap[6].index("NUMA") - cap[6].index("NET") == 40 == out[6].index("NUMA") - out[6].index("NET")
    bf3 = [ln for ln in out if ln.startswith("BlueField3(rev:1)")]
    want = [ln for ln in cap if ln.startswith("BlueField3(rev:1)")]
    for got in bf3:
        assert [m.start() for m in re.finditer(r"\S+", got)][:4] == [m.start() for m in re.finditer(r"\S+", want[0])][:4]
    assert want[0].split()[1] == "/dev/mst/mt41692_pciconf0.1" and any(
        ln.split()[1] == "/dev/mst/mt41692_pciconf0.1" for ln in bf3)
    assert all(out[out.index(row) + 1] == "" for row in bf3)          # a blank line after every row


# ---------------------------------------------------------------------------- ibstat, ibdev2netdev


def test_ibstat_of_a_cx6dx_as_the_capture(sim):
    """ibstat_cx6dx_1.txt (tabs turned into spaces by the author): two ConnectX-6 Dx Ethernet ports."""
    cap = real("ibstat_cx6dx_1.txt")
    sim.init("cx6dx-roce")
    out = sim.out("ibstat").split("\n")
    first = out[:out.index("CA 'mlx5_1'")]
    want = cap[:cap.index("CA 'mlx5_1'")]
    assert skeleton(first) == skeleton(want)
    assert [ln.split(":")[1].strip() for ln in expand(first) if ln.strip().startswith(("CA type", "Rate", "Link"))] \
        == [ln.split(":")[1].strip() for ln in expand(want) if ln.strip().startswith(("CA type", "Rate", "Link"))]
    assert all(re.fullmatch(r"0x[0-9a-f]{16}", ln.split(": ")[1]) for ln in first if "GUID" in ln)


def test_ibstat_of_a_cx6_ethernet_port_as_the_a100_capture(sim):
    """ibstat_a100_cx6_1.txt: an Azure A100's ConnectX-6 virtual functions (MT4126) at 200G Ethernet - the closest
    simulated card is the physical ConnectX-6 (MT4123) with its port in Ethernet mode."""
    cap = real("ibstat_a100_cx6_1.txt")
    sim.init("mixed")
    sim.out("mst", "start")
    sim.out("mlxconfig", "-d", "17:00.0", "-y", "set", "LINK_TYPE_P1=ETH")
    sim.out("mlxsim", "reboot")
    out = sim.out("ibstat").split("\n")
    ca = [ln for ln in out if ln.startswith("CA '")]
    block = out[out.index(ca[0]):out.index(ca[1])]
    want = cap[:cap.index("CA 'mlx5_1'")]
    assert skeleton(block) == skeleton(want)
    assert [ln.strip() for ln in block if "Link layer" in ln or "Rate" in ln] == ["Rate: 200", "Link layer: Ethernet"]
    assert [ln.strip() for ln in want if "Link layer" in ln or "Rate" in ln] == ["Rate: 200", "Link layer: Ethernet"]


def test_ibdev2netdev_through_column_as_the_capture(sim):
    """ibdev2netdev_cx7_cx6_1.txt: `ibdev2netdev | column -t` on an H100 (8 ConnectX-7 IB, 2 dual-port Ethernet
    cards); the poster's `# ...` comments are not the tool's. The names sort as text (mlx5_10 before mlx5_2)."""
    cap = real("ibdev2netdev_cx7_cx6_1.txt")
    sim.init("dgx-h100")
    raw = [ln for ln in sim.out("ibdev2netdev").split("\n") if ln]
    want = [ln.split("#")[0].split() for ln in cap[1:] if ln.strip()]
    ours = [ln.split() for ln in raw]
    assert [row[1:4] + [row[5][0]] for row in ours] == [["port", "1", "==>", "("]] * len(ours)
    assert [row[1:4] + [row[5][0]] for row in want] == [["port", "1", "==>", "("]] * len(want)
    assert [row[0] for row in ours] == sorted(row[0] for row in ours)           # text order, as the capture
    assert [row[0] for row in want] == sorted(row[0] for row in want)
    assert {row[5] for row in ours} <= {"(Up)", "(Down)"} and {row[5] for row in want} == {"(Up)", "(Down)"}
    assert len(ours) == len(want) == 12


# ---------------------------------------------------------------------------- lspci


def test_lspci_vv_vpd_of_a_bluefield2_as_the_facts_module_capture(sim):
    """lspci_vv_vpd_bf2_1.txt (another project's fixture, tabs turned into spaces): the VPD block of a
    BlueField-2's function 0 - the read-only fields in the capture's order, End last."""
    cap = real("lspci_vv_vpd_bf2_1.txt")
    sim.init("legacy-eth")
    bf2 = [ln.split()[0] for ln in sim.out("lspci", "-d", "15b3:").split("\n") if "BlueField-2" in ln][0]
    out = sim.out("lspci", "-vv", "-s", bf2).split("\n")

    def vpd(lines):
        lines = [ln.strip() for ln in lines]
        start = lines.index("Capabilities: [48] Vital Product Data")
        block = lines[start:]
        return [re.match(r"^(\[\w\w\]|[A-Za-z ]+)", ln).group(1).strip() for ln in block[:block.index("End") + 1]
                if ln]
    fields = [f for f in vpd(out) if f.startswith("[")]
    # the capture's fields in its order (this firmware adds [VU], the serial, as lspci_vvv_bf2_2.txt shows)
    assert [f for f in fields if f in vpd(cap)] == [f for f in vpd(cap) if f.startswith("[")]
    assert vpd(out)[1] == vpd(cap)[1] == "Product Name" and vpd(out)[-1] == vpd(cap)[-1] == "End"


def test_mst_start_without_its_kernel_modules_as_the_capture(sim):
    """mst_start_fail_1.txt: MFT installed without the kernel modules of the running kernel (fault
    mst_modules_missing): every modprobe fails, the devices are not created."""
    cap = real("mst_start_fail_1.txt")
    cap = cap[cap.index("Starting MST (Mellanox Software Tools) driver set"):]
    sim.init("dgx-h100", "node01", "--bootloader", "bls")
    sim.out("mlxsim", "fault", "add", "mst_modules_missing")
    run = sim.run("mst", "start")
    kernel = sim.state_data()["platform"]["kernel"]
    assert run.returncode == 1
    ours = run.stdout.split("\n")
    assert ours == [ln.replace("5.14.0-427.13.1.el9_4.aarch64", kernel) for ln in cap]
    assert sim.out("mst", "status").split("\n")[2] == "    MST PCI module is not loaded"
    assert sim.run("mlxconfig", "-d", "/dev/mst/mt4129_pciconf0", "q").returncode != 0


# ---------------------------------------------------------------------------- ethtool


def test_ethtool_settings_of_a_connectx4_as_the_capture(sim):
    """ethtool_mlx5_cx4_1.txt: `ethtool IF` of a ConnectX-4 100GbE port - the same lines, tabs and all."""
    cap = real("ethtool_mlx5_cx4_1.txt")
    cap = cap[cap.index("Settings for enp1s0np0:"):]
    sim.init("legacy-eth")
    netdev = [ln.split("==> ")[1].split()[0] for ln in sim.out("ibdev2netdev", "-v").split("\n")
              if "(MT4115 - " in ln][0]                                     # the ConnectX-4's first port
    ours = sim.out("ethtool", netdev).split("\n")
    assert ours == [ln.replace("enp1s0np0", netdev) for ln in cap]
    sim.out("mlxsim", "fault", "add", "link_down")
    down = sim.out("ethtool", netdev)
    assert "\tSpeed: Unknown!\n" in down and "\tLink detected: no\n" in down


# ---------------------------------------------------------------------------- mlxup


def test_mlxup_list_content_as_the_capture(sim):
    """mlxup_list_and_download_1.txt: `mlxup -l | grep MT_0000000834` - the row of the ConnectX-7 image the bundle
    carries (the download in the rest of the capture needs NVIDIA's server: refused, test_edges_fidelity.py)."""
    cap = real("mlxup_list_and_download_1.txt")
    want = cap[cap.index("sh-5.2$ mlxup -l | grep MT_0000000834") + 1]
    sim.init("dgx-h100")
    assert [ln for ln in sim.out("mlxup", "-l").split("\n") if "MT_0000000834" in ln] == [want]
    rows = [ln for ln in sim.out("mlxup", "--list-content").split("\n") if ln]
    assert all(row[45:48] == "FW " and row[26:29] == "MT_" for row in rows) and len(rows) >= 10


def test_the_crypto_group_of_a_connectx7_is_plain_rows_before_port_owner(sim):
    """Issue 16's report of real ConnectX-7 output (no capture in the fixtures): CRYPTO_POLICY a plain row just
    before PORT_OWNER, beside LARGE_MTU_TWEAK_64 and AES_XTS_TWEAK_INC_64; no RO marker, no RO footer. A
    BlueField-3 keeps its own capture's order (test_families_fidelity.py)."""
    sim.init("dgx-h100")
    out = sim.out("mlxconfig", "-d", "18:00.0", "q").split("\n")
    names = [ln.split()[0] for ln in out if ln.startswith("        ") and ln.strip()]
    owner = names.index("PORT_OWNER")
    assert names[owner - 3:owner] == ["LARGE_MTU_TWEAK_64", "AES_XTS_TWEAK_INC_64", "CRYPTO_POLICY"]
    assert "LOG_MAX_QUEUE" in names and not any("The 'RO' shows parameters" in ln for ln in out)
    assert all(re.fullmatch(r" {8}\S+ +\S+ *", ln) for ln in out if ln.startswith("        ") and ln.strip())


def test_the_parameters_real_connectx7_output_has(sim):
    """Issue 16: LOG_MAX_QUEUE, NUM_OF_PLANES_P1/P2, IB_PROTO_WIDTH_EN_MASK_P1/P2, BAR_PAGE_ALIGNMENT,
    P2P_ORDERING_MODE, ATS_ENABLED and PER_PF_NUM_SF are in real ConnectX-7 output: a dual-port card lists each."""
    sim.init("dgx-h100")
    out = sim.out("mlxconfig", "-d", "29:00.0", "q").split("\n")
    names = [ln.split()[0] for ln in out if ln.startswith("        ") and ln.strip()]
    for name in ("LOG_MAX_QUEUE", "NUM_OF_PLANES_P1", "NUM_OF_PLANES_P2", "IB_PROTO_WIDTH_EN_MASK_P1",
                 "IB_PROTO_WIDTH_EN_MASK_P2", "BAR_PAGE_ALIGNMENT", "P2P_ORDERING_MODE", "ATS_ENABLED", "PER_PF_NUM_SF"):
        assert names.count(name) == 1, name
    # three TLVs (VPI LINK TYPE, MULTIPLANE CONF, IB LINK PHY CONF) right after DCR_LIFO_SIZE, each P1 then P2: the
    # BlueField-3 listing's LINK_TYPE_P1, LINK_TYPE_P2 after DCR_LIFO_SIZE, the ConnectX-5 one's three in this order
    at = names.index("DCR_LIFO_SIZE") + 1
    assert names[at:at + 6] == ["LINK_TYPE_P1", "LINK_TYPE_P2", "NUM_OF_PLANES_P1", "NUM_OF_PLANES_P2",
                                "IB_PROTO_WIDTH_EN_MASK_P1", "IB_PROTO_WIDTH_EN_MASK_P2"]
    bf3 = [ln.split()[0] for ln in real("mstconfig_query_bf3_excerpt_1.txt") if ln.startswith("        ")]
    assert bf3[-3:] == ["DCR_LIFO_SIZE", "LINK_TYPE_P1", "LINK_TYPE_P2"]
    cx5 = [ln.split()[0] for ln in real("mlxconfig_query_cx5_1.txt") if ln.startswith("        ")]
    at = cx5.index("DCR_LIFO_SIZE") + 1
    assert cx5[at:at + 3] == ["LINK_TYPE_P1", "NUM_OF_PLANES_P1", "IB_PROTO_WIDTH_EN_MASK_P1"]
