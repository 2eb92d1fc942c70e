"""The drain's controller side (plugin_utils/_drain.py): each server's node by a strict grammar, who goes back into
service at the end of a batch and who stays out with the reason why, and the settings checked before any host."""
import pytest

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidValue
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._drain import batch_nodes, problems

BATCHES = [{"number": 1, "name": "rack r01", "servers": ["gpu-r01-01.example", "gpu-r01-02.example"]},
           {"number": 2, "name": "rack r02", "servers": ["gpu-r02-01", "gpu-r02-02", "gpu-r02-03"]}]
QUARANTINE = {"hosts": {"gpu-r02-02": {"status": "quarantined", "failures": [
    {"measure": "bandwidth", "message": "rail 3 ib_write_bw 180 Gb/s < 360"}]},
    "gpu-r02-01": {"status": "passed", "failures": []}}}


def hostvars(**extra):
    out = {h: {} for batch in BATCHES for h in batch["servers"]}
    for host, values in extra.items():
        out[host.replace("_", "-")].update(values)
    return out


def test_the_nodes_default_to_the_first_label_and_name_the_batch():
    out = batch_nodes(["gpu-r01-01.example", "gpu-r01-02.example"], hostvars(), BATCHES)
    assert out == {"batch": "rack r01", "nodes": {"gpu-r01-01.example": "gpu-r01-01",
                                                  "gpu-r01-02.example": "gpu-r01-02"}, "resume": [], "keep": []}


def test_at_the_end_only_the_servers_that_passed_go_back():
    values = hostvars(**{"gpu_r02_01": {"gpufabric_gate_results": QUARANTINE},
                         "gpu_r02_02": {"gpufabric_gate_results": QUARANTINE},
                         "gpu_r02_03": {"gpufabric_held": [{"leaf": None, "port": None,
                                                            "reason": "Slurm node gpu-r02-03 still runs job 42"}]}})
    out = batch_nodes(["gpu-r02-01", "gpu-r02-02", "gpu-r02-03"], values, BATCHES, in_play=["gpu-r02-01",
                                                                                            "gpu-r02-02"])
    assert out["resume"] == ["gpu-r02-01"]
    assert out["keep"] == [
        {"server": "gpu-r02-02", "node": "gpu-r02-02",
         "reason": "quarantined by the validation gate: rail 3 ib_write_bw 180 Gb/s < 360"},
        {"server": "gpu-r02-03", "node": "gpu-r02-03", "reason": "held: Slurm node gpu-r02-03 still runs job 42"}]


def test_a_failed_server_stays_out():
    out = batch_nodes(["gpu-r02-01", "gpu-r02-02"], hostvars(), BATCHES, in_play=["gpu-r02-02"])
    assert out["resume"] == ["gpu-r02-02"]
    assert out["keep"] == [{"server": "gpu-r02-01", "node": "gpu-r02-01",
                            "reason": "failed in the rollout (see the rollout report)"}]
    # with the cause the rollout's rescue recorded: the step and the message, cut to Slurm's reason
    failure = {"step": "firmware", "task": "Burn", "message": "0000:17:00.0: -E- Burning FS4 image failed"}
    out = batch_nodes(["gpu-r02-01"], hostvars(gpu_r02_01={"gpufabric_failure": failure}), BATCHES, in_play=[])
    assert out["keep"][0]["reason"] == ("failed in the rollout in step firmware: 0000:17:00.0: -E- Burning FS4 image "
                                        "failed (see the rollout report)")


def test_a_long_reason_is_cut_to_160_printable_characters():
    held = [{"leaf": "l1", "port": "swp1", "reason": "x\n" * 200}]
    out = batch_nodes(["gpu-r02-01"], hostvars(gpu_r02_01={"gpufabric_held": held}), BATCHES, in_play=[])
    reason = out["keep"][0]["reason"]
    assert len(reason) == 160 and reason.endswith("...") and "\n" not in reason


@pytest.mark.parametrize("kind, value, ok", [
    ("slurm", "gpu-r01-01", True), ("slurm", "a" * 64, True), ("slurm", "a" * 65, False),
    ("slurm", "gpu[01-04]", False), ("slurm", "a b", False), ("slurm", 7, False),
    ("kubernetes", "gpu-r01-01.cluster.local", True), ("kubernetes", "GPU-R01", False),
    ("kubernetes", "gpu_r01", False), ("kubernetes", "-gpu", False)])
def test_node_names_by_grammar(kind, value, ok):
    key = "gpufabric_drain_slurm_node" if kind == "slurm" else "gpufabric_drain_k8s_node"
    values = hostvars(gpu_r02_01={key: value})
    if ok:
        assert batch_nodes(["gpu-r02-01"], values, kind=kind)["nodes"] == {"gpu-r02-01": value}
    else:
        with pytest.raises(InvalidValue) as err:
            batch_nodes(["gpu-r02-01"], values, kind=kind)
        assert err.value.parameter == key and err.value.msg.startswith("gpu-r02-01: %s=" % key)


def test_two_servers_on_one_node_are_refused():
    values = hostvars(gpu_r02_02={"gpufabric_drain_slurm_node": "gpu-r02-01"})
    with pytest.raises(InvalidValue, match="gpu-r02-01 and gpu-r02-02 are both slurm node gpu-r02-01"):
        batch_nodes(["gpu-r02-01", "gpu-r02-02"], values)


def test_a_kind_without_nodes_is_refused():
    with pytest.raises(InvalidValue, match='gpufabric_drain="none" has no nodes'):
        batch_nodes(["gpu-r02-01"], hostvars(), kind="none")


def _all(**values):
    return {h: dict(values) for batch in BATCHES for h in batch["servers"]}


def test_no_problem_without_a_drain_or_with_a_complete_one(tmp_path):
    hook = tmp_path / "pre.yml"
    hook.write_text("---\n[]\n")
    servers = [h for b in BATCHES for h in b["servers"]]
    assert problems(servers, _all()) == []
    assert problems(servers, _all(gpufabric_drain="slurm", gpufabric_drain_slurm_host="head1",
                                  gpufabric_batch_pre_tasks=str(hook))) == []


def test_the_problems_are_each_named(tmp_path):
    servers = ["gpu-r02-01", "gpu-r02-02"]
    values = {"gpu-r02-01": {"gpufabric_drain": "slurm", "gpufabric_batch_pre_tasks": "hooks/pre.yml",
                             "gpufabric_batch_post_tasks": str(tmp_path / "missing.yml")},
              "gpu-r02-02": {"gpufabric_drain": "slurm", "gpufabric_batch_pre_tasks": "hooks/pre.yml",
                             "gpufabric_batch_post_tasks": str(tmp_path / "missing.yml"),
                             "gpufabric_drain_timeout": 60, "gpufabric_drain_slurm_node": "gpu[1-2]"}}
    assert problems(servers, values) == [
        'gpufabric_drain_timeout differs between servers (60, null): a play setting, read once per batch - set it in '
        'group_vars/all or with -e',
        "gpufabric_drain=slurm needs gpufabric_drain_slurm_host: the host where sinfo and scontrol reach slurmctld "
        "(the controller or a login node), as a user allowed to update nodes",
        "gpu-r02-02: gpufabric_drain_slurm_node=\"gpu[1-2]\" is not a Slurm node name (letters, digits, '.', '_', "
        "'-', one name, at most 64)",
        'gpufabric_batch_pre_tasks="hooks/pre.yml" is not an absolute path: name the task file as '
        '{{ inventory_dir }}/hooks/... or {{ playbook_dir }}/...',
        'gpufabric_batch_post_tasks="%s": no such file on the controller' % (tmp_path / "missing.yml")]


def test_bad_input_is_named():
    with pytest.raises(InvalidValue, match="drain: servers must be a list of host names"):
        batch_nodes("gpu-r02-01", {})
    with pytest.raises(InvalidValue, match="drain_problems: servers"):
        problems({"a": 1}, {})
