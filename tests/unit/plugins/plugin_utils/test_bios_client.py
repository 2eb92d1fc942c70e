"""plugin_utils/_bios.py's Redfish client (the platform_bios and bmc_info actions) against a BMC made of a dict of
answers: only what differs is written (one PATCH, a Dell's apply time and the ETag), check mode only reads, and every
answer it does not recognise fails closed naming the host, the BMC, the URL and what was expected. The role's tests
run the same code against sushy-tools (tests/unit/roles/test_platform_bios.py)."""
import io
import json
import urllib.error

import pytest

from ansible_collections.gpufabric.mlnx.plugins.action.platform_bios import _scrub
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils import _bios

BMC = "bmc.example:8443"
SYS = "/redfish/v1/Systems/1"
SECRET = "s3cret-Pa55"


class Answer:
    def __init__(self, body, headers=None, status=200):
        self._raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.headers = headers or {}
        self._status = status

    def getcode(self):
        return self._status

    def read(self):
        return self._raw


class FakeBmc:
    """``open_url`` of a BMC: GET answers from ``tree``; PATCH/POST recorded, answered by ``writes``."""

    def __init__(self, manufacturer="HPE", current=None, pending=None, jobs=None):
        self.requests = []
        self.tree = {
            "/redfish/v1": {"Systems": {"@odata.id": "/redfish/v1/Systems"}, "Vendor": manufacturer.split()[0]},
            "/redfish/v1/Systems": {"Members": [{"@odata.id": SYS}]},
            SYS: {"Model": "ProLiant XL675d Gen10 Plus", "Manufacturer": manufacturer,
                  "Bios": {"@odata.id": SYS + "/Bios"}},
            SYS + "/Bios": {"Attributes": current or {"WorkloadProfile": "GeneralPowerEfficientCompute",
                                                      "Sriov": "Disabled"},
                            "@Redfish.Settings": {"SettingsObject": {"@odata.id": SYS + "/Bios/Settings"}}},
            SYS + "/Bios/Settings": {"Attributes": pending or {}},
            "/redfish/v1/Managers": {"Members": [{"@odata.id": "/redfish/v1/Managers/1"}]},
            "/redfish/v1/Managers/1/Jobs?$expand=*($levels=1)": {"Members": jobs or []},
        }
        self.etag = '"7"'

    def __call__(self, url, data=None, method="GET", headers=None, **kwargs):
        assert kwargs["url_password"] == SECRET and kwargs["force_basic_auth"] is True
        uri = url[len("https://" + BMC):]
        self.requests.append((method, uri, json.loads(data) if data else None, dict(headers or {})))
        if method == "GET":
            if uri not in self.tree:
                raise urllib.error.HTTPError(url, 404, "Not Found", {}, io.BytesIO(b"{}"))
            body = self.tree[uri]
            return Answer(body, {"ETag": self.etag} if uri.endswith("/Settings") else {})
        if method == "PATCH":
            self.tree[uri]["Attributes"].update(json.loads(data)["Attributes"])
            return Answer(b"", status=204)
        return Answer(b"", {"Location": "/redfish/v1/Managers/1/Jobs/JID_123456789012"}, 202)

    def writes(self):
        return [(m, u, b, h) for m, u, b, h in self.requests if m != "GET"]


def client(bmc):
    return _bios.Redfish(BMC, "admin", SECRET, open_url=bmc)


SPEC = {"models": {"ProLiant XL675d Gen10 Plus": {"WorkloadProfile": "HighPerformanceCompute(HPC)"}}}


def run(bmc, check_mode=False, **params):
    return _bios.converge(client(bmc), dict({"bios": SPEC, "registry": False, "sriov": True}, **params),
                          host="srv-r01-02", check_mode=check_mode)


def test_check_mode_reads_only_and_predicts_the_write():
    bmc = FakeBmc()
    done = run(bmc, check_mode=True)
    assert done["changed"] and bmc.writes() == [] and done["written"] == {}
    assert done["facts"]["gpufabric_platform_bios_pending"] == {"Sriov": "Enabled",
                                                                "WorkloadProfile": "HighPerformanceCompute(HPC)"}
    assert done["diff"] == {
        "before": {"attributes": {"Sriov": "Disabled", "WorkloadProfile": "GeneralPowerEfficientCompute"},
                   "pending": {}, "jobs": []},
        "after": {"attributes": {"Sriov": "Enabled", "WorkloadProfile": "HighPerformanceCompute(HPC)"},
                  "pending": {"Sriov": "Enabled", "WorkloadProfile": "HighPerformanceCompute(HPC)"}, "jobs": []}}


def test_one_patch_of_what_differs_with_the_etag_then_nothing():
    bmc = FakeBmc()
    done = run(bmc)
    [(method, uri, body, headers)] = bmc.writes()
    assert (method, uri, body) == ("PATCH", SYS + "/Bios/Settings", {
        "Attributes": {"Sriov": "Enabled", "WorkloadProfile": "HighPerformanceCompute(HPC)"}})
    assert headers["If-Match"] == '"7"' and headers["Content-Type"] == "application/json"
    assert done["changed"] and done["facts"]["gpufabric_platform_bios_pending_reset"] is True
    assert done["facts"]["gpufabric_platform_bios_apply"] == "reboot"
    again = run(bmc)
    assert not again["changed"] and len(bmc.writes()) == 1
    assert again["facts"]["gpufabric_platform_bios_pending_reset"] is True


def test_a_dell_write_asks_for_the_job_and_a_job_is_created_when_settings_wait_without_one():
    bmc = FakeBmc(manufacturer="Dell Inc.", current={"SysProfile": "PerfPerWattOptimizedDapc",
                                                     "SriovGlobalEnable": "Enabled"})
    spec = {"models": {"ProLiant XL675d Gen10 Plus": {"SysProfile": "PerfOptimized"}}}
    done = run(bmc, bios=spec)
    patch, post = bmc.writes()   # the fake schedules no job on the PATCH: the action creates it
    assert patch[2]["@Redfish.SettingsApplyTime"] == {"ApplyTime": "OnReset"}
    assert post[:3] == ("POST", "/redfish/v1/Managers/1/Jobs", {"TargetSettingsURI": SYS + "/Bios/Settings"})
    assert done["job_created"] == "JID_123456789012"
    assert done["facts"]["gpufabric_platform_bios_jobs"] == ["JID_123456789012"]
    assert done["facts"]["gpufabric_platform_bios_apply"] == "job"


@pytest.mark.parametrize("change, message", [
    (lambda t: t.__setitem__("/redfish/v1/Systems", b"<html>login</html>"),
     "srv-r01-02: BMC bmc.example:8443: GET https://bmc.example:8443/redfish/v1/Systems answered no JSON object "
     "(expected the ComputerSystem collection)"),
    (lambda t: t.__setitem__("/redfish/v1/Systems", {"Members": "all"}),
     "srv-r01-02: BMC bmc.example:8443: https://bmc.example:8443/redfish/v1/Systems answered no Members list "
     "(expected the ComputerSystems)"),
    (lambda t: t["/redfish/v1/Systems"]["Members"].append({"@odata.id": "/redfish/v1/Systems/2"}),
     "srv-r01-02: BMC bmc.example:8443: it lists 2 ComputerSystems (/redfish/v1/Systems/1, /redfish/v1/Systems/2); "
     "this role sets the BIOS of a BMC with exactly one"),
    (lambda t: t[SYS].pop("Bios"), "srv-r01-02: BMC bmc.example:8443: the system %s has no Bios resource" % SYS),
    (lambda t: t[SYS + "/Bios"].pop("Attributes"),
     "srv-r01-02: BMC bmc.example:8443: it tells no BIOS attributes of %s (GET %s/Bios has no Attributes mapping)"
     % (SYS, SYS)),
    (lambda t: t[SYS + "/Bios"].pop("@Redfish.Settings"),
     "srv-r01-02: BMC bmc.example:8443: its Bios resource %s/Bios has no @Redfish.Settings SettingsObject: its BIOS "
     "settings cannot be changed" % SYS),
    (lambda t: t[SYS + "/Bios/Settings"].__setitem__("Attributes", ["Sriov"]),
     "srv-r01-02: BMC bmc.example:8443: GET https://bmc.example:8443%s/Bios/Settings: its Attributes are not a "
     "mapping of BIOS attribute names to values" % SYS),
    (lambda t: t.pop(SYS), "srv-r01-02: BMC bmc.example:8443: HTTP Error 404 on GET request to "
                           "'https://bmc.example:8443%s', extended message: 'Not Found'" % SYS),
])
def test_an_answer_it_does_not_recognise_fails_closed_naming_bmc_and_url(change, message):
    bmc = FakeBmc()
    change(bmc.tree)
    with pytest.raises(_bios.BmcError) as err:
        run(bmc)
    assert str(err.value) == message
    assert bmc.writes() == []


def test_a_dell_job_queue_without_job_states_fails_closed():
    bmc = FakeBmc(manufacturer="Dell Inc.", jobs=[{"@odata.id": "/redfish/v1/Managers/1/Jobs/JID_1"}])
    with pytest.raises(_bios.BmcError) as err:
        run(bmc)
    assert str(err.value) == (
        "srv-r01-02: BMC bmc.example:8443 (a Dell: it applies pending BIOS settings only with a BIOS configuration "
        "job): its job queue https://bmc.example:8443/redfish/v1/Managers/1/Jobs?$expand=*($levels=1) lists jobs "
        "without their JobType/JobState (no $expand)")
    assert bmc.writes() == []


def test_a_refused_write_names_the_attributes_and_the_bmcs_every_message():
    bmc = FakeBmc()
    body = {"error": {"@Message.ExtendedInfo": [{"Message": "The value 'X' for Sriov is not allowed."},
                                                {"Message": "Second."}]}}

    def refuse(url, data=None, method="GET", headers=None, **kwargs):
        if method == "PATCH":
            raise urllib.error.HTTPError(url, 400, "Bad Request", {}, io.BytesIO(json.dumps(body).encode()))
        return FakeBmc.__call__(bmc, url, data, method, headers, **kwargs)
    with pytest.raises(_bios.BmcError) as err:
        _bios.converge(_bios.Redfish(BMC, "admin", SECRET, open_url=refuse),
                       {"bios": SPEC, "registry": False, "sriov": True}, host="srv-r01-02")
    assert str(err.value) == (
        "srv-r01-02: BMC bmc.example:8443 refused the BIOS attributes Sriov=Enabled, "
        "WorkloadProfile=HighPerformanceCompute(HPC): HTTP Error 400 on PATCH request to "
        "'https://bmc.example:8443%s/Bios/Settings', extended message: 'The value 'X' for Sriov is not allowed. "
        "Second.'" % SYS)


def test_a_missing_registry_is_a_warning_and_the_bmc_checks_the_values():
    bmc = FakeBmc()
    done = run(bmc, registry=True, check_mode=True)
    assert done["warnings"] == [
        "srv-r01-02: no BIOS attribute registry from BMC bmc.example:8443 (its Bios resource names no "
        "AttributeRegistry): the values are checked by the BMC when they are written"]


def test_the_probe_reads_the_one_system_only():
    bmc = FakeBmc()
    assert _bios.probe(client(bmc), host="srv-r01-02") == {
        "uri": SYS, "model": "ProLiant XL675d Gen10 Plus", "manufacturer": "HPE"}
    assert [uri for _m, uri, _b, _h in bmc.requests] == ["/redfish/v1", "/redfish/v1/Systems", SYS]


def test_the_password_is_masked_wherever_it_would_show():
    assert _scrub({"msg": "x %s y" % SECRET, "l": [SECRET, 1], SECRET: True}, SECRET) == {
        "msg": "x ******** y", "l": ["********", 1], "********": True}
