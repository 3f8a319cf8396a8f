#!/usr/bin/env bash
# Set up imagecl on a fresh Debian machine: OpenCL on the CPU (PoCL), a C compiler and the
# OpenCL headers (for the generated C host wrappers), PostgreSQL (for the shared results store's
# tests), a virtual environment in .venv, and the package installed non-editable with its test
# dependencies (so a missing package-data file shows up here, not in a user's hands).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

need_apt=0
[ -e /etc/OpenCL/vendors/pocl.icd ] || need_apt=1
[ -e /usr/include/CL/cl.h ] || need_apt=1
command -v gcc >/dev/null || need_apt=1
# the shared results store's server: the tests start one of their own in a temporary folder
ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || need_apt=1
if [ "$need_apt" = 1 ]; then
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
        pocl-opencl-icd ocl-icd-libopencl1 ocl-icd-opencl-dev opencl-headers gcc libc6-dev postgresql >/dev/null
fi

python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# non-editable on purpose: the tests then run against what a user installs; the second line
# reinstalls the package itself, since pip skips an unchanged version number
# setuptools reuses the checkout's build/lib (git-ignored), so a module deleted from the source
# would still be installed from it: the package is built from the source as it is
rm -rf build
.venv/bin/python -m pip install -q ".[test]"
.venv/bin/python -m pip install -q --force-reinstall --no-deps .
echo "imagecl installed in .venv; OpenCL devices:"
.venv/bin/imagecl devices
