"""The platform role's BIOS tasks run for real: ansible-playbook (tests/redfish/bios_play.yml) against
Redfish BMC emulators on 127.0.0.1 (tests/redfish: sushy-emulator with BIOS settings pending until a
reset), one per server - a Dell PowerEdge XE9680, an HPE ProLiant XL675d Gen10 Plus and an NVIDIA DGX H100, each
BMC with its vendor's persona: the Dell applies pending settings at a reset only with a BIOS configuration job.

Every step is checked on the emulators' state (GET Bios, GET Bios/Settings, the requests they
answered), not only on what Ansible reports: check mode writes nothing; a run stages exactly the
differing attributes (and on the Dell leaves a BIOS configuration job scheduled) and resets nothing; a second run changes nothing and still reports them
pending; after a ComputerSystem.Reset they are current and nothing is pending; an unknown attribute,
a value not allowed (found in the registry, or refused by the BMC itself) and a model without an
attribute set fail naming host and attribute, and nothing is written. The BMC password never shows."""
import json
import sys

import pytest

import _roleplay as roleplay
from _paths import REPO

pytest.importorskip("sushy_tools", reason="sushy-tools (requirements-dev.txt) runs the Redfish emulator")
sys.path.insert(0, str(REPO / "tests" / "redfish"))
from emulator import Emulator  # noqa: E402  pylint: disable=wrong-import-position

PLAY = REPO / "tests" / "redfish" / "bios_play.yml"
MODELS = json.loads((REPO / "tests" / "redfish" / "bios_models.json").read_text())
DELL, HPE, DGX = "PowerEdge XE9680", "ProLiant XL675d Gen10 Plus", "DGX H100"
SERVERS = {"srv-r01-01": DELL, "srv-r01-02": HPE, "srv-r01-03": DGX}
SPEC = {"models": {DELL: {"SysProfile": "PerfOptimized", "ProcCStates": "Disabled"},
                   HPE: {"WorkloadProfile": "HighPerformanceCompute(HPC)", "PowerRegulator": "StaticHighPerf"},
                   DGX: {"PwrPerfProfile": "MaxPerformance", "PCIeASPMSupport": "Disabled"}}}
# What a converge stages: the model's set plus SR-IOV on (the vendor's attribute), all differing from the factory.
STAGED = {"srv-r01-01": {"SysProfile": "PerfOptimized", "ProcCStates": "Disabled", "SriovGlobalEnable": "Enabled"},
          "srv-r01-02": {"WorkloadProfile": "HighPerformanceCompute(HPC)", "PowerRegulator": "StaticHighPerf",
                         "Sriov": "Enabled"},
          "srv-r01-03": {"PwrPerfProfile": "MaxPerformance", "PCIeASPMSupport": "Disabled", "SRIOVSupport": "Enabled"}}
# How each persona applies pending settings: the Dell only with a BIOS configuration job.
APPLY = {"srv-r01-01": "job", "srv-r01-02": "reboot", "srv-r01-03": "reboot"}
RECORD = "BIOS attributes through the BMC (Redfish, from the controller)"


def factory(model):
    return {entry["name"]: entry["value"] for entry in MODELS[model]["attributes"]}


@pytest.fixture
def bmcs(tmp_path):
    """One emulated BMC per server, stopped after the test whatever happened."""
    started = {}
    try:
        for host, model in SERVERS.items():
            started[host] = Emulator(tmp_path / ("bmc-" + host), systems=[{"name": host, "model": model}]).start()
        yield started
    finally:
        for bmc in started.values():
            bmc.stop()


def jobs_of(bmc):
    """The BIOS configuration jobs of the emulated iDRAC: [(Id, JobState)]."""
    status, body = bmc.get("/redfish/v1/Managers")
    assert status == 200, body
    status, body = bmc.get(body["Members"][0]["@odata.id"] + "/Jobs?$expand=*($levels=1)")
    assert status == 200, body
    return [(job["Id"], job["JobState"]) for job in body["Members"]]


def pending_of(bmc):
    """The attributes pending on the BMC: those of Bios/Settings whose value differs from Bios (an iLO lists all)."""
    current = bmc.bios()
    return {name: value for name, value in bmc.pending().items() if current.get(name) != value}


class Run(roleplay.Run):
    def __init__(self, ran, passwords):
        super().__init__(ran.proc)
        for password in passwords:  # no_log: the BMC password shows nowhere
            assert password not in self.proc.stdout and password not in self.proc.stderr

    def changed(self, host):
        return self.stats(host)["changed"]

    def facts(self, host):
        return self.task(RECORD, host)["ansible_facts"]


def run_play(tmp_path, bmcs, check=False, spec=None, **host_vars):
    servers = {host: {"gpufabric_platform_bmc_address": bmc.baseuri, "gpufabric_platform_bmc_user": bmc.user,
                      "gpufabric_platform_bmc_password": bmc.password, "gpufabric_platform_bmc_ca_path": str(bmc.ca_path)}
               for host, bmc in bmcs.items()}
    # the host side (kernel command line, sysfs) must never run on this machine: BIOS tasks only
    group = dict({"gpufabric_platform_host_enabled": False,
                  "gpufabric_platform_bios": SPEC if spec is None else spec,
                  "gpufabric_platform_bios_sriov": True}, **host_vars)
    ran = roleplay.run(tmp_path, servers, PLAY, check=check, group_vars=group, environ={"ANSIBLE_FORKS": "2"})
    return Run(ran, [bmc.password for bmc in bmcs.values()])


# ---------------------------------------------------------------- check, converge, again, reset, again

@pytest.mark.heavy(60)
def test_check_converge_rerun_reset(tmp_path, bmcs):
    # Check mode: the plan is reported as a change, nothing is written.
    run = run_play(tmp_path, bmcs, check=True)
    assert run.proc.returncode == 0, run
    for host, bmc in bmcs.items():
        assert run.changed(host) == 1
        assert run.facts(host)["gpufabric_platform_bios_pending_reset"] is True
        assert run.facts(host)["gpufabric_platform_bios_pending"] == STAGED[host]
        assert bmc.writes() == [] and pending_of(bmc) == {} and bmc.bios() == factory(SERVERS[host])
        assert run.facts(host)["gpufabric_platform_bios_apply"] == APPLY[host]

    # Converge: exactly the differing attributes are staged, nothing current changes, no reset.
    run = run_play(tmp_path, bmcs)
    assert run.proc.returncode == 0, run
    for host, bmc in bmcs.items():
        assert run.changed(host) == 1
        assert run.facts(host)["gpufabric_platform_bios_pending_reset"] is True
        assert pending_of(bmc) == STAGED[host]
        assert bmc.bios() == factory(SERVERS[host])
        assert [(method, path.rsplit("/", 2)[-2:]) for method, path, _status in bmc.writes()] == [
            ("PATCH", ["BIOS", "Settings"])]
    # the Dell: community.general's PATCH asks for the job (@Redfish.SettingsApplyTime), the iDRAC scheduled it
    dell_jobs = jobs_of(bmcs["srv-r01-01"])
    assert [state for _id, state in dell_jobs] == ["Scheduled"]
    assert run.facts("srv-r01-01")["gpufabric_platform_bios_jobs"] == [dell_jobs[0][0]]
    assert any("PerfPerWattOptimizedDapc -> PerfOptimized" in line
               for line in run.facts("srv-r01-01")["gpufabric_platform_bios_summary"])

    # Again: nothing written, still pending.
    run = run_play(tmp_path, bmcs)
    assert run.proc.returncode == 0, run
    for host, bmc in bmcs.items():
        assert run.changed(host) == 0
        assert run.facts(host)["gpufabric_platform_bios_pending_reset"] is True
        assert run.facts(host)["gpufabric_platform_bios_pending"] == STAGED[host]
        assert len(bmc.writes()) == 1 and pending_of(bmc) == STAGED[host]

    # The server resets (the activate role's business, done here by hand): the settings are current.
    for host, bmc in bmcs.items():
        assert bmc.reset(reset_type="ForceRestart")[0] == 204
        assert pending_of(bmc) == {}
        assert bmc.bios() == dict(factory(SERVERS[host]), **STAGED[host])
    assert [state for _id, state in jobs_of(bmcs["srv-r01-01"])] == ["Completed"]

    run = run_play(tmp_path, bmcs)
    assert run.proc.returncode == 0, run
    for host, bmc in bmcs.items():
        assert run.changed(host) == 0
        assert run.facts(host)["gpufabric_platform_bios_pending_reset"] is False
        assert run.facts(host)["gpufabric_platform_bios_pending"] == {}
        assert [method for method, _path, _status in bmc.writes()] == ["PATCH", "POST"]  # ours, and our reset


# ---------------------------------------------------------------- the Dell: no job, no change at a reset

def test_a_dell_applies_pending_settings_only_with_a_job_and_the_role_creates_it(tmp_path, bmcs):
    """Settings staged without a BIOS configuration job (another tool, a PATCH without an apply time) stay pending
    through a reset on an iDRAC; the role sees them pending without a job and creates one, and the next reset
    applies them."""
    bmc = bmcs["srv-r01-01"]
    status, _body = bmc.request("PATCH", bmc.system_uri() + "/BIOS/Settings", {"Attributes": STAGED["srv-r01-01"]})
    assert status == 204 and jobs_of(bmc) == []
    assert bmc.reset(reset_type="ForceRestart")[0] == 204
    assert pending_of(bmc) == STAGED["srv-r01-01"] and bmc.bios() == factory(DELL)  # the reset applied nothing

    run = run_play(tmp_path, _only(bmcs, "srv-r01-01"), check=True)
    assert run.proc.returncode == 0, run
    assert run.changed("srv-r01-01") == 1 and jobs_of(bmc) == []
    assert len(bmc.writes()) == 2  # ours: the PATCH and the reset

    run = run_play(tmp_path, _only(bmcs, "srv-r01-01"))
    assert run.proc.returncode == 0, run
    assert run.changed("srv-r01-01") == 1
    [(job_id, state)] = jobs_of(bmc)
    assert state == "Scheduled" and run.facts("srv-r01-01")["gpufabric_platform_bios_jobs"] == [job_id]
    assert [(method, path.rsplit("/", 1)[-1]) for method, path, _status in bmc.writes()[2:]] == [("POST", "Jobs")]

    run = run_play(tmp_path, _only(bmcs, "srv-r01-01"))  # the job is there: nothing more
    assert run.proc.returncode == 0, run
    assert run.changed("srv-r01-01") == 0 and len(bmc.writes()) == 3

    assert bmc.reset(reset_type="ForceRestart")[0] == 204
    assert pending_of(bmc) == {} and bmc.bios() == dict(factory(DELL), **STAGED["srv-r01-01"])
    assert jobs_of(bmc) == [(job_id, "Completed")]


def test_a_change_while_a_dell_job_is_scheduled_fails_before_writing(tmp_path, bmcs):
    """An iDRAC takes no new BIOS settings while a BIOS configuration job is scheduled (SYS011): the plan says so,
    naming the job, and writes nothing."""
    bmc = bmcs["srv-r01-01"]
    status, _body = bmc.request("PATCH", bmc.system_uri() + "/BIOS/Settings", {
        "Attributes": {"LogicalProc": "Disabled"}, "@Redfish.SettingsApplyTime": {"ApplyTime": "OnReset"}})
    assert status == 202
    [(job_id, _state)] = jobs_of(bmc)
    run = run_play(tmp_path, _only(bmcs, "srv-r01-01"))
    assert run.proc.returncode != 0
    message = run.failures()["srv-r01-01"]
    assert message.startswith("srv-r01-01: Jobs: BIOS attributes ProcCStates, SriovGlobalEnable, SysProfile must "
                              "change, but BIOS configuration job %s is scheduled" % job_id), message
    assert len(bmc.writes()) == 1 and pending_of(bmc) == {"LogicalProc": "Disabled"}


# ---------------------------------------------------------------- failures name host and attribute, write nothing

def _only(bmcs, host):
    return {host: bmcs[host]}


def test_an_unknown_attribute_fails_naming_host_and_attribute(tmp_path, bmcs):
    spec = {"models": {DELL: {"SysProfile": "PerfOptimized", "ProcCstates": "Disabled"}}}
    run = run_play(tmp_path, _only(bmcs, "srv-r01-01"), spec=spec)
    assert run.proc.returncode != 0
    assert run.failures() == {"srv-r01-01": (
        'srv-r01-01: gpufabric_platform_bios.models["PowerEdge XE9680"].ProcCstates: BIOS attribute ProcCstates is '
        "unknown to this BIOS (PowerEdge XE9680); close names: ProcCStates")}
    bmc = bmcs["srv-r01-01"]
    assert bmc.writes() == [] and pending_of(bmc) == {} and bmc.bios() == factory(DELL)


def test_a_value_not_in_the_registry_fails_before_writing(tmp_path, bmcs):
    run = run_play(tmp_path, _only(bmcs, "srv-r01-02"), gpufabric_platform_bios_overrides={"PowerRegulator": "Max"})
    assert run.proc.returncode != 0
    assert run.failures() == {"srv-r01-02": (
        'srv-r01-02: gpufabric_platform_bios_overrides.PowerRegulator: "Max" is not an allowed value of BIOS attribute '
        "PowerRegulator on this BIOS (ProLiant XL675d Gen10 Plus) (allowed: DynamicPowerSavings, StaticLowPower, "
        "StaticHighPerf, OsControl)")}
    bmc = bmcs["srv-r01-02"]
    assert bmc.writes() == [] and pending_of(bmc) == {}


def test_a_value_the_bmc_refuses_fails_with_the_bmcs_words(tmp_path, bmcs):
    """Without the registry the plan cannot know the values: the BMC refuses the PATCH (HTTP 400), nothing is staged."""
    run = run_play(tmp_path, _only(bmcs, "srv-r01-01"), gpufabric_platform_bios_registry=False,
                   gpufabric_platform_bios_overrides={"ProcCStates": "Off"})
    assert run.proc.returncode != 0
    message = run.failures()["srv-r01-01"]
    bmc = bmcs["srv-r01-01"]
    assert message.startswith("srv-r01-01: BMC %s refused the BIOS attributes ProcCStates=Off, SriovGlobalEnable=Enabled, "
                              "SysProfile=PerfOptimized: HTTP Error 400 on PATCH request to " % bmc.baseuri), message
    assert "The value 'Off' for the property ProcCStates is not in the list of acceptable values." in message
    assert [(method, status) for method, _path, status in bmc.writes()] == [("PATCH", 400)]
    assert pending_of(bmc) == {} and bmc.bios() == factory(DELL)


def test_a_model_without_an_attribute_set_fails(tmp_path, bmcs):
    spec = {"models": {"PowerEdge R760": {"SysProfile": "PerfOptimized"}}}
    run = run_play(tmp_path, _only(bmcs, "srv-r01-01"), spec=spec)
    assert run.failures() == {"srv-r01-01": (
        'srv-r01-01: gpufabric_platform_bios.models["PowerEdge XE9680"]: model "PowerEdge XE9680" has no BIOS '
        "attribute set and there is no gpufabric_platform_bios.default (models with a set: PowerEdge R760)")}
    assert bmcs["srv-r01-01"].writes() == []


def test_a_wrong_password_fails_without_showing_it(tmp_path, bmcs):
    bmc = bmcs["srv-r01-01"]
    real = bmc.password
    bmc.password = "not-" + real  # what the inventory gets; Run checks neither shows
    try:
        run = run_play(tmp_path, _only(bmcs, "srv-r01-01"))
    finally:
        bmc.password = real
    assert real not in run.proc.stdout
    message = run.failures()["srv-r01-01"]
    assert message.startswith("srv-r01-01: BMC %s: " % bmc.baseuri) and "401" in message, message
    assert bmc.writes() == []
