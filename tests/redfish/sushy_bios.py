# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""sushy-emulator (sushy-tools) with BIOS attributes that stay pending until the server resets.

Run as ``python sushy_bios.py --config FILE`` (tests/redfish/emulator.py does). Everything except
the BIOS is sushy-tools' own: the service root, the Systems collection, the ComputerSystem, its
Reset action, basic auth (SUSHY_EMULATOR_AUTH_FILE) and TLS. Ours (README.md beside this file):

- ``BiosFakeDriver``, sushy-tools' fake systems driver plus a BIOS per system, its attributes
  taken from bios_models.json by the system's ``model``: a PATCH of Bios/Settings is checked
  against the model's attribute table and stored as pending; GET Bios shows the current values
  until a ComputerSystem.Reset that boots the server applies the pending ones. Power changes
  happen at once (sushy-tools' fake driver delays them by 1-11 s at random).
- The Bios and Bios/Settings views (sushy-tools' show one set of attributes for both), the
  model's attribute registry, a Redfish error naming each refused attribute (HTTP 400), and the
  ``Model``/``Manufacturer`` of each system and the ``Vendor`` of the service root.
- Vendor personas (``apply`` of the model): ``reboot`` (HPE iLO, the DGX's AMI BMC) - the next boot applies
  the pending settings; ``job`` (Dell iDRAC) - the next boot applies them only when a BIOS configuration job
  is scheduled: a PATCH with ``@Redfish.SettingsApplyTime`` creates one, as does a POST of
  ``{"TargetSettingsURI": <Bios/Settings>}`` to the manager's ``Jobs`` (community.general
  ``idrac_redfish_command`` ``CreateBiosConfigJob``); without one a reboot leaves them pending.

sushy-tools picks its systems driver from a fixed list (libvirt, nova, ironic, fake); ``main()``
puts ours in the fake one's place before the application first asks for it.
"""

import json
import secrets
import sys
from pathlib import Path

import flask
from sushy_tools import error
from sushy_tools.emulator import api_utils
from sushy_tools.emulator import main as sushy_main
from sushy_tools.emulator.resources.systems import fakedriver

MODELS_FILE = Path(__file__).resolve().with_name("bios_models.json")
# DMTF's Base message registry: the messages a BMC answers a refused property with.
BASE = "Base.1.8"
UNKNOWN = "The property %s is not in the list of valid properties for the resource."
MALFORMED = "The request body submitted was malformed JSON and could not be parsed by the receiving service."
APPLY_TIMES = ("OnReset",)
PATCH_KEYS = ("Attributes", "@Redfish.SettingsApplyTime")
# ComputerSystem.Reset types and what they do to the server: boot it (pending BIOS settings are applied),
# power it on (boots only when it was off), power it off (pending settings wait).
BOOT = ("ForceRestart", "GracefulRestart", "PowerCycle")
POWER_ON = ("On", "ForceOn", "PushPowerButton")
POWER_OFF = ("ForceOff", "GracefulShutdown")
# How a vendor's BIOS applies pending settings (a model's ``apply``): at the next boot, or at the next boot only
# when a BIOS configuration job is scheduled (an iDRAC).
APPLY_REBOOT = "reboot"
APPLY_JOB = "job"
JOB_TYPE = "BIOSConfiguration"
JOB_SCHEDULED = "Scheduled"
JOB_COMPLETED = "Completed"
# iDRAC's messages (README.md: which are a real iDRAC's and which are ours, under the registry name OURS).
OURS = "GpufabricEmulator.1.0"
COMMITTED = "Pending configuration values are already committed, unable to perform another set operation."
JOB_EXISTS = "A BIOS configuration job %s is already scheduled for %s."
NO_PENDING = "There are no pending BIOS settings to apply: a configuration job needs pending settings."
BAD_TARGET = "The value %s for the property TargetSettingsURI is not in the list of acceptable values."


def load_models(path=MODELS_FILE):
    """Model name -> its BIOS (bios_models.json without the comment)."""
    return {name: spec for name, spec in json.loads(Path(path).read_text()).items() if not name.startswith("_")}


def _message(message_id, args, text, registry=BASE):
    return {"@odata.type": "#Message.v1_1_1.Message", "MessageId": "%s.%s" % (registry, message_id),
            "Message": text, "MessageArgs": [str(arg) for arg in args], "MessageSeverity": "Warning",
            "Severity": "Warning"}


def _shown(value):
    return "'%s'" % (value if isinstance(value, str) else json.dumps(value))


def refusals(spec, attributes):
    """The Redfish messages refusing ``attributes`` (a PATCH's ``Attributes``) for a BIOS ``spec``; [] accepts."""
    if not isinstance(attributes, dict):
        return [_message("PropertyValueTypeError", [_shown(attributes), "Attributes"],
                         "The value %s for the property Attributes is of a different type than the property can accept."
                         % _shown(attributes))]
    table = {entry["name"]: entry for entry in spec["attributes"]}
    out = []
    for name, value in attributes.items():
        entry = table.get(name)
        kind = entry and entry["type"]
        if entry is None:
            out.append(_message("PropertyUnknown", [name], UNKNOWN % name))
        elif entry.get("read_only"):
            out.append(_message("PropertyNotWritable", [name],
                                "The property %s is a read only property and cannot be assigned a value." % name))
        elif (kind in ("Enumeration", "String") and not isinstance(value, str)) or (
                kind == "Integer" and (isinstance(value, bool) or not isinstance(value, int))):
            out.append(_message("PropertyValueTypeError", [_shown(value), name],
                                "The value %s for the property %s is of a different type than the property can accept."
                                % (_shown(value), name)))
        elif kind == "Enumeration" and value not in entry["values"]:
            out.append(_message("PropertyValueNotInList", [_shown(value), name],
                                "The value %s for the property %s is not in the list of acceptable values."
                                % (_shown(value), name)))
        elif kind == "Integer" and not entry.get("lower", value) <= value <= entry.get("upper", value):
            out.append(_message("PropertyValueOutOfRange", [_shown(value), name],
                                "The value %s for the property %s is not in the supported range of acceptable values."
                                % (_shown(value), name)))
    return out


class BiosRejected(error.FishyError):
    """A request the BIOS refuses; ``messages`` has one Redfish message per refused property (HTTP 400)."""

    def __init__(self, messages):
        super().__init__(" ".join(message["Message"] for message in messages), code=400)
        self.messages = messages


class BiosFakeDriver(fakedriver.FakeDriver):
    """sushy-tools' fake driver plus, per system, ``model`` (a key of bios_models.json), ``bios`` (current
    attributes) and ``bios_pending`` (applied by the next boot). A system of the configuration may set
    ``bios_attributes``: the values it starts with instead of the model's."""

    models = load_models()

    def __init__(self):
        super().__init__()
        for uuid in list(self._systems):
            system = self._systems[uuid]
            if "bios" in system:  # kept in the state directory from an earlier run
                continue
            spec = self.spec(system)
            bios = {entry["name"]: entry["value"] for entry in spec["attributes"]}
            bios.update(system.get("bios_attributes") or {})
            self._update(system, bios=bios, bios_pending={}, bios_jobs=[])

    def spec(self, system):
        if isinstance(system, str):
            system = self._get(system)
        try:
            return self.models[system.get("model")]
        except KeyError:
            raise error.ConfigInvalid("system %s: model %r is not one of %s (%s)" % (
                system.get("name"), system.get("model"), ", ".join(sorted(self.models)), MODELS_FILE))

    def model(self, identity):
        return self._get(identity)["model"]

    def get_bios(self, identity):
        return dict(self._get(identity)["bios"])

    def get_bios_pending(self, identity):
        return dict(self._get(identity)["bios_pending"])

    def jobs(self, identity):
        return [dict(job) for job in self._get(identity).get("bios_jobs", [])]

    def scheduled_job(self, identity):
        """The BIOS configuration job the next boot runs (an iDRAC), or None."""
        return next((job for job in self.jobs(identity) if job["JobState"] == JOB_SCHEDULED), None)

    def set_bios(self, identity, attributes, apply_time=None):
        """Stage ``attributes``; with ``apply_time`` an iDRAC also schedules a BIOS configuration job (its Id returned)."""
        system = self._get(identity)
        problems = refusals(self.spec(system), attributes)
        if problems:
            raise BiosRejected(problems)
        job_persona = self.spec(system).get("apply") == APPLY_JOB
        if job_persona and self.scheduled_job(identity):
            raise BiosRejected([_message("SYS011", [], COMMITTED, registry="IDRAC.2.9")])
        pending = dict(system["bios_pending"])
        for name, value in attributes.items():
            if value == system["bios"][name]:
                pending.pop(name, None)  # back to the current value: nothing left to apply
            else:
                pending[name] = value
        self._update(system, bios_pending=pending)
        if job_persona and apply_time and pending:
            return self._new_job(system)
        return None

    def create_job(self, identity, target):
        """POST Jobs {"TargetSettingsURI": ...} (an iDRAC): schedule the BIOS configuration job; its Id."""
        system = self._get(identity)
        if self.spec(system).get("apply") != APPLY_JOB:
            raise error.NotFound("this BMC has no configuration jobs")
        if target != _bios_uri(identity) + "/Settings":
            raise BiosRejected([_message("PropertyValueNotInList", [_shown(target), "TargetSettingsURI"],
                                         BAD_TARGET % _shown(target))])
        job = self.scheduled_job(identity)
        if job:
            raise BiosRejected([_message("JobExists", [job["Id"]], JOB_EXISTS % (job["Id"], "BIOS.Setup.1-1"),
                                         registry=OURS)])
        if not system["bios_pending"]:
            raise BiosRejected([_message("NoPendingSettings", [], NO_PENDING, registry=OURS)])
        return self._new_job(system)

    def _new_job(self, system):
        job_id = "JID_%012d" % secrets.randbelow(10 ** 12)
        job = {"Id": job_id, "Name": "Configure: BIOS.Setup.1-1", "JobType": JOB_TYPE, "JobState": JOB_SCHEDULED,
               "Message": "Task successfully scheduled.", "MessageId": "IDRAC.2.9.JCP001", "PercentComplete": 0,
               "TargetSettingsURI": None}
        self._update(system, bios_jobs=list(system.get("bios_jobs", [])) + [job])
        return job_id

    def reset_bios(self, identity):
        """Bios.ResetBios: the factory values, applied by the next boot like any setting."""
        system = self._get(identity)
        defaults = {entry["name"]: entry["value"] for entry in self.spec(system)["attributes"]}
        self._update(system, bios_pending={name: value for name, value in defaults.items()
                                           if system["bios"][name] != value})

    def set_power_state(self, identity, state):
        system = self._get(identity)
        if state == "Nmi":
            return
        if state in POWER_OFF:
            power, boots = "Off", False
        elif state in POWER_ON:
            power, boots = "On", system["power_state"] != "On"
        elif state in BOOT:
            power, boots = "On", True
        else:
            raise error.BadRequest("ResetType %s is not one of %s" % (state, ", ".join(POWER_ON + BOOT + POWER_OFF)))
        changes = {"power_state": power}
        job = self.scheduled_job(identity) if self.spec(system).get("apply") == APPLY_JOB else None
        if boots and (job or self.spec(system).get("apply") != APPLY_JOB):
            # an iDRAC without a scheduled BIOS configuration job boots with the settings still pending
            changes["bios"] = dict(system["bios"], **system["bios_pending"])
            changes["bios_pending"] = {}
        if boots and job:
            changes["bios_jobs"] = [dict(other, JobState=JOB_COMPLETED, PercentComplete=100,
                                         Message="Job completed successfully.", MessageId="IDRAC.2.9.PR19")
                                    if other["Id"] == job["Id"] else other for other in system["bios_jobs"]]
        self._update(system, **changes)


# ---------------------------------------------------------------- views (the BIOS resources of a system)

def _systems():
    return flask.current_app.systems


def _bios_uri(identity):
    return "/redfish/v1/Systems/%s/BIOS" % identity


@api_utils.ensure_instance_access
@api_utils.returns_json
def bios(identity):
    spec = _systems().spec(identity)
    return json.dumps({
        "@odata.type": "#Bios.v1_2_0.Bios", "@odata.id": _bios_uri(identity), "Id": "BIOS",
        "Name": "BIOS Configuration Current Settings", "AttributeRegistry": spec["registry"],
        "Attributes": _systems().get_bios(identity),
        "@Redfish.Settings": {"@odata.type": "#Settings.v1_3_5.Settings",
                              "SettingsObject": {"@odata.id": _bios_uri(identity) + "/Settings"},
                              "SupportedApplyTimes": list(APPLY_TIMES)},
        "Actions": {"#Bios.ResetBios": {"target": _bios_uri(identity) + "/Actions/Bios.ResetBios"}},
    }, indent=2)


@api_utils.ensure_instance_access
@api_utils.returns_json
def bios_settings(identity):
    systems = _systems()
    spec = systems.spec(identity)
    if flask.request.method == "PATCH":
        body = flask.request.get_json(silent=True)
        if not isinstance(body, dict):
            raise BiosRejected([_message("MalformedJSON", [], MALFORMED)])
        unknown = [_message("PropertyUnknown", [key], UNKNOWN % key) for key in body if key not in PATCH_KEYS]
        apply_time = (body.get("@Redfish.SettingsApplyTime") or {}).get("ApplyTime", APPLY_TIMES[0])
        if apply_time not in APPLY_TIMES:
            unknown.append(_message("PropertyValueNotInList", [_shown(apply_time), "ApplyTime"],
                                    "The value %s for the property ApplyTime is not in the list of acceptable values."
                                    % _shown(apply_time)))
        if unknown:
            raise BiosRejected(unknown)
        job_id = systems.set_bios(identity, body.get("Attributes"), body.get("@Redfish.SettingsApplyTime"))
        flask.current_app.logger.info("System %s: BIOS attributes %s pending%s", identity, body.get("Attributes"),
                                      ", job %s" % job_id if job_id else "")
        if job_id:  # an iDRAC answers 202 with the job it scheduled
            return "", 202, {"Location": _jobs_uri(identity) + "/" + job_id}
        return "", 204
    pending = systems.get_bios_pending(identity)
    attributes = pending if spec["settings"] == "changed" else dict(systems.get_bios(identity), **pending)
    return json.dumps({
        "@odata.type": "#Bios.v1_2_0.Bios", "@odata.id": _bios_uri(identity) + "/Settings", "Id": "Settings",
        "Name": "BIOS Configuration Pending Settings", "AttributeRegistry": spec["registry"], "Attributes": attributes,
    }, indent=2)


def _jobs_uri(identity):
    return "/redfish/v1/Managers/%s/Jobs" % identity


def _job_body(identity, job):
    return dict(job, **{"@odata.type": "#DellJob.v1_5_0.DellJob", "@odata.id": _jobs_uri(identity) + "/" + job["Id"]})


def _manager_system(identity):
    """The system a manager manages (sushy-tools: one manager per system, the same UUID)."""
    return flask.current_app.managers.get_manager(identity)["UUID"]


@api_utils.returns_json
def jobs_resource(identity):
    """A manager's Jobs (an iDRAC): GET lists them (``$expand``: each in full), POST schedules a BIOS configuration
    job the way community.general ``idrac_redfish_command`` ``CreateBiosConfigJob`` asks for one."""
    system = _manager_system(identity)
    systems = _systems()
    if systems.spec(system).get("apply") != APPLY_JOB:
        raise error.NotFound("this BMC has no configuration jobs")
    if flask.request.method == "POST":
        body = flask.request.get_json(silent=True)
        if not isinstance(body, dict):
            raise BiosRejected([_message("MalformedJSON", [], MALFORMED)])
        unknown = [_message("PropertyUnknown", [key], UNKNOWN % key) for key in body if key != "TargetSettingsURI"]
        if unknown:
            raise BiosRejected(unknown)
        job_id = systems.create_job(system, body.get("TargetSettingsURI"))
        flask.current_app.logger.info("System %s: BIOS configuration job %s scheduled", system, job_id)
        return "", 200, {"Location": _jobs_uri(identity) + "/" + job_id}
    expand = "$expand" in flask.request.args
    members = [_job_body(identity, job) if expand else {"@odata.id": _jobs_uri(identity) + "/" + job["Id"]}
               for job in systems.jobs(system)]
    return json.dumps({"@odata.type": "#JobCollection.JobCollection", "@odata.id": _jobs_uri(identity),
                       "Name": "JobQueue", "Members": members, "Members@odata.count": len(members)}, indent=2)


@api_utils.returns_json
def job_resource(identity, job_id):
    system = _manager_system(identity)
    for one in _systems().jobs(system):
        if one["Id"] == job_id:
            return json.dumps(_job_body(identity, one), indent=2)
    raise error.NotFound("no job %s" % job_id)


def _spec_of_registry(registry):
    for model, spec in BiosFakeDriver.models.items():
        if spec["registry"] == registry:
            return model, spec
    raise error.NotFound("no attribute registry %s" % registry)


@api_utils.returns_json
def registry_file(registry):
    _spec_of_registry(registry)
    uri = "/redfish/v1/Registries/%s" % registry
    return json.dumps({"@odata.type": "#MessageRegistryFile.v1_1_0.MessageRegistryFile", "@odata.id": uri,
                       "Id": registry, "Name": registry, "Registry": registry, "Languages": ["en"],
                       "Location": [{"Language": "en", "Uri": uri + "/Registry"}]}, indent=2)


def _registry_entry(entry):
    out = {"AttributeName": entry["name"], "DisplayName": entry["name"], "Type": entry["type"],
           "ReadOnly": bool(entry.get("read_only")), "ResetRequired": True, "Immutable": False, "Hidden": False}
    if entry["type"] == "Enumeration":
        out["Value"] = [{"ValueName": value, "ValueDisplayName": value} for value in entry["values"]]
    if "lower" in entry:
        out["LowerBound"] = entry["lower"]
    if "upper" in entry:
        out["UpperBound"] = entry["upper"]
    return out


@api_utils.returns_json
def attribute_registry(registry):
    model, spec = _spec_of_registry(registry)
    return json.dumps({"@odata.type": "#AttributeRegistry.v1_3_0.AttributeRegistry",
                       "@odata.id": "/redfish/v1/Registries/%s/Registry" % registry, "Id": registry, "Name": registry,
                       "Language": "en", "RegistryVersion": "1.0.0", "OwningEntity": spec["vendor"],
                       "SupportedSystems": [{"ProductName": model}],
                       "RegistryEntries": {"Attributes": [_registry_entry(entry) for entry in spec["attributes"]]}},
                      indent=2)


def refused(exc):
    """A Redfish error (HTTP 400) with one message per refused property, the first one's text as ``message``."""
    body = {"error": {"code": exc.messages[0]["MessageId"], "message": exc.messages[0]["Message"],
                      "@Message.ExtendedInfo": exc.messages}}
    return flask.Response(json.dumps(body, indent=2), status=400, content_type="application/json")


def add_identity(response):
    """The real servers' ``Model``/``Manufacturer`` on each system, their BMC's ``Vendor`` on the service root."""
    endpoint = flask.request.endpoint
    if flask.request.method != "GET" or response.status_code != 200:
        return response
    if endpoint not in ("system_resource", "root_resource"):
        return response
    body = json.loads(response.get_data())
    systems = flask.current_app.systems
    if endpoint == "system_resource":
        body.update(Model=systems.model(body["Id"]), Manufacturer=systems.spec(body["Id"])["manufacturer"])
    else:
        vendors = {systems.spec(identity)["vendor"] for identity in systems.systems}
        if len(vendors) == 1:
            body["Vendor"] = vendors.pop()
    response.set_data(json.dumps(body, indent=2))
    return response


def install(app):
    """Our BIOS views, registries, error and identity on sushy-tools' Flask application."""
    app.view_functions["bios"] = bios
    app.view_functions["bios_settings"] = bios_settings
    app.add_url_rule("/redfish/v1/Registries/<registry>", "gpufabric_registry_file", registry_file)
    app.add_url_rule("/redfish/v1/Registries/<registry>/Registry", "gpufabric_attribute_registry", attribute_registry)
    app.add_url_rule("/redfish/v1/Managers/<identity>/Jobs", "gpufabric_jobs", jobs_resource, methods=["GET", "POST"])
    app.add_url_rule("/redfish/v1/Managers/<identity>/Jobs/<job_id>", "gpufabric_job", job_resource)
    app.register_error_handler(BiosRejected, refused)
    app.after_request(add_identity)


def main():
    fakedriver.FakeDriver = BiosFakeDriver
    install(sushy_main.app)
    return sushy_main.main()


if __name__ == "__main__":
    sys.exit(main())
