#!/usr/bin/env bash
# Prove the validation gate's srun launcher end to end on a running fabric lab (gpufabric_validate_launcher: srun):
# two servers drained (one by the rollout's reason, one by an administrator's), playbooks/validate.yml retests them
# with every NCCL world started by Slurm's srun --mpi=pmix; then checks that each world's rank count from srun is the
# plan's (the simulated ranks' log: rank and size Slurm gave each), that the servers passed, that every node's
# Slurm state and reason are what they were and no reservation is left; the two nodes are resumed at the end.
# molecule/fabric/tests/verify_fabric.py --only srun does the work (molecule's verify runs the same part).
#
#   tests/lab/srun_check.sh LAB_FILE INVENTORY_DIR
#
# LAB_FILE: a copy of tests/lab/labs/fabric.yml (the same servers; another name and mgmt subnet - never the
# molecule scenario's gffab), up (tests/lab/lab.py up --lab LAB_FILE) and converged (playbooks/site.yml with
# INVENTORY_DIR). INVENTORY_DIR: `tests/lab/lab.py inventory --lab LAB_FILE` as hosts.yml, with
# molecule/fabric/inventory/group_vars (its mgmt subnet and image URL changed to the lab's) and
# molecule/resources/inventory/group_vars/all.yml (the lab_podman connection). Run from the repository root, as root.
set -euo pipefail
[ $# -eq 2 ] || { sed -n '2,16s/^# \{0,1\}//p' "$0" >&2; exit 2; }
LAB_FILE=$1
INVENTORY=$2
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
NAME="$(python3 "$REPO/tests/lab/lab.py" plan --lab "$LAB_FILE" >/dev/null && \
        sed -n 's/^name: *\([A-Za-z0-9_-]*\).*/\1/p' "$LAB_FILE" | head -n1)"
[ -n "$NAME" ] || { echo "srun_check.sh: no name: in $LAB_FILE" >&2; exit 2; }
export ANSIBLE_COLLECTIONS_PATH="$REPO/.collections"
export ANSIBLE_CONNECTION_PLUGINS="$REPO/tests/lab/connection_plugins"
RECORDS="$(mktemp -d)"
trap 'rm -rf "$RECORDS"' EXIT
exec "$REPO/.venv/bin/python" "$REPO/molecule/fabric/tests/verify_fabric.py" --repo "$REPO" --records "$RECORDS" \
    --inventory "$INVENTORY" --only srun --prefix "$NAME-"
