#!/usr/bin/env bash
# Every module, filter, role entry point, callback and strategy of the collection renders with ansible-doc.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
export ANSIBLE_COLLECTIONS_PATH="$repo/.collections"
doc="$repo/.venv/bin/ansible-doc"
fail=0
mkdir -p "$repo/tests/output"
for kind in module filter role callback strategy; do
  names=$("$doc" -t "$kind" -l gpufabric.mlnx --json | "$repo/.venv/bin/python" -c 'import json,sys; print("\n".join(sorted(json.load(sys.stdin))))')
  [ -n "$names" ] || { echo "no $kind plugins found"; exit 1; }
  for name in $names; do
    if "$doc" -t "$kind" "$name" >/dev/null 2>"$repo/tests/output/doc.err"; then
      echo "ok   $kind $name"
    else
      echo "FAIL $kind $name"; cat "$repo/tests/output/doc.err"; fail=1
    fi
  done
done
exit $fail
