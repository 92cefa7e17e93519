#!/usr/bin/env bash
# scripts/bench-venv.sh VENV - the benchmark's own Python environment (make bench).
#
# Creates VENV (python3 -m venv) if missing and installs the pinned packages of
# benchmarks/requirements-bench.txt with pip --no-deps (nothing else is pulled in: the
# benchmark uses only the C and C++ headers and libraries they carry). Prints the
# environment's site-packages directory on stdout (Pinocchio's cmeel.prefix and MuJoCo's
# mujoco/ are in it), or nothing when the packages cannot be had, in which case make bench
# runs without the Pinocchio and PyPI MuJoCo sides. Nothing is fetched when the benchmark
# runs: this is a build step.
set -u
venv=${1:?usage: bench-venv.sh VENV}
mkdir -p "$venv" && venv=$(cd "$venv" && pwd)
here=$(cd "$(dirname "$0")/.." && pwd)
req="$here/benchmarks/requirements-bench.txt"
stamp="$venv/.requirements-bench.txt"
if [ ! -x "$venv/bin/python" ]; then
    rmdir "$venv" 2>/dev/null
    python3 -m venv "$venv" >&2 || { echo "bench-venv: python3 -m venv failed; no Pinocchio side" >&2; exit 0; }
fi
if ! cmp -s "$req" "$stamp"; then
    if "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$req" >&2; then
        cp "$req" "$stamp"
    else
        echo "bench-venv: pip could not install $req; no Pinocchio side" >&2
        exit 0
    fi
fi
site=
for d in "$venv"/lib/python3*/site-packages; do
    [ -d "$d/cmeel.prefix" ] && site=$d
done
echo "$site"
