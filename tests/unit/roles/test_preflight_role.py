"""The preflight role's decision on two simulated hosts in one play (tests/_roleplay.py): every host fits the matrix
-> "no problem" and each host keeps the devices it read for the firmware and nic_config roles (and the rail plan
reads them); any problem anywhere (a card the matrix does not pin, a card without a serial number, a bad RoCE QoS
value, a firmware image missing or not what the matrix says on the controller, an unreachable host) -> ONE
failure that lists every problem of every host, and the roles after it change nothing on any host. The
controller's tools are simulated too (``controller``): the images are read there with the simulated flint."""
import hashlib
import json
import os
import sys

import pytest
import yaml

from _paths import REPO
from _roleplay import controller, matrix, play, run, sim_vars, simulated
from _simhost import device_id

PSID, VERSION, PART = "MT_0000000359", "22.43.1014", "MCX623106AN-CDAT"
WRONG = hashlib.sha256(b"not the image").hexdigest()
MISSING = hashlib.sha256(b"an image not downloaded").hexdigest()
CHECK = "Check the matrix and every host against it, the rail plan and the QoS settings (every problem at once)"
# Two rails on the two ConnectX-6 Dx cards of the cx6dx-roce profile, told apart by part number (docs/rails.md).
FABRIC = {"rails": 2, "su_prefix": 26, "racks_per_su": 1,
          "pools": {"rail0": "198.18.0.0/20", "rail1": "198.18.16.0/20"}, "nics": {"part_numbers": [PART]}}


@pytest.fixture
def sims(tmp_path):
    return lambda **profiles: {host: simulated(tmp_path, host, profile) for host, profile in profiles.items()}


@pytest.fixture
def ctl(tmp_path):
    """The controller, with the pinned image of the cx6dx-roce cards in its firmware folder."""
    ctl = controller(tmp_path)
    ctl.image = ctl.mkimage(PSID, VERSION, device_id("ConnectX6DX"))
    return ctl


def pinned(ctl, **firmware):
    """The matrix pinning the cx6dx-roce cards to ``ctl``'s image, and ``firmware`` ({PSID: pin}) too."""
    pin = {"version": VERSION, "image": os.path.basename(ctl.image["path"]), "sha256": ctl.image["sha256"],
           "part_numbers": [PART]}
    return matrix("unit-preflight", dict({PSID: pin}, **firmware))


def preflight(tmp_path, sims, ctl, text=None, extra_hosts=None, firmware=None, group_vars=None, args=(), **host_vars):
    """The play (default: the preflight role) on every simulated host of ``sims``; ``host_vars``: {host: vars};
    ``extra_hosts``: more hosts as they are ({name: variables}); ``group_vars``: the group servers' variables."""
    common = {"gpufabric_matrix": pinned(ctl, **(firmware or {})),
              "gpufabric_firmware_source_dir": str(ctl.tmp),
              # the validation gate off unless a test turns it on: its tools (ping) are not this machine's to have
              "gpufabric_validate_enabled": False}
    hosts = {host: sim_vars(sim, **dict(common, **host_vars.get(host, {}))) for host, sim in sims.items()}
    hosts.update({name: dict(common, **variables) for name, variables in (extra_hosts or {}).items()})
    return run(tmp_path, hosts, text or play("preflight"), environ=ctl.env, group_vars=group_vars, args=args)


def addresses(devices):
    return sorted(dev["address"] for dev in devices)


def test_hosts_that_fit_pass_and_keep_what_was_read(tmp_path, sims, ctl):
    hosts = sims(**{"srv-r01-01": "cx6dx-roce", "srv-r01-02": "cx6dx-roce"})
    ran = preflight(tmp_path, hosts, ctl)
    assert ran.ok, ran
    assert ran.task(CHECK, "srv-r01-01", role="preflight")["msg"] == "matrix unit-preflight and 2 hosts: no problem"
    for host in hosts:
        # one task per server reads them and keeps them for the rest of the rollout (the firmware and nic_config
        # roles reuse them): the fact is the devices it read
        read = ran.task("Read the NVIDIA devices and the validation gate's tools (read-only)", host, role="preflight")
        kept = read["ansible_facts"]["gpufabric_nic_devices"]
        assert kept == read["info"]["devices"]
        assert "tools" not in read     # no rail plan: the validation gate does not run, its tools are not looked for
        assert addresses(kept) == ["0000:3b:00.0", "0000:3b:00.1", "0000:d8:00.0", "0000:d8:00.1"]
        assert {dev["serial_number"] for dev in kept} != {None}


def test_every_problem_of_every_host_at_once_and_nothing_changed_after_it(tmp_path, sims, ctl):
    hosts = sims(**{"srv-r01-01": "cx6dx-roce", "srv-r01-02": "mixed"})
    hosts["srv-r01-01"].mlxsim("fault", "add", "vpd_missing_serial", "--device", "0000:d8:00.0")
    ran = preflight(tmp_path, hosts, ctl, play("preflight", "nic_config"), **{"srv-r01-01": {
        "gpufabric_roce_qos_interfaces": ["enp59s0f0np0"], "gpufabric_roce_qos_cnp_dscp": 64,
        "gpufabric_nic_config_profiles": {"sriov": {"SRIOV_EN": True}},
        "gpufabric_nic_config_assignments": [{"profile": "sriov", "part_numbers": ["MCX623106AN-CDAT"]}]}})
    assert not ran.ok
    msg = ran.task(CHECK, "srv-r01-01", role="preflight")["msg"]
    assert msg[0] == "preflight found 5 problem(s); no host was changed:", msg
    places = sorted(line.split(": ", 1)[0] for line in msg[1:])
    assert places == ["srv-r01-01", "srv-r01-01 0000:d8:00.0", "srv-r01-02 0000:17:00.0", "srv-r01-02 0000:65:00.0",
                      "srv-r01-02 0000:ca:00.0"], msg
    assert "srv-r01-01 0000:d8:00.0: the card has no serial number in its VPD ([SN])" in msg
    assert "srv-r01-01: roce_qos: cnp_dscp=64 is outside 0-63 (allowed: an integer 0-63)." in msg
    assert all("MT_0000000359" in line for line in msg if line.startswith("srv-r01-02 "))  # the PSIDs it covers
    for host, sim in hosts.items():                    # nic_config ran nowhere: no card was set
        assert not [argv for argv in sim.argvs() if "set" in argv], host
        assert not [name for name in ran.results(host) if name.startswith("gpufabric.mlnx.nic_config")], host
    assert json.loads(hosts["srv-r01-01"].mlxsim("activity"))["boots"] == 0


def test_every_image_checked_once_on_the_controller_every_bad_one_listed(tmp_path, sims, ctl):
    hosts = sims(**{"srv-r01-01": "cx6dx-roce"})
    other = ctl.mkimage("MT_0000000838", "28.43.2566", device_id("ConnectX7"))
    ran = preflight(tmp_path, hosts, ctl, firmware={
        "MT_0000000838": {"version": "28.43.2566", "image": os.path.basename(other["path"]), "sha256": WRONG,
                          "part_numbers": ["MCX75310AAS-NEAT"]},
        "MT_0000000884": {"version": "32.43.1014", "image": "fw-bf3-not-downloaded.bin", "sha256": MISSING,
                          "part_numbers": ["900-9D3B6-00CV-AA0"]}})
    assert not ran.ok
    msg = ran.task(CHECK, "srv-r01-01", role="preflight")["msg"]
    where = "controller (gpufabric_firmware_source_dir %s): " % ctl.tmp
    assert msg[0] == "preflight found 3 problem(s); no host was changed:", msg
    assert msg[1:] == [
        where + "images[1] (PSID MT_0000000838, version 28.43.2566, %s) is refused: sha256 of %s is %s, the task "
                "expects %s" % (other["path"], other["path"], other["sha256"], WRONG),
        where + "images[2] (PSID MT_0000000884, version 32.43.1014, %s/fw-bf3-not-downloaded.bin): %s/fw-bf3-not-"
                "downloaded.bin is not a file on this host" % (ctl.tmp, ctl.tmp),
        where + "1 image(s) of the matrix are not in this folder: download them into it (or point "
                "gpufabric_firmware_source_dir at them), or leave the images out of this check with -e "
                "gpufabric_preflight_images=false - then nothing checks on the controller that each image is there, "
                "its sha256, and the PSID and version inside it (the firmware step still takes the images from this "
                "folder: a missing one fails the servers that need it, in their batch)"], msg
    reads = [call["argv"] for call in ctl.calls() if call["tool"] == "flint"]
    assert reads == [["flint", "-i", ctl.image["path"], "q"]], reads      # once, on the controller, the good one only
    assert not [c for c in hosts["srv-r01-01"].calls() if "-i" in c["argv"]]   # no host read an image


def test_the_rail_plan_takes_the_devices_the_preflight_read(tmp_path, sims, ctl):
    hosts = sims(**{"srv-r01-01": "cx6dx-roce", "srv-r01-02": "cx6dx-roce"})
    placed = {name: {"rack": "r01", "position": index + 1, "gpufabric_fabric": FABRIC}
              for index, name in enumerate(sorted(hosts))}
    ran = preflight(tmp_path, hosts, ctl, **placed)            # nics by part number: no interface_names needed
    assert ran.ok, ran

    four = dict(FABRIC, rails=4, pools=dict(FABRIC["pools"], rail2="198.18.32.0/20", rail3="198.18.48.0/20"))
    placed = {name: dict(where, gpufabric_fabric=four) for name, where in placed.items()}
    ran = preflight(tmp_path, hosts, ctl, REPO / "playbooks" / "site.yml", **placed)
    assert not ran.ok
    msg = ran.task(CHECK, "srv-r01-01", role="preflight")["msg"]
    assert msg[1:] == ["hosts.%s.devices: has 2 compute NICs (part number %s, function 0) for 4 rails: "
                       "0000:3b:00.0, 0000:d8:00.0" % (name, PART) for name in sorted(hosts)], msg
    later = [name for name in ran.results("srv-r01-01")                     # site.yml stopped at its preflight
             if "preflight" not in name and "Check every image of the matrix once" not in name
             and "Each BMC answers over Redfish" not in name                  # the preflight's, from platform
             and not name.startswith("gpufabric.mlnx.site_variables : ")]   # the play before it
    assert not later, later


UNREACHABLE = {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 9,
               "ansible_ssh_common_args": "-o ConnectTimeout=5 -o StrictHostKeyChecking=no"}
AFTER = [{"name": "After the preflight", "hosts": "servers", "gather_facts": False,
          "tasks": [{"name": "Rolled out", "ansible.builtin.debug": {"msg": "rolled out"}}]}]


def test_an_unreachable_host_is_listed_with_every_other_problem_and_left_out(tmp_path, sims, ctl):
    hosts = sims(**{"srv-r01-01": "cx6dx-roce", "srv-r01-02": "cx6dx-roce"})
    text = play("preflight") + yaml.safe_dump(AFTER)
    ran = preflight(tmp_path, hosts, ctl, text, extra_hosts={"srv-r09-01": UNREACHABLE},
                    **{"srv-r01-02": {"gpufabric_roce_qos_interfaces": ["enp59s0f0np0"],
                                      "gpufabric_roce_qos_cnp_dscp": 64}})
    assert not ran.ok
    msg = ran.task(CHECK, "srv-r01-01", role="preflight")["msg"]
    assert msg[0] == "preflight found 2 problem(s); no host was changed:", msg
    assert msg[1].startswith("srv-r09-01: unreachable, so it is left out of the rollout: "), msg
    assert "Connection refused" in msg[1] or "timed out" in msg[1], msg                # ssh's own words
    assert msg[2] == "srv-r01-02: roce_qos: cnp_dscp=64 is outside 0-63 (allowed: an integer 0-63).", msg
    assert msg[3] == "1 unreachable host(s), more than gpufabric_max_unreachable=0", msg
    assert not [host for host in hosts if "Rolled out" in ran.results(host)]

    # allowed: the others pass and are rolled out, the unreachable one is left out (and named)
    ran = preflight(tmp_path, hosts, ctl, text, extra_hosts={"srv-r09-01": UNREACHABLE},
                    group_vars={"gpufabric_max_unreachable": 1})
    check = ran.task(CHECK, "srv-r01-01", role="preflight")
    assert not check.get("failed") and check["msg"] == (
        "matrix unit-preflight and 2 hosts: no problem; left out of the rollout (unreachable): srv-r09-01"), check
    assert all("Rolled out" in ran.results(host) for host in hosts)
    assert "Rolled out" not in ran.results("srv-r09-01") and ran.stats("srv-r09-01")["unreachable"] == 1


def test_hosts_without_ansible_host_pass_without_an_ip_address_warning(tmp_path, sims, ctl):
    """The rail plan's management check reads ansible_host; a host without one (a simulated host, an inventory that
    names hosts by DNS) is no IP address and no warning: ansible.utils.ipaddr printed "[WARNING]: The value '' is
    not a valid IP address" for each such host."""
    hosts = sims(**{"srv-r01-01": "cx6dx-roce", "srv-r01-02": "cx6dx-roce"})
    placed = {name: {"rack": "r01", "position": index + 1, "gpufabric_fabric": FABRIC}
              for index, name in enumerate(sorted(hosts))}
    ran = preflight(tmp_path, hosts, ctl, REPO / "playbooks" / "site.yml", args=["--tags", "preflight"], **placed)
    assert ran.ok, ran
    assert "no problem" in ran.task(CHECK, "srv-r01-01", role="preflight")["msg"]
    printed = ran.proc.stdout + ran.proc.stderr
    assert "is not a valid IP address" not in printed and "[WARNING]" not in ran.proc.stderr, ran.proc.stderr[-2000:]


@pytest.mark.parametrize("known, problem", [
    (["srv-r01-01", "srv-r01-02"], None),
    (["srv-r01-01"], "drain: Slurm on localhost: Slurm does not know node srv-r01-02 (sinfo --nodes printed nothing "
                     "for it): set gpufabric_drain_slurm_node to the server's Slurm node name")])
def test_a_slurm_drain_is_proven_before_any_batch(tmp_path, sims, ctl, known, problem):
    """With gpufabric_drain=slurm the preflight asks Slurm, on the drain host, for every server's node (reads only):
    a server Slurm does not know stops the rollout before batch 1, as one of the problems."""
    from _fakeslurm import calls, fake_slurm
    hosts = sims(**{"srv-r01-01": "cx6dx-roce", "srv-r01-02": "cx6dx-roce"})
    environ, state = fake_slurm(tmp_path, {n: {"drain": False, "reason": None, "jobs": {}} for n in known},
                                path=ctl.env.get("PATH"))
    ctl.env.update(environ)
    drain = {"gpufabric_drain": "slurm", "gpufabric_drain_slurm_host": "localhost"}
    ran = preflight(tmp_path, hosts, ctl, group_vars=drain)
    msg = ran.task(CHECK, "srv-r01-01", role="preflight")["msg"]
    assert [c[0] for c in calls(state)] == ["sinfo"]            # read only
    if problem is None:
        assert ran.ok, ran
    else:
        assert not ran.ok and msg == ["preflight found 1 problem(s); no host was changed:", problem], msg


def test_each_bmc_is_proven_before_any_batch(tmp_path, sims, ctl):
    """With the BIOS step on (a BMC address), the preflight reads each server's system over Redfish with the
    inventory's credentials (reads only): a BMC that refuses them is one of the problems, with the module's own
    words, and the password shows nowhere."""
    pytest.importorskip("sushy_tools", reason="sushy-tools (requirements-dev.txt) runs the Redfish emulator")
    sys.path.insert(0, str(REPO / "tests" / "redfish"))
    from emulator import Emulator  # pylint: disable=import-outside-toplevel
    hosts = sims(**{"srv-r01-01": "cx6dx-roce", "srv-r01-02": "cx6dx-roce"})
    bmc = Emulator(tmp_path / "bmc", systems=[{"name": "srv-r01-01", "model": "DGX H100"}]).start()
    try:
        def creds(password):
            return {"gpufabric_platform_bmc_address": bmc.baseuri, "gpufabric_platform_bmc_user": bmc.user,
                    "gpufabric_platform_bmc_password": password, "gpufabric_platform_bmc_ca_path": str(bmc.ca_path)}
        ran = preflight(tmp_path, hosts, ctl, **{"srv-r01-01": creds(bmc.password),
                                                 "srv-r01-02": creds("not-" + bmc.password)})
        writes = bmc.writes()
    finally:
        bmc.stop()
    assert not ran.ok
    assert bmc.password not in ran.proc.stdout + ran.proc.stderr
    msg = ran.task(CHECK, "srv-r01-01", role="preflight")["msg"]
    assert msg[0] == "preflight found 1 problem(s); no host was changed:", msg
    assert msg[1].startswith("srv-r01-02: the BMC (gpufabric_platform_bmc_address) did not answer over Redfish with "
                             "its credentials: ") and "401" in msg[1], msg
    assert writes == []


def _bin(tmp_path, name, without=(), stubs=()):
    """A PATH directory: the simulated tools (tests/sim/bin) but ``without``, their python3, and ``stubs`` (scripts
    that exit 0)."""
    folder = tmp_path / name
    folder.mkdir()
    (folder / "python3").symlink_to(sys.executable)
    for tool in (REPO / "tests" / "sim" / "bin").iterdir():
        if tool.name not in without:
            (folder / tool.name).symlink_to(tool)
    for stub in stubs:
        (folder / stub).write_text("#!/bin/sh\nexit 0\n")
        (folder / stub).chmod(0o755)
    return str(folder)


def test_the_validation_gates_tools_are_proven_on_each_servers_path_before_any_batch(tmp_path, sims, ctl):
    """With the gate on (a rail plan, gpufabric_validate_enabled), each server's PATH - the one the gate's own steps
    get - must hold perftest's ib_write_bw and ib_write_lat, ping, nccl-tests' all_reduce_perf and its launcher's
    tools (mpirun: mpirun, ssh, Open MPI's orted - found here in /usr/bin, which the module searches besides the
    PATH, as `make test` installs openmpi-bin; test_fabric_test.py names them missing): a server missing
    any is one problem naming each tool and where it comes from. The perftest and nccl-tests tools are the
    simulator's: the machine has none of them."""
    hosts = sims(**{"srv-r01-01": "cx6dx-roce", "srv-r01-02": "cx6dx-roce"})
    hosts["srv-r01-01"].env["PATH"] = _bin(tmp_path, "full", stubs=["ping", "mpirun", "orted", "ssh"])
    hosts["srv-r01-02"].env["PATH"] = _bin(tmp_path, "short", without=["ib_write_lat", "all_reduce_perf"],
                                           stubs=["ssh"])
    placed = {name: {"rack": "r01", "position": index + 1, "gpufabric_fabric": FABRIC,
                     "gpufabric_validate_enabled": True} for index, name in enumerate(sorted(hosts))}
    ran = preflight(tmp_path, hosts, ctl, **placed)
    assert not ran.ok
    assert ran.task(CHECK, "srv-r01-01", role="preflight")["msg"] == [
        "preflight found 1 problem(s); no host was changed:",
        "srv-r01-02: the validation gate (gpufabric_validate_enabled) needs tools not on its PATH: ib_write_lat "
        "(perftest), ping (iputils-ping), all_reduce_perf (nccl-tests (built with MPI=1, on the PATH a non-interactive "
        "login gets))"]
    # the gate off, or without NCCL: nothing of it is asked for
    placed = {name: dict(where, gpufabric_validate_enabled=False) for name, where in placed.items()}
    assert preflight(tmp_path, hosts, ctl, **placed).ok


def test_mpiruns_ssh_is_proven_from_each_server_to_the_next_of_its_scalable_unit(tmp_path, sims, ctl):
    """mpirun starts Open MPI's daemon on each member over SSH without a prompt (BatchMode): the preflight logs in
    from each server to the next of its SU (a ring: srv-r01-01 -> srv-r01-02 -> srv-r01-01) at the address mpirun
    uses - the management address the tools step read - and names a server that cannot, with ssh's own words. The
    ssh here is a stand-in that logs its argv and refuses srv-r01-02's key."""
    hosts = sims(**{"srv-r01-01": "cx6dx-roce", "srv-r01-02": "cx6dx-roce"})
    log = tmp_path / "ssh.log"
    for name, answer in (("srv-r01-01", "exit 0"),
                         ("srv-r01-02", "echo \"root@$5: Permission denied (publickey).\" >&2; exit 255")):
        folder = _bin(tmp_path, "path-" + name, stubs=["ping", "mpirun", "orted"])
        _stub(folder, "ssh", "echo \"%s $*\" >> %s\n%s\n" % (name, log, answer))
        hosts[name].env["PATH"] = folder
    placed = {name: {"rack": "r01", "position": index + 1, "gpufabric_fabric": FABRIC,
                     "gpufabric_validate_enabled": True} for index, name in enumerate(sorted(hosts))}
    ran = preflight(tmp_path, hosts, ctl, **placed)
    calls = sorted(log.read_text().splitlines())
    assert len(calls) == 2 and calls[0].startswith("srv-r01-01 -o BatchMode=yes -o ConnectTimeout=10 ")
    assert calls[1].startswith("srv-r01-02 -o BatchMode=yes -o ConnectTimeout=10 ") and calls[1].endswith(" true")
    address = calls[1].split()[-2]                                   # srv-r01-01's management address
    assert not ran.ok
    assert ran.task(CHECK, "srv-r01-01", role="preflight")["msg"] == [
        "preflight found 1 problem(s); no host was changed:",
        "srv-r01-02: the validation gate (gpufabric_validate_launcher mpirun): mpirun cannot reach srv-r01-01 (%s) "
        "over SSH as it starts Open MPI's daemon there (ssh -o BatchMode=yes %s true): root@%s: Permission denied "
        "(publickey)." % (address, address, address)]
    # srun, or the gate without NCCL: no SSH asked for
    placed = {name: dict(where, gpufabric_validate_nccl=False) for name, where in placed.items()}
    assert preflight(tmp_path, hosts, ctl, **placed).ok


def _stub(folder, name, text):
    path = os.path.join(folder, name)
    with open(path, "w") as fh:
        fh.write("#!/bin/sh\n" + text)
    os.chmod(path, 0o755)


def test_the_srun_launchers_needs_are_proven_on_each_server_before_any_batch(tmp_path, sims, ctl):
    """gpufabric_validate_launcher: srun - each server needs srun, sinfo, scontrol, slurmd, Slurm's mpi/pmix plugin
    (srun --mpi=list lists pmix) and to be a Slurm node (sinfo knows it by gpufabric_drain_slurm_node, default its
    name): a server lacking any is one problem naming each. Slurm's commands are stubs answering as Slurm 22.05.8
    did in the lab (no slurmctld here)."""
    hosts = sims(**{"srv-r01-01": "cx6dx-roce", "srv-r01-02": "cx6dx-roce"})
    good = _bin(tmp_path, "good", stubs=["ping", "scontrol", "slurmd"])
    _stub(good, "srun", "printf 'MPI plugin types are...\\n\\tpmix\\n\\tnone\\n'\n")
    _stub(good, "sinfo", "echo 'gpu-01|drained|gpufabric: rollout batch r01'\n")
    bad = _bin(tmp_path, "bad", stubs=["ping", "scontrol", "slurmd"])
    _stub(bad, "srun", "printf 'MPI plugin types are...\\n\\tnone\\n\\tpmi2\\n'\n")
    _stub(bad, "sinfo", "exit 0\n")                      # Slurm knows no such node: it prints nothing
    hosts["srv-r01-01"].env["PATH"], hosts["srv-r01-02"].env["PATH"] = good, bad
    placed = {name: {"rack": "r01", "position": index + 1, "gpufabric_fabric": FABRIC,
                     "gpufabric_validate_enabled": True, "gpufabric_validate_launcher": "srun"}
              for index, name in enumerate(sorted(hosts))}
    placed["srv-r01-01"]["gpufabric_drain_slurm_node"] = "gpu-01"
    ran = preflight(tmp_path, hosts, ctl, **placed)
    assert not ran.ok
    assert ran.task(CHECK, "srv-r01-01", role="preflight")["msg"] == [
        "preflight found 1 problem(s); no host was changed:",
        "srv-r01-02: the validation gate (gpufabric_validate_enabled) needs tools not on its PATH: Slurm's mpi/pmix "
        "plugin (srun --mpi=list lists no pmix: Debian/Ubuntu slurm-wlm-basic-plugins, and libpmix-dev for the "
        "libpmix.so it loads) (srun --mpi=list lists: none, pmi2), Slurm node srv-r01-02 (set "
        "gpufabric_drain_slurm_node to this server's Slurm node name): Slurm does not know node srv-r01-02 (sinfo "
        "--nodes printed nothing for it): set gpufabric_drain_slurm_node to the server's Slurm node name"]
