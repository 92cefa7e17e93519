#!/usr/bin/env bash
# Installs the Debian packages mbk needs, if any is missing. Safe to run
# again: when everything is present it does nothing and needs no network.
set -euo pipefail

packages=(
  cmake make gcc g++ pkg-config     # toolchain
  libopenblas-dev liblapacke-dev    # dense linear algebra (LAPACK on OpenBLAS)
  libsundials-dev                   # CVODE and IDA
  libexpat1-dev                     # XML parser of the URDF loader
  zlib1g-dev                        # CRC-32 of checkpoint files
  libmujoco-dev                     # independent reference for the URDF tests
  clang libclang-rt-dev             # libFuzzer for the URDF fuzz test (skipped without them)
  libsimbody-dev                    # independent reference for tests and benchmarks
  libjs-three                       # three.js, embedded in the pages mbk run --html writes (viewer/)
  chromium                          # headless browser of the viewer tests (skipped without it)
  python3 python3-venv              # the Python package's venv (scripts/python-env.sh)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y --no-install-recommends "${missing[@]}"
