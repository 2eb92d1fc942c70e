"""plugin_utils/_pull.py with literal tables: systemd's quoting of an Exec word, the steps pull mode refuses or
skips, the mirror's URLs - and docs/gitops.md's table of the steps is the core's (STEPS)."""
import re

import pytest

from _paths import REPO
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidValue
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._pull import (
    STEPS, mirror_downloads, mirror_fetch_problem, mirror_url, pull_steps, systemd_word)
from _roleplay import matrix

SHA = "1f" * 32


@pytest.mark.parametrize("word, quoted", [
    ("/usr/bin/flock", '"/usr/bin/flock"'),
    ("http://mirror.example/a%20b", '"http://mirror.example/a%%20b"'),
    ("$HOME", '"$$HOME"'),
    ('a"b\\c', '"a\\"b\\\\c"'),
    ("a b", '"a b"'),
])
def test_an_exec_word_is_quoted_by_systemds_rules(word, quoted):
    assert systemd_word(word) == quoted


def test_central_steps_are_skipped_by_default_and_refused_when_switched_on():
    out = pull_steps("srv-1", {"gpufabric_firmware_copy": False})
    assert out["refused"] == []
    assert [s.split(" (step ")[1].split(")")[0] for s in out["skipped"]] == [
        "variables", "preflight", "plan", "leaf", "leaf_ready", "bios", "validate", "gate", "report"]
    out = pull_steps("srv-1", {"gpufabric_firmware_copy": False, "gpufabric_validate_enabled": "yes",
                               "gpufabric_preflight_enabled": False, "gpufabric_rails_enabled": True})
    assert out["refused"] == [
        "srv-1: gpufabric_validate_enabled is true, but the validation gate (step validate) does not run in pull mode: "
        "it runs centrally - playbooks/site.yml or playbooks/validate.yml on the controller: it needs peers (perftest "
        "and NCCL between servers). Set it false for this server or run it from the controller"]
    assert len(out["skipped"]) == 8


def test_firmware_from_a_controller_is_refused_and_a_mirror_or_no_copy_is_not():
    assert "gpufabric_firmware_copy true, gpufabric_firmware_mirror empty" in pull_steps("srv-1", {})["refused"][0]
    assert pull_steps("srv-1", {"gpufabric_firmware_mirror": "http://mirror.example/fw"})["refused"] == []
    assert pull_steps("srv-1", {"gpufabric_firmware_enabled": False})["refused"] == []


def test_a_switch_that_is_not_a_boolean_is_named():
    with pytest.raises(InvalidValue, match=r"^srv-1: gpufabric_leaf_enabled is the string \"maybe\", not a boolean"):
        pull_steps("srv-1", {"gpufabric_leaf_enabled": "maybe", "gpufabric_firmware_copy": False})


def test_mirror_urls():
    assert mirror_url("http://mirror.example/ofed/", "/srv/ofed/doca-ofed.tgz", "gpufabric_ofed_mirror") == \
        "http://mirror.example/ofed/doca-ofed.tgz"
    assert mirror_url("https://[2001:db8::1]:8443", "x.tgz", "gpufabric_ofed_mirror") == "https://[2001:db8::1]:8443/x.tgz"
    for bad in ("http://mirror.example/a b", "file:///srv", "http://mirror.example/\n", "http://u:p@mirror.example",
                "http://mirror.example/`id`"):
        with pytest.raises(InvalidValue, match="gpufabric_ofed_mirror is"):
            mirror_url(bad, "x.tgz", "gpufabric_ofed_mirror", host="srv-1")
    with pytest.raises(InvalidValue, match="^srv-1: gpufabric_matrix.driver.source.path is \"x y.tgz\""):
        mirror_url("http://mirror.example", "/srv/x y.tgz", "gpufabric_ofed_mirror", "gpufabric_matrix.driver.source.path",
                   host="srv-1")


def test_mirror_downloads_are_the_images_of_the_psids_asked_for():
    m = matrix("m", {"MT_0000000838": {"version": "28.42.1000", "image": "cx7.bin", "sha256": SHA,
                                       "part_numbers": ["MCX75310AAS-NEAT"]},
                     "MT_0000000223": {"version": "20.43.1014", "image": "cx6.bin", "sha256": "2e" * 32,
                                       "part_numbers": ["MCX653105A-HDAT"]}})
    assert mirror_downloads(["mt_0000000838"], m, "http://mirror.example/fw", "/var/lib/fw/") == [
        {"psid": "MT_0000000838", "image": "cx7.bin", "url": "http://mirror.example/fw/cx7.bin",
         "dest": "/var/lib/fw/cx7.bin", "sha256": SHA, "pin": "gpufabric_matrix.firmware.MT_0000000838.sha256"}]
    assert mirror_downloads([], m, "http://mirror.example/fw", "/var/lib/fw") == []


def test_docs_gitops_table_is_the_steps_table():
    text = (REPO / "docs" / "gitops.md").read_text()
    section = text.split("## ansible-pull", 1)[1]
    rows = re.findall(r"^\| `([a-z_]+)` \| ([^|]+?) \| (runs|central) \|", section, re.M)
    assert [(step, mode) for step, _what, mode in rows] == [(s[0], s[2]) for s in STEPS]


GOOD, BAD = "9a" * 32, "1f" * 32


def test_a_fetch_with_another_sha256_names_both_and_the_matrix_path():
    result = {"failed": True, "msg": "The checksum for /tmp/x.bin did not match %s; it was %s." % (GOOD, BAD)}
    assert mirror_fetch_problem(result, "firmware image x.bin", "http://mirror.example/x.bin",
                                "gpufabric_matrix.firmware.MT_0000000838.sha256", GOOD) == (
        "firmware image x.bin from http://mirror.example/x.bin: sha256 %s received, but "
        "gpufabric_matrix.firmware.MT_0000000838.sha256 is %s (not kept)" % (BAD, GOOD))


@pytest.mark.parametrize("result,words", [
    ({"failed": True, "msg": "Request failed: <urlopen error [Errno 111] Connection refused>"},
     "Request failed: <urlopen error [Errno 111] Connection refused>"),
    ({"failed": True, "msg": "The checksum for /tmp/x did not match; it was short"},
     "The checksum for /tmp/x did not match; it was short"),
    ({"failed": True}, "not fetched"),
    ("not a result", "not fetched"),
])
def test_any_other_failure_is_get_url_s_own_message(result, words):
    assert mirror_fetch_problem(result, "bundle b.tgz", "http://mirror.example/b.tgz", "pin", GOOD) == (
        "bundle b.tgz from http://mirror.example/b.tgz: " + words)
