# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fabric form of a lab's leaves: a leaf per rack per rail, one podman network per cable, the NVUE emulator
in the leaves, lldpd in the servers, the httpapi inventory and swap-cables (pure parts, no podman)."""
import copy
import subprocess

import pytest

RAILS = ["enp24s0np0", "enp64s0np0", "enp154s0np0", "enp192s0np0"]
FABRIC = {
    "name": "tf",
    "mgmt": {"network": "mgmt", "subnet": "198.19.31.0/24"},
    "rails": 2,
    "rail_names": RAILS[:2],
    "racks": [{"name": "r01", "servers": [{"name": "a1", "profile": "gpu4-cx7-eth"},
                                          {"name": "a2", "profile": "gpu4-cx7-eth"}]},
              {"name": "r02", "servers": [{"name": "b1", "profile": "gpu4-cx7-eth"}]}],
    "leaves": {"per": "rack", "name": "{rack}-leaf-rail{rail}", "release": "5.9.1",
               "releases": {"r02-leaf-rail1": "5.4.0"}, "port_base": 1, "speed": "400G"},
}


@pytest.fixture
def t(lab):
    return lab.load_lab(copy.deepcopy(FABRIC))


def test_fabric_lab_file(lab, repo):
    fab = lab.read_lab(repo / "tests/lab/labs/fabric.yml")
    assert [n.name for n in fab.leaves] == [f"r0{r}-leaf-rail{i}" for r in (1, 2) for i in range(4)]
    assert {n.name: n.release for n in fab.leaves if n.release != "5.9.1"} == {
        "r02-leaf-rail3": "5.4.0", "r01-leaf-rail1": "5.16.0", "r01-leaf-rail2": "5.11.0"}
    assert [n.mgmt_ip for n in fab.leaves] == [f"198.19.90.{201 + i}" for i in range(8)]
    assert {n.profile for n in fab.servers} == {"gpu4-cx7-eth"}
    assert fab.rail_names == tuple(RAILS)
    assert len(fab.cables) == 16 and fab.rail_networks == ()
    assert fab.cable("fab-r02-02", "enp192s0np0").label == "fab-r02-02:enp192s0np0 -> r02-leaf-rail3:swp2"


def test_leaves_ports_and_cables(t):
    assert [(n.name, n.rack, n.rail, n.ports) for n in t.leaves] == [
        ("r01-leaf-rail0", "r01", 0, ("swp1", "swp2")), ("r01-leaf-rail1", "r01", 1, ("swp1", "swp2")),
        ("r02-leaf-rail0", "r02", 0, ("swp1",)), ("r02-leaf-rail1", "r02", 1, ("swp1",))]
    assert [n.release for n in t.leaves] == ["5.9.1", "5.9.1", "5.9.1", "5.4.0"]
    assert [(c.network, c.server, c.iface, c.leaf, c.port) for c in t.cables] == [
        ("tf-r01-r0-swp1", "a1", "enp24s0np0", "r01-leaf-rail0", "swp1"),
        ("tf-r01-r0-swp2", "a2", "enp24s0np0", "r01-leaf-rail0", "swp2"),
        ("tf-r01-r1-swp1", "a1", "enp64s0np0", "r01-leaf-rail1", "swp1"),
        ("tf-r01-r1-swp2", "a2", "enp64s0np0", "r01-leaf-rail1", "swp2"),
        ("tf-r02-r0-swp1", "b1", "enp24s0np0", "r02-leaf-rail0", "swp1"),
        ("tf-r02-r1-swp1", "b1", "enp64s0np0", "r02-leaf-rail1", "swp1")]
    assert t.networks == ("tf-mgmt",) + tuple(c.network for c in t.cables)


def test_port_base_shifts_the_ports(lab):
    data = copy.deepcopy(FABRIC)
    data["leaves"]["port_base"] = 17
    t = lab.load_lab(data)
    assert t.leaves[0].ports == ("swp17", "swp18")
    assert t.cable("a2", "enp24s0np0").network == "tf-r01-r0-swp18"


@pytest.mark.parametrize("key, value, message", [
    ("per", "rail", "leaves.per: must be 'rack'"),
    ("name", "leaf-{rack}", "leaves.name: 'leaf-{rack}' must contain {rack} and {rail}"),
    ("name", "{su}-{rack}-{rail}", "and no other placeholder"),
    ("name", "{rack}_leaf{rail}", "gives 'r01_leaf0' for rack 'r01' rail 0: not a valid host name"),
    ("name", "a{rail}", "must contain {rack} and {rail}"),
    ("release", "5.9", "leaves.release: '5.9' is not a Cumulus Linux release"),
    ("releases", {"r09-leaf-rail0": "5.4.0"}, "leaves.releases.r09-leaf-rail0: is not a leaf of this lab"),
    ("releases", {"r01-leaf-rail0": "latest"}, "leaves.releases.r01-leaf-rail0: 'latest' is not a Cumulus"),
    ("port_base", 0, "leaves.port_base: must be between 1 and 128"),
    ("speed", "300G", "leaves.speed: '300G' is not a port speed"),
    ("password", "short", "leaves.password: must be 8-64"),
    ("password", "has space 123", "leaves.password: must be 8-64"),
    ("profile", "dgx-h100", "leaves: unknown key(s) profile"),
])
def test_fabric_errors_name_the_key(lab, key, value, message):
    data = copy.deepcopy(FABRIC)
    data["leaves"][key] = value
    with pytest.raises(lab.LabError) as err:
        lab.load_lab(data, source="f.yml")
    assert message in str(err.value)
    assert str(err.value).startswith("f.yml: leaves")


def test_a_leaf_name_may_not_clash_with_a_server(lab):
    data = copy.deepcopy(FABRIC)
    data["racks"][0]["servers"][0]["name"] = "r01-leaf-rail1"
    with pytest.raises(lab.LabError, match="leaf 'r01-leaf-rail1' is already used at .*racks\\[0\\].servers\\[0\\]"):
        lab.load_lab(data)


def test_the_legacy_form_still_names_the_fabric_keys(lab):
    data = copy.deepcopy(FABRIC)
    data["leaves"] = {"release": "5.9.1"}
    with pytest.raises(lab.LabError, match="unknown key\\(s\\) release; allowed: profile \\(or the fabric form"):
        lab.load_lab(data)


def test_networks_one_per_cable_and_a_mgmt_gateway(lab, t):
    argvs = lab.network_create_argvs(t)
    assert argvs[0][argvs[0].index("--gateway") + 1] == "198.19.31.1"
    cable = argvs[1]
    assert cable[-1] == "tf-r01-r0-swp1"
    for opt in ("--internal", "--disable-dns"):
        assert opt in cable
    assert cable[cable.index("--ipam-driver") + 1] == "none"
    assert "gpufabric.cable=a1:enp24s0np0 -> r01-leaf-rail0:swp1" in cable
    assert len(argvs) == 1 + len(t.cables)


def test_legacy_mgmt_has_no_gateway(lab, repo):
    legacy = lab.read_lab(repo / "tests/lab/labs/molecule.yml")
    assert "--gateway" not in lab.network_create_argvs(legacy)[0]


def test_container_argv_names_both_ends_of_each_cable(lab, t):
    def nets(argv):
        return [argv[i + 1] for i, a in enumerate(argv) if a == "--network"]
    assert nets(lab.container_run_argv(t, t.node("a2"))) == [
        "tf-mgmt:ip=198.19.31.12,interface_name=eth0",
        "tf-r01-r0-swp2:interface_name=enp24s0np0", "tf-r01-r1-swp2:interface_name=enp64s0np0"]
    assert nets(lab.container_run_argv(t, t.node("r01-leaf-rail1"))) == [
        "tf-mgmt:ip=198.19.31.202,interface_name=eth0",
        "tf-r01-r1-swp1:interface_name=swp1", "tf-r01-r1-swp2:interface_name=swp2"]


def test_leaf_provisioning_is_the_emulator(lab, t):
    leaf = t.node("r02-leaf-rail1")
    copy_, init, start = lab.provision_steps(t, leaf, sim=None)
    assert copy_ == ["podman", "cp", str(lab.DEFAULT_NVUE), "tf-r02-leaf-rail1:/opt/nvuesim"]
    assert init[:4] == ["podman", "exec", "tf-r02-leaf-rail1", "sh"]
    assert init[-6:] == ["leaf", "r02-leaf-rail1", "5.4.0", "swp1", "400G", lab.DEFAULT_LEAF_PASSWORD]
    assert "--provider lab" in init[5]
    assert start[:4] == ["podman", "exec", "--detach", "tf-r02-leaf-rail1"]
    assert start[-2:] == ["nvued", "198.19.31.204"]


def test_servers_also_start_lldpd_on_their_rails(lab, t):
    steps = lab.provision_steps(t, t.node("b1"), sim=None)
    assert steps[-1][:3] == ["podman", "exec", "tf-b1"]
    assert steps[-1][-4:] == ["lldpd", "b1", "enp24s0np0", "enp64s0np0"]


@pytest.mark.parametrize("script", ["LEAF_PROVISION_SCRIPT", "NVUED_START_SCRIPT", "LLDPD_SCRIPT", "RENAME_SCRIPT",
                                    "UNRENAME_SCRIPT", "SLURM_SCRIPT"])
def test_scripts_are_valid_sh(lab, script):
    subprocess.run(["sh", "-n", "-c", getattr(lab, script)], check=True)


def test_lldpd_script_writes_the_configuration(lab, tmp_path):
    # Run the configuration part of the script with /etc redirected, lldpd replaced by a no-op
    script = lab.LLDPD_SCRIPT.replace("/etc/lldpd.d", str(tmp_path)).replace(
        "if pidof lldpd", "if true").replace("lldpcli -c", "true")
    subprocess.run(["sh", "-c", script, "lldpd", "b1", "enp24s0np0", "enp64s0np0"], check=True)
    assert (tmp_path / "gpufabric.conf").read_text().splitlines() == [
        "configure system hostname b1", "configure system interface pattern enp24s0np0,enp64s0np0",
        "configure lldp portidsubtype ifname", "configure lldp tx-interval 1"]


def test_inventory_leaves_use_httpapi(lab, t):
    inv = lab.inventory(t)
    leaf = inv["all"]["children"]["leaves"]["hosts"]["r01-leaf-rail1"]
    assert leaf == {"ansible_host": "198.19.31.202", "ansible_connection": "ansible.netcommon.httpapi",
                    "ansible_network_os": "gpufabric.mlnx.nvue", "ansible_httpapi_port": 8765,
                    "ansible_httpapi_use_ssl": True, "ansible_httpapi_validate_certs": False,
                    "ansible_user": "cumulus", "ansible_password": lab.DEFAULT_LEAF_PASSWORD,
                    "rack": "r01", "rail": 1}
    servers = inv["all"]["children"]["servers"]["children"]
    assert servers["rack_r02"]["hosts"]["b1"] == {
        "ansible_host": "tf-b1", "rack": "r02", "position": 1, "sim_profile": "gpu4-cx7-eth"}


def test_swap_argvs_cross_the_networks_and_keep_the_macs(lab):
    assert lab.swap_argvs(("tf-a1", "tf-r01-r0-swp1", "aa:aa:aa:aa:aa:01"),
                          ("tf-a2", "tf-r01-r0-swp2", "aa:aa:aa:aa:aa:02")) == [
        ["podman", "network", "disconnect", "tf-r01-r0-swp1", "tf-a1"],
        ["podman", "network", "disconnect", "tf-r01-r0-swp2", "tf-a2"],
        ["podman", "network", "connect", "--mac-address", "aa:aa:aa:aa:aa:01", "tf-r01-r0-swp2", "tf-a1"],
        ["podman", "network", "connect", "--mac-address", "aa:aa:aa:aa:aa:02", "tf-r01-r0-swp1", "tf-a2"]]


@pytest.mark.parametrize("end, message", [
    ("a1", "'a1' is not SERVER:IFACE"),
    ("a1:eth0", "'eth0' is not a rail interface of a1 (one of enp24s0np0, enp64s0np0)"),
    ("r01-leaf-rail0:swp1", "is a leaf; name the server ends"),
    ("zz:enp24s0np0", "has no node 'zz'"),
    ("a1:$(reboot)", "is not SERVER:IFACE"),
])
def test_swap_endpoints_are_checked(lab, t, end, message):
    with pytest.raises(lab.LabError, match=message.replace("(", "\\(").replace(")", "\\)").replace("$", "\\$")):
        lab.parse_endpoint(t, end)


def test_the_fabric_lab_runs_slurm_on_its_first_server(lab, repo):
    fab = lab.read_lab(repo / "tests/lab/labs/fabric.yml")
    assert fab.slurm_controller == "fab-r01-01"
    conf = lab.slurm_conf(fab).splitlines()
    assert "SlurmctldHost=fab-r01-01(198.19.90.11)" in conf
    assert [line for line in conf if line.startswith("NodeName=")] == [
        "NodeName=fab-r01-01 NodeAddr=198.19.90.11 CPUs=8 RealMemory=100 State=UNKNOWN",
        "NodeName=fab-r01-02 NodeAddr=198.19.90.12 CPUs=8 RealMemory=100 State=UNKNOWN",
        "NodeName=fab-r02-01 NodeAddr=198.19.90.13 CPUs=8 RealMemory=100 State=UNKNOWN",
        "NodeName=fab-r02-02 NodeAddr=198.19.90.14 CPUs=8 RealMemory=100 State=UNKNOWN"]
    argvs = lab.slurm_argvs(fab, b"k" * 3)
    assert [(a[2], a[7], a[8], a[9]) for a in argvs] == [
        ("gffab-fab-r01-01", "fab-r01-01", "controller", "a2tr"), ("gffab-fab-r01-02", "fab-r01-02", "node", "a2tr"),
        ("gffab-fab-r02-01", "fab-r02-01", "node", "a2tr"), ("gffab-fab-r02-02", "fab-r02-02", "node", "a2tr")]
    # every server knows the others by name (srun --mpi=pmix resolves the step's nodes); the leaves need not
    assert [a for a in lab.container_run_argv(fab, fab.node("fab-r01-02")) if a.startswith("--add-host")] == [
        "--add-host=fab-r01-01:198.19.90.11", "--add-host=fab-r02-01:198.19.90.13",
        "--add-host=fab-r02-02:198.19.90.14"]
    assert not [a for a in lab.container_run_argv(fab, fab.node("r01-leaf-rail0")) if a.startswith("--add-host")]


@pytest.mark.parametrize("value, message", [
    ({"controller": "nobody"}, "slurm.controller: must name one of the servers"),
    ({"controller": "a1", "port": 1}, "slurm: unknown key\\(s\\) port; allowed: controller"),
    ("a1", "slurm"),
])
def test_slurm_errors_name_the_key(lab, value, message):
    data = copy.deepcopy(FABRIC)
    data["slurm"] = value
    with pytest.raises(lab.LabError, match=message):
        lab.load_lab(data)


def test_a_lab_without_slurm_has_none(t):
    assert t.slurm_controller is None


def test_the_fabric_and_demo_labs_run_mpi_and_a_lab_without_it_has_none(lab, repo, t):
    assert lab.read_lab(repo / "tests/lab/labs/fabric.yml").mpi is True
    assert lab.read_lab(repo / "tests/lab/labs/demo.yml").mpi is True
    assert t.mpi is False
    data = copy.deepcopy(FABRIC)
    data["mpi"] = "yes"
    with pytest.raises(lab.LabError, match="mpi: must be true or false, got 'yes'"):
        lab.load_lab(data)


class FakePodman:
    """Records each argv; a server's SSHD_SCRIPT answers with a host key of its own."""

    def __init__(self):
        self.calls = []

    def run(self, argv, check=True, quiet=False):
        self.calls.append(list(argv))
        out = "ssh-ed25519 AAAAC3Nza-%s\n" % argv[2] if "sshd" in argv else ""
        return subprocess.CompletedProcess(argv, 0, out, "")


def test_ssh_gives_every_server_one_key_and_the_others_host_keys(lab, repo, tmp_path):
    fab = lab.read_lab(repo / "tests/lab/labs/fabric.yml")
    pm = FakePodman()
    lab.start_ssh(fab, pm, workdir=tmp_path)
    sshd = [c for c in pm.calls if c[6] == "sshd"]
    keys = [c for c in pm.calls if c[6] == "ssh-keys"]
    assert [c[2] for c in sshd] == [c[2] for c in keys] == ["gffab-fab-r01-01", "gffab-fab-r01-02",
                                                            "gffab-fab-r02-01", "gffab-fab-r02-02"]
    # the lab's variables for every SSH session (/etc/environment): the fabric lab's time scale
    assert sshd[0][7] == "MLXSIM_TIME_SCALE=0.002\n"
    # one key pair for all: the same private key, its public key authorized, every server's host key known by its
    # mgmt address and name
    assert len({c[7] for c in keys}) == 1 and len({c[8] for c in keys}) == 1
    assert keys[0][8].startswith("ssh-ed25519 ") and keys[0][8].endswith(" root@gffab")
    assert keys[0][9].splitlines() == [
        "198.19.90.11,fab-r01-01 ssh-ed25519 AAAAC3Nza-gffab-fab-r01-01",
        "198.19.90.12,fab-r01-02 ssh-ed25519 AAAAC3Nza-gffab-fab-r01-02",
        "198.19.90.13,fab-r02-01 ssh-ed25519 AAAAC3Nza-gffab-fab-r02-01",
        "198.19.90.14,fab-r02-02 ssh-ed25519 AAAAC3Nza-gffab-fab-r02-02"]
    assert list(tmp_path.iterdir()) == []   # the private key was made in a directory that is gone
