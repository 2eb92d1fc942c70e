"""The rollout's order and holds (plugin_utils/_rollout.py), with literal plans: batches aligned to racks, SUs or
counts, each batch's new leaves first, and who is held for which leaf and why."""
import pytest

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._rollout import RolloutError, batch_sizes, batches, holds


def _plan():
    """2 racks x 2 servers, 2 rails, a leaf per rack per rail; rack r02 is SU 2."""
    hosts, leaves = {}, {}
    for rack, su in (("r01", 1), ("r02", 2)):
        for index in (1, 2):
            host = "srv-%s-%02d" % (rack, index)
            hosts[host] = []
            for rail in (0, 1):
                leaf = "%s-leaf-rail%d" % (rack, rail)
                port = "swp%d" % index
                hosts[host].append({"rail": rail, "leaf": leaf, "leaf_port": port})
                leaves.setdefault(leaf, {"su": su, "rail": rail, "cables": {}})["cables"][port] = {"host": host}
    return {"hosts": hosts, "leaves": leaves}


PLAN = _plan()
SERVERS = [{"name": h, "rack": h.split("-")[1]} for h in PLAN["hosts"]]
LEAVES = sorted(PLAN["leaves"])


def test_by_rack_each_batch_has_its_leaves_first():
    out = batches(SERVERS, PLAN, "rack", leaves=LEAVES)
    assert out["batches"] == [
        {"number": 1, "name": "rack r01", "leaves": ["r01-leaf-rail0", "r01-leaf-rail1"],
         "servers": ["srv-r01-01", "srv-r01-02"]},
        {"number": 2, "name": "rack r02", "leaves": ["r02-leaf-rail0", "r02-leaf-rail1"],
         "servers": ["srv-r02-01", "srv-r02-02"]}]
    assert out["order"] == ["r01-leaf-rail0", "r01-leaf-rail1", "srv-r01-01", "srv-r01-02",
                            "r02-leaf-rail0", "r02-leaf-rail1", "srv-r02-01", "srv-r02-02"]
    assert out["sizes"] == [4, 4]


def test_a_leaf_shared_by_two_batches_is_done_in_the_first():
    plan = _plan()
    for host in ("srv-r02-01", "srv-r02-02"):  # rack r02 on rack r01's rail-0 leaf
        plan["hosts"][host][0]["leaf"] = "r01-leaf-rail0"
    out = batches(SERVERS, plan, "rack", leaves=LEAVES)
    assert out["batches"][1]["leaves"] == ["r02-leaf-rail1"]
    assert out["sizes"] == [4, 3]
    # rack r01's batch changes a leaf rack r02's servers use while they are still in service: the plan says so
    assert out["shared"] == [{"number": 1, "name": "rack r01", "leaves": ["r01-leaf-rail0"],
                              "servers": ["srv-r02-01", "srv-r02-02"]}]
    # by SU the shared leaf's servers are one batch (rack r02 is on SU 1's leaf): nothing is shared
    out = batches(SERVERS, plan, "su", leaves=LEAVES)
    assert [b["name"] for b in out["batches"]] == ["SU 1"] and out["shared"] == []


def test_leaves_of_their_own_batch_share_nothing():
    assert batches(SERVERS, PLAN, "rack", leaves=LEAVES)["shared"] == []
    assert batches(SERVERS, PLAN, "count", size="100%", leaves=LEAVES)["shared"] == []


def test_by_su_and_by_count():
    assert [b["name"] for b in batches(SERVERS, PLAN, "su", leaves=LEAVES)["batches"]] == ["SU 1", "SU 2"]
    out = batches(SERVERS, PLAN, "count", size=3, leaves=LEAVES)
    assert [b["servers"] for b in out["batches"]] == [["srv-r01-01", "srv-r01-02", "srv-r02-01"], ["srv-r02-02"]]
    assert out["batches"][1]["leaves"] == []  # r02's leaves came with srv-r02-01
    assert out["sizes"] == [7, 1]
    assert [b["name"] for b in out["batches"]] == ["servers 1-3", "servers 4-4"]


@pytest.mark.parametrize("size, total, sizes", [
    ("100%", 4, [4]), (2, 5, [2, 2, 1]), ([1, "50%"], 3, [1, 1, 1]), ([1, 4, "10%"], 30, [1, 4] + [3] * 8 + [1]),
    ("1%", 7, [1] * 7), ([5], 0, []), ("25%", 10, [2, 2, 2, 2, 2]),
])
def test_count_batches_are_the_batches_serial_makes(size, total, sizes):
    """Ansible's serial: a percentage of all servers rounded down (at least 1), the list's last size repeats."""
    assert batch_sizes(size, total) == sizes


def test_without_a_fabric_count_batches_servers_in_inventory_order():
    servers = [{"name": "b"}, {"name": "a"}, {"name": "c"}]
    out = batches(servers, None, "count", size=[1, 2])
    assert out["order"] == ["b", "a", "c"] and out["sizes"] == [1, 2]


def test_without_managed_leaves_the_batches_are_servers_only():
    assert batches(SERVERS, PLAN, "rack")["sizes"] == [2, 2]


def test_a_leaf_outside_the_run_is_not_batched():
    out = batches(SERVERS[:2], PLAN, "rack", leaves=LEAVES, in_run=["srv-r01-01", "srv-r01-02", "r01-leaf-rail0"])
    assert out["batches"] == [{"number": 1, "name": "rack r01", "leaves": ["r01-leaf-rail0"],
                               "servers": ["srv-r01-01", "srv-r01-02"]}]


def _three_racks():
    """3 racks x 1 server, 1 rail; racks r02 and r03 share rack r01's leaf, r03 has its own second one."""
    hosts = {"srv-r01-01": [{"rail": 0, "leaf": "leaf-a", "leaf_port": "swp1"}],
             "srv-r02-01": [{"rail": 0, "leaf": "leaf-a", "leaf_port": "swp2"}],
             "srv-r03-01": [{"rail": 0, "leaf": "leaf-a", "leaf_port": "swp3"},
                            {"rail": 1, "leaf": "leaf-b", "leaf_port": "swp1"}]}
    return {"hosts": hosts, "leaves": {"leaf-a": {"su": 1}, "leaf-b": {"su": 1}}}, \
        [{"name": h, "rack": h.split("-")[1]} for h in hosts]


@pytest.mark.parametrize("start", [2, "2", "rack r02"])
def test_start_batch_skips_the_batches_before_it_and_brings_their_leaves_along(start):
    plan, servers = _three_racks()
    out = batches(servers, plan, "rack", leaves=["leaf-a", "leaf-b"], start=start)
    assert out["skipped"] == [{"number": 1, "name": "rack r01", "servers": ["srv-r01-01"]}]
    assert out["batches"] == [
        {"number": 2, "name": "rack r02", "leaves": ["leaf-a"], "servers": ["srv-r02-01"]},
        {"number": 3, "name": "rack r03", "leaves": ["leaf-b"], "servers": ["srv-r03-01"]}]
    assert out["order"] == ["leaf-a", "srv-r02-01", "leaf-b", "srv-r03-01"] and out["sizes"] == [2, 2]


@pytest.mark.parametrize("start, first", [(None, 1), ("", 1), (1, 1), (3, 3), ("rack r03", 3)])
def test_start_batch_at_both_ends(start, first):
    plan, servers = _three_racks()
    out = batches(servers, plan, "rack", leaves=["leaf-a", "leaf-b"], start=start)
    assert out["batches"][0]["number"] == first and len(out["skipped"]) == first - 1
    assert out["batches"][0]["leaves"] == (["leaf-a", "leaf-b"] if first == 3 else ["leaf-a"])


@pytest.mark.parametrize("start", [0, 4, -1, "4", "0", True, 2.0, "rack r9", "Rack r01", " 2", [2], {"a": 1}])
def test_start_batch_outside_the_batches_is_refused_naming_the_range(start):
    plan, servers = _three_racks()
    with pytest.raises(RolloutError) as err:
        batches(servers, plan, "rack", leaves=["leaf-a"], start=start)
    assert err.value.parameter == "gpufabric_start_batch"
    assert 'allowed is a batch number 1-3 or a batch\'s name ("rack r01", "rack r02", "rack r03")' in err.value.msg


def _racks(count, per_su=2):
    """``count`` racks of one server, one rail: rack rNN's leaf is the SU's (``per_su`` racks an SU)."""
    hosts, leaves = {}, {}
    for index in range(1, count + 1):
        su = (index - 1) // per_su + 1
        leaf = "su%d-leaf" % su
        hosts["srv-r%02d-01" % index] = [{"rail": 0, "leaf": leaf, "leaf_port": "swp%d" % index}]
        leaves.setdefault(leaf, {"su": su})
    return {"hosts": hosts, "leaves": leaves}, [{"name": h, "rack": h.split("-")[1]} for h in hosts]


def test_batch_size_counts_racks_with_batch_by_rack():
    plan, servers = _racks(7)
    out = batches(servers, plan, "rack", [1, 2, 3], leaves=sorted(plan["leaves"]))
    assert [(b["number"], b["name"], b["servers"]) for b in out["batches"]] == [
        (1, "rack r01", ["srv-r01-01"]),
        (2, "racks r02-r03", ["srv-r02-01", "srv-r03-01"]),
        (3, "racks r04-r06", ["srv-r04-01", "srv-r05-01", "srv-r06-01"]),
        (4, "rack r07", ["srv-r07-01"])]          # the last size repeats: 3, cut at the 7th rack
    # each batch's new leaves on top of its servers: su1; su2 (r03); su3 (r05-r06, r04 is su2's); su4
    assert out["sizes"] == [1 + 1, 1 + 2, 1 + 3, 1 + 1]


@pytest.mark.parametrize("size, names", [
    (None, ["SU 1", "SU 2", "SU 3"]),             # unset: one SU a batch
    (1, ["SU 1", "SU 2", "SU 3"]),
    ([1, 2], ["SU 1", "SUs 2-3"]),
    ("50%", ["SU 1", "SU 2", "SU 3"]),            # 50% of 3 SUs: 1 (serial's rounding down, at least 1)
    ("67%", ["SUs 1-2", "SU 3"]),                 # 2.01 -> 2
    ("100%", ["SUs 1-3"]),
    (3, ["SUs 1-3"]),
    (4, ["SUs 1-3"]),                             # more than there are: one batch of all
])
def test_batch_size_counts_sus_with_batch_by_su(size, names):
    plan, servers = _racks(6)
    out = batches(servers, plan, "su", size, leaves=sorted(plan["leaves"]))
    assert [b["name"] for b in out["batches"]] == names
    assert [s for b in out["batches"] for s in b["servers"]] == [s["name"] for s in servers]


def test_batch_size_unset_is_all_servers_by_count():
    assert [b["name"] for b in batches(SERVERS, PLAN)["batches"]] == ["servers 1-4"]


@pytest.mark.parametrize("end, last, after", [(None, 4, []), (4, 4, []), ("racks r04-r06", 3, [4]), (2, 2, [3, 4]),
                                              ("2", 2, [3, 4]), ("racks r02-r03", 2, [3, 4])])
def test_end_batch_runs_the_batches_up_to_it_and_lists_the_rest_as_after(end, last, after):
    plan, servers = _racks(7)
    out = batches(servers, plan, "rack", [1, 2, 3], leaves=sorted(plan["leaves"]), end=end)
    assert [b["number"] for b in out["batches"]] == list(range(1, last + 1))
    assert [b["number"] for b in out["after"]] == after


def test_a_wave_is_its_start_to_its_end():
    plan, servers = _racks(7)
    out = batches(servers, plan, "rack", [1, 2, 3], leaves=sorted(plan["leaves"]), start=2, end=3)
    assert [b["name"] for b in out["batches"]] == ["racks r02-r03", "racks r04-r06"]
    assert [b["number"] for b in out["skipped"]] == [1] and [b["number"] for b in out["after"]] == [4]
    # rack r01's SU leaf serves rack r02: it comes along with the wave's first batch
    assert out["batches"][0]["leaves"] == ["su1-leaf", "su2-leaf"]
    # a one-batch wave: start and end the same batch
    assert [b["number"] for b in batches(servers, plan, "rack", [1, 2, 3], start=4, end=4)["batches"]] == [4]


@pytest.mark.parametrize("start, end, words", [
    (3, 2, "gpufabric_end_batch=2 (batch 2, racks r02-r03) comes before gpufabric_start_batch=3 (batch 3, racks "
           "r04-r06): the last batch to run must be the first one or a later one"),
    (None, 5, "gpufabric_end_batch=5 is not a batch of this rollout: allowed is a batch number 1-4 or a batch's name "
              "(\"rack r01\", \"racks r02-r03\", \"racks r04-r06\", \"rack r07\")"),
    (None, 0, "gpufabric_end_batch=0 is not a batch of this rollout"),
    (None, "rack r02", 'gpufabric_end_batch="rack r02" is not a batch of this rollout'),  # inside a batch of two
    (None, True, "gpufabric_end_batch=true is not a batch of this rollout"),
])
def test_a_bad_end_batch_is_refused_naming_what_is_allowed(start, end, words):
    plan, servers = _racks(7)
    with pytest.raises(RolloutError) as err:
        batches(servers, plan, "rack", [1, 2, 3], start=start, end=end)
    assert err.value.parameter == "gpufabric_end_batch" and words in err.value.msg


@pytest.mark.parametrize("kwargs, words", [
    ({"by": "row"}, 'gpufabric_batch_by is "row" (allowed: rack, su, count)'),
    ({"by": "count", "size": 0}, "gpufabric_batch_size=0 is not a batch size: allowed is a whole number of at least 1"),
    ({"by": "count", "size": True}, "gpufabric_batch_size=true is not a batch size"),
    ({"by": "count", "size": "150%"}, 'gpufabric_batch_size="150%" is not a batch size'),
    ({"by": "count", "size": []}, "gpufabric_batch_size=[] is not a batch size"),
    ({"by": "count", "size": "4\n"}, "is not a batch size"),
    ({"by": "count", "size": "\u0661"}, "is not a batch size"),  # an Arabic-Indic one: not ASCII
    ({"by": "rack", "plan": None}, "gpufabric_batch_by is rack, which needs the rail plan (gpufabric_fabric)"),
])
def test_bad_batching_is_named(kwargs, words):
    with pytest.raises(RolloutError) as err:
        batches(SERVERS, kwargs.pop("plan", PLAN), **kwargs)
    assert words in err.value.msg


READY = {"status": None, "gate": {"ready": True, "held": [], "hosts": {}, "leaf": []}}


def test_a_server_whose_leaves_are_ready_is_not_held():
    state = {leaf: READY for leaf in LEAVES}
    assert holds("srv-r01-01", PLAN, state, LEAVES) == []


def test_each_reason_names_the_leaf_and_the_port():
    state = {
        "r01-leaf-rail0": {"status": {"failed": True, "msg": "leaf refused revision 3: state invalid"}},
        "r01-leaf-rail1": {"status": None, "gate": {"held": ["srv-r01-02"], "hosts": {"srv-r01-02": [
            "r01-leaf-rail1:swp2 (cable ...) is down"]}}},
    }
    assert holds("srv-r01-02", PLAN, state, LEAVES) == [
        {"leaf": "r01-leaf-rail0", "port": "swp2",
         "reason": "its leaf r01-leaf-rail0 could not be configured: leaf refused revision 3: state invalid"},
        {"leaf": "r01-leaf-rail1", "port": "swp2", "reason": "r01-leaf-rail1:swp2 (cable ...) is down"}]
    assert holds("srv-r01-01", PLAN, state, LEAVES)[0]["leaf"] == "r01-leaf-rail0"
    assert len(holds("srv-r01-01", PLAN, state, LEAVES)) == 1  # rail1's gate holds only srv-r01-02


def test_an_unchecked_or_out_of_run_leaf_holds_its_servers():
    found = holds("srv-r01-01", PLAN, {"r01-leaf-rail1": READY}, LEAVES, in_run=["srv-r01-01", "r01-leaf-rail1"])
    assert found == [{"leaf": "r01-leaf-rail0", "port": "swp1", "reason": "its leaf r01-leaf-rail0 is not in this run "
                      "(--limit): a leaf is configured and checked before its servers"}]
    found = holds("srv-r01-01", PLAN, {"r01-leaf-rail1": READY}, LEAVES)
    assert found[0]["reason"] == "its leaf r01-leaf-rail0 was not checked (the leaf gate did not run for it)"


def test_unmanaged_leaves_hold_nobody_and_an_unplanned_server_is_held():
    assert holds("srv-r01-01", PLAN, {}, leaves=None) == []
    assert holds("srv-zz", PLAN, {}, LEAVES)[0]["reason"] == "srv-zz is not in the rail plan"
