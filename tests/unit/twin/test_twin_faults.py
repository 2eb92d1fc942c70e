"""The twin's fault matrix (issue 15): twenty faults across servers and leaves, each on its own machine, in one rollout
of site.yml on the twin. Each fault stays on its machine - the server that has it fails, named with the tool's or the
switch's own words, or the leaf that has it holds exactly the servers cabled to it, named with the leaf, the port
and the reason; every other machine converges. Cleared (the operator fixes the cause), the rerun converges every
machine, and what the inventory does not name stays as it was: the NV parameters outside the profile, a leaf's
configuration made by hand."""
import pytest
import yaml

from twin_site import PIN, PROFILE, build, cards, hand_change, leaf_applied, nv_values, rehearse, rollout, site, twin

RACKS = dict({"r%02d" % i: 1 for i in range(1, 18)}, r12=2)
# {machine: [fault words]} - twin.py fault: a server's as `mlxsim fault add`, a leaf's as `nvuesim fault set`
SERVER_FAULTS = {
    "srv-r01-01": [["burn_fail", "device=0000:3b:00.0"]],             # the burn fails midway
    "srv-r02-01": [["missing_after_reset", "device=0000:3b:00.0"]],   # the card is gone after its reset
    "srv-r03-01": [["set_ignored", "param=NUM_OF_VFS"]],              # the firmware acknowledges and ignores
    "srv-r05-01": [["fwreset_unsupported"], ["no_boot"]],             # the host is not back after its reboot
    "srv-r07-01": [["hang", "tool=flint", "seconds=8"]],              # flint hangs (firmware timeout 3 s)
    # the servers of the leaves whose fault holds nobody (r14, r15, r16) carry a fault of their own
    "srv-r14-01": [["semaphore_held", "count=1"]],                    # another process holds it once: retried
    "srv-r15-01": [["fwreset_unsupported"]],                          # a reboot instead of a firmware reset
    "srv-r16-01": [["hang", "tool=mlxconfig", "seconds=4"]],          # mlxconfig slow, within its timeout
}
LEAF_FAULTS = {
    "r04-leaf-rail0": [["port_down", "swp1"]],
    "r06-leaf-rail0": [["invalid_apply", "interface.swp1.link.mtu", "bad mtu"]],
    "r08-leaf-rail0": [["nvued_down"]],
    "r09-leaf-rail0": [["mtu", "swp1", "1500"]],
    "r10-leaf-rail0": [["protodown", "swp1"]],
    "r11-leaf-rail0": [["release", "5.9.1"], ["reboot_slow", "30"]],  # the upgrade's reboot is too slow
    "r12-leaf-rail0": [["swap", "swp1", "swp2"]],
    "r13-leaf-rail0": [["release", "5.9.1"], ["fetch_fail"]],         # the image repository is down
    "r17-leaf-rail0": [["default_password"]],
    "r14-leaf-rail0": [["roce_lossy"]],                               # a hand change the leaf role corrects
    "r15-leaf-rail0": [["release", "5.9.1"]],                         # an upgrade that works
    "r16-leaf-rail0": [["slow_apply", "2"]],
}
# The first run: a failed server with the words of its failure, a held server with the words of its leaf's reason.
FAILED = {"srv-r01-01": "Burning FS4 image failed", "srv-r02-01": "0000:3b:00.0: disappeared after the level 3 reset",
          "srv-r03-01": "next-boot values are still NUM_OF_VFS=0",
          "srv-r05-01": "Timed out waiting for last boot time check",
          "srv-r07-01": "did not finish within 3s and was stopped"}
HELD = {"srv-r04-01": "r04-leaf-rail0:swp1 (cable srv-r04-01:enp59s0f0np0 -> r04-leaf-rail0:swp1) is down",
        "srv-r06-01": "Config invalid at interface.swp1.link.mtu",
        "srv-r08-01": "502 Bad Gateway",
        "srv-r09-01": "has MTU 1500, expected 9216",
        "srv-r10-01": "is in protodown",
        "srv-r11-01": "did not come back within reboot_timeout",
        "srv-r12-01": "cables swapped", "srv-r12-02": "cables swapped",
        "srv-r13-01": "Connection refused",
        "srv-r17-01": "403 Forbidden"}
PRE_LOGIN = {"system": {"message": {"pre-login": "hands off - rack r15"}}}


@pytest.fixture(scope="module")
def faulty(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("faults")
    servers, leaves = site(tmp / "site", RACKS, rails=1, gpufabric_batch_by="count", gpufabric_batch_size="100%",
                           gpufabric_max_fail_percentage=100, gpufabric_max_unreachable=2,
                           gpufabric_leaf_reboot_timeout=5,
                           gpufabric_leaf_ready_timeout=2, gpufabric_leaf_ready_interval=1)
    (tmp / "site" / "host_vars").mkdir()
    (tmp / "site" / "host_vars" / "srv-r07-01.yml").write_text(yaml.safe_dump({"gpufabric_firmware_timeout": 3}))
    (tmp / "faults.yml").write_text(yaml.safe_dump(dict(SERVER_FAULTS, **LEAF_FAULTS)))
    out = build(tmp / "site", tmp / "twin", "--faults", str(tmp / "faults.yml"), "--reboot-timeout", "5")
    assert hand_change(out, "r15-leaf-rail0", PRE_LOGIN) in ("applied", "applied_and_saved")
    before = {server: nv_values(out, server, skip=PROFILE) for server in servers}
    return out, servers, leaves, before


@pytest.mark.heavy(230)
def test_twenty_faults_each_stay_on_their_machine_and_the_rerun_converges_with_nothing_lost(faulty):
    out, servers, leaves, before = faulty

    first = rehearse(out, "--apply")
    rows, failures = rollout(out), first.failures()
    # the two leaves that cannot be read were named before batch 1 with their own words - within
    # gpufabric_max_unreachable=2, so the rollout went on and held their servers
    checked = first.task("Check the matrix and every host against it, the rail plan and the QoS settings (every "
                         "problem at once)", servers[0], role="preflight")["msg"]
    assert "left out of the rollout (unreachable): r08-leaf-rail0, r17-leaf-rail0" in checked, checked
    for server, words in FAILED.items():
        assert rows[server]["outcome"] == "failed" and words in failures[server], (server, failures.get(server))
        # the rollout report says why, with the step it failed in (the rollout play's rescue recorded it)
        assert words in rows[server]["why"] and rows[server]["why"].startswith("step "), (server, rows[server])
    for server, words in HELD.items():
        assert rows[server]["outcome"] == "held" and words in rows[server]["why"], (server, rows[server])
    isolated = [s for s in servers if s not in FAILED and s not in HELD]
    assert {s: rows[s]["outcome"] for s in isolated} == {s: "done" for s in isolated}
    assert rows["srv-r15-01"]["activation"].startswith("reboot")
    for server in isolated:
        assert {c["fw"]["burned"] for c in cards(out, server)} == {PIN["version"]}, server
    assert leaf_applied(out, "r14-leaf-rail0", "qos/roce/mode") != "lossy"
    # the held servers were not touched
    assert all({c["fw"]["burned"] for c in cards(out, s)} == {"22.41.1000"} for s in HELD)

    twin("fault", "--out", str(out), "--clear")
    second = rehearse(out, "--apply")
    assert second.ok, second
    rows = rollout(out)
    assert {s: rows[s]["outcome"] for s in servers} == {s: "done" for s in servers}
    for server in servers:
        assert {c["fw"]["burned"] for c in cards(out, server)} == {PIN["version"]}, server
        assert nv_values(out, server, skip=PROFILE) == before[server], server
    # made by hand before the first run, kept through the leaf role's revisions and r15's upgrade
    assert leaf_applied(out, "r15-leaf-rail0", "system/message/pre-login") == "hands off - rack r15"
    for leaf in leaves:
        assert leaf_applied(out, leaf, "system/hostname") in (leaf, None)
