"""playbooks/snapshot.yml and the twin seeded from its files (tests/twin/snapshot.py, mlxsim init --snapshot).

A small fleet - two simulated servers (a ConnectX-6 Dx pair with an OEM PSID, NV values set and pending, a burned
firmware waiting for its reset and a degraded PCIe link; and the mixed profile with its ConnectX-7 in Ethernet mode)
and two NVUE emulator leaves (5.11.0 with 5.9.1 in the other partition and a RoCE configuration; 5.9.1 with an
unsaved change and a port down) - is snapshotted in check mode: one file per host, nothing changed. New machines are
seeded from the files, and the same playbook run on them writes the same snapshot: mlx_info on a seeded server
reports the same cards (PCI addresses, part numbers, PSIDs, firmware, NV values ...) and nvue_info on a seeded leaf
the same release, ports and applied and startup configuration. A card the simulator does not model is refused,
naming the host, the card and its part number and device; twin.py build --snapshot seeds the hosts that have a
file and makes the others from their profiles."""
import json
import subprocess
import sys
import types

import pytest
import yaml

from _paths import REPO, SIM_BIN
from _roleplay import run, sim_vars, simulated

for _path in (REPO / "tests" / "twin", REPO / "tests" / "unit" / "nvue"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))
import snapshot as twin_snapshot  # noqa: E402  tests/twin/snapshot.py
from nvue_helpers import Switch, cert_pair  # noqa: E402

SNAPSHOT = REPO / "playbooks" / "snapshot.yml"
TWIN = REPO / "tests" / "twin" / "twin.py"
SERVERS = {"srv-a": "cx6dx-roce", "srv-b": "mixed"}
LEAVES = ("leaf-a", "leaf-b")
HOSTS = sorted(list(SERVERS) + list(LEAVES))
ROCE = {"interface": {"swp1": {"link": {"mtu": 9000}, "description": "srv-a:enp59s0f0np0"}},
        "qos": {"roce": {"enable": "on", "mode": "lossless"}}}


def started(directory, name):
    """An emulator on an existing state directory (a seeded leaf), nvued started."""
    sw = Switch.__new__(Switch)
    sw.dir, sw.hostname, sw.password, sw.proc, sw.port = directory, name, "Seeded-Leaf-1", None, None
    sw.start()
    return sw


def snapshot_run(tmp, sims, switches, *args, check=False):
    return run(tmp, {name: sim_vars(sim) for name, sim in sims.items()}, SNAPSHOT, check=check,
               groups={"leaves": {name: sw.httpapi_vars() for name, sw in switches.items()}}, args=list(args))


def files(directory):
    return {path.stem: json.loads(path.read_text()) for path in sorted(directory.glob("*.json"))}


def without_time(doc):
    return {key: value for key, value in doc.items() if key != "taken"}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """The fleet, its check-mode snapshot: {"dir", "tmp", "sims", "switches", "ran", "docs"}."""
    tmp = tmp_path_factory.mktemp("snapshot")
    sims = {name: simulated(tmp, name, profile) for name, profile in SERVERS.items()}
    a, b = sims["srv-a"], sims["srv-b"]
    assert a.run("mlxconfig", "-y", "-d", "3b:00.0", "set", "SRIOV_EN=1", "NUM_OF_VFS=8").returncode == 0
    a.mlxsim("reboot")
    assert a.run("mlxconfig", "-y", "-d", "3b:00.0", "set", "NUM_OF_VFS=16").returncode == 0     # pending
    image = a.mkimage("MT_0000000359", "22.43.1014", 4125)
    assert a.run("flint", "-d", "d8:00.0", "-i", image["path"], "-y", "burn").returncode == 0      # not reset
    a.mlxsim("fault", "add", "oem_psid", "--device", "3b:00.0", "psid=DEL0000000027")
    a.mlxsim("fault", "add", "pcie_degraded", "--device", "d8:00.0", "speed=8GT/s", "width=8")
    assert b.run("mlxconfig", "-y", "-d", "65:00.0", "set", "LINK_TYPE_P1=ETH").returncode == 0
    b.mlxsim("reboot")
    switches = {"leaf-a": Switch(tmp / "leaf-a", "leaf-a", release="5.11.0", ports="swp1-4",
                                 extra=("--older-release", "5.9.1")),
                "leaf-b": Switch(tmp / "leaf-b", "leaf-b", release="5.9.1", ports="swp1-2",
                                 extra=("--auto-save", "off"))}
    for sw in switches.values():
        sw.start()
    switches["leaf-a"].admin("port", "swp1", "--neighbor", "srv-a:enp59s0f0np0")
    switches["leaf-a"].change("/", ROCE)
    switches["leaf-b"].admin("fault", "set", "port_down", "swp2")
    switches["leaf-b"].change("/interface/swp1", {"description": "not saved"})      # applied, startup older
    for sim in sims.values():
        sim.clear_calls()
    marks = {name: sw.mark() for name, sw in switches.items()}
    try:
        ran = snapshot_run(tmp, sims, switches, check=True)
        (folder,) = (tmp / "snapshots").iterdir()
        yield {"dir": folder, "tmp": tmp, "sims": sims, "switches": switches, "ran": ran, "docs": files(folder),
               "marks": marks}
    finally:
        for sw in switches.values():
            sw.stop()


def test_the_check_mode_snapshot_is_a_file_per_host_and_changes_nothing(fleet):
    ran, docs = fleet["ran"], fleet["docs"]
    assert ran.ok, ran
    assert sorted(docs) == HOSTS
    version = yaml.safe_load((REPO / "galaxy.yml").read_text())["version"]
    for name, doc in docs.items():
        assert (doc["schema"], doc["host"], doc["kind"]) == (1, name, "leaf" if name in LEAVES else "server")
        assert doc["collection"] == {"name": "gpufabric.mlnx", "version": version}
        assert doc["taken"] == fleet["dir"].name      # snapshots/<UTC time>, one time for every host
    a = {d["address"]: d for d in docs["srv-a"]["mlx_info"]["devices"]}
    assert sorted(a) == ["0000:3b:00.0", "0000:3b:00.1", "0000:d8:00.0", "0000:d8:00.1"]
    assert a["0000:3b:00.0"]["psid"] == "DEL0000000027" and a["0000:d8:00.0"]["fw_pending"] is True
    assert a["0000:3b:00.0"]["nv_config"]["NUM_OF_VFS"]["current"] == "8"
    assert a["0000:3b:00.0"]["pending_nv"] == {"NUM_OF_VFS": {"current": "8", "next": "16"}}
    assert "invocation" not in docs["srv-a"]["mlx_info"] and "changed" not in docs["srv-a"]["mlx_info"]
    platform = docs["srv-a"]["platform"]
    assert platform["ofed"] == {"version": "24.10-2.1.8.0", "flavour": "mlnx-ofed",
                                "raw": "MLNX_OFED_LINUX-24.10-2.1.8.0"}
    assert platform["kernel"] and platform["os_family"]
    leaf = docs["leaf-a"]["nvue_info"]
    assert leaf["system"]["release"] == "5.11.0" and leaf["image"]["partitions"]["2"]["release"] == "5.9.1"
    assert leaf["config"]["applied"] == fleet["switches"]["leaf-a"].get("/?rev=applied&filled=false")
    assert leaf["config"]["applied"]["interface"]["swp1"]["link"]["mtu"] == 9000
    assert docs["leaf-b"]["nvue_info"]["revisions"]["unsaved"] is True
    # read only: no card written, no revision made on a leaf
    for sim in fleet["sims"].values():
        assert sim.argvs(), "the snapshot read the cards"
        assert not [argv for argv in sim.argvs() if {"set", "burn", "reset", "reboot"} & set(argv)], sim.argvs()
    for name, sw in fleet["switches"].items():
        assert [e["event"] for e in sw.since(fleet["marks"][name]) if e["event"] != "read"] == []


def test_a_run_without_check_writes_the_same_snapshot_where_it_is_told(fleet):
    folder = fleet["tmp"] / "told"
    ran = snapshot_run(fleet["tmp"], fleet["sims"], fleet["switches"], "-e", "gpufabric_snapshot_dir=told")
    assert ran.ok, ran
    again = files(folder)
    assert {n: without_time(d) for n, d in again.items()} == {n: without_time(d) for n, d in fleet["docs"].items()}


def test_seeded_machines_report_what_the_originals_did(fleet, tmp_path):
    seeded, twins = {}, {}
    for name in SERVERS:
        state = twin_snapshot.server_state(fleet["dir"] / (name + ".json"), tmp_path / name)
        seeded[name] = types.SimpleNamespace(env={"PATH": "%s:%s" % (SIM_BIN, fleet["sims"][name].env["PATH"]),
                                                  "MLXSIM_STATE": str(state), "MLXSIM_TIME_SCALE": "0",
                                                  "MLXSIM_LOG": str(tmp_path / name / "calls.jsonl")})
    cert = cert_pair(tmp_path / "cert")
    for name in LEAVES:
        twin_snapshot.leaf_state(fleet["dir"] / (name + ".json"), tmp_path / "leaves" / name, "Seeded-Leaf-1", cert)
    try:
        for name in LEAVES:
            twins[name] = started(tmp_path / "leaves" / name, name)
        ran = snapshot_run(tmp_path, seeded, twins, "-e", "gpufabric_snapshot_dir=again")
        assert ran.ok, ran
        again = files(tmp_path / "again")
    finally:
        for sw in twins.values():
            sw.stop()
    # what the seeded machines report, field by field where it matters
    a = {d["address"]: d for d in again["srv-a"]["mlx_info"]["devices"]}
    assert [(addr, d["part_number"], d["psid"], d["fw_version"], d["fw_running"]) for addr, d in sorted(a.items())] == [
        ("0000:3b:00.0", "MCX623106AN-CDAT", "DEL0000000027", "22.41.1000", "22.41.1000"),
        ("0000:3b:00.1", "MCX623106AN-CDAT", "DEL0000000027", "22.41.1000", "22.41.1000"),
        ("0000:d8:00.0", "MCX623106AN-CDAT", "MT_0000000359", "22.43.1014", "22.41.1000"),
        ("0000:d8:00.1", "MCX623106AN-CDAT", "MT_0000000359", "22.43.1014", "22.41.1000")]
    assert {k: a["0000:3b:00.0"]["nv_config"][k]["current"] for k in ("SRIOV_EN", "NUM_OF_VFS")} == {
        "SRIOV_EN": "True(1)", "NUM_OF_VFS": "8"}
    assert a["0000:3b:00.0"]["pending_nv"] == {"NUM_OF_VFS": {"current": "8", "next": "16"}}
    assert a["0000:d8:00.0"]["pcie"]["degraded"] is True and a["0000:d8:00.0"]["pcie"]["lnksta"] == {
        "speed": "8GT/s", "width": 8}
    b = {d["address"]: d for d in again["srv-b"]["mlx_info"]["devices"]}
    assert b["0000:65:00.0"]["netdevs"] == ["enp101s0np0"] and b["0000:65:00.0"]["ports"][0]["link_layer"] == "Ethernet"
    assert again["leaf-a"]["nvue_info"]["system"]["release"] == "5.11.0"
    assert again["leaf-a"]["nvue_info"]["config"]["applied"]["qos"] == ROCE["qos"]
    assert again["leaf-b"]["nvue_info"]["revisions"]["unsaved"] is True
    assert again["leaf-b"]["nvue_info"]["interfaces"]["swp2"]["oper_status"] == "down"
    # and everything else: the seeded machines' snapshot is the originals', host by host
    for name in HOSTS:
        assert without_time(again[name]) == without_time(fleet["docs"][name]), name
    record = json.loads((tmp_path / "srv-a" / "state.json").read_text())["snapshot"]
    assert record["models"] == {"0000:3b:00": "ConnectX6DX MCX623106AN-CDAT (by part number MCX623106AN-CDAT)",
                                "0000:d8:00": "ConnectX6DX MCX623106AN-CDAT (by part number MCX623106AN-CDAT)"}
    assert record["not_taken"] == []


def test_a_card_no_model_matches_is_refused_naming_host_card_part_number_and_device(fleet, tmp_path):
    from mlxsim.state import SimError
    doc = json.loads((fleet["dir"] / "srv-a.json").read_text())
    for dev in doc["mlx_info"]["devices"]:
        if dev["card"] == "0000:d8:00":
            dev.update(part_number="MCX94315A-XXXX", psid="MT_0000009999", device_type="ConnectX9")
    (tmp_path / "srv-a.json").write_text(json.dumps(doc))
    with pytest.raises(SimError) as err:
        twin_snapshot.server_state(tmp_path / "srv-a.json", tmp_path / "srv-a")
    for words in ("srv-a", "the card at 0000:d8:00", "part number MCX94315A-XXXX", "device ConnectX9",
                  "MCX623106AN-CDAT"):
        assert words in str(err.value), err.value
    assert not (tmp_path / "srv-a" / "state.json").exists()
    cli = subprocess.run([str(SIM_BIN / "mlxsim"), "init", "--snapshot", str(tmp_path / "srv-a.json"), "--state",
                          str(tmp_path / "cli" / "state.json")], capture_output=True, text=True, check=False)
    assert cli.returncode == 1 and "the card at 0000:d8:00 (part number MCX94315A-XXXX, device ConnectX9" in cli.stderr


def test_twin_build_seeds_the_hosts_with_a_file_and_profiles_the_others(fleet, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": {
        "servers": {"hosts": {"srv-a": {}, "srv-c": {}}, "vars": {"gpufabric_twin_profile": "cx6dx-roce"}},
        "leaves": {"hosts": {"leaf-a": {}, "leaf-c": {}}}}}}))
    out = tmp_path / "twin"
    proc = subprocess.run([sys.executable, str(TWIN), "build", "-i", str(site), "--out", str(out), "--snapshot",
                           str(fleet["dir"])], capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert "1 servers and 1 leaves seeded from the snapshot" in proc.stdout, proc.stdout

    def state(*parts):
        return json.loads(out.joinpath(*parts, "state.json").read_text())
    seeded, profiled = state("machines", "srv-a"), state("machines", "srv-c")
    assert seeded["snapshot"]["host"] == "srv-a" and "snapshot" not in profiled
    assert [c["psid"] for c in seeded["cards"]] == ["DEL0000000027", "MT_0000000359"]   # as the snapshot read them
    assert [c["psid"] for c in profiled["cards"]] == ["MT_0000000359", "MT_0000000359"]
    assert seeded["cards"][1]["fw"]["burned"] == "22.43.1014" and profiled["cards"][1]["fw"]["burned"] == "22.41.1000"
    assert seeded["platform"]["kernel"] == fleet["docs"]["srv-a"]["platform"]["kernel"]
    leaf, factory = state("leaves", "leaf-a"), state("leaves", "leaf-c")
    assert leaf["applied"] == fleet["docs"]["leaf-a"]["nvue_info"]["config"]["applied"]
    assert leaf["image"]["partition1"]["release"] == "5.11.0" and leaf["ports"]["swp1"]["neighbor"]["host"] == "srv-a"
    assert "qos" not in factory["applied"]
    inventory = yaml.safe_load((out / "twin.yml").read_text())["all"]["children"]
    assert sorted(inventory["servers"]["hosts"]) == ["srv-a", "srv-c"]
    assert sorted(inventory["leaves"]["hosts"]) == ["leaf-a", "leaf-c"]


@pytest.mark.parametrize("change, words", [
    (lambda info: info["interfaces"].update({"swp9; reboot": {}}), 'leaf-a: port "swp9; reboot" cannot be taken'),
    (lambda info: info["interfaces"]["swp1"]["lldp"][0].update(system_name="srv-a\nx"),
     'leaf-a port swp1: LLDP system name "srv-a\\nx" cannot be taken'),
    (lambda info: info["system"].update(release="5.11.0/../x"), 'leaf-a: release "5.11.0/../x" cannot be taken'),
    (lambda info: info.pop("config"), "snapshot of leaf-a: no applied configuration"),
])
def test_a_leaf_value_outside_its_grammar_is_refused_naming_leaf_and_port(fleet, tmp_path, change, words):
    doc = json.loads((fleet["dir"] / "leaf-a.json").read_text())
    change(doc["nvue_info"])
    (tmp_path / "leaf-a.json").write_text(json.dumps(doc))
    with pytest.raises(twin_snapshot.SnapshotError, match="^snapshot of ") as err:
        twin_snapshot.leaf_state(tmp_path / "leaf-a.json", tmp_path / "leaves" / "leaf-a", "Seeded-Leaf-1",
                                 cert_pair(tmp_path / "cert"))
    assert words in str(err.value), err.value
    assert not (tmp_path / "leaves" / "leaf-a" / "state.json").exists()
