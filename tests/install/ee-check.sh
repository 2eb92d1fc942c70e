#!/usr/bin/env bash
# `make ee`: the collection's execution-environment metadata, as ansible-builder reads it - no image is pulled
# or built, no network is used.
# 1. ansible-builder introspect on a collections dir holding only this collection: the Python and system
#    requirements an EE built on gpufabric.mlnx gets (meta/execution-environment.yml -> requirements.txt,
#    bindep.txt). They must contain the controller's needs (netaddr, paramiko, mstflint), not the optional matplotlib
#    and none of the development stack (requirements-dev.txt: molecule, pytest, ...).
# 2. ansible-builder create on docs/execution-environment.yml (the example EE definition, version 3): the
#    build context is written to tests/output/ee; it installs matplotlib (the hand-over report's plots) itself.
# ANSIBLE_BUILDER: the ansible-builder to run (default: the venv's).
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
builder=${ANSIBLE_BUILDER:-$repo/.venv/bin/ansible-builder}
out=$repo/tests/output
rm -rf "$out/ee" "$out/ee-collections"
mkdir -p "$out/ee-collections/ansible_collections/gpufabric"
ln -s "$repo" "$out/ee-collections/ansible_collections/gpufabric/mlnx"

fail() { echo "ee-check: $*" >&2; exit 1; }

"$builder" introspect --sanitize --write-pip "$out/ee-requirements.txt" --write-bindep "$out/ee-bindep.txt" \
  "$out/ee-collections" >"$out/ee-introspect.txt"
cat "$out/ee-introspect.txt"
for needed in netaddr paramiko; do
  grep -Eq "^$needed([<>=!~ ;#]|$)" "$out/ee-requirements.txt" || fail "the EE Python requirements lack $needed"
done
# matplotlib is optional for the collection (the hand-over report's plots): not in its requirements, named by the
# example EE definition itself (checked in its build context below)
if grep -Eq "^matplotlib([<>=!~ ;#]|$)" "$out/ee-requirements.txt"; then
  fail "the collection's EE Python requirements carry matplotlib (optional: docs/execution-environment.yml names it)"
fi
grep -Eq '^mstflint( |$)' "$out/ee-bindep.txt" || fail "the EE system requirements lack mstflint"
# introspect itself drops a few test tools (molecule, pytest, ansible-lint): check the file it reads as well
pyfile=$("$repo/.venv/bin/python" -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["dependencies"]["python"])' \
  meta/execution-environment.yml)
for dev in molecule pytest ansible-lint sushy-tools hypothesis ansible-builder antsibull 'ansible=='; do
  for file in "$out/ee-requirements.txt" "$pyfile"; do
    if grep -Eiq "^$dev" "$file"; then fail "$file carries $dev (the development stack is requirements-dev.txt)"; fi
  done
done

# the file name explicitly: without it ansible-builder names it after the container runtime it finds (Dockerfile
# on a machine without podman - a fresh CI machine runs `make ee` before `make host` installs podman)
"$builder" create --file docs/execution-environment.yml --context "$out/ee" --output-filename Containerfile >/dev/null
test -s "$out/ee/Containerfile" || fail "ansible-builder create wrote no Containerfile"
grep -q 'gpufabric.mlnx' "$out/ee/_build/requirements.yml" || fail "the example EE does not install gpufabric.mlnx"
grep -Eq '^matplotlib([<>=!~ ;#]|$)' "$out/ee/_build/requirements.txt" \
  || fail "the example EE does not install matplotlib (the hand-over report's plots)"
echo "ee-check: ok (requirements: $(grep -v '^#' "$out/ee-requirements.txt" | cut -d' ' -f1 | paste -sd' '); context: tests/output/ee)"
