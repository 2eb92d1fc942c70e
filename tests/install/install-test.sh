#!/usr/bin/env bash
# `make install-test`: README's Install, step by step as a new user takes it - without this repository's Makefile,
# venv or ansible.cfg, and without the network to Galaxy (the `ansible` PyPI bundle's copies of the dependencies
# stand in for it).
# 1. ansible-galaxy collection build: the tarball (README step 2; into tests/output/install, not the clone's root).
# 2. A new venv with ONLY ansible-core and the controller's requirements (requirements.txt - matplotlib is optional
#    and not in it), pinned by constraints.txt, from PyPI (step 1).
# 3. The site directory OUTSIDE the checkout (step 3): the example (inventory/example-1250 + its -files) and its
#    ansible.cfg copied to the site's root as README says; `ansible-config dump --only-changed` proves that file is
#    the configuration in force (its forks, collections_path = the site's collections/).
#    - From PyPI: the development venv's ansible-galaxy (its `ansible` bundle ships the dependencies) installs the
#      tarball into a second site: gpufabric.mlnx alone lands in its collections/, the dependencies found in the
#      bundle.
#    - Air-gapped: `ansible-galaxy collection download -r requirements.yml -p ./collections-offline` where the
#      tarball is (docs/requirements.yml, plus each dependency as the directory Galaxy would serve: the bundle's
#      copy with a galaxy.yml made from its MANIFEST.json), the directory carried into the site, then from inside it
#      `ansible-galaxy collection install --offline -r requirements.yml -p ../collections`: exactly gpufabric.mlnx
#      and its declared dependencies land in the site's collections/, nothing in ~/.ansible/collections.
# 4. From the site directory, its ansible.cfg in force (no ANSIBLE_COLLECTIONS_PATH): README's first command -
#    gpufabric.mlnx.check_inventory with -e gpufabric_preflight_images=false and the example's vault password file -
#    passes on 1,250 hosts; then gpufabric.mlnx.cabling_plan (reports/ of the site); the check refused, before any
#    host is contacted, without the vault secret (naming the leaves' credential), with the leaves' connection file
#    removed (naming the 320 leaves and each missing setting) and with 22 misspelt variables (each refused with the
#    one meant). Nothing may be written inside the installed collections (ansible-galaxy collection verify
#    --offline, and the file list before and after).
# 5. The hand-over report's HTML page rendered by the installed collection in that venv without matplotlib: every
#    plot a note naming matplotlib, no <svg>.
# 6. A first server that lacks lspci (this machine, reached with the local connection, on a PATH without lspci):
#    site.yml --check --tags preflight refuses it with the cause - "lspci not found on PATH: it is provided by
#    pciutils" - not "mlx_info did not run there", before any host changes.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
dev_python=${DEV_PYTHON:-$repo/.venv/bin/python}
out=$repo/tests/output/install
work=$(mktemp -d /tmp/gpufabric-install.XXXXXX)
trap 'rm -rf "$work"' EXIT
start=$SECONDS

say() { echo "install-test: $*"; }
fail() { echo "install-test: FAIL: $*" >&2; exit 1; }

rm -rf "$out"
mkdir -p "$out"

# 1. the tarball
"$(dirname "$dev_python")/ansible-galaxy" collection build --force --output-path "$out" "$repo" >/dev/null
tarball=$(ls "$out"/gpufabric-mlnx-*.tar.gz)
say "built $(basename "$tarball") ($(du -k "$tarball" | cut -f1) kB)"
if tar -tzf "$tarball" | grep -Eq '(^|/)(\.venv|\.collections|tests/output|reports)/'; then
  fail "the tarball carries a development or output directory"
fi

# 2. ansible-core + requirements.txt only
python3 -m venv "$out/venv"
"$out/venv/bin/python" -m pip install --quiet --disable-pip-version-check ansible-core -r requirements.txt \
  -c constraints.txt 2> >(grep -v '^WARNING: Location' >&2)
extra=$("$out/venv/bin/python" -m pip list --format=freeze --disable-pip-version-check \
  | grep -Eiv '^(ansible-core|netaddr|paramiko|bcrypt|pynacl|invoke|jinja2|markupsafe|pyyaml|packaging|cryptography|cffi|pycparser|resolvelib|pip|setuptools)==' || true)
[ -z "$extra" ] || fail "the venv holds more than ansible-core and requirements.txt: $extra"
say "venv: $("$out/venv/bin/python" -m pip list --format=freeze --disable-pip-version-check | grep -Ei '^(ansible-core|netaddr|paramiko)==' | paste -sd' ') (no matplotlib)"

# A user's environment: none of the Makefile's ANSIBLE_* variables, PATH without the development venv, no
# ansible.cfg but the site's (found in the current directory). PYTHONDONTWRITEBYTECODE: Python's own bytecode caches
# (plugins/*/__pycache__) would otherwise be the only files written inside the installed collection; the check
# below is for the collection's writes.
run() {
  env -i PATH="$out/venv/bin:/usr/local/bin:/usr/bin:/bin" HOME="$work/home" LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 \
    ANSIBLE_LOCAL_TEMP="$work/home/tmp" "$@"
}
mkdir -p "$work/home"

# 3. the site directory, outside the checkout, with the example's ansible.cfg at its root (README step 3)
site=$work/site
mkdir -p "$site/inventory"
cp -r inventory/example-1250 inventory/example-1250-files "$site/inventory/"
cp "$site/inventory/example-1250-files/ansible.cfg" "$site/ansible.cfg"
forks=$("$dev_python" -c 'import configparser, sys; c = configparser.ConfigParser(inline_comment_prefixes=("#",)); c.read(sys.argv[1]); print(c.getint("defaults", "forks"))' "$site/ansible.cfg")
(cd "$site" && run ansible-config dump --only-changed) >"$out/ansible-config.txt" 2>&1 \
  || { cat "$out/ansible-config.txt" >&2; fail "ansible-config dump in the site directory"; }
for line in "CONFIG_FILE() = $site/ansible.cfg" "DEFAULT_FORKS($site/ansible.cfg) = $forks" \
            "COLLECTIONS_PATHS($site/ansible.cfg) = ['$site/collections']"; do
  grep -qxF "$line" "$out/ansible-config.txt" || { cat "$out/ansible-config.txt" >&2; fail "not in force in the site: $line"; }
done
say "the site's ansible.cfg is in force: forks $forks, collections_path $site/collections"

# the declared dependencies and theirs (ansible.netcommon needs ansible.utils), each as the bundle ships it
bundle=$("$dev_python" -c 'import ansible_collections, os; print(os.path.dirname(ansible_collections.__file__) if ansible_collections.__file__ else list(ansible_collections.__path__)[0])')
closure=$("$dev_python" - "$bundle" galaxy.yml <<'PY'
import json, os, sys
import yaml
bundle, todo, seen = sys.argv[1], list(yaml.safe_load(open(sys.argv[2]))["dependencies"] or {}), []
while todo:
    name = todo.pop(0)
    if name in seen:
        continue
    seen.append(name)
    manifest = os.path.join(bundle, *name.split("."), "MANIFEST.json")
    if os.path.isfile(manifest):
        todo.extend(json.load(open(manifest))["collection_info"].get("dependencies") or {})
print("\n".join(seen))
PY
)
want=$(printf '%s\n' gpufabric.mlnx $closure | sort | paste -sd' ')
installed_in() {   # the collections installed in a collections directory (ansible-core's own internal ones left out;
                   # run where no ansible.cfg adds its own collections path)
  (cd "$work" && run ansible-galaxy collection list --format json -p "$1" 2>/dev/null) \
    | "$out/venv/bin/python" -c 'import json, sys; print(" ".join(sorted(n for v in json.load(sys.stdin).values() for n in v if n != "ansible.builtin" and not n.startswith("ansible._"))))'
}

# 3a. from PyPI: the `ansible` bundle's venv (the development venv) installs the tarball alone into the site's
#     collections/ - the dependencies are found in the bundle, no Galaxy is asked
mkdir -p "$work/site-pypi"
cp "$site/ansible.cfg" "$work/site-pypi/"
(cd "$work/site-pypi" && env -i PATH="$(dirname "$dev_python"):/usr/bin:/bin" HOME="$work/home-pypi" LANG=C.UTF-8 \
  ansible-galaxy collection install "$tarball" -p ./collections) >"$out/galaxy-install-pypi.log" 2>&1 \
  || { cat "$out/galaxy-install-pypi.log" >&2; fail "ansible-galaxy collection install with the ansible bundle"; }
[ "$(ls "$work/site-pypi/collections/ansible_collections")" = gpufabric ] \
  && [ "$(ls "$work/site-pypi/collections/ansible_collections/gpufabric")" = mlnx ] \
  || fail "with the ansible bundle, more than gpufabric.mlnx landed in the site's collections/: $(ls "$work/site-pypi/collections/ansible_collections")"
for name in $closure; do
  grep -q "'$name:.*' is already installed, skipping" "$out/galaxy-install-pypi.log" \
    || fail "with the ansible bundle, $name was not found in it (see $out/galaxy-install-pypi.log)"
done
say "from PyPI (the ansible bundle): gpufabric.mlnx alone in the site's collections/, $(echo $closure | wc -w) dependencies found in the bundle"

# 3b. air-gapped: download where the tarball is (the dependencies from the directories standing in for Galaxy),
#     carry the directory into the site, install from inside it with --offline into the site's collections/
grep -q "name: ./$(basename "$tarball")\$" docs/requirements.yml \
  || fail "docs/requirements.yml does not name ./$(basename "$tarball") (galaxy.yml's version)"
cp docs/requirements.yml "$out/requirements.yml"
mkdir -p "$out/galaxy"
while read -r name; do
  [ -n "$name" ] || continue
  src="$bundle/${name//.//}"
  [ -f "$src/MANIFEST.json" ] || fail "dependency $name is not in the ansible bundle ($src)"
  served="$out/galaxy/$name"     # what Galaxy serves: the collection built from its galaxy.yml (download builds a dir)
  cp -r "$src" "$served"
  "$dev_python" - "$served" <<'PY'
import json, os, sys
folder = sys.argv[1]
info = json.load(open(os.path.join(folder, "MANIFEST.json")))["collection_info"]
with open(os.path.join(folder, "galaxy.yml"), "w") as handle:   # JSON is YAML
    json.dump({key: value for key, value in info.items() if value not in (None, "", []) or key == "dependencies"}, handle)
for name in ("MANIFEST.json", "FILES.json"):
    os.remove(os.path.join(folder, name))
PY
  printf '  - name: %s\n    type: dir\n' "$served" >>"$out/requirements.yml"
done <<<"$closure"
(cd "$out" && run ansible-galaxy collection download -r requirements.yml -p ./collections-offline) \
  >"$out/galaxy-download.log" 2>&1 || { cat "$out/galaxy-download.log" >&2; fail "ansible-galaxy collection download"; }
mv "$out/collections-offline" "$site/"
(cd "$site/collections-offline" && run ansible-galaxy collection install --offline -r requirements.yml -p ../collections) \
  >"$out/galaxy-install.log" 2>&1 || { cat "$out/galaxy-install.log" >&2; fail "ansible-galaxy collection install --offline"; }
installed=$(installed_in "$site/collections")
say "air-gapped: $(ls "$site/collections-offline" | grep -c '\.tar\.gz$') tarballs downloaded; in the site's collections/: $installed"
[ "$installed" = "$want" ] || fail "installed: $installed; expected exactly: $want"
[ -f "$site/collections/ansible_collections/gpufabric/mlnx/MANIFEST.json" ] || fail "gpufabric.mlnx is not in the site's collections/"
[ ! -e "$work/home/.ansible/collections" ] || fail "something was installed into ~/.ansible/collections"

# 4. from the site directory: its ansible.cfg in force
snapshot() { (cd "$site/collections" && find . -printf '%p %s %T@\n' | sort); }
before=$(snapshot)
cd "$site"
# the example's vault password, as its README publishes it (the leaves' credential is vaulted: without the secret
# the check refuses the leaves before any host is contacted)
sed -n 's/^    \(example-1250-only-not-a-secret\)$/\1/p' inventory/example-1250/README.md > "$work/example-vault-pass"
[ -s "$work/example-vault-pass" ] || fail "inventory/example-1250/README.md no longer shows the example's vault password"
no_host() {   # the check contacted no host: one host in the recap (the play's first, its tasks on the controller)
  grep -Eq '^srv-r01-01 +: ok=[0-9]+ +changed=0 +unreachable=0 ' "$1" && [ "$(grep -Ec '^[^ ]+ +: ok=' "$1")" -eq 1 ] \
    || fail "the check ran on more than the controller (see $1)"
}
# README's first command
run ansible-playbook -i inventory/example-1250 gpufabric.mlnx.check_inventory -e gpufabric_preflight_images=false \
  --vault-password-file "$work/example-vault-pass" \
  >"$out/check_inventory.log" 2>&1 || { tail -40 "$out/check_inventory.log" >&2; fail "gpufabric.mlnx.check_inventory"; }
grep -q '1250 hosts, matrix 2026.11-a, the rail plan: no problem' "$out/check_inventory.log" \
  || fail "check_inventory did not find 1250 hosts without a problem (see $out/check_inventory.log)"
no_host "$out/check_inventory.log"
say "README's first command: $(grep -o '1250 hosts, [^"]*: no problem' "$out/check_inventory.log" | head -1)"
run ansible-playbook -i inventory/example-1250 gpufabric.mlnx.check_inventory -e gpufabric_preflight_images=false \
  >"$out/check_inventory-no-vault.log" 2>&1 && fail "check_inventory passed the example without its vault secret"
grep -q "320 leaves (.*): ansible_password cannot be read on the controller: .*give the vault secret" \
  "$out/check_inventory-no-vault.log" || { tail -20 "$out/check_inventory-no-vault.log" >&2
  fail "check_inventory without the vault secret did not name the leaves' credential"; }
no_host "$out/check_inventory-no-vault.log"
say "check_inventory without the vault secret: refused, naming the 320 leaves' credential"
# the leaves' connection settings removed: each missing one named, for all 320 leaves, before any host
leaf_connection=inventory/example-1250/group_vars/leaves/connection.yml
mv "$leaf_connection" "$work/connection.yml"
run ansible-playbook -i inventory/example-1250 gpufabric.mlnx.check_inventory -e gpufabric_preflight_images=false \
  --vault-password-file "$work/example-vault-pass" >"$out/check_inventory-no-leaf-connection.log" 2>&1 \
  && fail "check_inventory passed the example without the leaves' connection settings"
mv "$work/connection.yml" "$leaf_connection"
"$dev_python" - "$out/check_inventory-no-leaf-connection.log" <<'PY' || fail "the leaves' missing connection settings were not named (see $out/check_inventory-no-leaf-connection.log)"
import sys
log = " ".join(open(sys.argv[1]).read().split())
leaves = "320 leaves (su01-leaf-rail0, su01-leaf-rail1, su01-leaf-rail2, su01-leaf-rail3, su01-leaf-rail4, ...): "
expected = [
    leaves + 'ansible_connection is not set: a leaf is reached with ansible.netcommon.httpapi or '
             'ansible.netcommon.network_cli (docs/leaves.md, "Inventory")',
    leaves + "ansible_network_os is not set (allowed: gpufabric.mlnx.nvue)",
    leaves + "ansible_user is not set (the switch's NVUE user, e.g. cumulus)",
]
missing = [line for line in expected if line not in log]
for line in missing:
    print("not named: " + line, file=sys.stderr)
sys.exit(1 if missing else 0)
PY
no_host "$out/check_inventory-no-leaf-connection.log"
say "check_inventory without group_vars/leaves/connection.yml: refused before any host, naming the 320 leaves' ansible_connection, ansible_network_os and ansible_user"
run ansible-playbook -i inventory/example-1250 gpufabric.mlnx.cabling_plan >"$out/cabling_plan.log" 2>&1 \
  || { tail -40 "$out/cabling_plan.log" >&2; fail "gpufabric.mlnx.cabling_plan"; }
for report in cabling.csv cabling.md; do
  [ -s "$site/reports/$report" ] || fail "the cabling plan did not write reports/$report of the current directory"
done
rows=$(($(wc -l <"$site/reports/cabling.csv") - 1))
[ "$rows" -eq 10000 ] || fail "cabling.csv has $rows cables, expected 10000 (1,250 servers x 8 rails)"
say "cabling_plan: $rows cables in reports/ of the current directory"
# misspelt variables, as a new user writes them: each refused with the variable meant, before any host
typos=inventory/example-1250/group_vars/all/zz-misspelt.yml
"$dev_python" -c 'import sys, yaml; print(yaml.safe_dump({k: 1 for k in yaml.safe_load(open(sys.argv[1]))}))' \
  "$repo/tests/install/misspelt.yml" > "$typos"
run ansible-playbook -i inventory/example-1250 gpufabric.mlnx.check_inventory -e gpufabric_preflight_images=false \
  --vault-password-file "$work/example-vault-pass" >"$out/check_inventory-misspelt.log" 2>&1 \
  && fail "check_inventory passed the example with misspelt variables"
rm -f "$typos"
"$dev_python" - "$repo/tests/install/misspelt.yml" "$out/check_inventory-misspelt.log" <<'PY' || fail "a misspelt variable was not refused with the variable meant (see $out/check_inventory-misspelt.log)"
import sys, yaml
meant, log = yaml.safe_load(open(sys.argv[1])), " ".join(open(sys.argv[2]).read().split())
missing = [wrong for wrong, right in meant.items()
           if "%s is not a variable of gpufabric.mlnx: nothing reads it; did you mean %s?" % (wrong, right) not in log]
for m in missing:
    print("not refused as meant: " + m, file=sys.stderr)
sys.exit(1 if missing else 0)
PY
say "check_inventory: $(grep -c "^gpufabric_" "$repo/tests/install/misspelt.yml") misspelt variables, each refused with the variable meant"

# 5. the hand-over report's page in the user's venv, without matplotlib: every plot a note, no <svg>
run env PYTHONPATH="$site/collections" python - >"$out/handover-no-matplotlib.log" 2>&1 <<'PY' \
  || { cat "$out/handover-no-matplotlib.log" >&2; fail "the hand-over report's HTML page without matplotlib"; }
import importlib.util
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils import _handover_report as report
assert importlib.util.find_spec("matplotlib") is None, "matplotlib is installed in the user's venv"
page = report.render({"schema": 1, "hosts": {}}, ["html"])["html"]
notes = page.count('<p class="plot-missing"')
assert notes == 4 and "<svg" not in page and "pip install matplotlib" in page, (notes, page[:300])
PY
say "hand-over report without matplotlib: the HTML page rendered, its 4 plots each a note naming matplotlib"

# 6. a first server without lspci: the preflight names the cause
mkdir -p "$work/no-lspci-bin" inventory/first-server/group_vars/all
for tool in /usr/bin/* /usr/sbin/*; do
  [ "$(basename "$tool")" = lspci ] || ln -sf "$tool" "$work/no-lspci-bin/$(basename "$tool")"
done
cp inventory/example-1250/group_vars/all/matrix.yml inventory/first-server/group_vars/all/
printf 'all:\n  children:\n    servers:\n      hosts:\n        srv-first:\n          ansible_connection: local\n          ansible_python_interpreter: %s\n' \
  "$out/venv/bin/python" > inventory/first-server/hosts.yml
env -i PATH="$out/venv/bin:$work/no-lspci-bin" HOME="$work/home" LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 \
  ANSIBLE_LOCAL_TEMP="$work/home/tmp" ansible-playbook -i inventory/first-server gpufabric.mlnx.site --check \
  --tags preflight -e gpufabric_preflight_images=false >"$out/preflight-no-lspci.log" 2>&1 \
  && fail "the preflight passed a server without lspci"
grep -q "srv-first: its NVIDIA devices could not be read: lspci not found on PATH: it is provided by pciutils" \
  "$out/preflight-no-lspci.log" || { tail -30 "$out/preflight-no-lspci.log" >&2
  fail "the preflight did not name the missing lspci as the cause"; }
say "a server without lspci: the preflight names the cause (lspci not found on PATH: it is provided by pciutils)"
cd "$repo"

after=$(snapshot)
[ "$before" = "$after" ] || fail "something was written inside the installed collections: $(diff <(echo "$before") <(echo "$after") | head -5)"
(cd "$work" && run ansible-galaxy collection verify --offline -p "$site/collections" gpufabric.mlnx) >"$out/verify.log" 2>&1 \
  || { cat "$out/verify.log" >&2; fail "ansible-galaxy collection verify: the installed collection changed"; }
say "ok in $((SECONDS - start)) s: nothing written inside the installed collections"
