"""The boot-time RoCE QoS script (module_utils/_roce_qos_script): whatever the values, the script either is
refused naming the path of the bad value, or parses (``sh -n``) and runs nothing but the steps (a canary)."""
import os
import re
import shlex
import shutil
import subprocess
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.module_utils import _roce_qos_script as qs

CANARY = "CANARY"
# Everything a shell would interpret; each tries to create CANARY in the directory the script runs in.
INJECTIONS = ['x"$(touch %s)"' % CANARY, "$(touch %s)" % CANARY, "`touch %s`" % CANARY, "a;touch %s" % CANARY,
              "a'b;touch %s;'" % CANARY, 'a"b', "a b", "a\ntouch %s" % CANARY, "a\r\ntouch %s" % CANARY,
              "${x:=$(touch %s)}" % CANARY, "a&&touch %s" % CANARY, "a|touch %s" % CANARY, "*", "~", "-n",
              "a\\", "#", "%s", "%(path)s"]
# Any text but NUL (refused: no argv word can hold one), the two separators of the stubs' log and lone surrogates
# (refused: no script file can hold one - SURROGATES below).
WORDS = st.one_of(st.sampled_from(INJECTIONS),
                  st.text(st.characters(blacklist_characters="\x00\x1e\x1f", blacklist_categories=("Cs",)), max_size=12),
                  st.integers(-5, 10 ** 6))
GOOD_IFACE = "enp24s0np0"
# a file the roce_qos module writes (the script writes no other: _roce_qos.REPLAY_WRITE_RE)
GOOD_WRITE = "/sys/class/infiniband/mlx5_0/tc/1/traffic_class"
# A tool stub: logs its argv (words separated by \x1f, calls by \x1e); cma_roce_tos prints its last word, as the
# real one prints the ToS it set.
STUB = """#!/bin/sh
{ printf '%s\\037' "${0##*/}" "$@"; printf '\\036'; } >> "$STUBLOG"
if [ "${0##*/}" = cma_roce_tos ]; then for last do :; done; echo "$last"; fi
exit 0
"""


def _run(text, *, iface=GOOD_IFACE, rdma="mlx5_0"):
    """``sh -n`` on ``text``, then run it for ``iface`` in a scratch directory with tool stubs on PATH and a sysfs
    tree under ROOT: ``(canary created?, [argv of each tool call])``."""
    work = tempfile.mkdtemp(prefix="gpufabric-qos-")
    try:
        return _run_in(work, text, iface, rdma)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run_in(work, text, iface, rdma):
    script = os.path.join(work, "gpufabric-roce-qos")
    # Only the stubs, never a real tool of this machine: the script's own PATH line (a constant) points at them.
    text, count = re.subn(r"^PATH=.*$", 'PATH="$STUBDIR:/usr/bin:/bin"', text, count=1, flags=re.M)
    assert count == 1
    with open(script, "w", newline="") as stream:
        stream.write(text)
    assert subprocess.run(["sh", "-n", script], check=False).returncode == 0, text
    stubs = os.path.join(work, "bin")
    os.makedirs(stubs)
    for tool in ("mlnx_qos", "cma_roce_tos", "logger"):
        with open(os.path.join(stubs, tool), "w") as stream:
            stream.write(STUB)
        os.chmod(os.path.join(stubs, tool), 0o755)
    os.makedirs(os.path.join(work, "root/sys/class/net", iface, "device/infiniband", rdma))
    env = {"PATH": "/usr/bin:/bin", "STUBDIR": stubs, "STUBLOG": os.path.join(work, "stubs.log")}
    subprocess.run(["sh", script, iface], cwd=work, env=env, check=False, capture_output=True, timeout=30)
    calls = []
    if os.path.exists(env["STUBLOG"]):
        with open(env["STUBLOG"], newline="") as stream:
            calls = [record.split("\x1f")[:-1] for record in stream.read().split("\x1e")[:-1]]
    calls = [call for call in calls if call[0] != "logger"]
    return os.path.exists(os.path.join(work, CANARY)), calls


def _entry(words, path, value):
    return {"interface": GOOD_IFACE, "rdma_device": "mlx5_0",
            "replay": [{"argv": ["mlnx_qos", "-i", GOOD_IFACE] + words},
                       {"write": path, "value": value},
                       {"argv": ["cma_roce_tos", "-d", "mlx5_0", "-p", 1, "-t", 106]}]}


@pytest.mark.parametrize("word", INJECTIONS)
def test_every_shell_character_in_a_step_is_quoted_and_runs_nothing(word):
    text = qs.replay_script([_entry([word], GOOD_WRITE, word)], root=None)
    text = text.replace("\nROOT=''\n", "\nROOT=\"$PWD/root\"\n")
    canary, calls = _run(text)
    assert not canary
    # the word reached the tool as ONE argument, unchanged; the other steps ran too
    assert calls == [["mlnx_qos", "-i", GOOD_IFACE, word], ["cma_roce_tos", "-d", "mlx5_0", "-p", "1", "-t", "106"]]


@pytest.mark.parametrize("field, value, path", [
    ("interface", 'x"$(reboot)"', "interfaces[0].interface"),
    ("interface", "enp24s0np0\n", "interfaces[0].interface"),
    ("interface", "a b", "interfaces[0].interface"),
    ("interface", 7, "interfaces[0].interface"),
    ("rdma_device", "mlx5_0;reboot", "interfaces[0].rdma_device"),
    ("rdma_device", "mlx5_0\n", "interfaces[0].rdma_device"),
    ("replay", "mlnx_qos", "interfaces[0].replay"),
    ("replay", [5], "interfaces[0].replay[0]"),
    ("replay", [{"argv": []}], "interfaces[0].replay[0]"),
    ("replay", [{"argv": ["mlnx_qos", ["-i"]]}], "interfaces[0].replay[0].argv[1]"),
    ("replay", [{"argv": ["mlnx_qos", True]}], "interfaces[0].replay[0].argv[1]"),
    ("replay", [{"write": "relative/path", "value": "1"}], "interfaces[0].replay[0].write"),
    ("replay", [{"write": GOOD_WRITE + "\n", "value": "1"}], "interfaces[0].replay[0].write"),
    ("replay", [{"write": GOOD_WRITE, "value": {"a": 1}}], "interfaces[0].replay[0].value"),
])
def test_a_value_that_cannot_go_into_the_script_is_refused_naming_its_path(field, value, path):
    entry = dict(_entry([], GOOD_WRITE, "1"), **{field: value})
    with pytest.raises(MlnxError) as err:
        qs.replay_script([entry])
    assert "roce_qos_script: %s: " % path in err.value.msg


@pytest.mark.parametrize("option, value", [("path", "/usr/local/sbin/x\nreboot"), ("path", "/usr/sbin/$(reboot)"),
                                           ("path", "relative"), ("path", None), ("root", "/x\n"), ("root", 5)])
def test_the_script_path_and_root_are_checked(option, value):
    """The script names its own path in a comment: a newline there would start a command."""
    with pytest.raises(MlnxError) as err:
        qs.replay_script([_entry([], GOOD_WRITE, "1")], **{option: value})
    assert err.value.parameter == option and "roce_qos_script: %s: " % option in err.value.msg


def test_the_rdma_name_is_replaced_only_where_it_is_a_whole_path_component():
    entry = {"interface": GOOD_IFACE, "rdma_device": "mlx5_1",
             "replay": [{"write": "/sys/class/net/mlx5_10/ecn/roce_np/cnp_dscp", "value": "1"},
                        {"write": "/sys/class/infiniband/mlx5_1/tc/1/traffic_class", "value": "1"}]}
    text = qs.replay_script([entry])
    assert "        put /sys/class/net/mlx5_10/ecn/roce_np/cnp_dscp 1\n" in text
    assert "        put /sys/class/infiniband/\"$rdma\"/tc/1/traffic_class 1\n" in text


def test_not_a_list_is_refused_and_nothing_is_an_empty_script():
    with pytest.raises(MlnxError, match=r"interfaces: must be a list"):
        qs.replay_script({"interface": GOOD_IFACE})
    assert "    for i in ''; do apply" in qs.replay_script([])        # an empty result: nothing to restore


JSONISH = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                       lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                       max_leaves=12)
ENTRYISH = st.fixed_dictionaries({"interface": st.one_of(st.just(GOOD_IFACE), WORDS, JSONISH)},
                                 optional={"rdma_device": st.one_of(st.just("mlx5_0"), WORDS, JSONISH),
                                           "replay": st.one_of(JSONISH, st.lists(st.one_of(
                                               st.fixed_dictionaries({"argv": st.lists(WORDS, max_size=4)}),
                                               st.fixed_dictionaries({"write": WORDS, "value": WORDS}),
                                               JSONISH), max_size=4))})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(JSONISH, st.lists(ENTRYISH, max_size=3)))
def test_any_input_is_a_script_or_the_documented_error(entries):
    """The only exception is MlnxError (AnsibleFilterError through the filter), naming roce_qos_script and a path."""
    try:
        text = qs.replay_script(entries)
    except MlnxError as err:
        assert "roce_qos_script: interfaces" in err.msg
        return
    for name in [e["interface"] for e in entries or []]:
        assert "    %s)\n" % shlex.quote(name) in text


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(WORDS, min_size=1, max_size=3), WORDS)
def test_generated_scripts_parse_and_run_no_canary(words, value):
    entry = _entry(words, "/sys/class/net/%s/ecn/roce_np/cnp_dscp" % GOOD_IFACE, value)
    entry["replay"].insert(0, {"write": "/sys/class/net/%s/ecn/roce_rp/enable/3" % GOOD_IFACE, "value": value})
    text = qs.replay_script([entry]).replace("\nROOT=''\n", "\nROOT=\"$PWD/root\"\n")
    canary, calls = _run(text)
    assert not canary
    assert calls[0] == ["mlnx_qos", "-i", GOOD_IFACE] + [str(word) for word in words]


# Lone surrogates: text Python holds but no UTF-8 file can (what a bad byte in an inventory decoded with
# surrogateescape becomes). Writing such a script raised UnicodeEncodeError instead of naming the value.
SURROGATES = ["\ud800", "a\udfffb", "mlnx\udc80", "\udcff"]


@pytest.mark.parametrize("surrogate", SURROGATES)
@pytest.mark.parametrize("place, path", [
    ("argv", "interfaces[0].replay[0].argv[3]"),
    ("value", "interfaces[0].replay[1].value"),
    ("write", "interfaces[0].replay[1].write"),
    ("interface", "interfaces[0].interface"),
    ("rdma_device", "interfaces[0].rdma_device"),
])
def test_text_that_is_not_utf8_is_refused_naming_its_path(surrogate, place, path):
    entry = _entry([surrogate] if place == "argv" else ["--trust", "dscp"][:1],
                   GOOD_WRITE + surrogate if place == "write" else GOOD_WRITE, surrogate if place == "value" else "1")
    if place in ("interface", "rdma_device"):
        entry[place] = "x" + surrogate
    with pytest.raises(MlnxError) as err:
        qs.replay_script([entry])
    assert "roce_qos_script: %s: " % path in err.value.msg and err.value.parameter == "interfaces"
    err.value.msg.encode("utf-8")   # the message itself can be printed


@pytest.mark.parametrize("surrogate", SURROGATES)
def test_a_root_that_is_not_utf8_is_refused(surrogate):
    with pytest.raises(MlnxError) as err:
        qs.replay_script([_entry([], GOOD_WRITE, "1")], root="/srv/" + surrogate)
    assert err.value.parameter == "root" and "roce_qos_script: root: " in err.value.msg
    err.value.msg.encode("utf-8")


SURROGATE_TEXT = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=()), max_size=8).flatmap(
    lambda text: st.sampled_from([text, text + "\ud800", "\udfff" + text]))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(SURROGATE_TEXT, st.integers(0, 9)), min_size=1, max_size=3), SURROGATE_TEXT, SURROGATE_TEXT)
def test_any_text_with_surrogates_is_a_utf8_script_or_the_documented_error(words, write, value):
    """The script is text a file can hold (UTF-8), or the documented error naming the path; never a
    UnicodeEncodeError."""
    entry = _entry(words, "/sys/" + write, value)
    try:
        text = qs.replay_script([entry])
    except MlnxError as err:
        assert "roce_qos_script: interfaces[0].replay[" in err.msg
        err.msg.encode("utf-8")
        return
    text.encode("utf-8")
    assert not any(_has_surrogate(str(w)) for w in words + [write, value])


def _has_surrogate(text):
    return any("\ud800" <= char <= "\udfff" for char in text)


# item 12 of issue 39: a script that runs as root at boot takes only the tools and sysfs files the module's steps use
@pytest.mark.parametrize("step, path, words", [
    ({"argv": ["sh", "-c", "reboot"]}, "interfaces[0].replay[0].argv[0]", "sh is not a tool the script runs"),
    ({"argv": ["/usr/bin/mlnx_qos", "-i", GOOD_IFACE]}, "interfaces[0].replay[0].argv[0]", "allowed: mlnx_qos"),
    ({"argv": ["rm", "-rf", "/"]}, "interfaces[0].replay[0].argv[0]", "rm is not a tool"),
    ({"write": "/etc/shadow", "value": "x"}, "interfaces[0].replay[0].write", "is not a file the roce_qos module"),
    ({"write": "/sys/class/net/../../../etc/passwd", "value": "x"}, "interfaces[0].replay[0].write", "is not a file"),
    ({"write": "/sys/class/net/%s/ecn/roce_np/enable/8" % GOOD_IFACE, "value": "1"}, "interfaces[0].replay[0].write",
     "is not a file"),
    ({"write": "/sys/class/infiniband/../tc/1/traffic_class", "value": "1"}, "interfaces[0].replay[0].write",
     "is not a file"),
    ({"write": "/sys/class/net/%s/ecn/roce_np/cnp_dscp/../../x" % GOOD_IFACE, "value": "1"},
     "interfaces[0].replay[0].write", "is not a file"),
])
def test_the_script_runs_only_the_modules_tools_and_writes_only_its_files(step, path, words):
    entry = {"interface": GOOD_IFACE, "rdma_device": "mlx5_0", "replay": [step]}
    with pytest.raises(MlnxError) as err:
        qs.replay_script([entry])
    assert "roce_qos_script: %s: " % path in err.value.msg and words in err.value.msg, err.value.msg


def test_a_null_result_is_refused_not_a_script_that_restores_nothing():
    with pytest.raises(MlnxError, match=r"roce_qos_script: interfaces: required: the roce_qos module's interfaces "
                                        r"result \(a list\), not null"):
        qs.replay_script(None)
