"""What the preflight's read-only login to each leaf found (plugin_utils/_prerequisites.leaf_reads): a leaf that could
not be read, with the connection's own words; a pinned switch OS the leaf would refuse, naming both releases and the
setting; nothing for a leaf that runs the pin, could go to it, or was not read."""
import copy

import pytest
import yaml

from _paths import REPO
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._filters import filter_errors
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._prerequisites import leaf_reads
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError

MATRIX = yaml.safe_load((REPO / "inventory" / "example-1250" / "group_vars" / "all" / "matrix.yml").read_text())[
    "gpufabric_matrix"]      # pins cumulus-linux 5.11.0 with a URL, allow_downgrade false


def read(release, current="1", other=None):
    """nvue_info's result on a leaf: running ``release`` from partition ``current``, the other holding ``other``."""
    parts = {current: {"release": release}, ("2" if current == "1" else "1"): {"release": other}}
    return {"changed": False, "system": {"hostname": "x", "release": release},
            "image": {"current": current, "next": current, "partitions": parts, "files": []}}


def leaf(result, matrix=MATRIX, **more):
    return dict({"__gpufabric_preflight_leaf_info": result, "gpufabric_matrix": matrix}, **more)


def test_leaves_that_run_the_pin_or_can_go_to_it_are_no_problem():
    hostvars = {"a": leaf(read("5.11.0")), "b": leaf(read("5.9.1")), "c": leaf(read("5.9.1", other="5.11.0"))}
    assert leaf_reads(["a", "b", "c"], hostvars) == {"read": ["a", "b", "c"], "unreachable": {}, "problems": []}


def test_a_newer_release_without_allow_downgrade_is_a_problem_naming_both_releases_and_the_setting():
    hostvars = {"a": leaf(read("5.12.0", other="5.11.0")), "b": leaf(read("5.11.0"))}
    assert leaf_reads(["a", "b"], hostvars) == {"read": ["a", "b"], "unreachable": {}, "problems": [
        "a: downgrade from 5.12.0 to 5.11.0 refused: the switch runs a newer release than the pin; set "
        "gpufabric_matrix.switch_os.cumulus-linux.allow_downgrade: true to allow it"]}
    allowed = copy.deepcopy(MATRIX)
    allowed["switch_os"]["cumulus-linux"]["allow_downgrade"] = True
    assert leaf_reads(["a"], {"a": leaf(read("5.12.0", other="5.11.0"), allowed)})["problems"] == []


def test_an_upgrade_without_a_url_is_a_problem_unless_the_other_partition_holds_the_pin():
    no_url = copy.deepcopy(MATRIX)
    del no_url["switch_os"]["cumulus-linux"]["url"]
    out = leaf_reads(["a", "b"], {"a": leaf(read("5.9.1"), no_url), "b": leaf(read("5.9.1", other="5.11.0"), no_url)})
    assert out["problems"] == [
        "a: 5.9.1 -> 5.11.0 needs the image, but there is no URL: set gpufabric_matrix.switch_os.cumulus-linux.url or "
        "gpufabric_switch_image_base_url"]
    # the site's image server gives the URL
    base = {"gpufabric_switch_image_base_url": "http://mirror.example/cumulus/"}
    assert leaf_reads(["a"], {"a": leaf(read("5.9.1"), no_url, **base)})["problems"] == []


@pytest.mark.parametrize("result, why", [
    ({"unreachable": True, "msg": "Failed to connect to the host via ssh: Connection timed out", "changed": False},
     "Failed to connect to the host via ssh: Connection timed out"),
    ({"failed": False, "msg": "r17: the NVUE REST API answered 403 Forbidden (GET /nvue_v1/system/version)",
      "changed": False},         # failed_when: false leaves failed False: no system is what tells
     "r17: the NVUE REST API answered 403 Forbidden (GET /nvue_v1/system/version)"),
    ({"changed": False}, "nvue_info returned no system and no message"),
    ({"changed": False, "system": "5.11.0"}, 'nvue_info returned system as the string "5.11.0", not a mapping'),
])
def test_a_leaf_that_could_not_be_read_is_unreachable_with_the_connections_words(result, why):
    assert leaf_reads(["r17"], {"r17": leaf(result)}) == {"read": ["r17"], "unreachable": {"r17": why},
                                                          "problems": []}


def test_a_leaf_not_read_or_skipped_or_without_a_matrix_is_not_judged():
    hostvars = {"out": {"gpufabric_matrix": MATRIX}, "off": leaf({"skipped": True, "changed": False}),
                "bare": leaf(read("5.12.0"), None), "none": leaf(None)}
    assert leaf_reads(["out", "off", "bare", "none"], hostvars) == {"read": ["bare"], "unreachable": {},
                                                                    "problems": []}


def test_a_leaf_whose_release_is_unreadable_is_a_problem():
    out = leaf_reads(["a"], {"a": leaf(read(""))})
    assert out["problems"] and out["problems"][0].startswith("a: the running release is unreadable"), out


def test_the_filter_names_a_leaf_missing_from_hostvars():
    wrapped = filter_errors()(leaf_reads)
    with pytest.raises(Exception) as err:
        wrapped(["ghost"], {})
    assert "ghost" in str(err.value)
    with pytest.raises(MlnxError):
        leaf_reads(["ghost"], {})
