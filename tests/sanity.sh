#!/usr/bin/env bash
# ansible-test sanity (and units, on request) need the collection at ansible_collections/gpufabric/mlnx as a
# real directory: copy the tracked (and not ignored) files there and run them from the copy.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
bin="$repo/.venv/bin"
dest="$repo/tests/output/sanity-tree/ansible_collections/gpufabric/mlnx"
rm -rf "$repo/tests/output/sanity-tree"
mkdir -p "$dest"
cd "$repo"
git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$dest"
# The collections our Python code imports (galaxy.yml dependencies: ansible.netcommon, which needs ansible.utils),
# beside ours in the same ansible_collections tree, where the import test looks for them: the ansible bundle's copies.
bundle="$("$bin/python" -c 'import ansible_collections; print(list(ansible_collections.__path__)[0])')"
for dep in ansible/netcommon ansible/utils; do
  mkdir -p "$dest/../../${dep%/*}"
  cp -r "$bundle/$dep" "$dest/../../$dep"
done
cd "$dest"
git init -q . && git add -A >/dev/null 2>&1   # ansible-test lists files through git
export PATH="$bin:$PATH"
# ansible-test keeps its venvs and caches under ~/.ansible/test: give each checkout its own home (under the
# git-ignored tests/output), so two checkouts (a CI clone and a work tree) never build or delete the same venv
# at once. pip keeps reading the user's own configuration.
export XDG_CONFIG_HOME="${XDG_CONFIG_HOME:-$HOME/.config}"
export HOME="$repo/tests/output/home"
mkdir -p "$HOME"
# ansible-test bootstraps pip in its venvs with a script it downloads from a host we cannot
# reach; it uses a cached copy when there is one: ours runs ensurepip, then pip install.
ver=$("$bin/python" -c 'import re, inspect; from ansible_test._internal import python_requirements as m; print(re.search(r"pip=.(\d[\d.]*).", inspect.getsource(m.get_venv_packages)).group(1))')
mkdir -p ~/.ansible/test/cache
cp "$repo/tests/get_pip_standin.py" ~/.ansible/test/cache/"get_pip_${ver//./_}.py"
# --requirements installs what each sanity test needs into this venv (from PyPI).
# SANITY_ARGS / UNITS_ARGS: extra words for each run, e.g. SANITY_ARGS="--test pep8".
read -r -a sanity_args <<< "${SANITY_ARGS:-}"
read -r -a units_args <<< "${UNITS_ARGS:-}"
ansible-test sanity --python 3.11 --requirements --color no "${sanity_args[@]}"
# The unit suite runs once in `make test`, through pytest (`make unit`). ansible-test units runs the same suite
# inside the collection tree: on request only (ANSIBLE_TEST_UNITS=1, or UNITS_ARGS naming tests).
if [ -n "${ANSIBLE_TEST_UNITS:-}" ] || [ ${#units_args[@]} -gt 0 ]; then
  ansible-test units --python 3.11 --requirements --color no "${units_args[@]}"
fi
