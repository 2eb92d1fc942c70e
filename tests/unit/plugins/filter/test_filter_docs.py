"""Every filter of the collection documents itself: ``ansible-doc -t filter gpufabric.mlnx.NAME`` shows the
documentation whose ``name`` is NAME (a file with several filters documents each in its own ``NAME.yml``; a
DOCUMENTATION block in the .py would be shown for every filter of the file)."""
import importlib.util
import json
import subprocess

from _ansible import env, tool
from _paths import REPO

FILTER_DIR = REPO / "plugins" / "filter"


def filter_names():
    """Every filter name that a FilterModule of plugins/filter/*.py returns."""
    names = []
    for path in sorted(FILTER_DIR.glob("*.py")):
        spec = importlib.util.spec_from_file_location("gpufabric_filter_" + path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        names.extend(module.FilterModule().filters())
    return sorted(names)


def test_the_collection_has_filters_in_several_files():
    names = filter_names()
    assert {"nv_drift", "nv_assign", "rail_plan", "rail_plan_problems", "markdown_table"} <= set(names)
    assert len(names) == len(set(names))


def test_every_filter_doc_names_that_filter(tmp_path):
    names = filter_names()
    proc = subprocess.run([str(tool("ansible-doc")), "-t", "filter", "--json"] + ["gpufabric.mlnx." + n for n in names],
                          env=env(tmp_path), capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    docs = json.loads(proc.stdout)
    shown = {fqcn.rsplit(".", 1)[-1]: (entry.get("doc") or {}).get("name") for fqcn, entry in docs.items()}
    assert shown == {name: name for name in names}
