#!/usr/bin/env bash
# Creates the project's Python virtual environment, with the pinned packages of
# python/requirements-dev.txt (numpy, scipy, matplotlib, pytest, setuptools,
# wheel and their dependencies), for the Python package's tests and examples.
#
#   scripts/python-env.sh            # the venv in .venv (MBK_VENV=DIR for another)
#
# The wheels are kept in VENV/wheelhouse, so tests install packages into fresh
# virtual environments with pip --no-index: nothing is fetched at test time.
# Safe to run again: when the venv already holds exactly the pinned set it does
# nothing and needs no network. Needs python3 with venv and ensurepip (Debian:
# python3-venv, which scripts/install-deps.sh installs).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${MBK_VENV:-$root/.venv}
req=$root/python/requirements-dev.txt
stamp=$venv/.requirements
python=${PYTHON:-python3}

if [ -x "$venv/bin/python" ] && cmp -s "$req" "$stamp" 2>/dev/null; then
  exit 0
fi
echo "python-env: setting up $venv (packages pinned in python/requirements-dev.txt)" >&2
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv" || {
    echo "python-env: '$python -m venv' failed; on Debian install python3-venv (scripts/install-deps.sh)" >&2
    exit 1
  }
fi
export PIP_DISABLE_PIP_VERSION_CHECK=1
mkdir -p "$venv/wheelhouse"
# binary wheels only: nothing is compiled here
"$venv/bin/python" -m pip download --quiet --only-binary=:all: -d "$venv/wheelhouse" -r "$req"
"$venv/bin/python" -m pip install --quiet --no-index --find-links "$venv/wheelhouse" -r "$req"
cp "$req" "$stamp"
