#!/usr/bin/env bash
# `make install-test`: README's Install path, as a new user takes it - without this repository's Makefile,
# venv or ansible.cfg.
# 1. ansible-galaxy collection build: the tarball.
# 2. A new venv with ONLY ansible-core and the controller's requirements (requirements.txt, what an execution
#    environment gets), pinned by constraints.txt, from PyPI.
# 3. The tarball installed into an empty collections path with README's requirements.yml (docs/requirements.yml,
#    which names the tarball) plus its declared dependencies (galaxy.yml), offline: Galaxy is not reachable here,
#    so each dependency is the copy the `ansible` PyPI bundle of the development venv ships, added to that
#    requirements.yml as a directory (ansible-galaxy checks the declared version range against it). Nothing
#    else is in that path.
# 4. From a temp directory OUTSIDE the checkout, with a copy of inventory/example-1250 (+ its -files): the
#    offline inventory check (gpufabric.mlnx.check_inventory, the images skipped: the example ships none) and
#    the cabling plan (gpufabric.mlnx.cabling_plan), called by name; the check without the example's vault secret
#    (refused, naming the leaves' credential) and with 22 misspelt variables (each refused with the one meant). The reports must land in reports/ of that
#    temp directory, and nothing may be written inside the installed collections (ansible-galaxy collection
#    verify --offline, and the file list before and after).
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
  | grep -Eiv '^(ansible-core|netaddr|paramiko|bcrypt|pynacl|invoke|jinja2|markupsafe|pyyaml|packaging|cryptography|cffi|pycparser|resolvelib|pip|setuptools)==' \
  | grep -Eiv '^(matplotlib|contourpy|cycler|fonttools|kiwisolver|numpy|pillow|pyparsing|python-dateutil|tzdata)==' || true)
[ -z "$extra" ] || fail "the venv holds more than ansible-core and requirements.txt: $extra"
say "venv: $("$out/venv/bin/python" -m pip list --format=freeze --disable-pip-version-check | grep -Ei '^(ansible-core|netaddr|paramiko|matplotlib)==' | paste -sd' ')"

# A user's environment: none of the Makefile's ANSIBLE_* variables, PATH without the development venv, no
# ansible.cfg. PYTHONDONTWRITEBYTECODE: Python's own bytecode caches (plugins/*/__pycache__) would otherwise
# be the only files written inside the installed collection; the check below is for the collection's writes.
run() {
  env -i PATH="$out/venv/bin:/usr/local/bin:/usr/bin:/bin" HOME="$work/home" LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 \
    ANSIBLE_COLLECTIONS_PATH="$work/collections" ANSIBLE_LOCAL_TEMP="$work/home/tmp" "$@"
}
mkdir -p "$work/home" "$work/collections"

# 3. the tarball and its declared dependencies, from the ansible bundle's copies
bundle=$("$dev_python" -c 'import ansible_collections, os; print(os.path.dirname(ansible_collections.__file__) if ansible_collections.__file__ else list(ansible_collections.__path__)[0])')
# the declared dependencies and theirs (ansible.netcommon needs ansible.utils), each from the bundle's copy
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
deps=()
while read -r name; do
  [ -n "$name" ] || continue
  src="$bundle/${name//.//}"
  [ -f "$src/MANIFEST.json" ] || fail "dependency $name is not in the ansible bundle ($src)"
  deps+=("$src")
done <<<"$closure"
grep -q "name: ./$(basename "$tarball")\$" docs/requirements.yml \
  || fail "docs/requirements.yml does not name ./$(basename "$tarball") (galaxy.yml's version)"
cp docs/requirements.yml "$out/requirements.yml"
for src in "${deps[@]}"; do printf '  - name: %s\n    type: dir\n' "$src" >>"$out/requirements.yml"; done
(cd "$out" && run ansible-galaxy collection install --offline -p "$work/collections" -r requirements.yml) \
  >"$out/galaxy-install.log" 2>&1 || { cat "$out/galaxy-install.log" >&2; fail "ansible-galaxy collection install"; }
run ansible-galaxy collection list --format json -p "$work/collections" >"$out/collections.json" 2>/dev/null
# (ansible-core's own internal collections, ansible.builtin and ansible._protomatter, are always listed)
installed=$("$out/venv/bin/python" -c 'import json, sys; print(" ".join(sorted(n for v in json.load(open(sys.argv[1])).values() for n in v if n != "ansible.builtin" and not n.startswith("ansible._"))))' "$out/collections.json")
say "installed: $installed"
want=$(printf '%s\n' gpufabric.mlnx $closure | sort | paste -sd' ')
[ "$installed" = "$want" ] || fail "installed: $installed; expected exactly: $want"

# 4. outside the checkout
site=$work/site
mkdir -p "$site/inventory"
cp -r inventory/example-1250 inventory/example-1250-files "$site/inventory/"
snapshot() { (cd "$work/collections" && find . -printf '%p %s %T@\n' | sort); }
before=$(snapshot)

cd "$site"
# the example's vault password, as its README publishes it (the leaves' credential is vaulted: without the secret
# the check refuses the leaves before any host is contacted)
sed -n 's/^    \(example-1250-only-not-a-secret\)$/\1/p' inventory/example-1250/README.md > "$work/example-vault-pass"
[ -s "$work/example-vault-pass" ] || fail "inventory/example-1250/README.md no longer shows the example's vault password"
run ansible-playbook -i inventory/example-1250 gpufabric.mlnx.check_inventory -e gpufabric_preflight_images=false \
  >"$out/check_inventory-no-vault.log" 2>&1 && fail "check_inventory passed the example without its vault secret"
grep -q "320 leaves (.*): ansible_password cannot be read on the controller: .*give the vault secret" \
  "$out/check_inventory-no-vault.log" || { tail -20 "$out/check_inventory-no-vault.log" >&2
  fail "check_inventory without the vault secret did not name the leaves' credential"; }
say "check_inventory without the vault secret: refused, naming the 320 leaves' credential"
run ansible-playbook -i inventory/example-1250 gpufabric.mlnx.check_inventory -e gpufabric_preflight_images=false \
  --vault-password-file "$work/example-vault-pass" \
  >"$out/check_inventory.log" 2>&1 || { tail -40 "$out/check_inventory.log" >&2; fail "gpufabric.mlnx.check_inventory"; }
grep -q '"msg": "1250 hosts, .*: no problem"' "$out/check_inventory.log" \
  || fail "check_inventory did not find 1250 hosts without a problem (see $out/check_inventory.log)"
say "check_inventory: $(grep -o '1250 hosts, [^"]*' "$out/check_inventory.log")"
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
cd "$repo"

after=$(snapshot)
[ "$before" = "$after" ] || fail "something was written inside the installed collections: $(diff <(echo "$before") <(echo "$after") | head -5)"
run ansible-galaxy collection verify --offline -p "$work/collections" gpufabric.mlnx >"$out/verify.log" 2>&1 \
  || { cat "$out/verify.log" >&2; fail "ansible-galaxy collection verify: the installed collection changed"; }
say "ok in $((SECONDS - start)) s: nothing written inside the installed collections"
