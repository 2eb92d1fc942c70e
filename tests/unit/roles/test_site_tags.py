"""playbooks/site.yml with --tags / --skip-tags on a simulated DGX H100 whose ConnectX-7 compute NICs still run
InfiniBand: only the steps asked for run, and a step never decides on facts of a step that did not run (tests/_roleplay.py)."""
import yaml

from _paths import REPO
from _roleplay import matrix, run, sim_vars, simulated

HOST = "srv-r01-01"
SITE = REPO / "playbooks" / "site.yml"
FABRIC = yaml.safe_load((REPO / "inventory/example-1250/group_vars/all/rails.yml").read_text())["gpufabric_fabric"]


def roles_that_ran(ran):
    """The roles with at least one task that ran (not skipped) on HOST, in order of first appearance."""
    out = []
    for p in ran.data["plays"]:
        for t in p["tasks"]:
            name, result = t["task"]["name"], t["hosts"].get(HOST)
            if " : " in name and result is not None and not result.get("skipped") \
                    and "Validating arguments against arg spec" not in name:  # Ansible's own, tagged always
                role = name.split(" : ")[0].replace("gpufabric.mlnx.", "")
                if role not in out:
                    out.append(role)
    return out


def site(tmp_path, args, **extra):
    sim = simulated(tmp_path, HOST, "dgx-h100")
    pins = {"MT_0000000838": {"version": "28.42.1000", "image": "cx7.bin", "sha256": "0" * 64,
                              "part_numbers": ["MCX75310AAS-NEAT"]}}
    host = sim_vars(sim, rack="r01", position=1, gpufabric_fabric=FABRIC, gpufabric_activate_allow_reboot=True,
                    gpufabric_matrix=matrix("2026.11-a", pins),
                    gpufabric_nic_config_profiles={"roce": {"LINK_TYPE_P1": "ETH"}},
                    gpufabric_nic_config_assignments=[{"profile": "roce", "part_numbers": ["MCX75310AAS-NEAT"]}],
                    **extra)
    return run(tmp_path, {HOST: host}, SITE, check=True, args=args)


def test_tags_rails_runs_the_rail_plan_and_the_rails_only_and_predicts_no_activation(tmp_path):
    """Without the nic_config and activate steps nothing says an activation will come: the rails role reads the host
    and names the rail that is not there (enp24s0np0 of a card in InfiniBand mode) instead of predicting."""
    ran = site(tmp_path, ["--tags", "rails"])
    assert roles_that_ran(ran) == ["site_variables", "rail_plan", "rails"]
    failed = ran.task("Rails on the running system, no network restart (in check mode, the drift)", HOST, role="rails")
    assert failed["failed"] and "enp24s0np0" in failed["msg"], failed


def test_tags_nic_config_activate_rails_predicts_the_rails_after_the_activation(tmp_path):
    ran = site(tmp_path, ["--tags", "nic_config,activate,rails"])
    # the rail plan is made by the rollout's planning play (tagged always), before the steps
    assert roles_that_ran(ran) == ["site_variables", "rail_plan", "nic_config", "activate", "rails"], ran
    assert ran.ok, ran
    waiting = ran.task("Rails on the running system, no network restart (in check mode, the drift)", HOST, role="rails")
    assert "the activation (fwreset)" in waiting["msg"] and "enp220s0np0" in waiting["msg"]
    assert waiting["waiting"]["for"] == "activation" and waiting["steps"] == []


def test_skip_tags_firmware_leaves_activate_deciding_on_the_cards_it_reads(tmp_path):
    """The firmware step skipped: no gpufabric_firmware_pending_devices, so activate plans from its own read of the
    cards (the NV value nic_config would set) - the same fwreset as with the firmware step."""
    ran = site(tmp_path, ["--skip-tags", "firmware,preflight,platform,ofed,rails,roce_qos,validate"])
    assert roles_that_ran(ran) == ["site_variables", "rail_plan", "nic_config", "activate"], ran
    assert ran.ok, ran
    facts = ran.task("Activate everything pending with ONE firmware reset or ONE reboot (reads every card itself)", HOST, role="activate")["ansible_facts"]
    assert facts["gpufabric_activation"]["method"] == "fwreset"


def test_batch_size_counts_the_racks_of_batch_by_rack_and_end_batch_names_the_next_wave(tmp_path):
    """gpufabric_batch_by rack with gpufabric_batch_size set (a site's canary sizes and -e gpufabric_batch_by=rack):
    the sizes count racks - no setting is thrown away; a wave (gpufabric_end_batch) says where the next one begins."""
    ran = site(tmp_path, ["--tags", "no-step"], gpufabric_batch_by="rack", gpufabric_batch_size=[1, 4, "10%"],
               gpufabric_end_batch=1)
    assert ran.task("The batches", HOST)["msg"] == "1 batches: 1. rack r01", ran
    (tmp_path / "count").mkdir()
    ran = site(tmp_path / "count", ["--tags", "no-step"], gpufabric_batch_by="count", gpufabric_batch_size=[1, 4, "10%"])
    assert ran.task("The batches", HOST)["msg"] == "1 batches: 1. servers 1-1"
