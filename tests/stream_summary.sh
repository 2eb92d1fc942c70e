#!/usr/bin/env bash
# After `make test` (three streams at once, each printed whole when it ends): what failed, printed last. CI keeps
# only the tail of a run's output, and the molecule stream - the longest - ends last, so a unit or static failure
# printed twenty minutes earlier was not in it. Each stream's log (tests/output/streams/<stream>.log) ends with
# "stream rc=N"; for each stream that did not end with 0, its failure lines and its last lines.
set -uo pipefail
dir="${1:?usage: stream_summary.sh DIR}"
failed=0
for log in "$dir"/*.log; do
  [ -e "$log" ] || continue
  name="$(basename "$log" .log)"
  rc="$(sed -n 's/^stream rc=\([0-9]*\)$/\1/p' "$log" | tail -n 1)"
  if [ "$rc" = "0" ]; then
    echo "stream $name: passed"
    continue
  fi
  failed=1
  echo "stream $name: FAILED (rc ${rc:-unknown: the stream did not finish})"
  echo "--- its failure lines (at most 40):"
  grep -E '^(FAILED|ERROR) |^E   |Error:|ERROR:|fatal: |failed=[1-9]|^[^ ]+\.py:[0-9]+: [A-Za-z]*Error|^make(\[[0-9]+\])?: \*\*\*' \
    "$log" | tail -n 40
  # a molecule verify script's own words ("FAILED: ..."), wrapped by the callback over several lines
  if grep -q 'FAILED: ' "$log"; then
    echo "--- what a check said (at most 40 lines):"
    grep -A 8 'FAILED: ' "$log" | tail -n 40
  fi
  echo "--- its last 15 lines:"
  grep -v '^stream rc=' "$log" | tail -n 15
done
exit "$failed"
