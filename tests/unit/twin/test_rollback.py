"""Roll back a matrix release on the fleet twin (docs/operations.md, "Roll back a release").

A two-rack site is rolled out at release A (the cards' firmware 22.41.1000, the leaves' Cumulus Linux 5.11.0, the
leaves' configuration from the inventory), then at release B (firmware 22.43.1014, Cumulus Linux 5.12.0, a leaf MTU
of 9000). Rolling back is the inventory of release A again (a `git revert` of B's commit): without the matrix's
permission the preflight refuses every card's and every leaf's downgrade, naming both releases, before anything
changes; with `allow_downgrade: true` on
the pins it takes every card and leaf back to A - the firmware burned, the leaves' release installed, the leaves'
configuration exactly A's again (one more revision each)."""
import copy
import json

import pytest
import yaml

from twin_site import PIN, applied, build, cards, rehearse, site, twin_tool

SERVERS = ["srv-r01-01", "srv-r02-01"]
LEAVES = ["r01-leaf-rail0", "r01-leaf-rail1", "r02-leaf-rail0", "r02-leaf-rail1"]
FIRMWARE_A = dict(PIN, version="22.41.1000", image="fw-cx6dx-22.41.1000.bin")
OS_A = {"release": "5.11.0", "image": "cumulus-linux-5.11.0-mlx-amd64.bin", "sha256": "0" * 64,
        "url": "http://mirror.example/cumulus-linux-5.11.0.bin"}
OS_B = {"release": "5.12.0", "image": "cumulus-linux-5.12.0-mlx-amd64.bin", "sha256": "0" * 64,
        "url": "http://mirror.example/cumulus-linux-5.12.0.bin"}


def release(out, firmware, switch_os, allow=(), mtu=None):
    """Make the twin's inventory the release: the matrix's pins (the twin's copy, with its images; ``allow``: the
    pins with allow_downgrade, V(firmware) and V(switch_os)) and the leaf MTU in the site's group_vars (None: the
    default, as release A leaves it)."""
    twin_vars = yaml.safe_load((out / "twin-vars.yml").read_text())
    matrix = copy.deepcopy(twin_vars["gpufabric_matrix"])
    matrix["firmware"]["MT_0000000359"] = dict(firmware, **({"allow_downgrade": True} if "firmware" in allow else {}))
    matrix["switch_os"]["cumulus-linux"] = dict(switch_os,
                                                **({"allow_downgrade": True} if "switch_os" in allow else {}))
    matrix["compatibility"]["switch_os_min"] = {"cumulus-linux": "5.11.0"}
    matrix["compatibility"]["firmware_drivers"] = {firmware["version"]: [matrix["driver"]["version"]]}
    twin_vars["gpufabric_matrix"] = twin_tool.images(out, matrix)
    text = (out / "twin-vars.yml").read_text()
    server_vars = text[text.index("\ngpufabric_twin_env:"):]  # the per-server block twin.py appends verbatim
    (out / "twin-vars.yml").write_text(yaml.safe_dump(twin_vars, sort_keys=True) + server_vars)
    group_vars = out.parent / "site" / "group_vars" / "all.yml"
    values = yaml.safe_load(group_vars.read_text())
    values.pop("gpufabric_leaf_mtu", None)
    if mtu is not None:
        values["gpufabric_leaf_mtu"] = mtu
    group_vars.write_text(yaml.safe_dump(values))


def leaf_state(out, leaf):
    state = json.loads((out / "leaves" / leaf / "state.json").read_text())
    return state["image"]["partition" + state["image"]["current"]]["release"], state["applied"]


def burned(out, server):
    return {c["fw"]["burned"] for c in cards(out, server)}


@pytest.mark.heavy(200)
def test_a_release_rolled_back_takes_firmware_switch_os_and_leaf_configuration_back(tmp_path):
    site(tmp_path / "site", {"r01": 1, "r02": 1})
    out = build(tmp_path / "site", tmp_path / "twin")
    release(out, FIRMWARE_A, OS_A)
    ran = rehearse(out, "--apply")
    assert ran.ok, ran
    at_a = {leaf: leaf_state(out, leaf) for leaf in LEAVES}
    assert {leaf: state[0] for leaf, state in at_a.items()} == dict.fromkeys(LEAVES, "5.11.0")
    assert all(burned(out, server) == {"22.41.1000"} for server in SERVERS)

    release(out, PIN, OS_B, mtu=9000)
    ran = rehearse(out, "--apply")
    assert ran.ok, ran
    assert all(burned(out, server) == {"22.43.1014"} for server in SERVERS)
    for leaf in LEAVES:
        running, config = leaf_state(out, leaf)
        assert running == "5.12.0" and config["interface"]["swp1"]["link"]["mtu"] == 9000, (leaf, running)

    # back to A without the matrix's permission: the preflight refuses every card's firmware downgrade and every leaf's
    # release, naming both versions and the setting, before any host or leaf changes
    release(out, FIRMWARE_A, OS_A)
    revisions = {leaf: len(applied(out, leaf)) for leaf in LEAVES}
    ran = rehearse(out, "--apply")
    assert not ran.ok
    said = " ".join(" ".join(m) if isinstance(m, list) else str(m) for m in ran.failures().values())
    assert "preflight found 8 problem(s); no host was changed:" in said, said
    for server in SERVERS:
        for pci in ("0000:3b:00.0", "0000:d8:00.0"):
            assert ("%s %s: downgrade from 22.43.1014 to 22.41.1000 refused: the flash is newer than the pin; set "
                    "gpufabric_matrix.firmware.MT_0000000359.allow_downgrade: true to allow it" % (server, pci)) in said
    for leaf in LEAVES:
        assert ("%s: downgrade from 5.12.0 to 5.11.0 refused: the switch runs a newer release than the pin; set "
                "gpufabric_matrix.switch_os.cumulus-linux.allow_downgrade: true to allow it" % leaf) in said
    assert all(burned(out, server) == {"22.43.1014"} for server in SERVERS)
    assert all(leaf_state(out, leaf)[0] == "5.12.0" and len(applied(out, leaf)) == revisions[leaf] for leaf in LEAVES)

    # with allow_downgrade on the pins: every card and leaf back to A, the leaves' configuration A's exactly
    release(out, FIRMWARE_A, OS_A, allow=("firmware", "switch_os"))
    ran = rehearse(out, "--apply")
    assert ran.ok, ran.failures()
    assert all(burned(out, server) == {"22.41.1000"} for server in SERVERS)
    for leaf in LEAVES:
        assert leaf_state(out, leaf) == at_a[leaf], leaf
        assert len(applied(out, leaf)) == revisions[leaf] + 1, leaf
