"""The delivery_findings filter: a thin shell over plugin_utils/_delivery, its docs, and the
delivery_check role run for real by ansible-playbook on a simulated host (mlx_info reading the
simulated tools, the report written, the run failed after it)."""
import csv
import io
import json
import subprocess
import sys

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from _ansible import env, tool
from _paths import REPO
from ansible_collections.gpufabric.mlnx.plugins.filter import delivery_findings as plugin

FILTER = plugin.FilterModule().filters()["delivery_findings"]
MATRIX = yaml.safe_load((REPO / "inventory/example-1250/group_vars/all/matrix.yml").read_text())["gpufabric_matrix"]
CX7, CX7_PN = "MT_0000000838", "MCX75310AAS-NEAT"


def card(address, serial, slot, psid=CX7, fw="28.42.1000"):
    return {"address": address, "card": address[:-2], "function": 0, "psid": psid, "part_number": CX7_PN,
            "serial_number": serial, "fw_version": fw, "fw_running": fw, "physical_slot": slot}


FLEET = {"srv-r01-01": [card("0000:18:00.0", "MT2248X00601", "1"), card("0000:40:00.0", "MT2248X00602", "2",
                                                                        psid="DEL0000000027")]}
ASSETS = "host,slot,part_number,serial\nsrv-r01-01,1,%s,MT2248X00601\nsrv-r01-01,2,%s,MT2248X00602\n" % (
    CX7_PN, CX7_PN)


def test_the_file_registers_its_own_name():
    assert list(plugin.FilterModule().filters()) == ["delivery_findings"]


def test_findings_and_report():
    found = FILTER(FLEET, ASSETS, MATRIX)
    assert [(f["check"], f["address"]) for f in found] == [
        ("unknown_psid", "0000:40:00.0"), ("oem_psid_on_retail_part", "0000:40:00.0")]
    out = FILTER(FLEET, ASSETS, MATRIX, output="report", generated="2026-11-03T10:15:00Z", source="assets.csv")
    assert sorted(out) == ["counts", "csv", "findings", "json", "markdown", "summary"]
    assert out["findings"] == found
    assert out["summary"].startswith("delivery check FAILED: 2 errors, 0 warnings on 1 of 1 hosts")
    assert "matrix 2026.11-a" in out["summary"]
    assert json.loads(out["json"])["generated"] == "2026-11-03T10:15:00Z"
    assert len(list(csv.DictReader(io.StringIO(out["csv"])))) == 2
    # read_csv rows work as well as the CSV text
    rows = list(csv.DictReader(io.StringIO(ASSETS)))
    assert FILTER(FLEET, rows, MATRIX) == found
    assert FILTER(FLEET, None, MATRIX, severities={"unknown_psid": "ignore", "oem_psid_on_retail_part": "warning"}) \
        == [dict(found[1], severity="warning")]


@pytest.mark.parametrize("args, kwargs, words", [
    ((FLEET, "host,slot\nh,1\n", MATRIX), {"source": "/srv/assets.csv"},
     "delivery_findings: /srv/assets.csv line 1: the asset list lacks the columns part_number, serial"),
    ((FLEET, None, dict(MATRIX, name=2026.11)), {}, "delivery_findings: gpufabric_matrix is not consistent"),
    ((FLEET, None, MATRIX), {"severities": {"pcie": "error"}}, '"pcie" is not a check'),
    ((FLEET, None, MATRIX), {"output": "html"}, "output must be one of findings, report, not 'html'"),
    (({"srv-r01-01": "eth0"}, None, MATRIX), {}, "srv-r01-01: devices must be the devices list"),
])
def test_bad_input_is_an_ansible_filter_error(args, kwargs, words):
    with pytest.raises(AnsibleFilterError) as err:
        FILTER(*args, **kwargs)
    assert words in str(err.value)


def test_docs_parse():
    doc = yaml.safe_load(plugin.DOCUMENTATION)
    assert doc["name"] == "delivery_findings" and doc["short_description"]
    assert set(doc["options"]) == {"_input", "assets", "matrix", "severities", "output", "generated", "source"}
    assert all(option["description"] for option in doc["options"].values())
    assert any("gpufabric.mlnx.delivery_findings" in json.dumps(task) for task in yaml.safe_load(plugin.EXAMPLES))
    assert "_value" in yaml.safe_load(plugin.RETURN)


def test_ansible_doc_renders(tmp_path):
    out = subprocess.run([str(tool("ansible-doc")), "-t", "filter", "gpufabric.mlnx.delivery_findings"],
                         env=env(tmp_path), capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert "RETURN VALUES" in out.stdout and "EXAMPLES" in out.stdout and "oem_psid_on_retail_part" in out.stdout


def test_ansible_doc_renders_the_role(tmp_path):
    out = subprocess.run([str(tool("ansible-doc")), "-t", "role", "gpufabric.mlnx.delivery_check"],
                         env=env(tmp_path), capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert "gpufabric_delivery_check_assets" in out.stdout


INVENTORY = """
servers:
  hosts:
    srv-r01-01:
      ansible_connection: local
      ansible_python_interpreter: {python}
    srv-r01-02:
      ansible_connection: local
      # mlx_info cannot run there: the host is reported, not skipped
      ansible_python_interpreter: /nonexistent/python3
"""


@pytest.fixture
def sim_delivery(sim_host, tmp_path):
    """A simulated dgx-h100 srv-r01-01 with counterfeit-looking VPD, an inventory of it and a host
    that cannot be read, an asset list made of its cards, and how to run the playbook."""
    host = sim_host("dgx-h100", hostname="srv-r01-01")
    host.mlxsim("fault", "add", "oem_psid", "--device", "0000:40:00.0", "psid=DEL0000000027")
    host.mlxsim("fault", "add", "vpd_duplicate_serial", "--device", "0000:4f:00.0", "serial=MT2232X00000")
    host.mlxsim("fault", "add", "vpd_duplicate_serial", "--device", "0000:5e:00.0", "serial=MT2232X00000")
    cards = host.cards()
    lines = ["# the integrator's list", "host,slot,part_number,serial"]
    for index, item in enumerate(cards):
        serial = item["vpd"]["SN"] if index not in (2, 3) else "MT2232X0000%d" % index
        lines.append("srv-r01-01,%s,%s,%s" % (item["functions"][0]["pci"], item["part_number"], serial))
    (tmp_path / "assets.csv").write_text("\n".join(lines) + "\n")
    (tmp_path / "hosts.yml").write_text(INVENTORY.format(python=sys.executable))
    (tmp_path / "matrix.yml").write_text(yaml.safe_dump({"gpufabric_matrix": MATRIX}))

    def run(*extra):
        argv = [str(tool("ansible-playbook")), "-i", str(tmp_path / "hosts.yml"),
                "-e", "@%s" % (tmp_path / "matrix.yml"),
                "-e", "gpufabric_delivery_check_assets=%s" % (tmp_path / "assets.csv"),
                "-e", "gpufabric_delivery_check_report_dir=%s" % (tmp_path / "report"),
                str(REPO / "playbooks" / "delivery_check.yml")] + list(extra)
        run_env = env(tmp_path, **host.env)
        return subprocess.run(argv, env=run_env, capture_output=True, text=True, timeout=600, check=False,
                              cwd=str(tmp_path))
    return run, tmp_path


def test_role_writes_the_report_then_fails(sim_delivery):
    run, tmp_path = sim_delivery
    out = run("-e", "gpufabric_delivery_check_max_messages=3")
    text = out.stdout + out.stderr
    assert out.returncode == 2, text
    assert "delivery check FAILED" in text, text
    report = tmp_path / "report"
    md = (report / "delivery.md").read_text()
    doc = json.loads((report / "delivery.json").read_text())
    rows = list(csv.DictReader(io.StringIO((report / "delivery.csv").read_text())))
    got = sorted((f["host"], f["check"], f["address"]) for f in doc["findings"])
    assert got == sorted([
        ("srv-r01-01", "unknown_psid", "0000:40:00.0"), ("srv-r01-01", "oem_psid_on_retail_part", "0000:40:00.0"),
        ("srv-r01-01", "serial_mismatch", "0000:4f:00.0"), ("srv-r01-01", "serial_mismatch", "0000:5e:00.0"),
        ("srv-r01-01", "serial_duplicate", "0000:4f:00.0"), ("srv-r01-01", "serial_duplicate", "0000:5e:00.0"),
        ("srv-r01-02", "host_unread", None),
    ]), got
    assert len(rows) == len(doc["findings"]) == 7
    assert doc["result"] == "failed" and doc["matrix"] == "2026.11-a" and doc["generated"].endswith("Z")
    assert doc["assets"] == str(tmp_path / "assets.csv")
    assert "## Errors (7)" in md and "## Warnings (0)" in md
    assert "| srv-r01-01 | 2 | 0000:40:00.0 | oem_psid_on_retail_part |" in md
    unread = next(f for f in doc["findings"] if f["check"] == "host_unread")
    assert "mlx_info failed" in unread["message"] and "/nonexistent/python3" in unread["message"]
    # each host with errors fails naming its own cards (the first 3 errors) and the report
    assert "srv-r01-01: 6 error(s) on its cards; whole run: delivery check FAILED" in " ".join(text.split()), text
    assert "srv-r01-01 slot 2 (0000:40:00.0): OEM PSID DEL0000000027" in text
    assert "... and 3 more" in text
    # and the host that could not be read fails with its own finding
    assert "srv-r01-02: 1 error(s) on its cards" in text
    assert "srv-r01-02: its NVIDIA devices could not be read (mlx_info failed" in text
    assert "nothing was checked on it" in text
    assert "report: %s/delivery.md" % report in text


def test_role_does_not_fail_when_told_and_checks_bad_assets_first(sim_delivery):
    run, tmp_path = sim_delivery
    out = run("-e", "gpufabric_delivery_check_fail=false", "--check")
    text = out.stdout + out.stderr
    assert out.returncode == 0, text
    assert (tmp_path / "report" / "delivery.md").exists()     # written in check mode too
    # a bad asset list stops the play before any host is read
    (tmp_path / "assets.csv").write_text("host,slot,part_number,serial\nsrv-r01-01,1,%s,\n" % CX7_PN)
    out = run("-e", "gpufabric_delivery_check_report_dir=%s" % (tmp_path / "report2"))
    text = out.stdout + out.stderr
    assert out.returncode == 2, text
    assert "the asset list has 1 bad row: %s" % (tmp_path / "assets.csv") in " ".join(text.split()), text
    assert "line 2: serial is empty" in text
    assert "Read the NVIDIA devices" not in text
    assert not (tmp_path / "report2").exists()
    # and so does a missing one
    out = run("-e", "gpufabric_delivery_check_assets=%s" % (tmp_path / "nope.csv"))
    assert out.returncode == 2 and "is not a file on the controller" in out.stdout + out.stderr
