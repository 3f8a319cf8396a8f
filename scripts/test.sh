#!/usr/bin/env bash
# Install everything (scripts/setup.sh) and run the whole test suite against the installed
# package. Extra arguments go to pytest (e.g. `-m slow` for the long sweeps).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
# run from tests/ so that `import imagecl` finds the installed package, not the source folder
cd tests
exec ../.venv/bin/python -m pytest -q -p no:cacheprovider "$@"
