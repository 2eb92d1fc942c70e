"""The BIOS plan core (plugins/plugin_utils/_bios.py): which attributes are set
(only those neither current nor already pending), what is pending after, whether a reset is needed,
the per-model set / default / switches / overrides, every problem at once naming host, inventory entry,
attribute and what is allowed - with the attribute tables of the Redfish emulator's models
(tests/redfish/bios_models.json) as the BIOSes - and hypothesis: any input gives a plan, never a
traceback, and a generated valid plan applied by a reset leaves every wanted attribute current."""
import copy
import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _paths import REPO
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils import _bios as bios

MODELS = json.loads((REPO / "tests" / "redfish" / "bios_models.json").read_text())
DELL = "PowerEdge XE9680"
HPE = "ProLiant XL675d Gen10 Plus"
DGX = "DGX H100"
HOST = "srv-r01-01"


def factory(model):
    return {entry["name"]: entry["value"] for entry in MODELS[model]["attributes"]}


def registry(model):
    """The model's BIOS as a DMTF AttributeRegistry, the shape redfish_info GetBiosRegistries returns."""
    entries = []
    for entry in MODELS[model]["attributes"]:
        out = {"AttributeName": entry["name"], "Type": entry["type"], "ReadOnly": bool(entry.get("read_only"))}
        if entry["type"] == "Enumeration":
            out["Value"] = [{"ValueName": value, "ValueDisplayName": value} for value in entry["values"]]
        if "lower" in entry:
            out.update(LowerBound=entry["lower"], UpperBound=entry["upper"])
        entries.append(out)
    return {"Id": MODELS[model]["registry"], "RegistryEntries": {"Attributes": entries}}


SPEC = {
    "models": {
        DELL: {"SysProfile": "PerfOptimized", "ProcCStates": "Disabled", "ProcC1E": "Disabled"},
        HPE: {"WorkloadProfile": "HighPerformanceCompute(HPC)", "PowerRegulator": "StaticHighPerf",
              "MinProcIdlePower": "NoCStates", "PciSlot1Aspm": "Disabled"},
        DGX: {"PwrPerfProfile": "MaxPerformance", "PackageCState": "C0/C1 state", "PCIeASPMSupport": "Disabled"},
    },
}


def plan_of(model=DELL, spec=None, current=None, pending=None, with_registry=True, **kwargs):
    return bios.plan(copy.deepcopy(SPEC if spec is None else spec), HOST, model,
                     factory(model) if current is None else current, pending=pending,
                     registry=registry(model) if with_registry else None, **kwargs)


def entry(model, name):
    return '%s: gpufabric_platform_bios.models["%s"].%s: ' % (HOST, model, name)


# ---------------------------------------------------------------- what is set, what is pending

def test_a_factory_dell_gets_its_set():
    result = plan_of()
    assert result["problems"] == []
    assert result["source"] == 'gpufabric_platform_bios.models["PowerEdge XE9680"]'
    assert result["set"] == {"SysProfile": "PerfOptimized", "ProcCStates": "Disabled", "ProcC1E": "Disabled"}
    assert result["pending"] == result["set"]
    assert result["pending_reset"] is True and result["registry"] is True
    assert result["summary"] == [
        "ProcC1E: Enabled -> Disabled (set now, applied by the next reset)",
        "ProcCStates: Enabled -> Disabled (set now, applied by the next reset)",
        "SysProfile: PerfPerWattOptimizedDapc -> PerfOptimized (set now, applied by the next reset)"]


def test_an_attribute_already_pending_with_the_wanted_value_is_not_set_again():
    result = plan_of(pending={"SysProfile": "PerfOptimized", "ProcCStates": "Enabled"})
    # ProcCStates: pending "Enabled" is the current value, so nothing of it is pending: it is set.
    assert result["set"] == {"ProcCStates": "Disabled", "ProcC1E": "Disabled"}
    assert result["pending"] == {"SysProfile": "PerfOptimized", "ProcCStates": "Disabled", "ProcC1E": "Disabled"}
    assert [row["action"] for row in result["attributes"]] == ["set", "set", "pending"]
    assert "SysProfile: PerfPerWattOptimizedDapc -> PerfOptimized (already pending, applied by the next reset)" \
        in result["summary"]


def test_a_second_run_sets_nothing_and_still_reports_pending():
    first = plan_of()
    second = plan_of(pending=first["set"])
    assert second["set"] == {} and second["problems"] == []
    assert second["pending"] == first["pending"] and second["pending_reset"] is True


def test_after_the_reset_nothing_is_set_or_pending():
    current = dict(factory(DELL), **plan_of()["set"])
    result = plan_of(current=current, pending={})
    assert result["set"] == {} and result["pending"] == {} and result["pending_reset"] is False
    assert result["summary"][0] == "ProcC1E: Disabled (as wanted)"


def test_a_different_pending_value_is_overwritten():
    result = plan_of(pending={"SysProfile": "DenseCfgOptimized"})
    assert result["set"]["SysProfile"] == "PerfOptimized"
    assert result["pending"]["SysProfile"] == "PerfOptimized"


def test_pending_settings_of_someone_else_are_reported_and_need_the_reset():
    current = dict(factory(DELL), SysProfile="PerfOptimized", ProcCStates="Disabled", ProcC1E="Disabled")
    result = plan_of(current=current, pending={"LogicalProc": "Disabled"})
    assert result["set"] == {} and result["pending_reset"] is True
    assert result["pending_other"] == {"LogicalProc": "Disabled"}
    assert result["summary"][-1] == ("LogicalProc: Enabled -> Disabled (pending, not from gpufabric_platform_bios: "
                                     "the next reset applies it too)")


def test_an_ilo_settings_object_lists_every_attribute_only_differences_are_pending():
    full = dict(factory(HPE), PowerRegulator="StaticHighPerf")
    result = plan_of(HPE, pending=full)
    assert result["set"] == {"WorkloadProfile": "HighPerformanceCompute(HPC)", "MinProcIdlePower": "NoCStates",
                             "PciSlot1Aspm": "Disabled"}
    assert result["pending"] == dict(result["set"], PowerRegulator="StaticHighPerf")
    assert result["pending_other"] == {}


def test_wanted_current_but_another_value_pending_is_a_problem():
    current = dict(factory(DELL), SysProfile="PerfOptimized")
    result = plan_of(current=current, pending={"SysProfile": "Custom"})
    assert result["set"] == {}
    assert result["problems"] == [entry(DELL, "SysProfile") + (
        'BIOS attribute SysProfile is "PerfOptimized" now as wanted, but "Custom" is pending and the next reset '
        "would apply it; a value equal to the current one cannot be staged: clear the BIOS's pending settings on "
        "the BMC (an iDRAC: delete the BIOS configuration job) and run again")]


# ---------------------------------------------------------------- which set, switches, overrides

def test_a_model_without_a_set_takes_the_default():
    spec = {"models": {HPE: {"Sriov": "Enabled"}}, "default": {"ProcTurboMode": "Disabled"}}
    result = plan_of(spec=spec)
    assert result["source"] == "gpufabric_platform_bios.default"
    assert result["set"] == {"ProcTurboMode": "Disabled"}


def test_a_model_without_a_set_and_no_default_is_a_problem():
    result = plan_of(spec={"models": {HPE: {"Sriov": "Enabled"}, "poweredge xe9680 ": {}}})
    assert result["problems"] == [
        '%s: gpufabric_platform_bios.models["PowerEdge XE9680"]: model "PowerEdge XE9680" has no BIOS attribute set '
        'and there is no gpufabric_platform_bios.default; did you mean "poweredge xe9680 "? (models with a set: '
        "ProLiant XL675d Gen10 Plus, poweredge xe9680 )" % HOST]
    assert result["source"] is None and result["set"] == {}


def test_a_different_model_is_not_called_a_misspelling():
    spec = {"models": {"PowerEdge R750": {"SysProfile": "PerfOptimized"}}}
    result = plan_of(spec=spec)
    assert "did you mean" not in result["problems"][0]
    assert result["problems"][0].endswith("(models with a set: PowerEdge R750)")


@pytest.mark.parametrize("model", [None, "", "  ", 42])
def test_no_model_from_the_bmc(model):
    result = bios.plan(SPEC, HOST, model, factory(DELL))
    assert len(result["problems"]) == 1
    assert result["problems"][0].startswith("%s: Model: the BMC reports no Model for the system" % HOST)


@pytest.mark.parametrize("model, switch, attribute", [
    (DELL, "sriov", "SriovGlobalEnable"), (HPE, "sriov", "Sriov"),
    (DELL, "iommu", "ProcVirtualization"), (HPE, "iommu", "ProcAmdIoVt"),
    (DGX, "sriov", "SRIOVSupport"), (DGX, "iommu", "IntelVTForDirectedIO")])
def test_switches_use_the_vendors_attribute(model, switch, attribute):
    on = plan_of(model, **{switch: True})
    assert on["set"][attribute] == "Enabled"
    assert [row["source"] for row in on["attributes"] if row["attribute"] == attribute] == [
        "gpufabric_platform_bios_" + switch]
    off = plan_of(model, current=dict(factory(model), **{attribute: "Enabled"}), **{switch: False})
    assert off["set"][attribute] == "Disabled"
    assert attribute not in plan_of(model, **{switch: None})["wanted"]


def test_an_intel_ilo_switches_the_iommu_with_intelprocvtd():
    current = {"IntelProcVtd": "Disabled", "ProcVirtualization": "Enabled"}
    result = bios.plan({"default": {}}, HOST, "ProLiant DL380a Gen11", current, iommu=True)
    assert result["set"] == {"IntelProcVtd": "Enabled"}


def test_a_switch_the_bios_has_no_attribute_for():
    result = bios.plan({"default": {}}, HOST, "Some Server", {"Foo": "Bar"}, sriov=True, iommu="yes")
    assert result["problems"] == [
        "%s: gpufabric_platform_bios_sriov: this BIOS (\"Some Server\") has none of the attributes that switch SRIOV "
        "(SRIOVSupport, Sriov, SriovGlobalEnable): name the attribute in gpufabric_platform_bios_overrides instead" % HOST,
        "%s: gpufabric_platform_bios_iommu: must be true (on), false (off) or null (leave the BIOS as it is), not the "
        "string \"yes\"" % HOST]


def test_host_overrides_win_over_the_model_set_and_the_switches():
    result = plan_of(sriov=True, overrides={"SriovGlobalEnable": "Disabled", "SysProfile": "Custom"})
    assert result["wanted"]["SriovGlobalEnable"] == "Disabled" and result["wanted"]["SysProfile"] == "Custom"
    assert "SriovGlobalEnable" not in result["set"] and result["set"]["SysProfile"] == "Custom"
    assert [row["source"] for row in result["attributes"] if row["attribute"] == "SysProfile"] == [
        "gpufabric_platform_bios_overrides.SysProfile"]


# ---------------------------------------------------------------- problems: named, complete, nothing set

def test_an_unknown_attribute_lists_the_close_names():
    spec = {"models": {DELL: {"ProcCstates": "Disabled", "SysProfile": "PerfOptimized"}}}
    result = plan_of(spec=spec)
    assert result["set"] == {}
    assert result["problems"] == [entry(DELL, "ProcCstates") + (
        "BIOS attribute ProcCstates is unknown to this BIOS (PowerEdge XE9680); close names: ProcCStates")]


def test_an_unknown_attribute_with_no_close_name_lists_what_the_bios_has():
    spec = {"models": {HPE: {"ZzzTop": 1}}}
    problem = plan_of(HPE, spec=spec)["problems"][0]
    assert problem == entry(HPE, "ZzzTop") + (
        "BIOS attribute ZzzTop is unknown to this BIOS (ProLiant XL675d Gen10 Plus); it has 9 attributes: "
        "MinProcIdlePower, NetworkBootRetryCount, PciSlot1Aspm, PowerRegulator, ProcAmdIoVt, ProductId, "
        "SerialNumber, Sriov and 1 more")


def test_a_value_not_in_the_registry_lists_the_allowed_values():
    spec = {"models": {DELL: {"SysProfile": "PerfOptimised", "ProcCStates": "Off"}}}
    assert plan_of(spec=spec)["problems"] == [
        entry(DELL, "ProcCStates") + '"Off" is not an allowed value of BIOS attribute ProcCStates on this BIOS '
                                     "(PowerEdge XE9680) (allowed: Enabled, Disabled)",
        entry(DELL, "SysProfile") + '"PerfOptimised" is not an allowed value of BIOS attribute SysProfile on this BIOS '
                                    "(PowerEdge XE9680); did you mean PerfOptimized? (allowed: "
                                    "PerfPerWattOptimizedDapc, PerfPerWattOptimizedOs, PerfOptimized, "
                                    "DenseCfgOptimized, Custom)"]


def test_without_a_registry_the_bmc_judges_the_values():
    spec = {"models": {DELL: {"ProcCStates": "Off"}}}
    result = plan_of(spec=spec, with_registry=False)
    assert result["problems"] == [] and result["set"] == {"ProcCStates": "Off"} and result["registry"] is False


def test_types_bounds_and_read_only():
    spec = {"models": {DELL: {"ProcCStates": False, "AcPwrRcvryUserDelay": "90", "SystemModelName": "x",
                              "NodeInterleave": 1}},
            "default": {}}
    problems = plan_of(spec=spec, overrides={"AcPwrRcvryUserDelay": 300})["problems"]
    assert problems == [
        "%s: gpufabric_platform_bios_overrides.AcPwrRcvryUserDelay: 300 is out of the range of BIOS attribute "
        "AcPwrRcvryUserDelay on this BIOS (PowerEdge XE9680) (allowed: 60 to 240)" % HOST,
        entry(DELL, "NodeInterleave") + "BIOS attribute NodeInterleave is of type Enumeration on this BIOS "
                                        "(PowerEdge XE9680), not the number 1; quote it",
        entry(DELL, "ProcCStates") + "BIOS attribute ProcCStates is of type Enumeration on this BIOS (PowerEdge "
                                     "XE9680), not the boolean false; YAML reads an unquoted On/Off/Yes/No/True/False "
                                     "as true or false: quote the value",
        entry(DELL, "SystemModelName") + "BIOS attribute SystemModelName is read-only on this BIOS (PowerEdge "
                                         "XE9680): leave it out"]
    quoted = plan_of(spec={"models": {DELL: {"AcPwrRcvryUserDelay": "90"}}})["problems"]
    assert quoted == [entry(DELL, "AcPwrRcvryUserDelay") + 'BIOS attribute AcPwrRcvryUserDelay is of type Integer on '
                      'this BIOS (PowerEdge XE9680), not the string "90"; write the number without quotes']


def test_without_a_registry_the_current_value_tells_the_type():
    problems = plan_of(spec={"models": {DELL: {"ProcCStates": True, "AcPwrRcvryUserDelay": 90}}},
                       with_registry=False)["problems"]
    assert problems == [entry(DELL, "ProcCStates") + "BIOS attribute ProcCStates is of type String on this BIOS "
                        "(PowerEdge XE9680), not the boolean true; YAML reads an unquoted On/Off/Yes/No/True/False as "
                        "true or false: quote the value"]


def test_every_problem_at_once_and_nothing_set():
    spec = {"models": {DELL: {"SysProfile": "PerfOptimized", "Bogus": "x", "ProcCStates": "Off", "ProcC1E": None}},
            "defaults": {}}
    result = plan_of(spec=spec, sriov="on", overrides=["SysProfile"])
    assert result["set"] == {}
    assert [re.sub(r"^%s: ([^:]+): .*" % HOST, r"\1", problem) for problem in result["problems"]] == [
        "gpufabric_platform_bios.defaults",
        'gpufabric_platform_bios.models["PowerEdge XE9680"].ProcC1E',
        "gpufabric_platform_bios_sriov",
        "gpufabric_platform_bios_overrides",
        'gpufabric_platform_bios.models["PowerEdge XE9680"].Bogus',
        'gpufabric_platform_bios.models["PowerEdge XE9680"].ProcCStates']
    assert "unknown key; did you mean default? (allowed: models, default)" in result["problems"][0]
    assert "has no value (null): give one, or leave the attribute out" in result["problems"][1]
    # What would have been done without the problems is still shown.
    assert [row["attribute"] for row in result["attributes"]] == ["SysProfile"]


@pytest.mark.parametrize("spec, words", [
    (None, "gpufabric_platform_bios: must be a mapping with `models`"),
    ({"models": ["PowerEdge XE9680"]}, "gpufabric_platform_bios.models: must be a mapping of server models"),
    ({"models": {DELL: "PerfOptimized"}}, 'gpufabric_platform_bios.models["PowerEdge XE9680"]: must be a mapping of '
                                          "BIOS attribute names to values"),
    ({"models": {DELL: {"SysProfile": ["PerfOptimized"]}}}, "BIOS attribute SysProfile must be a string, a whole "
                                                            "number or true/false, not a list"),
])
def test_bad_specs(spec, words):
    problems = bios.plan(spec, HOST, DELL, factory(DELL))["problems"]
    assert any(problem.startswith(HOST + ": ") and words in problem for problem in problems), problems


# ---------------------------------------------------------------- the DGX H100 (AMI BMC): its own attribute names

def test_a_factory_dgx_gets_its_set_with_its_own_names():
    result = plan_of(DGX, sriov=True, iommu=True)
    assert result["problems"] == []
    assert result["set"] == {"PwrPerfProfile": "MaxPerformance", "PackageCState": "C0/C1 state",
                             "PCIeASPMSupport": "Disabled", "SRIOVSupport": "Enabled", "IntelVTForDirectedIO": "Enabled"}
    assert result["apply"] == "reboot" and result["create_job"] is False and result["pending_reset"] is True


def test_a_dgx_refuses_the_dell_and_hpe_names_and_values():
    result = plan_of(DGX, overrides={"PciSlot1Aspm": "Disabled", "PCIeASPMSupport": "L1"})
    assert result["set"] == {}
    assert result["problems"] == [
        '%s: gpufabric_platform_bios_overrides.PCIeASPMSupport: "L1" is not an allowed value of BIOS attribute '
        "PCIeASPMSupport on this BIOS (DGX H100) (allowed: Disabled, L1 Only, Auto)" % HOST,
        "%s: gpufabric_platform_bios_overrides.PciSlot1Aspm: BIOS attribute PciSlot1Aspm is unknown to this BIOS "
        "(DGX H100); it has 9 attributes: HyperThreading, IntelVTForDirectedIO, PCIeASPMSupport, PackageCState, "
        "ProcessorC6Report, PwrPerfProfile, SRIOVSupport, SetupPromptTimeout and 1 more" % HOST]


# ---------------------------------------------------------------- how the BIOS applies: a reboot, or a Dell's job

@pytest.mark.parametrize("manufacturer, apply", [
    ("Dell Inc.", "job"), ("Dell", "job"), (" DELL EMC ", "job"), ("HPE", "reboot"), ("NVIDIA", "reboot"),
    ("AMI", "reboot"), ("Dellish", "reboot"), ("Dell\nInc.", "reboot"), (None, "reboot"), (["Dell"], "reboot")])
def test_the_vendor_decides_how_pending_settings_are_applied(manufacturer, apply):
    assert bios.apply_of(manufacturer) == apply
    assert plan_of(manufacturer=manufacturer)["apply"] == apply


def _job(state="Scheduled", job_type="BIOSConfiguration", job_id="JID_000000000001"):
    return {"Id": job_id, "JobType": job_type, "JobState": state}


def test_a_dell_without_a_job_needs_one_after_the_write():
    result = plan_of(manufacturer="Dell Inc.", jobs=[])
    assert result["set"] and result["apply"] == "job" and result["create_job"] is True and result["jobs"] == []
    assert result["summary"][-1].startswith("BIOS configuration job: none scheduled; one is created")


def test_a_dell_with_settings_pending_and_no_job_needs_one_though_nothing_is_set():
    """Staged by another tool (or a PATCH without an apply time): an iDRAC would reset and apply nothing."""
    staged = {"SysProfile": "PerfOptimized", "ProcCStates": "Disabled", "ProcC1E": "Disabled"}
    result = plan_of(manufacturer="Dell Inc.", pending=staged,
                     jobs=[_job("Completed"), _job("Scheduled", job_type="RAIDConfiguration", job_id="JID_2")])
    assert result["set"] == {} and result["create_job"] is True and result["problems"] == []
    again = plan_of(manufacturer="Dell Inc.", pending=staged, jobs=[_job()])
    assert again["create_job"] is False and again["jobs"] == ["JID_000000000001"] and again["problems"] == []
    assert again["summary"][-1] == ("BIOS configuration job JID_000000000001 scheduled: the next reset applies the "
                                    "pending settings")


def test_nothing_pending_needs_no_job():
    current = dict(factory(DELL), SysProfile="PerfOptimized", ProcCStates="Disabled", ProcC1E="Disabled")
    result = plan_of(manufacturer="Dell Inc.", current=current, jobs=[])
    assert result["set"] == {} and result["pending"] == {} and result["create_job"] is False


def test_a_change_while_a_dell_job_is_scheduled_is_a_problem_naming_the_job():
    result = plan_of(manufacturer="Dell Inc.", jobs=[_job("Running")])
    assert result["set"] == {} and result["create_job"] is False
    assert result["problems"] == [
        '%s: Jobs: BIOS attributes ProcC1E, ProcCStates, SysProfile must change, but BIOS configuration job '
        'JID_000000000001 is scheduled and a "Dell Inc." BMC takes no new BIOS settings until it has run: reset the '
        "server (the job applies what is pending) or delete the job, then run again" % HOST]


def test_jobs_do_not_matter_where_a_reboot_applies():
    result = plan_of(HPE, manufacturer="HPE", jobs=[_job()])
    assert result["apply"] == "reboot" and result["jobs"] == [] and result["create_job"] is False
    assert result["set"] and result["problems"] == []


def test_bad_job_queues():
    assert plan_of(manufacturer="Dell", jobs="JID_1")["problems"] == [
        '%s: Jobs: the BMC\'s job queue must be a list of jobs, not the string "JID_1"' % HOST]
    assert plan_of(manufacturer="Dell", jobs=[5])["problems"] == [
        "%s: Jobs[0]: a job must be a mapping (the BMC's job resource), not the number 5" % HOST]


def test_bad_bmc_answers():
    result = bios.plan(SPEC, HOST, DELL, ["SysProfile"], pending="none")
    assert result["problems"][:2] == [
        "%s: Bios: the BMC's current BIOS attributes must be a mapping, not a list" % HOST,
        "%s: Bios/Settings: the BMC's pending BIOS attributes must be a mapping, not the string \"none\"" % HOST]


# ---------------------------------------------------------------- hypothesis

_scalar = st.one_of(st.none(), st.booleans(), st.integers(min_value=-2 ** 70, max_value=2 ** 70),
                    st.floats(allow_nan=True), st.text(max_size=12))
_names = st.sampled_from(["SysProfile", "ProcCStates", "Sriov", "AcPwrRcvryUserDelay", "SystemModelName", "", "x"])
_keys = st.one_of(_names, st.text(max_size=6))
_json = st.recursive(_scalar, lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_keys, inner, max_size=4)),
                     max_leaves=12)
_attr_sets = st.one_of(_json, st.dictionaries(_names, _scalar, max_size=5))
_registries = st.one_of(_json, st.sampled_from([registry(DELL), registry(HPE), registry(DGX)]),
                        st.builds(lambda attrs: {"RegistryEntries": {"Attributes": attrs}}, _json))

_model_names = st.one_of(st.sampled_from([DELL, HPE, DGX]), st.text(max_size=6))
_specs = st.one_of(_json, st.fixed_dictionaries(
    {"models": st.one_of(_json, st.dictionaries(_model_names, _attr_sets, max_size=3))},
    optional={"default": _attr_sets}))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=_specs,
       model=st.one_of(_scalar, st.sampled_from([DELL, HPE, DGX])),
       current=st.one_of(_json, st.sampled_from([factory(DELL), factory(HPE), factory(DGX)])), pending=st.one_of(_json, _attr_sets),
       reg=_registries, sriov=_scalar, iommu=_scalar, overrides=_attr_sets,
       manufacturer=st.one_of(_scalar, st.sampled_from(["Dell Inc.", "HPE", "NVIDIA"])),
       jobs=st.one_of(_json, st.lists(st.fixed_dictionaries({"Id": _scalar, "JobType": st.sampled_from(
           ["BIOSConfiguration", "RAIDConfiguration"]), "JobState": st.sampled_from(["Scheduled", "Completed"])}),
           max_size=3)))
def test_any_input_gives_a_plan_never_a_traceback(spec, model, current, pending, reg, sriov, iommu, overrides,
                                                  manufacturer, jobs):
    result = bios.plan(spec, HOST, model, current, pending=pending, registry=reg, sriov=sriov, iommu=iommu,
                       overrides=overrides, manufacturer=manufacturer, jobs=jobs)
    json.dumps(result)
    assert all(isinstance(problem, str) and problem.startswith(HOST + ": ") for problem in result["problems"])
    assert result["pending_reset"] is bool(result["pending"])
    if result["problems"]:
        assert result["set"] == {} and result["create_job"] is False
    assert result["apply"] in ("job", "reboot")
    if result["create_job"]:
        assert result["apply"] == "job" and result["pending"] and result["jobs"] == []
    if isinstance(current, dict):
        assert all(name in current and current[name] != value for name, value in result["set"].items())


def _valid_case(model):
    table = {e["name"]: e for e in MODELS[model]["attributes"] if not e.get("read_only")}

    def value(name):
        e = table[name]
        if e["type"] == "Enumeration":
            return st.sampled_from(e["values"])
        return st.integers(min_value=e["lower"], max_value=e["upper"])

    def attrs(min_size=0):
        return st.lists(st.sampled_from(sorted(table)), unique=True, min_size=min_size).flatmap(
            lambda names: st.fixed_dictionaries({name: value(name) for name in names}))
    return st.tuples(attrs(len(table)), attrs(), attrs(), attrs())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model=st.sampled_from([DELL, HPE, DGX]), data=st.data())
def test_a_valid_plan_applied_by_a_reset_leaves_every_wanted_attribute_current(model, data):
    current, pending, wanted, overrides = data.draw(_valid_case(model))
    current = dict(factory(model), **current)
    pending = {name: value for name, value in pending.items() if value != current[name] or name in wanted}
    result = bios.plan({"models": {model: wanted}}, HOST, model, current, pending=pending, registry=registry(model),
                       overrides=overrides)
    stuck = {name for name, value in dict(wanted, **overrides).items()
             if value == current[name] and pending.get(name, value) != value}
    if stuck:  # wanted = current but another value pending: the one case the role refuses
        assert result["set"] == {} and len(result["problems"]) == len(stuck)
        return
    assert result["problems"] == []
    after_patch = dict(pending, **result["set"])  # what the BMC holds after redfish_config's PATCH
    after_reset = dict(current, **after_patch)
    assert all(after_reset[name] == value for name, value in result["wanted"].items())
    assert result["pending_reset"] is any(after_reset[name] != current[name] for name in after_patch)
    second = bios.plan({"models": {model: wanted}}, HOST, model, current, pending=after_patch, registry=registry(model),
                       overrides=overrides)
    assert second["set"] == {} and second["pending"] == result["pending"]


@pytest.mark.parametrize("kind, shown", [(["Enumeration"], "a list"), ({"a": 1}, "a mapping"), (None, "nothing (null)"),
                                         (5, "the number 5"), ("Enum", '"Enum"'), ("enumeration", '"enumeration"')])
def test_a_registry_entry_whose_type_is_not_a_known_name_fails_closed(kind, shown):
    """``Type: [..]`` in a BMC's registry was looked up in a dict: TypeError (unhashable) from a filter documented as
    never failing; then it was read as no registry type (the current value's kind decided), so a registry the
    collection does not understand checked nothing. Now each attribute it names is a problem (Redfish's
    AttributeRegistry types: Enumeration, String, Integer, Boolean, Password) and nothing is set."""
    reg = registry(DELL)
    for item in reg["RegistryEntries"]["Attributes"]:
        item["Type"] = kind
    result = bios.plan(copy.deepcopy(SPEC), HOST, DELL, factory(DELL), registry=reg)
    assert result["set"] == {}
    assert [p.split(": ")[1].rsplit(".", 1)[-1] for p in result["problems"]] == ["ProcC1E", "ProcCStates", "SysProfile"]
    assert result["problems"][0].endswith(
        "BIOS attribute ProcC1E has Type %s in this BIOS's attribute registry (PowerEdge XE9680): not one of Boolean, "
        "Enumeration, Integer, Password, String, so the value cannot be checked against it" % shown)
    # without a registry, the current value's kind decides, as before
    assert plan_of(with_registry=False)["set"] == {
        "SysProfile": "PerfOptimized", "ProcCStates": "Disabled", "ProcC1E": "Disabled"}
