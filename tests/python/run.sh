#!/usr/bin/env bash
# Runs a Python test or example with the project's venv: run.sh VENV_DIR ARGS...
# Exits 77 (ctest: skipped, with the reason printed) when the venv is missing.
venv=$1; shift
if [ ! -x "$venv/bin/python" ]; then
  echo "SKIPPED: no Python venv at $venv: run scripts/python-env.sh (make does it)"
  exit 77
fi
exec "$venv/bin/python" "$@"
